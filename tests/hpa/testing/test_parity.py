"""``hpa.testing`` answers as the core does on the upstream reconcile table.

Every case of ``tests/parity/test_horizontal.py`` (``horizontal_test.go``'s ``TestScale*``,
``TestCondition*``, ...) is rebuilt in the test kit's terms (a spec, pods with requests and usage,
metric values, the scale, the history) and decided with :func:`hpa.testing.decide`; the whole
:class:`~hpa.core.decision.Decision` (replicas, status, conditions, events, error, history,
explanation) must equal the one the parity table computes with :func:`hpa.core.decision.decide`.
The behavior tables of the same file go through a whole sync too (below).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from hpa.core.decision import SelectorCheck
from hpa.core.replicas import GO_ZERO_TIME
from hpa.core.selector import SelectorError, parse_selector
from hpa.core.spec import (
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    MetricIdentifier,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ScalingPolicy,
    ScalingPolicyType,
    ScalingRules,
)
from hpa.testing import HPA, FakeMetrics, container, decide, hpa_from_spec
from tests.parity.test_horizontal import (
    ALL_SCALE_CASES,
    BEHAVIOR_STABILIZE_CASES,
    COOL,
    HOT,
    NORMALIZE_CASES,
    NOW,
    SCALING_WITH_RULES_CASES,
    TEST_SETTINGS,
    BehaviorStabilizeCase,
    HpaCase,
    RulesCase,
    StabilizeCase,
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


# ------------------------------------------------ the behavior tables, through a whole sync
#
# The function-level tables of horizontal_test.go (TestNormalizeDesiredReplicas,
# TestNormalizeDesiredReplicasWithBehavior, TestScalingWithRules) give a prenormalized replica
# count; here an External metric (AverageValue 1, tolerance 0) proposes exactly that count, so the
# table's recommendations, scale events and rules go through decide() end to end.

QUEUE = "queue"


def _queue_hpa(
    *, min_replicas: int, max_replicas: int, behavior: HorizontalPodAutoscalerBehavior | None
) -> HPA:
    metric = MetricSpec.for_external(
        ExternalMetricSource(
            MetricIdentifier(QUEUE),
            MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=1000),
        )
    )
    spec = HorizontalPodAutoscalerSpec(
        scale_target_ref=CrossVersionObjectReference("Deployment", "web", "apps/v1"),
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        metrics=(metric,),
        behavior=behavior,
    )
    return hpa_from_spec(spec, name="queue", namespace="test-namespace")


def _proposing(proposal: int, *, current: int) -> FakeMetrics:
    return FakeMetrics().replicas(current).external_metric(QUEUE, proposal).no_recommendations()


EXACT = replace(TEST_SETTINGS, tolerance=0.0)


@pytest.mark.parametrize(
    "case", NORMALIZE_CASES, ids=lambda c: f"TestNormalizeDesiredReplicas/{c.name}"
)
def test_normalize_table_through_a_sync(case: StabilizeCase) -> None:
    hpa = _queue_hpa(min_replicas=1, max_replicas=100, behavior=None)
    current = case.prenormalized_desired_replicas
    metrics = _proposing(current, current=current)
    for recommendation in case.recommendations:
        metrics = metrics.recommendation(
            recommendation.recommendation, NOW - recommendation.timestamp
        )
    result = decide(hpa, metrics, now=NOW, settings=EXACT)
    assert result.desired_replicas == case.expected_stabilized_replicas
    assert result.history.recommendations is not None
    assert len(result.history.recommendations) == case.expected_log_length


@pytest.mark.parametrize(
    "case",
    BEHAVIOR_STABILIZE_CASES,
    ids=lambda c: f"TestNormalizeDesiredReplicasWithBehavior/{c.name}",
)
def test_behavior_stabilization_table_through_a_sync(case: BehaviorStabilizeCase) -> None:
    unlimited = (ScalingPolicy(ScalingPolicyType.PODS, 100000, 1),)
    behavior = HorizontalPodAutoscalerBehavior(
        scale_up=ScalingRules(
            stabilization_window_seconds=case.scale_up_stabilization_window_seconds,
            policies=unlimited,
        ),
        scale_down=ScalingRules(
            stabilization_window_seconds=case.scale_down_stabilization_window_seconds,
            policies=unlimited,
        ),
    )
    hpa = _queue_hpa(min_replicas=0, max_replicas=100000, behavior=behavior)
    metrics = _proposing(case.prenormalized_desired_replicas, current=case.current_replicas)
    for recommendation in case.recommendations:
        metrics = metrics.recommendation(
            recommendation.recommendation, NOW - recommendation.timestamp
        )
    result = decide(hpa, metrics, now=NOW, settings=EXACT)
    assert result.desired_replicas == case.expected_stabilized_replicas
    if case.expected_recommendations is not None:
        log = result.history.recommendations or ()
        assert tuple(r.recommendation for r in log) == case.expected_recommendations


def _normalized_by_reconcile(case: RulesCase) -> bool:
    """Reconcile normalizes only a target within [min, max] and above zero (else it sets the
    bound directly, or leaves a target at zero alone)."""
    return case.current_replicas > 0 and (
        case.spec_min_replicas <= case.current_replicas <= case.spec_max_replicas
    )


@pytest.mark.parametrize(
    "case",
    [c for c in SCALING_WITH_RULES_CASES if _normalized_by_reconcile(c)],
    ids=lambda c: f"TestScalingWithRules/{c.name}",
)
def test_scaling_with_rules_table_through_a_sync(case: RulesCase) -> None:
    behavior = HorizontalPodAutoscalerBehavior(case.scale_up_rules, case.scale_down_rules)
    hpa = _queue_hpa(
        min_replicas=case.spec_min_replicas,
        max_replicas=case.spec_max_replicas,
        behavior=behavior,
    )
    metrics = _proposing(case.prenormalized_desired_replicas, current=case.current_replicas)
    for event in case.scale_up_events:
        metrics = metrics.scale_up_event(event.replica_change, NOW - event.timestamp)
    for event in case.scale_down_events:
        metrics = metrics.scale_down_event(event.replica_change, NOW - event.timestamp)
    result = decide(hpa, metrics, now=NOW, settings=EXACT)
    assert result.desired_replicas == case.expected_replicas
    limited = result.condition("ScalingLimited")
    assert limited is not None
    assert limited.reason == case.expected_condition
