"""hpa.core.decision: scale to zero (KEP-2021), conditions, events, rescale results, properties.

The upstream reconcile tables are in tests/parity/test_horizontal.py; here are the behaviours those
tables do not cover (the ScaledToZero condition, lastTransitionTime, apply_rescale_result, the
explanation) and the invariants over generated inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpa.core.behavior import TimestampedRecommendation
from hpa.core.conditions import (
    ConditionStatus,
    Event,
    HorizontalPodAutoscalerCondition,
    find_condition,
)
from hpa.core.decision import (
    CurrentScale,
    Decision,
    ExternalMetricObservation,
    History,
    HorizontalPodAutoscalerStatus,
    MetricFetchError,
    MetricObservation,
    ObjectMetricObservation,
    PodMetricsObservation,
    SelectorCheck,
    apply_rescale_result,
    decide,
)
from hpa.core.replicas import ContainerInfo, PodCondition, PodInfo, PodMetric, PodPhase
from hpa.core.spec import (
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    HorizontalSettings,
    LabelSelector,
    MetricIdentifier,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
    ScalingPolicy,
    ScalingPolicyType,
    ScalingRules,
)

# generation of these inputs is legitimately slow on a loaded 2-core CI runner
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
NOW = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)
EARLIER = NOW - timedelta(hours=2)
SETTINGS = HorizontalSettings()
TARGET = CrossVersionObjectReference("Deployment", "worker", "apps/v1")

QUEUE = MetricSpec.for_external(
    ExternalMetricSource(
        MetricIdentifier("queue_depth", LabelSelector(match_labels=(("queue", "jobs"),))),
        MetricTarget(MetricTargetType.VALUE, value_milli=10_000),
    )
)
CPU = MetricSpec.for_resource(
    ResourceMetricSource("cpu", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=50))
)


def pod(name: str, *, ready: bool = True, phase: PodPhase = PodPhase.RUNNING) -> PodInfo:
    return PodInfo(
        name=name,
        phase=phase,
        ready_condition=PodCondition(
            ConditionStatus.TRUE if ready else ConditionStatus.FALSE, EARLIER
        ),
        start_time=EARLIER,
        containers=(ContainerInfo("app", {"cpu": 1000}),),
    )


def cpu_samples(*milli: int) -> PodMetricsObservation:
    return PodMetricsObservation(
        {f"p{i}": PodMetric(m, NOW - timedelta(seconds=10), 30.0) for i, m in enumerate(milli)},
        timestamp=NOW,
    )


def spec(
    *metrics: MetricSpec,
    min_replicas: int = 1,
    max_replicas: int = 10,
    behavior: HorizontalPodAutoscalerBehavior | None = None,
) -> HorizontalPodAutoscalerSpec:
    return HorizontalPodAutoscalerSpec(
        scale_target_ref=TARGET,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        metrics=metrics,
        behavior=behavior,
    )


def condition(
    kind: str, status: ConditionStatus, reason: str, at: datetime = EARLIER
) -> HorizontalPodAutoscalerCondition:
    return HorizontalPodAutoscalerCondition(kind, status, reason, "", at)


SCALED_TO_ZERO_TRUE = condition("ScaledToZero", ConditionStatus.TRUE, "ScaledToZero")


def run(
    hpa: HorizontalPodAutoscalerSpec,
    *,
    replicas: int,
    observations: Sequence[MetricObservation | None],
    pods: Sequence[PodInfo] = (),
    conditions: tuple[HorizontalPodAutoscalerCondition, ...] = (),
    history: History | None = None,
    settings_: HorizontalSettings = SETTINGS,
    succeeded: bool = True,
) -> Decision:
    decision = decide(
        hpa,
        current=CurrentScale(replicas, replicas, "app=worker"),
        observations=observations,
        pods=pods,
        history=history if history is not None else History(recommendations=()),
        previous_status=HorizontalPodAutoscalerStatus(
            current_replicas=replicas, desired_replicas=replicas, conditions=conditions
        ),
        now=NOW,
        settings=settings_,
        namespace="jobs",
    )
    if decision.rescale:
        decision = apply_rescale_result(
            decision, succeeded=succeeded, error=None if succeeded else "conflict", now=NOW
        )
    return decision


# ----------------------------------------------------------------- scale to zero (KEP-2021)


def test_scaling_to_zero_records_scaled_to_zero_true() -> None:
    decision = run(
        spec(QUEUE, min_replicas=0),
        replicas=3,
        observations=[ExternalMetricObservation((0,))],
        pods=[pod("p0"), pod("p1"), pod("p2")],
    )
    assert decision.rescale
    assert decision.desired_replicas == 0
    found = find_condition(decision.status.conditions, "ScaledToZero")
    assert found == HorizontalPodAutoscalerCondition(
        "ScaledToZero",
        ConditionStatus.TRUE,
        "ScaledToZero",
        "the HPA controller scaled the workload to zero",
        NOW,
    )
    assert decision.rescale_reason == "All metrics below target"


def test_at_zero_with_scaled_to_zero_the_hpa_wakes_up_and_clears_the_condition() -> None:
    decision = run(
        spec(QUEUE, min_replicas=0),
        replicas=0,
        observations=[ExternalMetricObservation((25_000,))],
        conditions=(SCALED_TO_ZERO_TRUE,),
    )
    # from zero, a Value target proposes ceil(25 / 10) without tolerance or pod count
    assert decision.desired_replicas == 3
    assert decision.rescale_reason == (
        "external metric queue_depth(&LabelSelector{MatchLabels:map[string]string{queue: jobs,},"
        "MatchExpressions:[]LabelSelectorRequirement{},}) above target"
    )
    found = find_condition(decision.status.conditions, "ScaledToZero")
    assert found is not None
    assert (found.status, found.reason) == (ConditionStatus.FALSE, "NotScaledToZero")
    assert found.last_transition_time == NOW


def test_at_zero_without_the_condition_the_target_is_paused_even_with_min_zero() -> None:
    decision = run(
        spec(QUEUE, min_replicas=0),
        replicas=0,
        observations=[ExternalMetricObservation((25_000,))],
    )
    assert not decision.rescale
    assert decision.desired_replicas == 0
    active = find_condition(decision.status.conditions, "ScalingActive")
    assert active is not None
    assert (active.status, active.reason) == (ConditionStatus.FALSE, "ScalingDisabled")
    assert decision.events == ()


def test_maintenance_mode_zero_replicas_with_min_one_disables_scaling() -> None:
    decision = run(spec(CPU), replicas=0, observations=[cpu_samples()])
    assert not decision.rescale
    assert decision.status.desired_replicas == 0
    assert [(c.type, c.reason) for c in decision.status.conditions] == [
        ("AbleToScale", "SucceededGetScale"),
        ("ScalingActive", "ScalingDisabled"),
    ]


def test_waking_from_zero_after_min_replicas_was_raised_goes_to_min() -> None:
    decision = run(
        spec(QUEUE, min_replicas=2),
        replicas=0,
        observations=[ExternalMetricObservation((0,))],
        conditions=(SCALED_TO_ZERO_TRUE,),
    )
    assert decision.rescale
    assert decision.desired_replicas == 2
    limited = find_condition(decision.status.conditions, "ScalingLimited")
    assert limited is not None
    assert limited.reason == "TooFewReplicas"


def test_waking_from_zero_with_a_behavior_is_raised_to_min_after_normalization() -> None:
    decision = run(
        spec(QUEUE, min_replicas=2, behavior=HorizontalPodAutoscalerBehavior()),
        replicas=0,
        observations=[ExternalMetricObservation((0,))],
        conditions=(SCALED_TO_ZERO_TRUE,),
    )
    assert decision.rescale
    assert decision.desired_replicas == 2
    assert decision.explanation.render().count("raised to minReplicas 2") == 1


def test_scaled_to_zero_stays_true_while_the_metric_stays_at_zero() -> None:
    decision = run(
        spec(QUEUE, min_replicas=0),
        replicas=0,
        observations=[ExternalMetricObservation((0,))],
        conditions=(SCALED_TO_ZERO_TRUE,),
    )
    assert not decision.rescale
    assert find_condition(decision.status.conditions, "ScaledToZero") == SCALED_TO_ZERO_TRUE


def test_cpu_only_hpa_scaled_to_zero_records_not_scaled_to_zero() -> None:
    decision = run(
        spec(CPU, min_replicas=0),
        replicas=2,
        observations=[cpu_samples(0, 0)],
        pods=[pod("p0"), pod("p1")],
    )
    assert decision.desired_replicas == 0
    found = find_condition(decision.status.conditions, "ScaledToZero")
    assert found is not None
    assert found.reason == "NotScaledToZero"


def test_gate_off_evaluates_metrics_at_zero_with_min_zero_and_drops_the_condition() -> None:
    legacy = HorizontalSettings(scale_to_zero_enabled=False)
    decision = run(
        spec(QUEUE, min_replicas=0),
        replicas=0,
        observations=[ExternalMetricObservation((25_000,))],
        conditions=(SCALED_TO_ZERO_TRUE,),
        settings_=legacy,
    )
    assert decision.desired_replicas == 3
    assert find_condition(decision.status.conditions, "ScaledToZero") is None


WAKING_OBJECT = MetricSpec.for_object(
    ObjectMetricSource(
        CrossVersionObjectReference("Service", "front", "v1"),
        MetricIdentifier("rps"),
        MetricTarget(MetricTargetType.VALUE, value_milli=1000),
    )
)


SLOW_UP = HorizontalPodAutoscalerBehavior(
    scale_up=ScalingRules(policies=(ScalingPolicy(ScalingPolicyType.PODS, 1, 60),))
)


# with a behavior, normalization keeps 0 and the wake-up raise to minReplicas gives the reason
@pytest.mark.parametrize(
    ("metric", "observation", "behavior"),
    [
        (WAKING_OBJECT, ObjectMetricObservation(0), HorizontalPodAutoscalerBehavior()),
        (WAKING_OBJECT, ObjectMetricObservation(0), SLOW_UP),
        (QUEUE, ExternalMetricObservation((0,)), HorizontalPodAutoscalerBehavior()),
        (QUEUE, ExternalMetricObservation((0,)), SLOW_UP),
    ],
)
def test_waking_from_zero_to_min_replicas_gives_upstreams_reason(
    metric: MetricSpec,
    observation: MetricObservation,
    behavior: HorizontalPodAutoscalerBehavior | None,
) -> None:
    decision = run(
        spec(metric, min_replicas=2, behavior=behavior),
        replicas=0,
        observations=[observation],
        conditions=(SCALED_TO_ZERO_TRUE,),
    )
    assert (decision.rescale, decision.desired_replicas) == (True, 2)
    assert decision.rescale_reason == "Current number of replicas below Spec.MinReplicas"
    assert decision.events[-1] == Event(
        "Normal",
        "SuccessfulRescale",
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas",
    )


@pytest.mark.parametrize(
    ("gate", "min_replicas", "leftover", "kept"),
    [
        # gate off, scaling disabled at zero: upstream removes the leftover condition
        (False, 1, SCALED_TO_ZERO_TRUE, None),
        (False, 2, SCALED_TO_ZERO_TRUE, None),
        (False, 1, condition("ScaledToZero", ConditionStatus.FALSE, "NotScaledToZero"), None),
        # gate on, paused at zero: the condition is the gate's to keep
        (
            True,
            0,
            condition("ScaledToZero", ConditionStatus.FALSE, "NotScaledToZero"),
            condition("ScaledToZero", ConditionStatus.FALSE, "NotScaledToZero"),
        ),
    ],
)
def test_scaling_disabled_at_zero_and_the_scaled_to_zero_condition(
    gate: bool,
    min_replicas: int,
    leftover: HorizontalPodAutoscalerCondition,
    kept: HorizontalPodAutoscalerCondition | None,
) -> None:
    decision = run(
        spec(QUEUE, min_replicas=min_replicas),
        replicas=0,
        observations=[ExternalMetricObservation((25_000,))],
        conditions=(leftover,),
        settings_=HorizontalSettings(scale_to_zero_enabled=gate),
    )
    assert (decision.rescale, decision.desired_replicas) == (False, 0)
    active = find_condition(decision.status.conditions, "ScalingActive")
    assert active is not None
    assert (active.status, active.reason) == (ConditionStatus.FALSE, "ScalingDisabled")
    assert find_condition(decision.status.conditions, "ScaledToZero") == kept


# ------------------------------------------------------------------------ conditions, events


def test_last_transition_time_changes_only_when_status_flips_and_order_is_kept() -> None:
    previous = (
        condition("ScalingLimited", ConditionStatus.FALSE, "DesiredWithinRange"),
        condition("AbleToScale", ConditionStatus.TRUE, "ReadyForNewScale"),
        condition("ScalingActive", ConditionStatus.FALSE, "FailedGetResourceMetric"),
    )
    decision = run(
        spec(CPU, max_replicas=3),
        replicas=2,
        observations=[cpu_samples(500, 500)],
        pods=[pod("p0"), pod("p1")],
        conditions=previous,
    )
    assert not decision.rescale
    by_type = {c.type: c for c in decision.status.conditions}
    assert [c.type for c in decision.status.conditions] == [
        "ScalingLimited",
        "AbleToScale",
        "ScalingActive",
    ]
    assert by_type["ScalingLimited"].last_transition_time == EARLIER  # still False
    assert by_type["AbleToScale"].last_transition_time == EARLIER  # still True
    assert by_type["ScalingActive"].last_transition_time == NOW  # False -> True
    assert by_type["ScalingActive"].reason == "ValidMetricFound"


def test_failed_scale_update_keeps_the_old_desired_replicas_and_reports_it() -> None:
    decision = run(
        spec(CPU),
        replicas=2,
        observations=[cpu_samples(1000, 1000)],
        pods=[pod("p0"), pod("p1")],
        succeeded=False,
    )
    assert decision.rescale
    assert decision.rescale_succeeded is False
    assert decision.desired_replicas == 4
    assert decision.status.desired_replicas == 2
    assert decision.status.last_scale_time is None
    assert decision.events[-1] == Event(
        "Warning",
        "FailedRescale",
        "New size: 4; reason: cpu resource utilization (percentage of request) above target; "
        "error: conflict",
    )
    able = find_condition(decision.status.conditions, "AbleToScale")
    assert able is not None
    assert (able.status, able.reason) == (ConditionStatus.FALSE, "FailedUpdateScale")
    assert decision.error == "failed to rescale Deployment/jobs/worker: conflict"


def test_successful_rescale_sets_last_scale_time_and_stores_a_scale_event() -> None:
    behavior = HorizontalPodAutoscalerBehavior(
        scale_up=ScalingRules(policies=(ScalingPolicy(ScalingPolicyType.PODS, 1, 60),))
    )
    decision = run(
        spec(CPU, behavior=behavior),
        replicas=2,
        observations=[cpu_samples(1000, 1000)],
        pods=[pod("p0"), pod("p1")],
    )
    assert decision.desired_replicas == 3  # Pods policy: +1 per minute
    assert decision.rescale_succeeded is True
    assert decision.status.last_scale_time == NOW
    assert [(e.replica_change, e.timestamp) for e in decision.history.scale_up_events] == [(1, NOW)]
    limited = find_condition(decision.status.conditions, "ScalingLimited")
    assert limited is not None
    assert limited.reason == "ScaleUpLimit"
    assert "ScaleUpLimit: 4 -> 3" in decision.explanation.render()


def test_no_scale_events_are_stored_without_a_behavior() -> None:
    decision = run(
        spec(CPU), replicas=2, observations=[cpu_samples(1000, 1000)], pods=[pod("p0"), pod("p1")]
    )
    assert decision.rescale_succeeded is True
    assert decision.history.scale_up_events == ()
    assert decision.history.scale_down_events == ()


def test_all_metrics_failing_reports_the_first_failure() -> None:
    pods_metric = MetricSpec.for_pods(
        PodsMetricSource(
            MetricIdentifier("rps"),
            MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=100),
        )
    )
    decision = run(
        spec(CPU, pods_metric),
        replicas=2,
        observations=[MetricFetchError("boom"), MetricFetchError("bang")],
        pods=[pod("p0"), pod("p1")],
    )
    assert not decision.rescale
    active = find_condition(decision.status.conditions, "ScalingActive")
    assert active is not None
    assert active.reason == "FailedGetResourceMetric"
    assert active.message == (
        "the HPA was unable to compute the replica count: failed to get cpu utilization: "
        "unable to get metrics for resource cpu: boom"
    )
    assert [e.reason for e in decision.events] == [
        "FailedGetResourceMetric",
        "FailedGetPodsMetric",
        "FailedComputeMetricsReplicas",
    ]
    assert decision.events[-1].message == (
        "invalid metrics (2 invalid out of 2), first error is: failed to get cpu resource metric "
        "value: failed to get cpu utilization: unable to get metrics for resource cpu: boom"
    )
    assert decision.status.current_metrics is not None
    assert [m.type for m in decision.status.current_metrics] == ["", ""]


def test_object_fetch_errors_keep_upstreams_argument_order() -> None:
    obj = MetricSpec.for_object(
        ObjectMetricSource(
            CrossVersionObjectReference("Service", "front", "v1"),
            MetricIdentifier("rps"),
            MetricTarget(MetricTargetType.VALUE, value_milli=1000),
        )
    )
    decision = run(spec(obj), replicas=2, observations=[MetricFetchError("timeout")])
    assert decision.events[0] == Event(
        "Warning",
        "FailedGetObjectMetric",
        "unable to get metric rps: Service on jobs front/timeout",
    )


def test_missing_selector_and_ambiguous_selector() -> None:
    hpa = spec(CPU)
    missing = decide(
        hpa,
        current=CurrentScale(2, 2, ""),
        observations=[cpu_samples(100, 100)],
        pods=[],
        history=History(),
        previous_status=HorizontalPodAutoscalerStatus(),
        now=NOW,
        settings=SETTINGS,
    )
    assert missing.events[0] == Event("Warning", "SelectorRequired", "selector is required")
    ambiguous = decide(
        hpa,
        current=CurrentScale(2, 2, "app=worker"),
        observations=[cpu_samples(100, 100)],
        pods=[pod("p0"), pod("p1")],
        history=History(),
        previous_status=HorizontalPodAutoscalerStatus(),
        now=NOW,
        settings=SETTINGS,
        selector_check=SelectorCheck(selecting_hpas=("jobs/a", "jobs/b")),
    )
    assert ambiguous.events[0] == Event(
        "Warning",
        "AmbiguousSelector",
        "pods by selector app=worker are controlled by multiple HPAs: [jobs/a jobs/b]",
    )
    assert not ambiguous.rescale


def test_explanation_names_the_pods_set_aside_and_why() -> None:
    decision = run(
        spec(CPU),
        replicas=4,
        observations=[cpu_samples(900, 900, 900)],
        pods=[pod("p0"), pod("p1"), pod("p2", ready=False), pod("p3", phase=PodPhase.FAILED)],
    )
    text = decision.explanation.render()
    assert "set aside: ignored (deleted or failed): p3" in text
    assert "counted at 0 (scale-up): p2" in text
    assert "cpu resource utilization (percentage of request): proposes" in text
    assert str(decision.explanation) == text


def test_per_direction_tolerance_needs_the_gate() -> None:
    behavior = HorizontalPodAutoscalerBehavior(scale_up=ScalingRules(tolerance=0.01))
    hpa = spec(CPU, behavior=behavior)
    observations = [cpu_samples(525, 525)]  # 52 % against a 50 % target: ratio 1.04
    pods = [pod("p0"), pod("p1")]
    gated = run(hpa, replicas=2, observations=observations, pods=pods)
    assert gated.desired_replicas == 3  # ceil(1.04 * 2): outside the 1 % scale-up tolerance
    ungated = run(
        hpa,
        replicas=2,
        observations=observations,
        pods=pods,
        settings_=HorizontalSettings(configurable_tolerance_enabled=False),
    )
    assert not ungated.rescale  # within the 10 % flag tolerance


def test_first_reconcile_seeds_recommendations_and_stabilizes_scale_down() -> None:
    decision = run(
        spec(CPU),
        replicas=4,
        observations=[cpu_samples(100, 100, 100, 100)],
        pods=[pod(f"p{i}") for i in range(4)],
        history=History(recommendations=None),
    )
    assert not decision.rescale
    assert decision.history.recommendations is not None
    assert [r.recommendation for r in decision.history.recommendations] == [4, 1]


# --------------------------------------------------------------------------------- properties


@dataclass(frozen=True)
class Scenario:
    hpa: HorizontalPodAutoscalerSpec
    replicas: int
    pods: tuple[PodInfo, ...]
    observations: tuple[MetricObservation, ...]
    conditions: tuple[HorizontalPodAutoscalerCondition, ...]
    history: History
    settings: HorizontalSettings


POD_METRIC = MetricSpec.for_pods(
    PodsMetricSource(
        MetricIdentifier("rps"),
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=500),
    )
)
PER_POD_QUEUE = MetricSpec.for_external(
    ExternalMetricSource(
        MetricIdentifier("queue_depth"),
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=2_000),
    )
)
OBJECT_VALUE = MetricSpec.for_object(
    ObjectMetricSource(
        CrossVersionObjectReference("Service", "front", "v1"),
        MetricIdentifier("rps"),
        MetricTarget(MetricTargetType.VALUE, value_milli=3_000),
    )
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    metrics = draw(
        st.lists(
            st.sampled_from([CPU, POD_METRIC, QUEUE, PER_POD_QUEUE, OBJECT_VALUE]),
            min_size=1,
            max_size=3,
        )
    )
    min_replicas = draw(st.integers(0, 4))
    max_replicas = draw(st.integers(max(min_replicas, 1), 30))
    behavior = draw(
        st.one_of(
            st.none(),
            st.builds(
                HorizontalPodAutoscalerBehavior,
                scale_up=st.none()
                | st.builds(
                    ScalingRules,
                    stabilization_window_seconds=st.none() | st.integers(0, 600),
                    policies=st.none()
                    | st.lists(
                        st.builds(
                            ScalingPolicy,
                            type=st.sampled_from(list(ScalingPolicyType)),
                            value=st.integers(1, 300),
                            period_seconds=st.integers(1, 300),
                        ),
                        min_size=1,
                        max_size=2,
                    ).map(tuple),
                ),
                scale_down=st.none()
                | st.builds(
                    ScalingRules, stabilization_window_seconds=st.none() | st.integers(0, 600)
                ),
            ),
        )
    )
    replicas = draw(st.integers(0, 35))
    pod_count = draw(st.integers(0, 12))
    pods = tuple(
        pod(f"p{i}", ready=draw(st.booleans()), phase=draw(st.sampled_from(list(PodPhase))))
        for i in range(pod_count)
    )
    observations: list[MetricObservation] = []
    for metric in metrics:
        if draw(st.integers(0, 4)) == 0:
            observations.append(MetricFetchError("unavailable"))
        elif metric.type in (MetricSourceType.RESOURCE, MetricSourceType.PODS):
            values = draw(st.lists(st.integers(0, 3000), min_size=pod_count, max_size=pod_count))
            observations.append(
                PodMetricsObservation(
                    {
                        f"p{i}": PodMetric(v, NOW - timedelta(seconds=5), 30.0)
                        for i, v in enumerate(values)
                    },
                    timestamp=NOW,
                )
            )
        elif metric.type == MetricSourceType.OBJECT:
            observations.append(ObjectMetricObservation(draw(st.integers(0, 100_000))))
        else:
            observations.append(
                ExternalMetricObservation(tuple(draw(st.lists(st.integers(0, 50_000), max_size=3))))
            )
    conditions = (SCALED_TO_ZERO_TRUE,) if draw(st.booleans()) else ()
    history = History(
        recommendations=draw(
            st.none()
            | st.lists(
                st.builds(
                    TimestampedRecommendation,
                    recommendation=st.integers(0, 35),
                    timestamp=st.integers(0, 900).map(lambda s: NOW - timedelta(seconds=s)),
                ),
                max_size=8,
            ).map(tuple)
        )
    )
    gates = HorizontalSettings(scale_to_zero_enabled=draw(st.booleans()))
    hpa = spec(*metrics, min_replicas=min_replicas, max_replicas=max_replicas, behavior=behavior)
    return Scenario(hpa, replicas, pods, tuple(observations), conditions, history, gates)


def decide_scenario(s: Scenario, *, succeeded: bool = True) -> Decision:
    return run(
        s.hpa,
        replicas=s.replicas,
        observations=s.observations,
        pods=s.pods,
        conditions=s.conditions,
        history=s.history,
        settings_=s.settings,
        succeeded=succeeded,
    )


@settings(max_examples=1000, deadline=None, suppress_health_check=SLOW_OK)
@given(scenarios())
def test_desired_replicas_stay_within_min_and_max(s: Scenario) -> None:
    decision = decide_scenario(s)
    min_replicas = s.hpa.min_replicas or 0
    maintenance_or_zero = s.replicas == 0 and not decision.rescale
    if decision.error is None or decision.rescale:
        if not maintenance_or_zero:
            assert min_replicas <= decision.desired_replicas <= s.hpa.max_replicas
        if decision.rescale:
            assert decision.status.desired_replicas == decision.desired_replicas


@settings(max_examples=1000, deadline=None, suppress_health_check=SLOW_OK)
@given(scenarios())
def test_no_scale_down_while_any_metric_failed(s: Scenario) -> None:
    decision = decide_scenario(s)
    any_failed = any(isinstance(o, MetricFetchError) for o in s.observations)
    within_bounds = (s.hpa.min_replicas or 0) <= s.replicas <= s.hpa.max_replicas
    if any_failed and within_bounds and decision.rescale:
        assert decision.desired_replicas > s.replicas


@settings(max_examples=1000, deadline=None, suppress_health_check=SLOW_OK)
@given(scenarios())
def test_the_decision_is_deterministic_for_equal_inputs(s: Scenario) -> None:
    copy = Scenario(
        s.hpa,
        s.replicas,
        tuple(s.pods),
        tuple(s.observations),
        tuple(s.conditions),
        History(
            None if s.history.recommendations is None else tuple(s.history.recommendations),
            s.history.scale_up_events,
            s.history.scale_down_events,
        ),
        s.settings,
    )
    first = decide_scenario(s)
    second = decide_scenario(copy)
    assert first == second
    assert first.explanation.render() == second.explanation.render()


def test_a_spike_scales_up_at_once_and_down_only_after_the_stabilization_window() -> None:
    """Reconcile every 15 s, carrying history and status from one decision to the next."""
    hpa = spec(CPU, max_replicas=20)
    replicas = 4
    history = History()
    status = HorizontalPodAutoscalerStatus(current_replicas=4, desired_replicas=4)
    sizes: list[tuple[int, int]] = []
    for tick in range(30):
        now = NOW + timedelta(seconds=15 * tick)
        usage = 1000 if tick == 0 else 100  # one hot sample, then 10 % of request
        decision = decide(
            hpa,
            current=CurrentScale(replicas, replicas, "app=worker"),
            observations=[
                PodMetricsObservation(
                    {
                        f"p{i}": PodMetric(usage, now - timedelta(seconds=5), 30.0)
                        for i in range(replicas)
                    },
                    timestamp=now,
                )
            ],
            pods=[pod(f"p{i}") for i in range(replicas)],
            history=history,
            previous_status=status,
            now=now,
            settings=SETTINGS,
        )
        if decision.rescale:
            decision = apply_rescale_result(decision, succeeded=True, now=now)
            replicas = decision.desired_replicas
            sizes.append((15 * tick, replicas))
        history, status = decision.history, decision.status
    # Up to 8 at once (2 x current, the legacy limit). Down only when the recommendations of t=0
    # leave the 300 s window: at t=300 they are exactly on the cutoff and still count (Go's
    # Before is strict), at t=315 they are out, and the 2s logged since t=15 set the size.
    assert sizes == [(0, 8), (315, 2)]
