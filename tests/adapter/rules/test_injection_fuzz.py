"""Injection fuzz: hostile selectors, object names and namespaces never change a query's shape.

10,000 generated requests (``max_examples=10_000``, derandomized so CI runs the same ones) go
through the real rule files (sample config, walkthrough rule, external rules, the deploy
ConfigMap's resource rules) and the public entry points the server will call. Every query that
would be sent is tokenized by an independent strict PromQL lexer and compared, token by token, to
the rule's template with exactly the expected matchers substituted:

- selector requirements, then the namespace matcher (exactly once, with the requested namespace,
  in every namespaced query), then the object-name matcher;
- every user-supplied value appears only as a decoded string literal equal to the input, and regex
  values are nothing but escaped literals joined by ``|`` that decode back to the input set.

A request may instead be refused with a ``BadQueryError`` (the server's 400). For requirement
objects built directly (bypassing the Kubernetes grammar) an independent oracle says exactly which
requests must be refused; nothing else may be. Any other exception, any mismatch: a deviation.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapter.rules import (
    MAX_SELECTOR_BYTES,
    MAX_SET_VALUES,
    BadQueryError,
    CustomMetricInfo,
    ExternalSeriesRegistry,
    GroupResource,
    Operator,
    Requirement,
    ResourceQueries,
    SelectorTooLargeError,
    SeriesRegistry,
    StaticRESTMapper,
    TooManyValuesError,
    load_rules,
    namers_from_config,
    parse_metric_selector,
)
from adapter.rules.naming import Series
from tests.adapter.default_config import SHARED_DATA
from tests.adapter.promql_lexer import (
    IDENT,
    OP,
    PUNCT,
    STRING,
    LexError,
    Token,
    literal_alternation,
    tokenize,
)

WALKTHROUGH_RULES = """
rules:
- seriesQuery: 'http_requests_total{kubernetes_namespace!="",kubernetes_pod_name!=""}'
  resources:
    overrides:
      kubernetes_namespace: {resource: "namespace"}
      kubernetes_pod_name: {resource: "pod"}
  name: {matches: "^(.*)_total", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
# LabelValuesByName used as documented: inside a double-quoted regex literal.
- seriesQuery: 'app_items{kubernetes_namespace!="",kubernetes_pod_name!=""}'
  resources:
    overrides:
      kubernetes_namespace: {resource: "namespace"}
      kubernetes_pod_name: {resource: "pod"}
  metricsQuery: >-
    sum(<<.Series>>{kubernetes_namespace=~"<<index .LabelValuesByName "kubernetes_namespace">>",
    kubernetes_pod_name=~"<<index .LabelValuesByName "kubernetes_pod_name">>"}) by (<<.GroupBy>>)
"""


REGISTRY_SCENARIOS = ("custom", "walkthrough", "values-by-name")
SELECTOR_SCENARIOS = (
    "custom",
    "walkthrough",
    "values-by-name",
    "external",
    "external-unnamespaced",
)


@dataclass(frozen=True)
class Scenario:
    """One way a request reaches Prometheus, with what the oracle needs to know about it."""

    name: str
    template: str
    series: str
    namespace_label: str | None  # None: the query is not namespaced
    resource_label: str | None  # None: no object-name matcher (external metrics)
    group_by: tuple[str, ...]


@dataclass(frozen=True)
class World:
    custom: SeriesRegistry
    walkthrough: SeriesRegistry
    external: ExternalSeriesRegistry
    resources: ResourceQueries
    templates: dict[str, str]


@cache
def world() -> World:
    mapper = StaticRESTMapper.from_kinds(
        [*[(g, k, n) for g, k, n in _builtin_kinds()], ("cheese.io", "Brand", True)]
    )
    sample = load_rules((SHARED_DATA / "sample-config.yaml").read_text(), source="sample-config")
    namers = namers_from_config(sample.rules, mapper)
    labels = {"namespace": "default", "pod": "web-1", "container": "app"}
    custom = SeriesRegistry.from_series(
        [[Series("container_cpu_usage_seconds_total", labels)], [], [], []], namers, mapper
    )
    walk = load_rules(WALKTHROUGH_RULES, source="walkthrough")
    walk_namers = namers_from_config(walk.rules, mapper)
    walk_labels = {"kubernetes_namespace": "production", "kubernetes_pod_name": "web-1"}
    walkthrough = SeriesRegistry.from_series(
        [[Series("http_requests_total", walk_labels)], [Series("app_items", walk_labels)]],
        walk_namers,
        mapper,
    )
    external_namers = namers_from_config(sample.external_rules, mapper, kind="externalRules")
    # The first sample external rule has no namespace label (it cannot render namespaced at
    # all, as upstream); give the namespaced scenario a rule that maps one.
    namespaced_external = load_rules(
        """
externalRules:
- seriesQuery: '{__name__="queue_consumer_lag",name!=""}'
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (name)
  resources:
    overrides: {namespace: {resource: namespace}}
""",
        source="externalmetrics.md",
    )
    external_namers[0] = namers_from_config(
        namespaced_external.external_rules, mapper, kind="externalRules"
    )[0]
    external = ExternalSeriesRegistry.from_series(
        [[Series("queue_consumer_lag", {"name": "a"})], [Series("queue_depth", {"topic": "t"})]],
        external_namers,
    )
    config_map = yaml.safe_load((SHARED_DATA / "deploy-config-map.yaml").read_text())
    deploy = load_rules(config_map["data"]["config.yaml"], source="deploy-config-map")
    assert deploy.resource_rules is not None
    resources = ResourceQueries.from_config(deploy.resource_rules, mapper)
    templates = {
        "custom": sample.rules[0].metrics_query,
        "walkthrough": walk.rules[0].metrics_query,
        "values-by-name": walk.rules[1].metrics_query,
        "external": sample.external_rules[0].metrics_query,
        "external-unnamespaced": sample.external_rules[1].metrics_query,
        "container": deploy.resource_rules.cpu.container_query,
        "node": deploy.resource_rules.memory.node_query,
    }
    return World(custom, walkthrough, external, resources, templates)


def _builtin_kinds() -> list[tuple[str, str, bool]]:
    from adapter.rules.mapper import BUILTIN_KINDS

    return list(BUILTIN_KINDS)


def scenario(name: str) -> Scenario:
    templates = world().templates
    return {
        "custom": Scenario(
            "custom",
            templates["custom"],
            "container_cpu_usage_seconds_total",
            "namespace",
            "pod",
            ("pod",),
        ),
        "walkthrough": Scenario(
            "walkthrough",
            templates["walkthrough"],
            "http_requests_total",
            "kubernetes_namespace",
            "kubernetes_pod_name",
            ("kubernetes_pod_name",),
        ),
        "values-by-name": Scenario(
            "values-by-name",
            templates["values-by-name"],
            "app_items",
            "kubernetes_namespace",
            "kubernetes_pod_name",
            ("kubernetes_pod_name",),
        ),
        "external": Scenario(
            "external", templates["external"], "queue_consumer_lag", "namespace", None, ()
        ),
        "external-unnamespaced": Scenario(
            "external-unnamespaced",
            templates["external-unnamespaced"],
            "queue_depth",
            None,
            None,
            (),
        ),
        "container": Scenario(
            "container", templates["container"], "", "namespace", "pod", ("pod", "container")
        ),
        "node": Scenario("node", templates["node"], "", None, "node", ("node",)),
    }[name]


def render(
    name: str,
    *,
    namespace: str,
    names: Sequence[str],
    selector: Sequence[Requirement],
) -> str | None:
    """Call the entry point the server will call for this scenario."""
    state = world()
    pods = GroupResource("", "pods")
    if name == "custom":
        info = CustomMetricInfo(pods, True, "cpu_usage")
        return state.custom.query_for_metric(
            info, namespace=namespace, names=names, metric_selector=selector
        )
    if name == "walkthrough":
        info = CustomMetricInfo(pods, True, "http_requests_per_second")
        return state.walkthrough.query_for_metric(
            info, namespace=namespace, names=names, metric_selector=selector
        )
    if name == "values-by-name":
        info = CustomMetricInfo(pods, True, "app_items")
        return state.walkthrough.query_for_metric(
            info, namespace=namespace, names=names, metric_selector=selector
        )
    if name == "external":
        return state.external.query_for_metric(
            "queue_consumer_lag", namespace=namespace, metric_selector=selector
        )
    if name == "external-unnamespaced":
        return state.external.query_for_metric(
            "queue_depth", namespace=namespace, metric_selector=selector
        )
    if name == "container":
        return state.resources.cpu.build_container_query(names, namespace=namespace)
    return state.resources.memory.build_node_query(names)


# ----------------------------------------------------------------------------------- oracle

LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str | None = None  # exact string for = and !=
    alternatives: tuple[str, ...] | None = None  # literal set for =~ and !~


def expected_selector_matchers(requirements: Sequence[Requirement]) -> list[Matcher]:
    out = []
    for requirement in requirements:
        values = tuple(sorted(set(requirement.values)))
        op = requirement.operator
        if op is Operator.EXISTS:
            out.append(Matcher(requirement.key, "!=", value=""))
        elif op is Operator.DOES_NOT_EXIST:
            out.append(Matcher(requirement.key, "=", value=""))
        elif op in (Operator.EQUALS, Operator.DOUBLE_EQUALS) and len(values) == 1:
            out.append(Matcher(requirement.key, "=", value=values[0]))
        elif op is Operator.NOT_EQUALS and len(values) == 1:
            out.append(Matcher(requirement.key, "!=", value=values[0]))
        elif op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            out.append(Matcher(requirement.key, "=~", alternatives=values))
        else:
            out.append(Matcher(requirement.key, "!~", alternatives=values))
    return out


def has_surrogate(value: str) -> bool:
    return any(0xD800 <= ord(char) <= 0xDFFF for char in value)


def must_refuse(
    sc: Scenario, *, namespace: str, names: Sequence[str], selector: Sequence[Requirement]
) -> bool:
    """Which requests the adapter must refuse (a 400), independent of its code."""
    uses_selector = sc.name in SELECTOR_SCENARIOS
    if sc.namespace_label is not None and (namespace == "" or has_surrogate(namespace)):
        return True
    if sc.resource_label is not None and (not names or any(has_surrogate(n) for n in names)):
        # (registry scenarios answer "not found" for no names before this oracle is asked)
        return True
    if not uses_selector:
        return False
    for requirement in selector:
        key, op, values = requirement.key, requirement.operator, set(requirement.values)
        if not LABEL_NAME.fullmatch(key) or key.startswith("__"):
            return True
        if key == sc.namespace_label:
            return True
        if op in (Operator.GREATER_THAN, Operator.LESS_THAN):
            return True
        if len(values) > MAX_SET_VALUES or any(has_surrogate(v) for v in values):
            return True
        if op in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
            return True
        if op not in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and not values:
            return True
    return False


class DeviationError(AssertionError):
    pass


def expected_tokens(sc: Scenario, matchers: list[Matcher]) -> list[Token | Matcher]:
    if sc.name == "values-by-name":
        # The template quotes LabelValuesByName itself: both are escaped regex alternations.
        namespace, names = matchers[-2], matchers[-1]
        values = names.alternatives if names.alternatives is not None else (names.value or "",)
        return [
            *tokenize(f"sum({sc.series}{{"),
            Matcher(sc.namespace_label or "", "=~", alternatives=(namespace.value or "",)),
            Token(PUNCT, ","),
            Matcher(sc.resource_label or "", "=~", alternatives=tuple(values)),
            *tokenize(f"}}) by ({sc.group_by[0]})"),
        ]
    out: list[Token | Matcher] = []
    parts = re.split(r"<<\s*\.(\w+)\s*>>", sc.template)
    for index, part in enumerate(parts):
        if index % 2 == 0:
            out.extend(tokenize(part))
        elif part == "Series":
            if sc.series:
                out.append(Token(IDENT, sc.series))
        elif part == "LabelMatchers":
            for position, matcher in enumerate(matchers):
                if position:
                    out.append(Token(PUNCT, ","))
                out.append(matcher)
        elif part == "GroupBy":
            for position, label in enumerate(sc.group_by):
                if position:
                    out.append(Token(PUNCT, ","))
                out.append(Token(IDENT, label))
        else:
            raise AssertionError(f"template field {part} not modelled")
    return out


def check_query(
    sc: Scenario,
    query: str,
    *,
    namespace: str,
    names: Sequence[str],
    selector: Sequence[Requirement],
) -> None:
    matchers = expected_selector_matchers(selector)
    if sc.namespace_label is not None:
        matchers.append(Matcher(sc.namespace_label, "=", value=namespace))
    if sc.resource_label is not None:
        if len(names) == 1:
            matchers.append(Matcher(sc.resource_label, "=", value=names[0]))
        else:
            matchers.append(Matcher(sc.resource_label, "=~", alternatives=tuple(names)))
    try:
        actual = tokenize(query)
    except LexError as exc:
        raise DeviationError(f"{sc.name}: rendered query does not lex ({exc}): {query!r}") from None
    expected = expected_tokens(sc, matchers)
    index = 0
    for item in expected:
        if isinstance(item, Token):
            if index >= len(actual) or actual[index] != item:
                got = actual[index] if index < len(actual) else "end of query"
                raise DeviationError(f"{sc.name}: expected {item}, got {got} in {query!r}")
            index += 1
            continue
        window = actual[index : index + 3]
        if (
            len(window) != 3
            or window[0] != Token(IDENT, item.name)
            or window[1] != Token(OP, item.op)
        ):
            raise DeviationError(f"{sc.name}: expected matcher {item}, got {window} in {query!r}")
        if window[2].kind != STRING:
            raise DeviationError(
                f"{sc.name}: value of {item.name} is not a string literal: {query!r}"
            )
        if item.value is not None and window[2].value != item.value:
            raise DeviationError(
                f"{sc.name}: {item.name} value {window[2].value!r} != {item.value!r}"
            )
        if item.alternatives is not None:
            try:
                literals = literal_alternation(window[2].value)
            except LexError as exc:
                raise DeviationError(
                    f"{sc.name}: regex of {item.name} not escaped: {exc}"
                ) from None
            if tuple(literals) != item.alternatives:
                raise DeviationError(
                    f"{sc.name}: regex of {item.name} is {literals}, not {item.alternatives}"
                )
        index += 3
    if index != len(actual):
        raise DeviationError(f"{sc.name}: trailing tokens {actual[index:]} in {query!r}")
    if sc.namespace_label is not None:
        seen = [
            actual[i + 2].value
            if actual[i + 1].value == "="
            else "|".join(literal_alternation(actual[i + 2].value))
            for i in range(len(actual) - 2)
            if actual[i] == Token(IDENT, sc.namespace_label) and actual[i + 1].kind == OP
        ]
        if seen != [namespace]:
            raise DeviationError(
                f"{sc.name}: namespace matchers {seen} for namespace {namespace!r}"
            )


# ----------------------------------------------------------------------------------- inputs

HOSTILE = [
    '"', "\\", "'", "`", "{", "}", "(", ")", "[", "]", ",", "|", "=", "~", "!", ".", "*", "+",
    "?", "^", "$", "#", "/", " ", "\n", "\r", "\t", "\x00", "\x7f", "\u2028", "\ufeff", "\u0085",
    "é", "中", "😀", "\u0301", "a", "b", "0", "-", "_",
]  # fmt: skip
PAYLOADS = [
    'x"} or up{a="',
    '"} or vector(1) #',
    "\\",
    '\\"',
    "a|.*",
    ".*",
    '"}[5m]) or on() vector(1) or sum(x{a="',
    "__name__",
    'namespace="kube-system"',
    "kube-system",
    ") or (",
    "\n# comment\n",
    "\u202e",
    "default",
    "web-1",
    "a.b",
]
KEYS = [
    "app",
    "team",
    "namespace",
    "kubernetes_namespace",
    "__name__",
    "__meta",
    "app.kubernetes.io/name",
    'a"b',
    "a b",
    "",
    "x-y",
    "_ok",
    "pod",
    "or",
    "by",
]

hostile_text = st.one_of(
    st.text(alphabet=st.sampled_from(HOSTILE), max_size=12),
    st.sampled_from([*PAYLOADS, "\ud800"]),  # a lone surrogate cannot be sent: must be refused
    st.text(max_size=8),
)
plain_value = st.text(alphabet="abcxyz019.-_", max_size=8)
name_list = st.lists(hostile_text, max_size=5)


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    key = draw(st.one_of(st.sampled_from(KEYS), st.sampled_from(["app", "team", "tier"])))
    op = draw(st.sampled_from(list(Operator)))
    size = draw(st.sampled_from([0, 1, 1, 1, 2, 3, MAX_SET_VALUES + 1]))
    if size > MAX_SET_VALUES:
        return Requirement.of(key, op, [f"v{i}" for i in range(size)])
    return Requirement.of(key, op, draw(st.lists(hostile_text, min_size=size, max_size=size)))


@st.composite
def selector_strings(draw: st.DrawFn) -> str:
    """Text in (and around) the Kubernetes selector grammar, with hostile keys and values."""
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(KEYS))
        op = draw(st.sampled_from(["=", "==", "!=", " in ", " notin ", "", "!", ">", "<"]))
        value = draw(st.one_of(st.sampled_from(PAYLOADS), plain_value))
        if op in (" in ", " notin "):
            values = draw(st.lists(plain_value, max_size=4))
            parts.append(f"{key}{op}({','.join([value, *values])})")
        elif op == "!":
            parts.append(f"!{key}")
        elif op == "":
            parts.append(key)
        else:
            parts.append(f"{key}{op}{value}")
    text = ",".join(parts)
    if draw(st.booleans()) and draw(st.booleans()):
        text += draw(hostile_text)
    return text


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, list[str], str | list[Requirement]]:
    name = draw(st.sampled_from([*SELECTOR_SCENARIOS, "container", "node"]))
    namespace = draw(hostile_text)
    names = draw(name_list)
    selector: str | list[Requirement]
    if draw(st.booleans()):
        selector = draw(selector_strings())
    else:
        selector = draw(st.lists(requirements(), max_size=2))
    return name, namespace, names, selector


STATS: Counter[str] = Counter()


@settings(
    max_examples=10_000,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(request=requests())
def run_fuzz(request: tuple[str, str, list[str], str | list[Requirement]]) -> None:
    name, namespace, names, raw_selector = request
    sc = scenario(name)
    STATS["requests"] += 1
    if name in REGISTRY_SCENARIOS and not names:
        # A selector that matched no objects: upstream answers "not found" without a query.
        assert render(name, namespace=namespace, names=names, selector=[]) is None
        STATS["not found (no objects)"] += 1
        return
    if isinstance(raw_selector, str):
        try:
            selector = list(parse_metric_selector(raw_selector))
        except BadQueryError:
            STATS["selector refused by grammar or limits"] += 1
            return
        oracle = None
    else:
        selector = raw_selector
        oracle = must_refuse(sc, namespace=namespace, names=names, selector=selector)
    try:
        query = render(name, namespace=namespace, names=names, selector=selector)
    except BadQueryError as exc:
        if oracle is False:
            raise DeviationError(f"{name}: refused a request the oracle accepts: {exc!r}") from None
        STATS["refused (400)"] += 1
        return
    if oracle is True:
        raise DeviationError(f"{name}: rendered a request that must be refused: {query!r}")
    assert query is not None, f"{name}: metric unexpectedly not found"
    uses_selector = name in SELECTOR_SCENARIOS
    check_query(
        sc,
        query,
        namespace=namespace,
        names=names,
        selector=selector if uses_selector else [],
    )
    STATS["rendered and checked"] += 1


@pytest.mark.slow
def test_injection_fuzz_finds_no_deviation() -> None:
    STATS.clear()
    run_fuzz()
    assert STATS["requests"] >= 10_000
    # The fuzz is only meaningful if plenty of hostile requests are actually rendered.
    assert STATS["rendered and checked"] >= 2_000, STATS
    assert STATS["refused (400)"] >= 1_000, STATS


def test_selector_over_4_kib_is_refused_before_parsing() -> None:
    selector = (
        "app in (" + ",".join(f"v{i}" for i in range(50)) + ")," + "a=" + "x" * MAX_SELECTOR_BYTES
    )
    with pytest.raises(SelectorTooLargeError, match="4096"):
        parse_metric_selector(selector)


def test_set_over_100_values_is_refused() -> None:
    selector = "app in (" + ",".join(f"v{i}" for i in range(MAX_SET_VALUES + 1)) + ")"
    with pytest.raises(TooManyValuesError):
        parse_metric_selector(selector)
    assert len(parse_metric_selector(selector.replace(",v100", ""))[0].values) == MAX_SET_VALUES


def test_a_hostile_name_stays_inside_its_string_literal() -> None:
    """The classic injection: close the string and the braces, OR in another selector."""
    hostile = 'x"} or up{a="'
    query = render("custom", namespace="default", names=[hostile, "b"], selector=[])
    assert query is not None
    check_query(scenario("custom"), query, namespace="default", names=[hostile, "b"], selector=[])
    assert " or up{" not in query
