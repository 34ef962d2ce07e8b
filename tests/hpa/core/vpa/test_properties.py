"""Properties of the VPA model: percentiles, merge, checkpoints, capping, bound order."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from hpa.core.vpa.aggregation import (
    DEFAULT_AGGREGATIONS_CONFIG,
    AggregateContainerState,
    ContainerState,
    aggregate_state_by_container_name,
)
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.histogram import DecayingHistogram, Histogram
from hpa.core.vpa.policy import ContainerResourcePolicy, PodResourcePolicy
from hpa.core.vpa.recommender import (
    RecommendedContainerResources,
    apply_vpa_policy,
    create_pod_resource_recommender,
    recommend,
)

CPU_OPTIONS = DEFAULT_AGGREGATIONS_CONFIG.cpu_histogram_options
HOUR = 3600 * NANOSECONDS_PER_SECOND
START = 1_700_000_000 * NANOSECONDS_PER_SECOND

samples = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=2000.0),  # cores, past the last bucket too
        st.floats(min_value=0.0, max_value=50.0),  # weight
        st.integers(min_value=0, max_value=30 * 24),  # hours after START
    ),
    max_size=40,
)
percentiles = st.floats(min_value=0.0, max_value=1.0)
window_samples = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=2000.0),
        st.floats(min_value=0.1, max_value=50.0),
        st.integers(min_value=0, max_value=8 * 24),
    ),
    max_size=40,
)
"""Samples as the model produces them: weight at least ``minSampleWeight`` (0.1) within the
8-day window, so no sample decays below epsilon (upstream sized epsilon for exactly this). Merge
is associative only then: a weight under epsilon is stored but outside ``[min_bucket,
max_bucket]``, and ``Merge`` copies only that range, so where such weights sit depends on the
order of merges."""


def decaying(sample_list: list[tuple[float, float, int]]) -> DecayingHistogram:
    h = DecayingHistogram(CPU_OPTIONS, 24 * HOUR)
    for value, weight, hours in sample_list:
        h.add_sample(value, weight, START + hours * HOUR)
    return h


def bucket_of(value: float) -> int:
    return CPU_OPTIONS.find_bucket(value)


@given(samples, percentiles, percentiles)
def test_percentiles_are_monotone_in_p(
    sample_list: list[tuple[float, float, int]], p: float, q: float
) -> None:
    h = decaying(sample_list)
    low, high = min(p, q), max(p, q)
    assert h.percentile(low) <= h.percentile(high)


@given(window_samples, window_samples)
def test_merge_is_commutative(
    a: list[tuple[float, float, int]], b: list[tuple[float, float, int]]
) -> None:
    ab, ba = decaying(a), decaying(b)
    ab.merge(decaying(b))
    ba.merge(decaying(a))
    assert_same_histogram(ab, ba)


def assert_same_histogram(left: DecayingHistogram, right: DecayingHistogram) -> None:
    """What upstream's ``Equals`` compares, within float tolerance."""
    assert left.reference_timestamp_ns == right.reference_timestamp_ns
    assert math.isclose(left.total_weight, right.total_weight, rel_tol=1e-9, abs_tol=1e-9)
    assert (left.min_bucket, left.max_bucket) == (right.min_bucket, right.max_bucket)
    for bucket in range(left.min_bucket, left.max_bucket + 1):
        assert math.isclose(
            left.bucket_weight(bucket), right.bucket_weight(bucket), rel_tol=1e-9, abs_tol=1e-9
        )


@given(window_samples, window_samples, window_samples)
def test_merge_is_associative(
    a: list[tuple[float, float, int]],
    b: list[tuple[float, float, int]],
    c: list[tuple[float, float, int]],
) -> None:
    left = decaying(a)
    left.merge(decaying(b))
    left.merge(decaying(c))
    bc = decaying(b)
    bc.merge(decaying(c))
    right = decaying(a)
    right.merge(bc)
    assert_same_histogram(left, right)


@given(samples)
def test_save_and_load_moves_each_percentile_by_at_most_the_rounding_of_the_weights(
    sample_list: list[tuple[float, float, int]],
) -> None:
    """A checkpoint stores each bucket as a whole number of 1/10000 of the heaviest one, so the
    cumulative distribution moves by at most ``delta`` (one rounding unit per non-empty bucket,
    doubled for the renormalisation, plus buckets that fall under epsilon): every restored
    percentile lies between the original's at ``p - delta`` and ``p + delta``. On a histogram
    without gaps that is within one bucket; across a gap (or a bucket lighter than 1/20000 of the
    heaviest, which the format drops) a percentile can jump to the next non-empty bucket."""
    h = decaying(sample_list)
    restored = DecayingHistogram(CPU_OPTIONS, 24 * HOUR)
    restored.load_from_checkpoint(h.save_to_checkpoint())
    if h.is_empty():
        assert restored.is_empty()
        return
    buckets = range(h.min_bucket, h.max_bucket + 1)
    heaviest = max(h.bucket_weight(b) for b in buckets)
    non_empty = sum(1 for b in buckets if h.bucket_weight(b) > 0)
    total = h.total_weight
    delta = non_empty * (2 * heaviest / 10000 + CPU_OPTIONS.epsilon) / total
    for i in range(0, 101, 5):
        p = i / 100
        low = h.percentile(max(0.0, p - delta))
        high = h.percentile(min(1.0, p + delta))
        assert low <= restored.percentile(p) <= high or restored.is_empty()


@given(
    st.floats(min_value=0.05, max_value=500.0),
    st.lists(st.floats(min_value=0.8, max_value=1.25), min_size=1, max_size=30),
)
def test_save_and_load_keeps_percentiles_within_one_bucket_for_steady_usage(
    level: float, jitter: list[float]
) -> None:
    """Usage around one level (within +-25 %) fills contiguous buckets of comparable weight: every
    percentile comes back within one bucket."""
    h = decaying([(level * j, 1.0, i) for i, j in enumerate(jitter)])
    restored = DecayingHistogram(CPU_OPTIONS, 24 * HOUR)
    restored.load_from_checkpoint(h.save_to_checkpoint())
    for i in range(0, 101, 5):
        p = i / 100
        assert abs(bucket_of(h.percentile(p)) - bucket_of(restored.percentile(p))) <= 1


@given(samples)
def test_plain_histogram_checkpoint_round_trip_keeps_the_total(
    sample_list: list[tuple[float, float, int]],
) -> None:
    h = Histogram(CPU_OPTIONS)
    for value, weight, _ in sample_list:
        h.add_sample(value, weight)
    checkpoint = h.save_to_checkpoint()
    assert all(0 < w <= 10000 for w in checkpoint.bucket_weights.values())
    assert checkpoint.total_weight == h.total_weight


amounts = st.integers(min_value=0, max_value=10**13)
optional_amounts = st.none() | st.integers(min_value=0, max_value=10**13)


@given(amounts, amounts, amounts, optional_amounts, optional_amounts)
def test_capping_never_leaves_min_and_max_allowed(
    target: int, lower: int, upper: int, min_allowed: int | None, max_allowed: int | None
) -> None:
    recommendation = RecommendedContainerResources(
        "app",
        Resources(cpu=target, memory=target),
        Resources(cpu=lower, memory=lower),
        Resources(cpu=upper, memory=upper),
        Resources(cpu=target, memory=target),
    )
    policy = PodResourcePolicy(
        (
            ContainerResourcePolicy(
                "*",
                min_allowed=Resources(cpu=min_allowed, memory=min_allowed),
                max_allowed=Resources(cpu=max_allowed, memory=max_allowed),
            ),
        )
    )
    (capped,), _ = apply_vpa_policy([recommendation], policy)
    assert capped.uncapped_target == recommendation.uncapped_target
    for resources in (capped.target, capped.lower_bound, capped.upper_bound):
        for _, value in resources.items():
            if max_allowed:
                assert value <= max_allowed
            if min_allowed and not (max_allowed and max_allowed < min_allowed):
                assert value >= min_allowed


usage = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=64_000), st.integers(min_value=0, max_value=2**36)
    ),
    min_size=0,
    max_size=60,
)


@settings(deadline=None)
@given(usage, st.integers(min_value=1, max_value=600))
def test_lower_bound_le_target_le_upper_bound(
    observations: list[tuple[int, int]], step_minutes: int
) -> None:
    state = AggregateContainerState()
    container = ContainerState(state)
    for i, (cpu, memory) in enumerate(observations):
        t = START + i * step_minutes * 60 * NANOSECONDS_PER_SECOND
        container.add_cpu_sample(t, cpu)
        container.add_memory_sample(t, memory)
    result = recommend({"app": state}, recommender=create_pod_resource_recommender())
    (app,) = result.container_recommendations
    for lower, target, upper in (
        (app.lower_bound.cpu, app.target.cpu, app.upper_bound.cpu),
        (app.lower_bound.memory, app.target.memory, app.upper_bound.memory),
    ):
        assert lower is not None
        assert target is not None
        assert upper is not None
        assert lower <= target <= upper


def _reads(state: AggregateContainerState) -> tuple[object, ...]:
    """Everything the estimators and the confidence read of a state."""
    out: list[object] = [
        state.first_sample_start_ns,
        state.last_sample_start_ns,
        state.total_samples_count,
    ]
    for h in (state.aggregate_cpu_usage, state.aggregate_memory_peaks):
        out += [h.total_weight, h.min_bucket, h.max_bucket, h.is_empty()]
        out += [h.percentile(p) for p in (0.0, 0.5, 0.9, 0.95, 1.0)]
    return tuple(out)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["app", "sidecar"]),
            st.lists(
                st.tuples(
                    st.integers(min_value=0, max_value=5000),  # millicores
                    st.integers(min_value=0, max_value=8 * 24),  # hours after START
                ),
                max_size=20,
            ),
        ),
        max_size=4,
    )
)
@settings(max_examples=200, deadline=None)
def test_read_only_states_read_as_the_merged_copies(
    aggregates: list[tuple[str, list[tuple[int, int]]]],
) -> None:
    """``read_only`` names get views with every value the merged copies have; building and
    reading a view changes nothing (merging several states may rescale them, as upstream's
    ``Merge`` does)."""
    pairs = []
    for name, sample_list in aggregates:
        state = AggregateContainerState()
        for millicores, hours in sample_list:
            state.add_cpu_sample(START + hours * HOUR, millicores)
            state.add_memory_sample(START + hours * HOUR, millicores * 2**20)
        pairs.append((name, state))
    names = [name for name, _ in pairs]
    alone = [state for name, state in pairs if names.count(name) == 1]
    before = [state.save_to_checkpoint(START) for state in alone]
    viewed = aggregate_state_by_container_name(pairs, read_only={"app", "sidecar"})
    reads = {name: _reads(state) for name, state in viewed.items()}
    assert [state.save_to_checkpoint(START) for state in alone] == before
    copied = aggregate_state_by_container_name(pairs)
    assert list(viewed) == list(copied)
    assert reads == {name: _reads(state) for name, state in copied.items()}
