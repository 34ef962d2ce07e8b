"""The per-pod load of the ``group-aware`` model under an HPA: the HPA's bottleneck metric per pod
(from its ``status.currentMetrics``) and the per-pod load its ``spec.metrics`` target holds, and
the model fitted on it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hpa.core.decision import HorizontalPodAutoscalerStatus, MetricStatus, MetricValueStatus
from hpa.core.spec import (
    ContainerResourceMetricSource,
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerSpec,
    MetricIdentifier,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
)
from hpa.core.vpa.amount import ResourceName, Resources
from hpa.core.vpa.group_aware import (
    GroupAwareConfig,
    GroupSample,
    HpaLoad,
    LoadKind,
    apply_group_size_model,
    group_aware_estimate,
    hpa_load,
    metric_loads,
)
from hpa.core.vpa.recommender import RecommendedContainerResources

REF = CrossVersionObjectReference(kind="Deployment", name="web", api_version="apps/v1")
QUEUE = CrossVersionObjectReference(kind="Service", name="queue", api_version="v1")
NO_HEADROOM = GroupAwareConfig(load_percentile=0.0)
"""The line at the target load (the headroom is tested in test_group_aware.py)."""
UTILIZATION_60 = MetricTarget(MetricTargetType.UTILIZATION, average_utilization=60)


def _spec(*metrics: MetricSpec) -> HorizontalPodAutoscalerSpec:
    return HorizontalPodAutoscalerSpec(scale_target_ref=REF, max_replicas=20, metrics=metrics)


def _status(*current: MetricStatus) -> HorizontalPodAutoscalerStatus:
    return HorizontalPodAutoscalerStatus(current_replicas=4, current_metrics=current)


def _per_pod(
    table: dict[str, dict[str, float | None]],
) -> Callable[[str, str | None], float | None]:
    """A pod's amounts of a resource per container: of one container, or summed over them (None
    when a container has none)."""

    def amount(resource: str, container: str | None) -> float | None:
        by_container = table[resource]
        if container is not None:
            return by_container.get(container)
        values = [v for v in by_container.values() if v is not None]
        return None if len(values) < len(by_container) else sum(values)

    return amount


_requests = _per_pod(
    {"cpu": {"app": 0.5, "sidecar": 0.1}, "memory": {"app": 1000.0, "sidecar": None}}
)
"""A pod with containers ``app`` (cpu 500m, memory 1000 bytes) and ``sidecar`` (cpu 100m,
no memory request)."""


CPU = MetricSpec.for_resource(ResourceMetricSource("cpu", UTILIZATION_60))
CPU_VALUE = MetricSpec.for_resource(
    ResourceMetricSource(
        "cpu", MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=400)
    )
)
APP_CPU = MetricSpec.for_container_resource(
    ContainerResourceMetricSource("cpu", "app", UTILIZATION_60)
)
MEMORY = MetricSpec.for_resource(ResourceMetricSource("memory", UTILIZATION_60))
RPS = MetricSpec.for_pods(
    PodsMetricSource(
        MetricIdentifier("requests_per_second"),
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=50_000),
    )
)
QUEUE_VALUE = MetricSpec.for_object(
    ObjectMetricSource(
        QUEUE,
        MetricIdentifier("latency"),
        MetricTarget(MetricTargetType.VALUE, value_milli=200),
    )
)
QUEUE_AVERAGE = MetricSpec.for_object(
    ObjectMetricSource(
        QUEUE,
        MetricIdentifier("depth"),
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=30_000),
    )
)
EXTERNAL = MetricSpec.for_external(
    ExternalMetricSource(
        MetricIdentifier("pubsub_backlog"),
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=10_000),
    )
)


APP_CPU_STATUS = MetricStatus(
    "ContainerResource",
    MetricValueStatus(average_value_milli=250, average_utilization=50),
    name="cpu",
    container="app",
)


def _cpu_status(*, value_milli: int | None, utilization: int | None) -> MetricStatus:
    return MetricStatus(
        "Resource",
        MetricValueStatus(average_value_milli=value_milli, average_utilization=utilization),
        name="cpu",
    )


CASES = [
    # (case, spec metrics, status, the load chosen (None: 1/replicas))
    (
        "Resource cpu Utilization: averageValue against 60 % of the pod's requests",
        (CPU,),
        (_cpu_status(value_milli=450, utilization=75),),
        HpaLoad("Resource cpu", 0.45, 0.6 * 0.6),
    ),
    (
        "Resource cpu Utilization without averageValue: utilization x the requests",
        (CPU,),
        (_cpu_status(value_milli=None, utilization=50),),
        HpaLoad("Resource cpu", 0.5 * 0.6, 0.6 * 0.6),
    ),
    (
        "Resource cpu AverageValue",
        (CPU_VALUE,),
        (_cpu_status(value_milli=300, utilization=None),),
        HpaLoad("Resource cpu", 0.3, 0.4),
    ),
    (
        "ContainerResource: the container's request",
        (APP_CPU,),
        (APP_CPU_STATUS,),
        HpaLoad("ContainerResource cpu of app", 0.25, 0.6 * 0.5),
    ),
    (
        "Pods: the per-pod averageValue",
        (RPS,),
        (
            MetricStatus(
                "Pods",
                MetricValueStatus(average_value_milli=40_000),
                metric=MetricIdentifier("requests_per_second"),
            ),
        ),
        HpaLoad("Pods requests_per_second", 40.0, 50.0),
    ),
    (
        "Object with a Value target: the value, as the HPA's ratio reads it",
        (QUEUE_VALUE,),
        (
            MetricStatus(
                "Object",
                MetricValueStatus(value_milli=300),
                metric=MetricIdentifier("latency"),
                described_object=QUEUE,
            ),
        ),
        HpaLoad("Object Service/queue latency Value", 0.3, 0.2),
    ),
    (
        "Object with an AverageValue target: the value per pod",
        (QUEUE_AVERAGE,),
        (MetricStatus("Object", MetricValueStatus(average_value_milli=12_000)),),
        HpaLoad("Object Service/queue depth AverageValue", 12.0, 30.0),
    ),
    (
        "External AverageValue",
        (EXTERNAL,),
        (MetricStatus("External", MetricValueStatus(average_value_milli=5_000)),),
        HpaLoad("External pubsub_backlog AverageValue", 5.0, 10.0),
    ),
    (
        "two metrics: the one with the highest usage ratio decided",
        (CPU, RPS),
        (
            _cpu_status(value_milli=300, utilization=50),  # ratio 0.83
            MetricStatus("Pods", MetricValueStatus(average_value_milli=60_000)),  # ratio 1.2
        ),
        HpaLoad("Pods requests_per_second", 60.0, 50.0),
    ),
    (
        "two metrics at the same ratio: the first",
        (CPU_VALUE, RPS),
        (
            _cpu_status(value_milli=200, utilization=None),
            MetricStatus("Pods", MetricValueStatus(average_value_milli=25_000)),
        ),
        HpaLoad("Resource cpu", 0.2, 0.4),
    ),
    (
        "a failed metric (the zero status) is skipped",
        (RPS, CPU),
        (MetricStatus(""), _cpu_status(value_milli=300, utilization=50)),
        HpaLoad("Resource cpu", 0.3, 0.36),
    ),
    (
        "memory Utilization with a container without a memory request: no load",
        (MEMORY,),
        (MetricStatus("Resource", MetricValueStatus(average_value_milli=900_000), name="memory"),),
        None,
    ),
    (
        "a status written for another metric (cpu for memory): no load",
        (MEMORY,),
        (_cpu_status(value_milli=300, utilization=50),),
        None,
    ),
    ("no current metrics yet", (CPU,), (), None),
]


@pytest.mark.parametrize(
    ("metrics", "current", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_load_is_the_deciding_metric_per_pod(
    metrics: tuple[MetricSpec, ...],
    current: tuple[MetricStatus, ...],
    expected: HpaLoad | None,
) -> None:
    found = hpa_load(_spec(*metrics), _status(*current), request=_requests)
    if expected is None:
        assert found is None
        return
    assert found is not None
    assert found.metric == expected.metric
    assert found.load == pytest.approx(expected.load)
    assert found.target == pytest.approx(expected.target)


def test_an_hpa_without_metrics_scales_on_cpu_at_80_percent() -> None:
    found = hpa_load(
        _spec(), _status(_cpu_status(value_milli=400, utilization=80)), request=_requests
    )
    assert found is not None
    assert (found.metric, found.load) == ("Resource cpu", 0.4)
    assert found.target == pytest.approx(0.8 * 0.6)


def test_every_metric_with_a_value_is_listed_in_the_specs_order() -> None:
    loads = metric_loads(
        _spec(CPU, RPS, EXTERNAL),
        _status(
            _cpu_status(value_milli=300, utilization=50),
            MetricStatus(""),
            MetricStatus("External", MetricValueStatus(average_value_milli=5_000)),
        ),
        request=_requests,
    )
    assert [load.metric for load in loads] == [
        "Resource cpu",
        "External pubsub_backlog AverageValue",
    ]
    assert metric_loads(_spec(CPU), None, request=_requests) == ()


def _hpa_day(
    fixed: float, per_load: float, loads: list[float], replicas: list[int]
) -> list[GroupSample]:
    return [
        GroupSample(fixed + per_load * load, count, load)
        for load, count in zip(loads, replicas, strict=True)
    ]


def test_under_an_hpa_1_over_replicas_fails_and_the_metric_fits() -> None:
    """The HPA holds per-pod cpu near its target while the total load and the replicas move
    together: per-pod memory hardly depends on 1/replicas, but is a line in per-pod cpu."""
    replicas = [2, 4, 8, 16, 8, 4, 2, 3, 6, 12, 6, 3]
    loads = [0.30, 0.38, 0.33, 0.41, 0.36, 0.29, 0.40, 0.35, 0.31, 0.39, 0.34, 0.37]
    samples = _hpa_day(200e6, 1e9, loads, replicas)
    inverse = group_aware_estimate(
        [GroupSample(s.usage, s.replicas) for s in samples], target_load=1 / 6, plain=-1.0
    )
    assert not inverse.used_model
    fitted = group_aware_estimate(samples, target_load=0.36, plain=-1.0, config=NO_HEADROOM)
    assert fitted.used_model
    assert fitted.load_kind is LoadKind.METRIC
    assert fitted.fit is not None
    assert fitted.fit.slope == pytest.approx(1e9)
    assert fitted.fit.intercept == pytest.approx(200e6)
    assert fitted.value == pytest.approx(200e6 + 1e9 * 0.36)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(min_value=0.01, max_value=100, allow_nan=False),
            st.integers(min_value=1, max_value=40),
        ),
        min_size=10,
        max_size=60,
    ).filter(lambda rows: len({r for _, r in rows}) >= 3),
    st.floats(min_value=0, max_value=1e9, allow_nan=False),
    st.floats(min_value=1e-3, max_value=1e7, allow_nan=False),
    st.floats(min_value=0, max_value=1, allow_nan=False),
)
def test_usage_linear_in_the_hpa_metric_is_recovered_and_recommended_at_the_target(
    rows: list[tuple[float, int]], fixed: float, per_load: float, where: float
) -> None:
    """usage = a + b x load, the load varying with whatever replica counts: the model finds
    the line and recommends its value at the target load (a target inside the observed loads)."""
    loads = [load for load, _ in rows]
    low, high = min(loads), max(loads)
    assume(high - low >= 1e-3 * high)  # the load varies beyond float rounding
    assume(per_load * (high - low) >= 1e-6 * fixed)  # so does usage
    samples = _hpa_day(fixed, per_load, loads, [r for _, r in rows])
    target = low + where * (high - low)
    estimate = group_aware_estimate(samples, target_load=target, plain=-1.0, config=NO_HEADROOM)
    assert estimate.used_model
    assert estimate.fit is not None
    scale = fixed + per_load * high
    assert estimate.fit.slope == pytest.approx(per_load, rel=1e-6)
    assert estimate.fit.intercept == pytest.approx(fixed, rel=1e-6, abs=1e-6 * scale)
    assert estimate.value == pytest.approx(fixed + per_load * target, rel=1e-6, abs=1e-6 * scale)


def test_the_plain_bounds_are_scaled_with_the_target() -> None:
    """The updater leaves a pod alone while its request is inside [lower, upper]: the group-size
    target keeps the plain model's band around it, scaled, so a target that creeps up does not
    put every pod below a lower bound equal to the target."""
    plain = RecommendedContainerResources(
        "app",
        target=Resources(cpu=100, memory=1150),
        lower_bound=Resources(cpu=80, memory=920),
        upper_bound=Resources(cpu=200, memory=2300),
        uncapped_target=Resources(cpu=100, memory=1150),
    )
    # usage = 100 + 1000 x load, the target load 0.4: 500 bytes, 575 with the 15 % margin
    samples = _hpa_day(100, 1000, [0.1, 0.2, 0.3, 0.4, 0.5] * 2, [2, 3, 4, 5, 6] * 2)
    (adjusted,), _ = apply_group_size_model(
        [plain],
        {("app", ResourceName.MEMORY): samples},
        target_load=0.4,
        excluded=lambda container, resource: resource is ResourceName.CPU,
        config=NO_HEADROOM,
    )
    assert adjusted.target == Resources(cpu=100, memory=575)
    assert adjusted.lower_bound == Resources(cpu=80, memory=460)  # 920 x 575/1150
    assert adjusted.upper_bound == Resources(cpu=200, memory=1150)  # 2300 x 575/1150


_own = _per_pod({"cpu": {"app": 0.45, "sidecar": 0.05}, "memory": {"app": 300.0, "sidecar": None}})
"""The sampled pod's own usage in the same metrics sample: ``app`` 450m and 300 bytes,
``sidecar`` 50m and no memory."""


def _none(resource: str, container: str | None) -> float | None:
    return None


SAME_INSTANT = [
    # (case, metrics, current, usage, expected load now)
    (
        "Resource cpu: the pod's own cpu of the same sample, not the HPA's average",
        (CPU,),
        (_cpu_status(value_milli=300, utilization=50),),
        _own,
        0.5,
    ),
    (
        "ContainerResource cpu: the container's own cpu",
        (APP_CPU,),
        (APP_CPU_STATUS,),
        _own,
        0.45,
    ),
    (
        "the sample lacks the resource: the HPA's average",
        (CPU,),
        (_cpu_status(value_milli=300, utilization=50),),
        _none,
        0.3,
    ),
    (
        "a Pods metric: the HPA's status (the sample has no such value)",
        (RPS,),
        (MetricStatus("Pods", MetricValueStatus(average_value_milli=40_000)),),
        _own,
        40.0,
    ),
]


@pytest.mark.parametrize(
    ("metrics", "current", "usage", "expected"),
    [case[1:] for case in SAME_INSTANT],
    ids=[case[0] for case in SAME_INSTANT],
)
def test_the_load_of_a_resource_metric_is_the_pods_own_usage_of_the_same_sample(
    metrics: tuple[MetricSpec, ...],
    current: tuple[MetricStatus, ...],
    usage: Callable[[str, str | None], float | None],
    expected: float,
) -> None:
    found = hpa_load(_spec(*metrics), _status(*current), request=_requests, usage=usage)
    assert found is not None
    assert found.load == pytest.approx(expected)
    # the target and the metric are still the HPA's
    from_status = hpa_load(_spec(*metrics), _status(*current), request=_requests)
    assert from_status is not None
    assert (found.metric, found.target) == (from_status.metric, from_status.target)


def test_the_deciding_metric_is_chosen_on_the_hpas_status_not_the_pods_usage() -> None:
    # the HPA's status: cpu at ratio 0.5, rps at 0.8 -> rps decides, whatever this pod's cpu
    found = hpa_load(
        _spec(CPU, RPS),
        _status(
            _cpu_status(value_milli=180, utilization=30),
            MetricStatus("Pods", MetricValueStatus(average_value_milli=40_000)),
        ),
        request=_requests,
        usage=lambda resource, container: 10.0,
    )
    assert found is not None
    assert (found.metric, found.load) == ("Pods requests_per_second", 40.0)
