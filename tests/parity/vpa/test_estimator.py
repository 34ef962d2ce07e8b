"""Parity: upstream estimator and recommender tests of kubernetes/autoscaler v1.8.1.

Ported from ``vertical-pod-autoscaler/pkg/recommender/logic/estimator_test.go`` and
``recommender_test.go``, ``pkg/recommender/routines/cpu_integer_post_processor_test.go`` and the
``TestApplyVPAPolicy`` table of ``pkg/utils/vpa/capping_test.go``, at the v1.8.1 release; each
test is named after its Go function (table rows by their ``name``).
"""

from __future__ import annotations

import pytest

from hpa.core.vpa.aggregation import DEFAULT_AGGREGATIONS_CONFIG, AggregateContainerState
from hpa.core.vpa.amount import (
    NO_RESOURCES,
    ResourceName,
    Resources,
    cores_from_cpu_amount,
    cpu_amount_from_cores,
    memory_amount_from_bytes,
)
from hpa.core.vpa.estimator import (
    ConfidenceMultiplier,
    ConstEstimator,
    MarginEstimator,
    MinResourceEstimator,
    PercentileEstimator,
    get_confidence,
)
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.histogram import Histogram
from hpa.core.vpa.policy import ContainerResourcePolicy, PodResourcePolicy
from hpa.core.vpa.recommender import (
    PodResourceRecommender,
    RecommendedContainerResources,
    apply_integer_cpu,
    apply_vpa_policy,
    integer_cpu_containers,
    map_to_list_of_recommended_container_resources,
)

CPU, MEMORY = ResourceName.CPU, ResourceName.MEMORY
ANY_TIME = 0
MINUTE = 60 * NANOSECONDS_PER_SECOND
DEFAULT_CONFIDENCE_INTERVAL = 24 * 60 * MINUTE
MI = 1024 * 1024


def combined(state: AggregateContainerState, cpu: object, memory: object) -> tuple[int, int]:
    """``NewCombinedEstimator(cpu, memory).GetResourceEstimation(state)``."""
    return cpu.estimate(state), memory.estimate(state)  # type: ignore[attr-defined]


def add_cpu_samples(state: AggregateContainerState) -> None:
    timestamp = ANY_TIME
    for _ in range(9):
        state.add_cpu_sample(timestamp, cpu_amount_from_cores(1.0))
        timestamp += 2 * MINUTE


# -- estimator_test.go ------------------------------------------------------------------------


def test_percentile_estimator() -> None:
    config = DEFAULT_AGGREGATIONS_CONFIG
    state = AggregateContainerState(config)
    cpu_histogram = Histogram(config.cpu_histogram_options)
    memory_peaks_histogram = Histogram(config.memory_histogram_options)
    for value in (1.0, 2.0, 3.0):
        cpu_histogram.add_sample(value, 1.0, ANY_TIME)
        memory_peaks_histogram.add_sample(value * 1e9, 1.0, ANY_TIME)
    # Upstream plugs plain histograms into the state; the estimators only read percentiles.
    state.aggregate_cpu_usage = cpu_histogram  # type: ignore[assignment]
    state.aggregate_memory_peaks = memory_peaks_histogram  # type: ignore[assignment]
    cpu, memory = combined(state, PercentileEstimator(CPU, 0.2), PercentileEstimator(MEMORY, 0.5))
    assert cores_from_cpu_amount(cpu) == pytest.approx(1.0, rel=0.05)
    assert float(memory) == pytest.approx(2e9, rel=0.05)


def test_confidence_multiplier() -> None:
    base_cpu = ConstEstimator(cpu_amount_from_cores(3.14))
    base_memory = ConstEstimator(memory_amount_from_bytes(3.14e9))
    tested_cpu1 = ConfidenceMultiplier(1.0, 1.0, base_cpu, DEFAULT_CONFIDENCE_INTERVAL)
    tested_cpu2 = ConfidenceMultiplier(1.0, -1.0, base_cpu, DEFAULT_CONFIDENCE_INTERVAL)
    s = AggregateContainerState()
    assert tested_cpu1.estimate(s) == 10**14
    assert tested_cpu2.estimate(s) == 0
    tested_cpu3 = ConfidenceMultiplier(0.1, 2.0, base_cpu, DEFAULT_CONFIDENCE_INTERVAL)
    tested_memory3 = ConfidenceMultiplier(0.1, 2.0, base_memory, DEFAULT_CONFIDENCE_INTERVAL)
    add_cpu_samples(s)
    assert get_confidence(s, DEFAULT_CONFIDENCE_INTERVAL) == 0.00625
    cpu, memory = combined(s, tested_cpu3, tested_memory3)
    assert cores_from_cpu_amount(cpu) == 907.46
    assert float(memory) == 9.0746e11


def test_confidence_multiplier_with_custom_interval() -> None:
    custom_confidence_interval = 18 * MINUTE
    base_cpu = ConstEstimator(cpu_amount_from_cores(3.14))
    base_memory = ConstEstimator(memory_amount_from_bytes(3.14e9))
    s = AggregateContainerState()
    add_cpu_samples(s)
    assert get_confidence(s, custom_confidence_interval) == 0.5
    cpu, memory = combined(
        s,
        ConfidenceMultiplier(0.1, 2.0, base_cpu, custom_confidence_interval),
        ConfidenceMultiplier(0.1, 2.0, base_memory, custom_confidence_interval),
    )
    assert cores_from_cpu_amount(cpu) == 4.521
    assert float(memory) == 4.5216e9


def test_confidence_multiplier_no_history() -> None:
    base_cpu = ConstEstimator(cpu_amount_from_cores(3.14))
    tested = ConfidenceMultiplier(0.1, 2.0, base_cpu, DEFAULT_CONFIDENCE_INTERVAL)
    assert tested.estimate(AggregateContainerState()) == 10**14


def test_margin_estimator() -> None:
    s = AggregateContainerState()
    cpu, memory = combined(
        s,
        MarginEstimator(0.1, ConstEstimator(cpu_amount_from_cores(3.14))),
        MarginEstimator(0.1, ConstEstimator(memory_amount_from_bytes(3.14e9))),
    )
    # Go folds the constants ``3.14*1.1`` and ``3.14e9*1.1`` exactly: 3.454 and 3.454e9.
    assert cores_from_cpu_amount(cpu) == 3.454
    assert float(memory) == 3.454e9


def test_min_resources_estimator() -> None:
    s = AggregateContainerState()
    cpu_estimator = MinResourceEstimator(
        cpu_amount_from_cores(0.2), ConstEstimator(cpu_amount_from_cores(3.14))
    )
    assert cores_from_cpu_amount(cpu_estimator.estimate(s)) == 3.14
    memory_estimator = MinResourceEstimator(
        memory_amount_from_bytes(2e7), ConstEstimator(memory_amount_from_bytes(4e8))
    )
    assert float(memory_estimator.estimate(s)) == 4e8


# -- recommender_test.go ----------------------------------------------------------------------


def const_recommender(
    min_cpu_millicores: float = 0.0, min_memory_mb: float = 0.0
) -> PodResourceRecommender:
    cpu = ConstEstimator(cpu_amount_from_cores(0.001))
    memory = ConstEstimator(memory_amount_from_bytes(1e6))
    return PodResourceRecommender(
        target_cpu=cpu,
        target_memory=memory,
        lower_bound_cpu=cpu,
        lower_bound_memory=memory,
        upper_bound_cpu=cpu,
        upper_bound_memory=memory,
        min_cpu_millicores=min_cpu_millicores,
        min_memory_mb=min_memory_mb,
    )


def test_min_resources_applied() -> None:
    recommender = const_recommender(25.0, 250.0)
    resources, _ = recommender.get_recommended_pod_resources(
        {"container-1": AggregateContainerState()}
    )
    target = resources["container-1"][0]
    assert target.cpu == cpu_amount_from_cores(25.0 / 1000)
    assert target.memory == memory_amount_from_bytes(250.0 * 1024 * 1024)


def test_min_resources_split_across_containers() -> None:
    recommender = const_recommender(25.0, 250.0)
    resources, _ = recommender.get_recommended_pod_resources(
        {"container-1": AggregateContainerState(), "container-2": AggregateContainerState()}
    )
    for name in ("container-1", "container-2"):
        target = resources[name][0]
        assert target.cpu == cpu_amount_from_cores((25.0 / 1000) / 2)
        assert target.memory == memory_amount_from_bytes((250.0 * 1024 * 1024) / 2)


@pytest.mark.parametrize(
    ("controlled", "expected"),
    [
        pytest.param(frozenset({MEMORY}), {MEMORY}, id="TestControlledResourcesFiltered"),
        pytest.param(
            frozenset({MEMORY, CPU}), {MEMORY, CPU}, id="TestControlledResourcesFilteredDefault"
        ),
    ],
)
def test_controlled_resources_filtered(
    controlled: frozenset[ResourceName], expected: set[ResourceName]
) -> None:
    state = AggregateContainerState()
    state.controlled_resources = controlled
    resources, _ = const_recommender().get_recommended_pod_resources({"container-1": state})
    for bound in resources["container-1"]:
        assert {resource for resource, _ in bound.items()} == expected


@pytest.mark.parametrize(
    "names",
    [
        pytest.param(["a-container", "b-container", "c-container", "d-container"], id="sorted"),
        pytest.param(["b-container", "a-container", "d-container", "c-container"], id="unsorted"),
    ],
)
def test_map_to_list_of_recommended_container_resources(names: list[str]) -> None:
    resources = {
        name: (
            Resources(
                cpu=cpu_amount_from_cores(i + 1), memory=memory_amount_from_bytes((i + 1) * 1e6)
            ),
            Resources(),
            Resources(),
        )
        for i, name in enumerate(names)
    }
    out = map_to_list_of_recommended_container_resources(resources)
    assert [r.container_name for r in out] == sorted(names)
    for r in out:
        assert r.target == resources[r.container_name][0]
        assert r.uncapped_target == r.target


# -- cpu_integer_post_processor_test.go -------------------------------------------------------


def test_extract_container_name() -> None:
    prefix, suffix = "vpa-post-processor.kubernetes.io/", "_integerCPU"
    assert integer_cpu_containers({}) == frozenset()
    assert integer_cpu_containers({"abc": "true"}) == frozenset()
    assert integer_cpu_containers({prefix + "kafka" + suffix: "true"}) == {"kafka"}
    assert integer_cpu_containers({prefix + "kafka" + suffix: "false"}) == frozenset()


def target(name: str, cores: str, mib: int) -> RecommendedContainerResources:
    """``test.Recommendation().WithContainer(name).WithTarget(cores, "<mib>Mi")``."""
    resources = Resources(cpu=cpu_amount_from_cores(float(cores)), memory=mib * MI)
    return RecommendedContainerResources(name, resources, Resources(), Resources(), Resources())


@pytest.mark.parametrize(
    ("annotated", "recommendation", "want"),
    [
        pytest.param(
            ["container-other"],
            [target("container1", "8.6", 200), target("container2", "8.2", 300)],
            [target("container1", "8.6", 200), target("container2", "8.2", 300)],
            id="No containers match",
        ),
        pytest.param(
            ["container1"],
            [target("container1", "8.6", 200), target("container2", "8.2", 300)],
            [target("container1", "9", 200), target("container2", "8.2", 300)],
            id="2 containers, 1 matching only",
        ),
        pytest.param(
            ["container1", "container2"],
            [target("container1", "8.6", 200), target("container2", "5.2", 300)],
            [target("container1", "9", 200), target("container2", "6", 300)],
            id="2 containers, 2 matching",
        ),
    ],
)
def test_integer_cpu_post_processor_process(
    annotated: list[str],
    recommendation: list[RecommendedContainerResources],
    want: list[RecommendedContainerResources],
) -> None:
    annotations = {f"vpa-post-processor.kubernetes.io/{n}_integerCPU": "true" for n in annotated}
    got, _ = apply_integer_cpu(recommendation, integer_cpu_containers(annotations))
    assert list(got) == want


# -- capping_test.go: TestApplyVPAPolicy ------------------------------------------------------


def rec(
    t: tuple[int, int], lower: tuple[int, int], upper: tuple[int, int]
) -> RecommendedContainerResources:
    """A ``foo`` recommendation in (millicores, MiB) pairs, uncapped target 42m/42Mi."""

    def res(pair: tuple[int, int]) -> Resources:
        return Resources(cpu=pair[0], memory=pair[1] * MI)

    return RecommendedContainerResources("foo", res(t), res(lower), res(upper), res((42, 42)))


RECOMMENDATION = rec((42, 42), (31, 31), (53, 53))


def policy(
    *, min_allowed: Resources = NO_RESOURCES, max_allowed: Resources = NO_RESOURCES
) -> PodResourcePolicy:
    return PodResourcePolicy(
        (ContainerResourcePolicy("foo", min_allowed=min_allowed, max_allowed=max_allowed),)
    )


@pytest.mark.parametrize(
    ("resource_policy", "global_max_allowed", "expected"),
    [
        pytest.param(
            None, Resources(), RECOMMENDATION, id="resource policy is nil and global max is nil"
        ),
        pytest.param(
            policy(min_allowed=Resources(cpu=50, memory=50 * MI)),
            Resources(),
            rec((50, 50), (50, 50), (53, 53)),
            id="resource policy has min allowed and global max allowed is nil",
        ),
        pytest.param(
            policy(max_allowed=Resources(cpu=40, memory=40 * MI)),
            Resources(),
            rec((40, 40), (31, 31), (40, 40)),
            id="resource policy has max allowed and global max allowed is nil",
        ),
        pytest.param(
            None,
            Resources(cpu=40, memory=40 * MI),
            rec((40, 40), (31, 31), (40, 40)),
            id="resource policy is nil and global max allowed is set for cpu and memory",
        ),
        pytest.param(
            policy(min_allowed=Resources(cpu=35, memory=35 * MI)),
            Resources(cpu=50, memory=50 * MI),
            rec((42, 42), (35, 35), (50, 50)),
            id="resource policy has maxAllowed and global max allowed is set",
        ),
        pytest.param(
            policy(max_allowed=Resources(cpu=40)),
            Resources(memory=40 * MI),
            rec((40, 40), (31, 31), (40, 40)),
            id="resource policy has max allowed for cpu and global max allowed is set for memory",
        ),
        pytest.param(
            policy(max_allowed=Resources(cpu=40)),
            Resources(cpu=30, memory=30 * MI),
            rec((40, 30), (31, 30), (40, 30)),
            id="policy has max allowed for cpu and global max allowed for cpu and memory",
        ),
    ],
)
def test_apply_vpa_policy(
    resource_policy: PodResourcePolicy | None,
    global_max_allowed: Resources,
    expected: RecommendedContainerResources,
) -> None:
    actual, _ = apply_vpa_policy([RECOMMENDATION], resource_policy, global_max_allowed)
    assert actual == (expected,)


def test_apply_vpa_policy_nil_recommendation() -> None:
    """Row "recommendation is nil": nothing in, nothing out."""
    assert apply_vpa_policy([], None) == ((), ())
