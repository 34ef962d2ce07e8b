"""Which ``metricsQuery`` templates can be evaluated once for every object, and that query.

No upstream counterpart: prometheus-adapter renders one query per request, restricted to the
requested object names (``pod=~"a|b"``). A *batched* evaluation renders the same template once
for every object the rule can describe: the object matcher becomes ``<resource label>!=""`` (and
``<namespace label>!=""`` across namespaces), and ``.GroupBy`` becomes the namespace label and the
resource label (or the resource label alone for one namespace or a cluster-scoped resource). A
request is then answered by looking its objects up in that answer.

That gives the same value per object only when restricting the input series to some objects and
restricting the output to those objects commute. ``batchability`` decides it from the template
text, conservatively (docs/adapter-values.md, "Batched evaluation"): a template is batchable when

1. it does not use ``.LabelValuesByName`` or ``.GroupBySlice`` (they carry the requested names);
2. every vector selector carries ``{...}`` with ``.LabelMatchers`` in it, so every series it
   reads is restricted like the per-request query's;
3. every ``.LabelMatchers`` lies inside an aggregation, and every aggregation is one of ``sum``,
   ``avg``, ``min``, ``max``, ``count``, ``group``, ``stddev``, ``stdvar`` with the clause
   ``by (<<.GroupBy>>)`` and nothing else in it: each output sample is then a function of one
   object's series only;
4. it uses nothing that mixes objects or rewrites labels: ``without``, ``on``, ``ignoring``,
   ``group_left``, ``group_right``, ``scalar``, ``vector``, ``absent``, ``absent_over_time``,
   ``label_replace``, ``label_join``, ``sort``/``sort_desc``/``sort_by_label``(``_desc``), or an
   aggregation other than those above (``topk``, ``quantile``, ``count_values``, ...);
5. ``.GroupBy`` appears only as that ``by`` clause.

Anything else (``histogram_quantile(0.9, sum by (le, <<.GroupBy>>) (...))``, a query joining
another metric with ``on``) is answered per request, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from adapter.rules.errors import InvalidValueError, RuleEvaluationError
from adapter.rules.gotemplate import GoTemplate, StructValue
from adapter.rules.mapper import NAMESPACES, GroupResource
from adapter.rules.naming import MetricsQuery
from adapter.rules.promql import is_valid_label_name, label_eq, label_neq
from adapter.rules.selector import (
    Requirement,
    check_user_label,
    query_parts_from_selector,
    render_query_part,
)

BATCH_AGGREGATIONS = frozenset({"sum", "avg", "min", "max", "count", "group", "stddev", "stdvar"})
OTHER_AGGREGATIONS = frozenset(
    {"topk", "bottomk", "quantile", "count_values", "limitk", "limit_ratio"}
)
MIXING = frozenset(
    {
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "scalar",
        "vector",
        "absent",
        "absent_over_time",
        "label_replace",
        "label_join",
        "sort",
        "sort_desc",
        "sort_by_label",
        "sort_by_label_desc",
    }
)

KEYWORDS = frozenset(
    {"by", "bool", "offset", "and", "or", "unless", "atan2", "inf", "nan", "Inf", "NaN"}
)

_MATCHERS = "__hpa_batch_matchers__"
_GROUP = "__hpa_batch_group__"
_SERIES = "hpa_batch_series"

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    |(?P<comment>\#[^\n]*)
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)
    |(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
    |(?P<number>[0-9][0-9A-Za-z_.]*|\.[0-9][0-9A-Za-z_.]*)
    |(?P<punct>[(){}\[\],@])
    |(?P<op>=~|!~|!=|==|<=|>=|[-+*/%^=<>:])
    """,
    re.VERBOSE,
)


_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


class _UnreadableError(ValueError):
    pass


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise _UnreadableError(f"cannot read {text[position : position + 20]!r}")
        position = match.end()
        kind = match.lastgroup
        if kind in ("space", "comment"):
            continue
        out.append(match.group())
    return out


@dataclass(frozen=True)
class Batchability:
    """The verdict on one template: ``batchable``, or ``reason`` why not (for logs and docs)."""

    batchable: bool
    reason: str = ""


def _closing(tokens: Sequence[str], start: int) -> int:
    """The index of the bracket closing the one at ``start``."""
    opening = tokens[start]
    closing = {"(": ")", "{": "}", "[": "]"}[opening]
    depth = 0
    for index in range(start, len(tokens)):
        if tokens[index] == opening:
            depth += 1
        elif tokens[index] == closing:
            depth -= 1
            if depth == 0:
                return index
    raise _UnreadableError(f"unbalanced {opening!r}")


def _by_clause(tokens: Sequence[str], at: int) -> tuple[bool, int]:
    """Whether ``tokens[at:]`` is ``by ( <group> )``, and the index after it."""
    if at < len(tokens) and tokens[at] == "by":
        if tokens[at + 1 : at + 4] == ["(", _GROUP, ")"]:
            return True, at + 4
        return False, at + 1
    return False, at


def batchability(template: GoTemplate) -> Batchability:
    """Whether ``template`` (a rule's ``metricsQuery``) may be evaluated once for every object
    (the rules in this module's docstring). Pure; the same template always gets the same
    verdict."""
    source = template.source
    for field_name in ("LabelValuesByName", "GroupBySlice"):
        if field_name in source:
            return Batchability(False, f"the query uses .{field_name}")
    try:
        rendered = template.execute(
            StructValue(
                "naming.queryTemplateArgs",
                (
                    ("Series", _SERIES),
                    ("LabelMatchers", _MATCHERS),
                    ("LabelValuesByName", {}),
                    ("GroupBy", _GROUP),
                    ("GroupBySlice", []),
                ),
            )
        )
        tokens = _tokens(rendered)
        return _judge_tokens(tokens)
    except (RuleEvaluationError, _UnreadableError) as exc:
        return Batchability(False, f"the query cannot be read: {exc}")


def _judge_tokens(tokens: Sequence[str]) -> Batchability:
    aggregated: list[tuple[int, int]] = []  # (first, last) word of each aggregation's argument
    grouped = 0
    index = 0
    while index < len(tokens):
        word = tokens[index]
        if word in MIXING:
            return Batchability(False, f"the query uses {word!r}, which mixes objects")
        if word in OTHER_AGGREGATIONS:
            return Batchability(False, f"the aggregation {word!r} is not batched")
        if word == "{":
            end = _closing(tokens, index)
            if _MATCHERS not in tokens[index:end]:
                return Batchability(False, "a series selector without .LabelMatchers")
            index = end + 1
            continue
        if word == "[":  # a range or subquery duration
            index = _closing(tokens, index) + 1
            continue
        if word == "by" and index + 1 < len(tokens) and tokens[index + 1] == "(":
            index = _closing(tokens, index + 1) + 1
            continue
        if (
            _IDENT.fullmatch(word)
            and word not in KEYWORDS
            and word not in BATCH_AGGREGATIONS
            and (index + 1 == len(tokens) or tokens[index + 1] not in ("(", "{"))
        ):
            return Batchability(False, f"the series selector {word!r} without .LabelMatchers")
        if word in BATCH_AGGREGATIONS and index + 1 < len(tokens):
            prefix, after = _by_clause(tokens, index + 1)
            if after < len(tokens) and tokens[after] == "(":
                end = _closing(tokens, after)
                postfix, _ = _by_clause(tokens, end + 1)
                if not (prefix or postfix):
                    return Batchability(False, f"{word!r} without 'by (<<.GroupBy>>)' alone")
                if prefix and postfix:
                    return Batchability(False, f"{word!r} with two 'by' clauses")
                aggregated.append((after, end))
                grouped += 1
        index += 1
    group_uses = sum(1 for word in tokens if word == _GROUP)
    if group_uses != grouped:
        return Batchability(False, ".GroupBy is used outside 'by (<<.GroupBy>>)'")
    if "by" in tokens and tokens.count("by") != grouped:
        return Batchability(False, "a 'by' clause other than 'by (<<.GroupBy>>)'")
    matcher_positions = [index for index, word in enumerate(tokens) if word == _MATCHERS]
    if not matcher_positions:
        return Batchability(False, "the query does not use .LabelMatchers")
    for position in matcher_positions:
        if not any(first < position < last for first, last in aggregated):
            return Batchability(False, ".LabelMatchers outside an aggregation by (<<.GroupBy>>)")
    return Batchability(True)


@dataclass(frozen=True)
class BatchQuery:
    """A rendered batched query: ``query``, and the labels naming each answer's object.

    namespace_label: the label holding the namespace in the answer (None when the batch covers
        one namespace, or the resource is cluster-scoped).
    resource_label: the label holding the object's name.
    """

    query: str
    resource_label: str
    namespace_label: str | None


def build_batch_query(
    metrics_query: MetricsQuery,
    series: str,
    resource: GroupResource,
    *,
    namespace: str | None,
    across_namespaces: bool,
    metric_selector: Iterable[Requirement] = (),
    extra_group_by: Sequence[str] = (),
    template: GoTemplate | None = None,
) -> BatchQuery:
    """The batched form of ``metrics_query.build`` for every ``resource`` object.

    namespace: the one namespace to cover (``across_namespaces`` False), or None.
    across_namespaces: cover every namespace, grouping by the namespace label too.
    extra_group_by: labels grouped by after the object's (the resource rules' container label).
    template: another template to render with the same arguments (the staleness probe).

    Raises ``RuleEvaluationError`` as ``build`` does when the rule cannot render it, and
    ``InvalidValueError`` for a selector on the namespace or resource label (such requests are
    answered per request).
    """
    converter = metrics_query.converter
    resource_label = converter.label_for_resource(resource)
    namespace_label = converter.label_for_resource(NAMESPACES)
    parts = query_parts_from_selector(metric_selector)
    for part in parts:
        check_user_label(part.label_name)
        if part.label_name in (namespace_label, resource_label):
            raise InvalidValueError(
                f"a metric label selector on {part.label_name!r} is not batched"
            )
    exprs = [render_query_part(part)[0] for part in parts]
    group_by = [resource_label]
    answer_namespace_label: str | None = None
    namespaced = False
    if resource_label != namespace_label:
        if across_namespaces:
            exprs.append(label_neq(namespace_label, ""))
            group_by = [namespace_label, resource_label]
            answer_namespace_label = namespace_label
            namespaced = True
        elif namespace is not None:
            if not namespace:
                raise InvalidValueError("namespace must not be empty")
            exprs.append(label_eq(namespace_label, namespace))
            namespaced = True
    if not namespaced:
        # With a namespace matcher the object matcher is left out: every aggregation groups by
        # the resource label, so series without it form a group of their own (filed under the
        # name "", which no request asks for). Prometheus answers `pod!=""` by merging the
        # postings of every value of the label (every pod of every metric), which cost more
        # than the query itself at 100,000 pods (docs/performance.md, "Fleet scale").
        exprs.append(label_neq(resource_label, ""))
    group_by.extend(extra_group_by)
    for label in group_by:
        if not is_valid_label_name(label):
            raise RuleEvaluationError(f"group-by label {label!r} is not a valid label name")
    chosen = template if template is not None else metrics_query.template
    query = chosen.execute(
        StructValue(
            "naming.queryTemplateArgs",
            (
                ("Series", series),
                ("LabelMatchers", ",".join(exprs)),
                ("LabelValuesByName", {}),
                ("GroupBy", ",".join(group_by)),
                ("GroupBySlice", list(group_by)),
            ),
        )
    )
    if not query:
        raise RuleEvaluationError("empty query produced by metrics query template")
    return BatchQuery(query, resource_label, answer_namespace_label)
