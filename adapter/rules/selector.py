"""A caller's label selector, within limits, and its safe conversion to PromQL label matchers.

The selector itself (``labels.Parse``, the grammar, key and value validation) is
:mod:`hpa.core.selector`; this module adds the adapter's limits and the PromQL rendering.

Upstream counterpart: prometheus-adapter ``pkg/naming/metrics_query.go`` (``processQueryParts``,
``selectMatcher``, ``selectTargetValue``: ``=``/``==`` → ``=``, ``!=`` → ``!=``, ``in`` → ``=~``,
``notin`` → ``!~``, several values joined with ``|``, ``exists`` → ``!=""``, ``!key`` → ``=""``,
``gt``/``lt`` refused).

Deliberate deviations (docs/adapter-rules.md), all to make the rendered query safe:

- regex values are escaped with ``regexp.QuoteMeta`` (upstream passes a single ``in`` value through
  as a raw regex, and joins several raw values): ``a in (x.y)`` becomes ``a=~"x\\\\.y"``;
- keys must also be valid Prometheus label names (``app.kubernetes.io/name`` is refused with a 400
  instead of producing a query Prometheus rejects), and ``__``-prefixed keys are reserved;
- a selector longer than ``MAX_SELECTOR_BYTES`` or a set of more than ``MAX_SET_VALUES`` values is
  refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from adapter.rules.errors import (
    InvalidLabelNameError,
    InvalidSelectorError,
    MalformedQueryError,
    SelectorTooLargeError,
    TooManyValuesError,
    UnsupportedOperatorError,
)
from adapter.rules.promql import (
    alternation,
    check_encodable,
    go_quote_body,
    is_valid_label_name,
    label_eq,
    label_matches,
    label_neq,
    label_not_matches,
)
from hpa.core.selector import Operator, Requirement, SelectorError, format_selector, parse_selector

__all__ = [
    "MAX_SELECTOR_BYTES",
    "MAX_SET_VALUES",
    "Operator",
    "QueryPart",
    "Requirement",
    "check_user_label",
    "format_selector",
    "parse_metric_selector",
    "query_parts_from_selector",
    "render_query_part",
]

MAX_SELECTOR_BYTES = 4096
MAX_SET_VALUES = 100


def _check_set_size(values: Sequence[str]) -> None:
    if len(values) > MAX_SET_VALUES:
        raise TooManyValuesError(
            f"label selector set has more than {MAX_SET_VALUES} values; refusing to query"
        )


def parse_metric_selector(selector: str) -> tuple[Requirement, ...]:
    """``labels.Parse`` (:func:`hpa.core.selector.parse_selector`) of a caller's selector, within
    the adapter's limits: requirements sorted by key; the empty selector selects everything.

    Raises ``SelectorTooLargeError``, ``TooManyValuesError`` or ``InvalidSelectorError``.
    """
    size = len(selector.encode("utf-8", "surrogatepass"))
    if size > MAX_SELECTOR_BYTES:
        raise SelectorTooLargeError(
            f"label selector is {size} bytes, more than the {MAX_SELECTOR_BYTES} allowed"
        )
    try:
        requirements = parse_selector(selector).requirements
    except SelectorError as error:
        raise InvalidSelectorError(str(error)) from None
    for requirement in requirements:
        _check_set_size(requirement.values)
    return requirements


# ----------------------------------------------------------------------------------- PromQL


@dataclass(frozen=True)
class QueryPart:
    """``queryPart``: one label constraint on its way to a PromQL matcher."""

    label_name: str
    values: tuple[str, ...]
    operator: Operator


def query_parts_from_selector(requirements: Iterable[Requirement]) -> list[QueryPart]:
    """``createQueryPartsFromSelector``: one part per requirement, values sorted."""
    return [
        QueryPart(requirement.key, tuple(sorted(set(requirement.values))), requirement.operator)
        for requirement in requirements
    ]


def check_user_label(name: str) -> None:
    """Keys that come from a caller must be plain, non-reserved Prometheus label names."""
    if not name:
        raise InvalidLabelNameError("label not specified")
    if not is_valid_label_name(name):
        raise InvalidLabelNameError(
            f"label selector key {name!r} is not a valid Prometheus label name "
            "(must match [a-zA-Z_][a-zA-Z0-9_]*)"
        )
    if name.startswith("__"):
        raise InvalidLabelNameError(f"label selector key {name!r} is reserved")


_REGEX_OPERATORS = {
    Operator.EQUALS: label_matches,
    Operator.DOUBLE_EQUALS: label_matches,
    Operator.IN: label_matches,
    Operator.EXISTS: label_matches,
    Operator.NOT_EQUALS: label_not_matches,
    Operator.DOES_NOT_EXIST: label_not_matches,
    Operator.NOT_IN: label_not_matches,
}


def render_query_part(part: QueryPart) -> tuple[str, str]:
    """``selectMatcher`` + ``selectTargetValue``: (matcher expression, LabelValuesByName entry).

    The LabelValuesByName entry is the values' escaped alternation, itself escaped for use inside
    a double-quoted PromQL string (``"<<index .LabelValuesByName "pod">>"``).
    """
    operator, values, label = part.operator, part.values, part.label_name
    if not label:
        raise InvalidLabelNameError("label not specified")
    if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        raise UnsupportedOperatorError("operator not supported by prometheus")
    _check_set_size(values)
    for value in values:
        check_encodable(value)
    if not values:
        if operator is Operator.EXISTS:
            expression = label_neq(label, "")
        elif operator is Operator.DOES_NOT_EXIST:
            expression = label_eq(label, "")
        else:
            raise MalformedQueryError("operator requires values")
    elif operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        raise MalformedQueryError("operator does not support values")
    elif len(values) == 1 and operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS):
        expression = label_eq(label, values[0])
    elif len(values) == 1 and operator is Operator.NOT_EQUALS:
        expression = label_neq(label, values[0])
    else:
        expression = _REGEX_OPERATORS[operator](label, alternation(values))
    return expression, go_quote_body(alternation(values))
