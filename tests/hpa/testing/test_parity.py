"""``hpa.testing`` answers as the core does on the upstream reconcile table.

Every case of ``tests/parity/test_horizontal.py`` (``horizontal_test.go``'s ``TestScale*``,
``TestCondition*``, ...) is rebuilt in the test kit's terms (a spec, pods with requests and usage,
metric values, the scale, the history) and decided with :func:`hpa.testing.decide`; the whole
:class:`~hpa.core.decision.Decision` (replicas, status, conditions, events, error, history,
explanation) must equal the one the parity table computes with :func:`hpa.core.decision.decide`.
"""

from __future__ import annotations

import dataclasses

import pytest

from hpa.core.decision import SelectorCheck
from hpa.core.replicas import GO_ZERO_TIME
from hpa.core.selector import SelectorError, parse_selector
from hpa.core.spec import MetricSourceType
from hpa.testing import FakeMetrics, container, decide, hpa_from_spec
from tests.parity.test_horizontal import (
    ALL_SCALE_CASES,
    COOL,
    HOT,
    NOW,
    TEST_SETTINGS,
    HpaCase,
    _milli,
    _spec,
    run_case,
)

PER_OBJECT = (MetricSourceType.OBJECT, MetricSourceType.EXTERNAL)


def fake_metrics(case: HpaCase) -> FakeMetrics:
    """The case's fake clients, as :class:`FakeMetrics`."""
    levels = case.reported_levels
    specified = case.reported_cpu_requests is not None
    count = len(case.reported_cpu_requests or ()) if specified else case.status_replicas
    metrics = FakeMetrics().sample_window(60)
    per_pod = any(m.type not in PER_OBJECT for m in _spec(case).metrics)
    # samples beyond the listed pods: pods the metrics APIs report and the lister does not show
    for i in range(max(count, len(levels) if per_pod else 0)):
        listed = i < count
        requests = case.reported_cpu_requests
        request = _milli(requests[i]) if requests and listed else 1000
        usage = f"{levels[i] // 2}m" if i < len(levels) else None
        started: dict[str, object] = {}
        if case.reported_pod_start_time is None or not listed:
            started["started_at"] = GO_ZERO_TIME
        elif case.reported_pod_start_time[i] == HOT:
            started["started_ago"] = 0
        else:
            assert case.reported_pod_start_time[i] == COOL
            started["started_ago"] = "3m"
        metrics = metrics.pod(
            f"test-pod-{i}",
            containers=[
                container("container1", cpu=usage, cpu_request=f"{request // 2}m"),
                container("container2", cpu=usage, cpu_request=f"{request // 2}m"),
            ],
            ready=True
            if not (case.reported_pod_readiness and listed)
            else (case.reported_pod_readiness[i]),
            phase=case.reported_pod_phase[i] if case.reported_pod_phase and listed else "Running",
            deleting=bool(
                listed
                and case.reported_pod_deletion_timestamp
                and case.reported_pod_deletion_timestamp[i]
            ),
            listed=listed,
            metrics={"qps": f"{levels[i]}m"} if i < len(levels) else {},
            **started,  # type: ignore[arg-type]
        )
    metrics = metrics.replicas(case.spec_replicas, status=case.status_replicas)
    metrics = metrics.selector(case.selector)
    if levels:
        metrics = metrics.object_metric("qps", f"{levels[0]}m")
    metrics = metrics.external_metric("qps", *(f"{level}m" for level in levels))
    for metric in _spec(case).metrics:
        error = case.metrics_error
        if metric.type == MetricSourceType.EXTERNAL and case.external_metrics_error:
            error = case.external_metrics_error
        if error is not None:
            source = metric.resource or metric.container_resource
            metrics = metrics.metric_error("cpu" if source else "qps", error)
    if case.scale_fetch_error is not None:
        metrics = metrics.scale_read_fails(case.scale_fetch_error)
    if case.scale_update_error is not None:
        metrics = metrics.scale_update_fails(case.scale_update_error)
    others = [k for k in case.selector_check.selecting_hpas if k != "test-namespace/test-hpa"]
    metrics = metrics.also_selected_by(*others)
    if case.recommendations is not None:
        metrics = metrics.no_recommendations()
        for recommendation in case.recommendations:
            metrics = metrics.recommendation(
                recommendation.recommendation, NOW - recommendation.timestamp
            )
    return metrics


def _parse_error(text: str) -> str:
    with pytest.raises(SelectorError) as error:
        parse_selector(text)
    return str(error.value)


@pytest.mark.parametrize("case", ALL_SCALE_CASES, ids=lambda c: c.name)
def test_same_decision_as_the_core(case: HpaCase) -> None:
    hpa = hpa_from_spec(_spec(case), name="test-hpa", namespace="test-namespace")
    result = decide(hpa, fake_metrics(case), now=NOW, settings=TEST_SETTINGS)
    if case.selector_check.parse_error is not None:
        # the table's text is made up (upstream compares only the condition's reason); the kit
        # parses the selector as the controller does
        check = SelectorCheck(parse_error=_parse_error(case.selector))
        case = dataclasses.replace(case, selector_check=check)
    expected = run_case(case)
    assert result.decision == expected
    assert result.desired_replicas == case.expected_desired_replicas
