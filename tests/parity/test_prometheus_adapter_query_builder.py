"""Parity with prometheus-adapter ``pkg/external-provider/query_builder_test.go``.

Every ``Test*QueryWith{No,One,Multiple}LabelValues`` case (9 operators x 3 = 27),
``TestBadQueryPartsDontBuildQueries`` and ``TestQueryWithGroupBy``. Today's upstream runs the same
``selectMatcher``/``selectTargetValue`` logic from ``pkg/naming/metrics_query.go``; here it is
``MetricsQuery.build_external`` of a non-namespaced rule (upstream's builder had no namespace).
An expectation of ``None`` means upstream returns an error; here that is a ``BadQueryError``.
"""

# ruff: noqa: E501  (expected PromQL strings stay on one line, as in the Go tables)

from __future__ import annotations

import pytest

from adapter.rules import BadQueryError, GroupResource, Operator, Requirement
from adapter.rules.config import QUERY_TEMPLATE_ARGS
from adapter.rules.gotemplate import parse_template
from adapter.rules.naming import MetricsQuery


class NoLabels:
    """A rule without resource labels; the builder never asks for one."""

    def label_for_resource(self, resource: GroupResource) -> str:
        raise AssertionError(f"unexpected label lookup for {resource}")


def build(template: str, parts: list[Requirement], *, group_by: str = "") -> str:
    compiled = parse_template(template, name="metrics-query", root=QUERY_TEMPLATE_ARGS)
    query = MetricsQuery(compiled, NoLabels(), namespaced=False)
    return query.build_external(
        "my_series", namespace=None, metric_selector=parts, group_by=group_by
    )


RATE = "rate(<<.Series>>{<<.LabelMatchers>>}[2m])"

CASES: list[tuple[str, Operator, tuple[str, ...], str | None]] = [
    ("TestEqualsQueryWithNoLabelValues", Operator.EQUALS, (), None),
    ("TestEqualsQueryWithOneLabelValue", Operator.EQUALS, ("one",), 'rate(my_series{target_label="one"}[2m])'),
    ("TestEqualsQueryWithMultipleLabelValues", Operator.EQUALS, ("one", "two"), 'rate(my_series{target_label=~"one|two"}[2m])'),
    ("TestDoubleEqualsQueryWithNoLabelValues", Operator.DOUBLE_EQUALS, (), None),
    ("TestDoubleEqualsQueryWithOneLabelValue", Operator.DOUBLE_EQUALS, ("one",), 'rate(my_series{target_label="one"}[2m])'),
    ("TestDoubleEqualsQueryWithMultipleLabelValues", Operator.DOUBLE_EQUALS, ("one", "two"), 'rate(my_series{target_label=~"one|two"}[2m])'),
    ("TestNotEqualsQueryWithNoLabelValues", Operator.NOT_EQUALS, (), None),
    ("TestNotEqualsQueryWithOneLabelValue", Operator.NOT_EQUALS, ("one",), 'rate(my_series{target_label!="one"}[2m])'),
    ("TestNotEqualsQueryWithMultipleLabelValues", Operator.NOT_EQUALS, ("one", "two"), 'rate(my_series{target_label!~"one|two"}[2m])'),
    ("TestInQueryWithNoLabelValues", Operator.IN, (), None),
    ("TestInQueryWithOneLabelValue", Operator.IN, ("one",), 'rate(my_series{target_label=~"one"}[2m])'),
    ("TestInQueryWithMultipleLabelValues", Operator.IN, ("one", "two"), 'rate(my_series{target_label=~"one|two"}[2m])'),
    ("TestNotInQueryWithNoLabelValues", Operator.NOT_IN, (), None),
    ("TestNotInQueryWithOneLabelValue", Operator.NOT_IN, ("one",), 'rate(my_series{target_label!~"one"}[2m])'),
    ("TestNotInQueryWithMultipleLabelValues", Operator.NOT_IN, ("one", "two"), 'rate(my_series{target_label!~"one|two"}[2m])'),
    ("TestExistsQueryWithNoLabelValues", Operator.EXISTS, (), 'rate(my_series{target_label!=""}[2m])'),
    ("TestExistsQueryWithOneLabelValue", Operator.EXISTS, ("one",), None),
    ("TestExistsQueryWithMultipleLabelValues", Operator.EXISTS, ("one", "two"), None),
    ("TestDoesNotExistsQueryWithNoLabelValues", Operator.DOES_NOT_EXIST, (), 'rate(my_series{target_label=""}[2m])'),
    ("TestDoesNotExistsQueryWithOneLabelValue", Operator.DOES_NOT_EXIST, ("one",), None),
    ("TestDoesNotExistsQueryWithMultipleLabelValues", Operator.DOES_NOT_EXIST, ("one", "two"), None),
    ("TestGreaterThanQueryWithNoLabelValues", Operator.GREATER_THAN, (), None),
    ("TestGreaterThanQueryWithOneLabelValue", Operator.GREATER_THAN, ("one",), None),
    ("TestGreaterThanQueryWithMultipleLabelValues", Operator.GREATER_THAN, ("one", "two"), None),
    ("TestLessThanQueryWithNoLabelValues", Operator.LESS_THAN, (), None),
    ("TestLessThanQueryWithOneLabelValue", Operator.LESS_THAN, ("one",), None),
    ("TestLessThanQueryWithMultipleLabelValues", Operator.LESS_THAN, ("one", "two"), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "operator", "values", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_query_builder(
    name: str, operator: Operator, values: tuple[str, ...], expected: str | None
) -> None:
    parts = [Requirement("target_label", operator, values)]
    if expected is None:
        with pytest.raises(BadQueryError):
            build(RATE, parts)
    else:
        assert build(RATE, parts) == expected


def test_bad_query_parts_dont_build_queries() -> None:
    parts = [Requirement("", Operator.EQUALS, ()), Requirement("", Operator.EQUALS, ())]
    with pytest.raises(BadQueryError, match="label not specified"):
        build(RATE, parts)


def test_query_with_group_by() -> None:
    parts = [Requirement("target_label", Operator.IN, ("one", "two"))]
    query = build(
        "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
        parts,
        group_by="my_grouping",
    )
    assert query == 'sum(rate(my_series{target_label=~"one|two"}[2m])) by (my_grouping)'
