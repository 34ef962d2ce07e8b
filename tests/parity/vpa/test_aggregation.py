"""Parity: upstream aggregate container state and container tests of kubernetes/autoscaler v1.8.1.

Ported from ``vertical-pod-autoscaler/pkg/recommender/model/aggregate_container_state_test.go``
and ``container_test.go`` at the v1.8.1 release; each test is named after its Go function.
Upstream's ``container_test.go`` records the calls a ``ContainerState`` makes on mock histograms;
here the container feeds a real aggregate state and the test compares its histograms with ones
built from exactly those calls (``Equals``, weights within 1e-15), so the same sequence of
``AddSample``/``SubtractSample`` calls is asserted without a mock.
``TestAggregateStateByContainerName`` builds its four aggregate states directly (the cluster
model belongs to the recommender service).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hpa.core.vpa.aggregation import (
    DEFAULT_AGGREGATIONS_CONFIG,
    DEFAULT_MEMORY_AGGREGATION_INTERVAL_NS,
    MIN_SAMPLE_WEIGHT,
    SUPPORTED_CHECKPOINT_VERSION,
    AggregateContainerState,
    CheckpointStatus,
    ContainerState,
    OomSampleDiscardedError,
    aggregate_state_by_container_name,
)
from hpa.core.vpa.amount import ResourceName, cpu_amount_from_cores, memory_amount_from_bytes
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.histogram import DecayingHistogram, HistogramCheckpoint
from hpa.core.vpa.policy import ContainerResourcePolicy, ContainerScalingMode

SECOND = NANOSECONDS_PER_SECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
KB = 1024
MB = 1024 * KB
TEST_TIMESTAMP = int(datetime(2017, 4, 18, 17, 35, 5, tzinfo=UTC).timestamp()) * SECOND
INTERVAL = DEFAULT_MEMORY_AGGREGATION_INTERVAL_NS
CONFIG = DEFAULT_AGGREGATIONS_CONFIG


def at(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    return int(moment.timestamp()) * SECOND


Call = tuple[str, float, float, int]


def expected_memory(calls: list[Call]) -> DecayingHistogram:
    h = DecayingHistogram(
        CONFIG.memory_histogram_options, CONFIG.memory_histogram_decay_half_life_ns
    )
    for kind, value, weight, time_ns in calls:
        if kind == "add":
            h.add_sample(value, weight, time_ns)
        else:
            h.subtract_sample(value, weight, time_ns)
    return h


def expected_cpu(calls: list[Call]) -> DecayingHistogram:
    h = DecayingHistogram(CONFIG.cpu_histogram_options, CONFIG.cpu_histogram_decay_half_life_ns)
    for _, value, weight, time_ns in calls:
        h.add_sample(value, weight, time_ns)
    return h


class ContainerTest:
    """Upstream's ``newContainerTest``: a container over an aggregate state with the defaults."""

    def __init__(self, *, interval_ns: int = INTERVAL, interval_count: int | None = None) -> None:
        self.aggregate = AggregateContainerState(CONFIG)
        self.aggregate.memory_aggregation_interval_ns = interval_ns
        if interval_count is not None:
            self.aggregate.memory_aggregation_interval_count = interval_count
        self.container = ContainerState(self.aggregate)

    def assert_memory_calls(self, calls: list[Call]) -> None:
        expected = expected_memory(calls)
        assert self.aggregate.aggregate_memory_peaks.equals(expected), (
            f"expected:\n{expected}\nactual:\n{self.aggregate.aggregate_memory_peaks}"
        )


# -- container_test.go ------------------------------------------------------------------------


def test_aggregate_container_usage_samples() -> None:
    test = ContainerTest()
    c = test.container
    time_step = INTERVAL // 2
    window_end = TEST_TIMESTAMP + INTERVAL
    assert c.add_cpu_sample(TEST_TIMESTAMP, 3140)
    assert c.add_memory_sample(TEST_TIMESTAMP, 5)
    assert c.add_cpu_sample(TEST_TIMESTAMP + time_step, 6280)
    assert c.add_memory_sample(TEST_TIMESTAMP + time_step, 10)
    assert c.add_cpu_sample(TEST_TIMESTAMP + 2 * time_step, 1570)
    assert c.add_memory_sample(TEST_TIMESTAMP + 2 * time_step, 2)
    assert not c.add_cpu_sample(TEST_TIMESTAMP + 2 * time_step, 1000)  # out of order
    assert not c.add_cpu_sample(TEST_TIMESTAMP + 4 * time_step, -1000)  # negative CPU usage
    assert not c.add_memory_sample(TEST_TIMESTAMP + 4 * time_step, -1000)  # negative memory
    cpu = expected_cpu(
        [
            ("add", 3.14, MIN_SAMPLE_WEIGHT, TEST_TIMESTAMP),
            ("add", 6.28, MIN_SAMPLE_WEIGHT, TEST_TIMESTAMP + time_step),
            ("add", 1.57, MIN_SAMPLE_WEIGHT, TEST_TIMESTAMP + 2 * time_step),
        ]
    )
    assert test.aggregate.aggregate_cpu_usage.equals(cpu)
    test.assert_memory_calls(
        [
            ("add", 5.0, 1.0, window_end),
            ("sub", 5.0, 1.0, window_end),
            ("add", 10.0, 1.0, window_end),
            ("add", 2.0, 1.0, window_end + INTERVAL),
        ]
    )
    assert test.aggregate.total_samples_count == 3
    assert test.aggregate.first_sample_start_ns == TEST_TIMESTAMP
    assert test.aggregate.last_sample_start_ns == TEST_TIMESTAMP + 2 * time_step


def test_record_oom_increased_by_bump_up() -> None:
    test = ContainerTest()
    test.container.record_oom(TEST_TIMESTAMP, 1000 * MB)
    test.assert_memory_calls([("add", 1200.0 * MB, 1.0, TEST_TIMESTAMP + INTERVAL)])


def test_record_oom_dont_run_away() -> None:
    test = ContainerTest()
    window_end = TEST_TIMESTAMP + INTERVAL
    test.container.record_oom(TEST_TIMESTAMP, 1000 * MB)
    test.container.record_oom(TEST_TIMESTAMP, 999 * MB)
    test.container.record_oom(TEST_TIMESTAMP, 999 * MB)
    test.assert_memory_calls([("add", 1200.0 * MB, 1.0, window_end)])
    test.container.record_oom(TEST_TIMESTAMP, 2000 * MB)
    test.assert_memory_calls(
        [
            ("add", 1200.0 * MB, 1.0, window_end),
            ("sub", 1200.0 * MB, 1.0, window_end),
            ("add", 2400.0 * MB, 1.0, window_end),
        ]
    )


def test_record_oom_increased_by_min() -> None:
    test = ContainerTest()
    test.container.record_oom(TEST_TIMESTAMP, 1 * MB)
    test.assert_memory_calls([("add", 101.0 * MB, 1.0, TEST_TIMESTAMP + INTERVAL)])


def test_record_oom_maxed_with_known_sample() -> None:
    test = ContainerTest()
    window_end = TEST_TIMESTAMP + INTERVAL
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 3000 * MB)
    test.container.record_oom(TEST_TIMESTAMP, 1000 * MB)
    test.assert_memory_calls(
        [
            ("add", 3000.0 * MB, 1.0, window_end),
            ("sub", 3000.0 * MB, 1.0, window_end),
            ("add", 3600.0 * MB, 1.0, window_end),
        ]
    )


def test_record_oom_discards_old_sample() -> None:
    test = ContainerTest()
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 1000 * MB)
    with pytest.raises(OomSampleDiscardedError, match="too old"):
        test.container.record_oom(TEST_TIMESTAMP - 30 * HOUR, 1000 * MB)
    test.assert_memory_calls([("add", 1000.0 * MB, 1.0, TEST_TIMESTAMP + INTERVAL)])


def test_record_oom_in_new_window() -> None:
    test = ContainerTest()
    window_end = TEST_TIMESTAMP + INTERVAL
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 2000 * MB)
    test.container.record_oom(TEST_TIMESTAMP + 2 * INTERVAL, 1000 * MB)
    test.assert_memory_calls(
        [
            ("add", 2000.0 * MB, 1.0, window_end),
            ("add", 2400.0 * MB, 1.0, window_end + 2 * INTERVAL),
        ]
    )


def test_record_oom_fresh_oom_near_window_boundary_is_not_discarded() -> None:
    test = ContainerTest()
    c = test.container
    boundary = TEST_TIMESTAMP + INTERVAL
    window_end = TEST_TIMESTAMP + 2 * INTERVAL
    assert c.add_memory_sample(TEST_TIMESTAMP, 100 * MB)
    assert c.add_memory_sample(boundary, 2000 * MB)
    c.record_oom(boundary - SECOND, 1000 * MB)
    test.assert_memory_calls(
        [
            ("add", 100.0 * MB, 1.0, boundary),
            ("add", 2000.0 * MB, 1.0, window_end),
            ("sub", 2000.0 * MB, 1.0, window_end),
            ("add", 2400.0 * MB, 1.0, window_end),
        ]
    )


def test_memory_samples_with_custom_aggregation_interval() -> None:
    test = ContainerTest(interval_ns=HOUR)
    window_end1 = TEST_TIMESTAMP + HOUR
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 5)
    assert test.container.add_memory_sample(TEST_TIMESTAMP + 2 * HOUR, 10)
    test.assert_memory_calls(
        [("add", 5.0, 1.0, window_end1), ("add", 10.0, 1.0, window_end1 + 2 * HOUR)]
    )


def test_memory_peak_update_within_custom_interval() -> None:
    test = ContainerTest(interval_ns=HOUR)
    window_end = TEST_TIMESTAMP + HOUR
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 5)
    assert test.container.add_memory_sample(TEST_TIMESTAMP + 30 * MINUTE, 10)
    test.assert_memory_calls(
        [
            ("add", 5.0, 1.0, window_end),
            ("sub", 5.0, 1.0, window_end),
            ("add", 10.0, 1.0, window_end),
        ]
    )


def test_record_oom_discards_old_sample_with_custom_interval() -> None:
    test = ContainerTest(interval_ns=HOUR)
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 1000 * MB)
    with pytest.raises(OomSampleDiscardedError):
        test.container.record_oom(TEST_TIMESTAMP - 2 * HOUR, 1000 * MB)
    test.assert_memory_calls([("add", 1000.0 * MB, 1.0, TEST_TIMESTAMP + HOUR)])


def test_record_oom_in_new_window_with_custom_interval() -> None:
    test = ContainerTest(interval_ns=HOUR)
    window_end = TEST_TIMESTAMP + HOUR
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 2000 * MB)
    test.container.record_oom(TEST_TIMESTAMP + 2 * HOUR, 1000 * MB)
    test.assert_memory_calls(
        [("add", 2000.0 * MB, 1.0, window_end), ("add", 2400.0 * MB, 1.0, window_end + 2 * HOUR)]
    )


def test_record_oom_discards_old_sample_with_custom_interval_count() -> None:
    test = ContainerTest(interval_count=2)
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 1000 * MB)
    with pytest.raises(OomSampleDiscardedError):
        test.container.record_oom(TEST_TIMESTAMP - 3 * INTERVAL, 1000 * MB)
    test.assert_memory_calls([("add", 1000.0 * MB, 1.0, TEST_TIMESTAMP + INTERVAL)])


def test_memory_samples_with_custom_aggregation_interval_count() -> None:
    test = ContainerTest(interval_count=16)
    window_end1 = TEST_TIMESTAMP + INTERVAL
    assert test.container.add_memory_sample(TEST_TIMESTAMP, 5)
    assert test.container.add_memory_sample(TEST_TIMESTAMP + 2 * INTERVAL, 10)
    test.assert_memory_calls(
        [("add", 5.0, 1.0, window_end1), ("add", 10.0, 1.0, window_end1 + 2 * INTERVAL)]
    )


# -- aggregate_container_state_test.go --------------------------------------------------------


def test_aggregate_state_by_container_name() -> None:
    # Pods 1 and 2 have different labels, so each of the four containers has its own
    # aggregate state: pod-1 {app-A, app-B}, pod-2 {app-A, app-C}.
    names = ["app-A", "app-B", "app-A", "app-C"]
    aggregates = [AggregateContainerState(CONFIG) for _ in names]
    containers = [ContainerState(a) for a in aggregates]
    for container, cores in zip(containers, [1.0, 5.0, 3.0, 5.0], strict=True):
        assert container.add_cpu_sample(TEST_TIMESTAMP, cpu_amount_from_cores(cores))
    for container, num_bytes in zip(containers, [2e9, 10e9, 4e9, 10e9], strict=True):
        assert container.add_memory_sample(TEST_TIMESTAMP, memory_amount_from_bytes(num_bytes))

    aggregate_resources = aggregate_state_by_container_name(zip(names, aggregates, strict=True))

    assert set(aggregate_resources) == {"app-A", "app-B", "app-C"}
    assert aggregate_resources["app-A"].total_samples_count == 2
    assert aggregate_resources["app-B"].total_samples_count == 1
    assert aggregate_resources["app-C"].total_samples_count == 1
    expected_cpu_histogram = DecayingHistogram(
        CONFIG.cpu_histogram_options, CONFIG.cpu_histogram_decay_half_life_ns
    )
    expected_cpu_histogram.merge(aggregates[0].aggregate_cpu_usage)
    expected_cpu_histogram.merge(aggregates[2].aggregate_cpu_usage)
    expected_memory_histogram = expected_memory(
        [
            ("add", 2e9, 1.0, containers[0].window_end_ns),
            ("add", 4e9, 1.0, containers[2].window_end_ns),
        ]
    )
    assert expected_cpu_histogram.equals(aggregate_resources["app-A"].aggregate_cpu_usage)
    assert expected_memory_histogram.equals(aggregate_resources["app-A"].aggregate_memory_peaks)


def test_aggregate_container_state_save_to_checkpoint() -> None:
    cs = AggregateContainerState(CONFIG)
    t1, t2 = at(2018, 1, 1, 2, 3, 4), at(2018, 2, 1, 2, 3, 4)
    now = at(2018, 3, 1, 0, 0, 0)
    cs.first_sample_start_ns = t1
    cs.last_sample_start_ns = t2
    cs.total_samples_count = 10
    cs.aggregate_cpu_usage.add_sample(1, 33, t2)
    cs.aggregate_memory_peaks.add_sample(1, 55, t1)
    cs.aggregate_memory_peaks.add_sample(10000000, 55, t1)
    checkpoint = cs.save_to_checkpoint(now)
    assert checkpoint.last_update_time_ns == now
    assert checkpoint.first_sample_start_ns == t1
    assert checkpoint.last_sample_start_ns == t2
    assert checkpoint.total_samples_count == 10
    assert checkpoint.version == SUPPORTED_CHECKPOINT_VERSION
    assert len(checkpoint.cpu_histogram.bucket_weights) == 1
    assert len(checkpoint.memory_histogram.bucket_weights) == 2


def test_aggregate_container_state_load_from_checkpoint_fails_for_version_mismatch() -> None:
    checkpoint = CheckpointStatus(
        version="foo",
        last_update_time_ns=0,
        first_sample_start_ns=0,
        last_sample_start_ns=0,
        total_samples_count=0,
        cpu_histogram=HistogramCheckpoint(),
        memory_histogram=HistogramCheckpoint(),
    )
    with pytest.raises(ValueError, match=r"^unsupported checkpoint version foo$"):
        AggregateContainerState(CONFIG).load_from_checkpoint(checkpoint)


def test_aggregate_container_state_load_from_checkpoint() -> None:
    t1, t2 = at(2018, 1, 1, 2, 3, 4), at(2018, 2, 1, 2, 3, 4)
    checkpoint = CheckpointStatus(
        version=SUPPORTED_CHECKPOINT_VERSION,
        last_update_time_ns=t2,
        first_sample_start_ns=t1,
        last_sample_start_ns=t2,
        total_samples_count=20,
        memory_histogram=HistogramCheckpoint(total_weight=33.0, bucket_weights={0: 10}),
        cpu_histogram=HistogramCheckpoint(total_weight=44.0, bucket_weights={0: 10}),
    )
    cs = AggregateContainerState(CONFIG)
    cs.load_from_checkpoint(checkpoint)
    assert cs.first_sample_start_ns == t1
    assert cs.last_sample_start_ns == t2
    assert cs.total_samples_count == 20
    assert not cs.aggregate_cpu_usage.is_empty()
    assert not cs.aggregate_memory_peaks.is_empty()


def test_aggregate_container_state_is_expired() -> None:
    cs = AggregateContainerState(CONFIG)
    cs.last_sample_start_ns = TEST_TIMESTAMP
    cs.total_samples_count = 1
    assert not cs.is_expired(TEST_TIMESTAMP + 7 * DAY)
    assert cs.is_expired(TEST_TIMESTAMP + 8 * DAY)
    cs_empty = AggregateContainerState(CONFIG, creation_time_ns=TEST_TIMESTAMP)
    assert not cs_empty.is_expired(TEST_TIMESTAMP + 7 * DAY)
    assert cs_empty.is_expired(TEST_TIMESTAMP + 8 * DAY)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(
            ContainerResourcePolicy(mode=ContainerScalingMode.AUTO),
            ContainerScalingMode.AUTO,
            id="Explicit auto scaling mode",
        ),
        pytest.param(
            ContainerResourcePolicy(mode=ContainerScalingMode.OFF),
            ContainerScalingMode.OFF,
            id="Off scaling mode",
        ),
        pytest.param(ContainerResourcePolicy(), ContainerScalingMode.AUTO, id="No mode specified"),
        pytest.param(None, ContainerScalingMode.AUTO, id="Nil policy - default to Auto"),
    ],
)
def test_update_from_policy_scaling_mode(
    policy: ContainerResourcePolicy | None, expected: ContainerScalingMode
) -> None:
    cs = AggregateContainerState(CONFIG)
    cs.update_from_policy(policy, per_vpa_config=False)
    assert cs.scaling_mode is expected


CPU, MEMORY = ResourceName.CPU, ResourceName.MEMORY


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(
            ContainerResourcePolicy(controlled_resources=frozenset({CPU, MEMORY})),
            {CPU, MEMORY},
            id="Explicit ControlledResources",
        ),
        pytest.param(
            ContainerResourcePolicy(controlled_resources=frozenset()),
            set(),
            id="Empty ControlledResources",
        ),
        pytest.param(
            ContainerResourcePolicy(controlled_resources=frozenset({MEMORY})),
            {MEMORY},
            id="ControlledResources with one resource",
        ),
        pytest.param(ContainerResourcePolicy(), {CPU, MEMORY}, id="No ControlledResources"),
        pytest.param(None, {CPU, MEMORY}, id="Nil policy - use default"),
    ],
)
def test_update_from_policy_controlled_resources(
    policy: ContainerResourcePolicy | None, expected: set[ResourceName]
) -> None:
    cs = AggregateContainerState(CONFIG)
    cs.update_from_policy(policy, per_vpa_config=False)
    assert cs.get_controlled_resources() == expected


@pytest.mark.parametrize(
    ("policy", "feature_enabled", "expected_interval"),
    [
        pytest.param(
            ContainerResourcePolicy(memory_aggregation_interval_seconds=3600),
            True,
            HOUR,
            id="Custom interval with feature enabled",
        ),
        pytest.param(
            ContainerResourcePolicy(memory_aggregation_interval_seconds=3600),
            False,
            INTERVAL,
            id="Custom interval with feature disabled - falls back to default",
        ),
        pytest.param(ContainerResourcePolicy(), True, INTERVAL, id="Nil seconds - uses default"),
        pytest.param(None, True, INTERVAL, id="Nil policy - uses default"),
    ],
)
def test_update_from_policy_memory_aggregation_interval(
    policy: ContainerResourcePolicy | None, feature_enabled: bool, expected_interval: int
) -> None:
    cs = AggregateContainerState(CONFIG)
    cs.update_from_policy(policy, per_vpa_config=feature_enabled)
    assert cs.memory_aggregation_interval_ns == expected_interval


@pytest.mark.parametrize(
    ("policy", "feature_enabled", "expected_count"),
    [
        pytest.param(
            ContainerResourcePolicy(memory_aggregation_interval_count=4),
            True,
            4,
            id="Custom count with feature enabled",
        ),
        pytest.param(
            ContainerResourcePolicy(memory_aggregation_interval_count=4),
            False,
            8,
            id="Custom count with feature disabled - falls back to default",
        ),
        pytest.param(ContainerResourcePolicy(), True, 8, id="Nil count - uses default"),
        pytest.param(None, True, 8, id="Nil policy - uses default"),
    ],
)
def test_update_from_policy_memory_aggregation_interval_count(
    policy: ContainerResourcePolicy | None, feature_enabled: bool, expected_count: int
) -> None:
    cs = AggregateContainerState(CONFIG)
    cs.update_from_policy(policy, per_vpa_config=feature_enabled)
    assert cs.memory_aggregation_interval_count == expected_count


def test_aggregate_container_state_is_expired_with_custom_interval_count() -> None:
    window_length = INTERVAL * 4
    cs = AggregateContainerState(CONFIG)
    cs.last_sample_start_ns = TEST_TIMESTAMP
    cs.total_samples_count = 1
    cs.memory_aggregation_interval_count = 4
    assert not cs.is_expired(TEST_TIMESTAMP + window_length - HOUR)
    assert cs.is_expired(TEST_TIMESTAMP + window_length)
    cs_empty = AggregateContainerState(CONFIG, creation_time_ns=TEST_TIMESTAMP)
    cs_empty.memory_aggregation_interval_count = 4
    assert not cs_empty.is_expired(TEST_TIMESTAMP + window_length - HOUR)
    assert cs_empty.is_expired(TEST_TIMESTAMP + window_length)


def test_default_histogram_options() -> None:
    """``aggregations_config.go``: 176 buckets for CPU (0.01 to 1000 cores) and memory (1e7 to
    1e12 bytes), ratio 1.05, epsilon 1e-4."""
    for options, first in (
        (CONFIG.cpu_histogram_options, 0.01),
        (CONFIG.memory_histogram_options, 1e7),
    ):
        assert options.num_buckets == 176
        assert options.ratio == 1.05
        assert options.epsilon == pytest.approx(1e-4, rel=1e-15)
        assert options.get_bucket_start(1) == pytest.approx(first, rel=1e-12)
