"""Parity: upstream histogram tests of kubernetes/autoscaler v1.8.1, case by case.

Ported from ``vertical-pod-autoscaler/pkg/recommender/util/histogram_test.go``,
``histogram_options_test.go`` and ``decaying_histogram_test.go`` at the v1.8.1 release; each test
is named after its Go function. ``assert.InEpsilon(t, x, y, 1e-15)`` becomes a relative
comparison with the same tolerance.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND, ZERO_TIME_NS
from hpa.core.vpa.histogram import (
    MAX_CHECKPOINT_WEIGHT,
    DecayingHistogram,
    ExponentialHistogramOptions,
    Histogram,
    HistogramCheckpoint,
    LinearHistogramOptions,
)

VALUE_EPSILON = 1e-15
WEIGHT_EPSILON = 1e-15
ANY_TIME = ZERO_TIME_NS
TEST_HISTOGRAM_OPTIONS = LinearHistogramOptions(10.0, 1.0, WEIGHT_EPSILON)
HOUR_NS = 3600 * NANOSECONDS_PER_SECOND
START_TIME = 1234567890 * NANOSECONDS_PER_SECOND


def in_epsilon(expected: float, actual: float, epsilon: float = VALUE_EPSILON) -> bool:
    return math.isclose(expected, actual, rel_tol=epsilon, abs_tol=0.0)


# -- histogram_options_test.go ----------------------------------------------------------------


def test_linear_histogram_options() -> None:
    o = LinearHistogramOptions(5.0, 0.3, 0.001)
    assert o.epsilon == 0.001
    assert o.num_buckets == 18
    assert o.get_bucket_start(0) == 0.0
    assert o.get_bucket_start(17) == 5.1
    assert o.find_bucket(-1.0) == 0
    assert o.find_bucket(0.0) == 0
    assert o.find_bucket(1.3) == 4
    assert o.find_bucket(100.0) == 17


def test_exponential_histogram_options() -> None:
    o = ExponentialHistogramOptions(500.0, 40.0, 1.5, 0.001)
    assert o.epsilon == 0.001
    assert o.num_buckets == 6
    assert [o.get_bucket_start(b) for b in range(6)] == [0.0, 40.0, 100.0, 190.0, 325.0, 527.5]
    assert o.find_bucket(-1.0) == 0
    assert o.find_bucket(39.99) == 0
    assert o.find_bucket(40.0) == 1
    assert o.find_bucket(100.0) == 2
    assert o.find_bucket(900.0) == 5


# -- histogram_test.go ------------------------------------------------------------------------


def test_percentiles_empty_histogram() -> None:
    h = Histogram(TEST_HISTOGRAM_OPTIONS)
    for p in (-0.5, 0.0, 0.5, 1.0, 1.5):
        assert h.percentile(p) == 0.0


def test_percentiles() -> None:
    h = Histogram(TEST_HISTOGRAM_OPTIONS)
    for i in range(1, 5):
        h.add_sample(float(i), float(i), ANY_TIME)
    expected = {0.0: 2, 0.1: 2, 0.2: 3, 0.3: 3, 0.4: 4, 0.5: 4, 0.6: 4, 0.7: 5, 0.8: 5}
    expected |= {0.9: 5, 1.0: 5}
    for p, value in expected.items():
        assert in_epsilon(value, h.percentile(p)), p


def test_percentile_out_of_bounds() -> None:
    h = Histogram(LinearHistogramOptions(1.0, 0.1, WEIGHT_EPSILON))
    h.add_sample(0.1, 0.1, ANY_TIME)
    h.add_sample(0.2, 0.2, ANY_TIME)
    assert in_epsilon(0.2, h.percentile(-0.1))
    assert in_epsilon(0.3, h.percentile(1.1))
    # Fill the boundary buckets.
    h.add_sample(0.0, 0.1, ANY_TIME)
    h.add_sample(1.0, 0.2, ANY_TIME)
    assert in_epsilon(0.1, h.percentile(-0.1))
    assert in_epsilon(1.0, h.percentile(1.1))


def test_empty_histogram() -> None:
    h = Histogram(LinearHistogramOptions(1.0, 0.1, WEIGHT_EPSILON))
    assert h.is_empty()
    h.add_sample(0.1, WEIGHT_EPSILON * 2.5, ANY_TIME)
    assert not h.is_empty()
    h.subtract_sample(0.1, WEIGHT_EPSILON, ANY_TIME)
    assert not h.is_empty()
    h.subtract_sample(0.1, WEIGHT_EPSILON, ANY_TIME)
    assert h.is_empty()


def test_non_empty_on_epsilon_addition() -> None:
    h = Histogram(LinearHistogramOptions(1.0, 0.1, WEIGHT_EPSILON))
    assert h.is_empty()
    h.add_sample(9.9, WEIGHT_EPSILON * 3, ANY_TIME)
    assert not h.is_empty()
    h.add_sample(0.1, WEIGHT_EPSILON * 0.3, ANY_TIME)
    assert not h.is_empty()
    h.add_sample(999.9, WEIGHT_EPSILON * 0.3, ANY_TIME)
    assert not h.is_empty()


def test_histogram_merge() -> None:
    h1 = Histogram(TEST_HISTOGRAM_OPTIONS)
    h1.add_sample(1, 1, ANY_TIME)
    h1.add_sample(2, 1, ANY_TIME)
    h2 = Histogram(TEST_HISTOGRAM_OPTIONS)
    h2.add_sample(2, 1, ANY_TIME)
    h2.add_sample(3, 1, ANY_TIME)
    expected = Histogram(TEST_HISTOGRAM_OPTIONS)
    for value in (1, 2, 2, 3):
        expected.add_sample(value, 1, ANY_TIME)
    h1.merge(h2)
    assert h1.equals(expected)


def test_histogram_save_to_checkpoint_empty() -> None:
    s = Histogram(TEST_HISTOGRAM_OPTIONS).save_to_checkpoint()
    assert s.total_weight == 0.0
    assert len(s.bucket_weights) == 0


def test_histogram_save_to_checkpoint() -> None:
    h = Histogram(TEST_HISTOGRAM_OPTIONS)
    h.add_sample(1, 1, ANY_TIME)
    s = h.save_to_checkpoint()
    bucket = TEST_HISTOGRAM_OPTIONS.find_bucket(1)
    assert s.total_weight == 1.0
    assert dict(s.bucket_weights) == {bucket: MAX_CHECKPOINT_WEIGHT}


def test_histogram_save_to_checkpoint_drops_relatively_small_values() -> None:
    h = Histogram(TEST_HISTOGRAM_OPTIONS)
    v1, w1 = 1.0, 1.0
    v2, w2 = 2.0, 100000.0
    h.add_sample(v1, w1, ANY_TIME)
    h.add_sample(v2, w2, ANY_TIME)
    bucket1 = TEST_HISTOGRAM_OPTIONS.find_bucket(v1)
    bucket2 = TEST_HISTOGRAM_OPTIONS.find_bucket(v2)
    assert bucket1 != bucket2
    assert w1 < (w2 / float(MAX_CHECKPOINT_WEIGHT)) / 2
    s = h.save_to_checkpoint()
    assert s.total_weight == 100001.0
    assert dict(s.bucket_weights) == {bucket2: MAX_CHECKPOINT_WEIGHT}


def test_histogram_save_to_checkpoint_for_multiple_values() -> None:
    h = Histogram(TEST_HISTOGRAM_OPTIONS)
    samples = [(1.0, 1.0), (2.0, 10000.0), (3.0, 50.0)]
    for value, weight in samples:
        h.add_sample(value, weight, ANY_TIME)
    buckets = [TEST_HISTOGRAM_OPTIONS.find_bucket(v) for v, _ in samples]
    assert len(set(buckets)) == 3
    s = h.save_to_checkpoint()
    assert s.total_weight == 10051.0
    assert dict(s.bucket_weights) == {buckets[0]: 1, buckets[1]: 10000, buckets[2]: 50}


def test_histogram_load_from_checkpoint() -> None:
    h = Histogram(TEST_HISTOGRAM_OPTIONS)
    h.load_from_checkpoint(HistogramCheckpoint(total_weight=6.0, bucket_weights={0: 1, 1: 2}))
    assert h.total_weight == 6.0
    assert h.bucket_weight(0) == 2.0
    assert h.bucket_weight(1) == 4.0


@pytest.mark.parametrize(
    ("checkpoint", "message"),
    [
        pytest.param(
            HistogramCheckpoint(total_weight=1.0, bucket_weights={-1: 1}),
            "checkpoint has a negative bucket -1",
            id="TestHistogramLoadFromCheckpointReturnsErrorOnNegativeBucket",
        ),
        pytest.param(
            HistogramCheckpoint(total_weight=1.0, bucket_weights={99: 1}),
            "checkpoint has bucket 99 that is exceeding histogram buckets 11",
            id="TestHistogramLoadFromCheckpointReturnsErrorOnInvalidBucket",
        ),
        pytest.param(
            HistogramCheckpoint(total_weight=-1.0),
            "cannot load checkpoint with negative weight -1.0",
            id="TestHistogramLoadFromCheckpointReturnsErrorNegativeTotaWeight",
        ),
        pytest.param(
            None,
            "cannot load from empty checkpoint",
            id="TestHistogramLoadFromCheckpointReturnsErrorOnNilInput",
        ),
    ],
)
def test_histogram_load_from_checkpoint_errors(
    checkpoint: HistogramCheckpoint | None, message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        Histogram(TEST_HISTOGRAM_OPTIONS).load_from_checkpoint(checkpoint)


def test_histogram_is_not_empty_after_saving_and_loading_checkpoints_with_boundary_values() -> None:
    histogram = Histogram(TEST_HISTOGRAM_OPTIONS)
    histogram.add_sample(1, WEIGHT_EPSILON, ANY_TIME)
    histogram.add_sample(
        2, float(MAX_CHECKPOINT_WEIGHT) * WEIGHT_EPSILON - WEIGHT_EPSILON, ANY_TIME
    )
    assert not histogram.is_empty()
    checkpoint = histogram.save_to_checkpoint()
    new_histogram = Histogram(TEST_HISTOGRAM_OPTIONS)
    new_histogram.load_from_checkpoint(checkpoint)
    assert not new_histogram.is_empty()


# -- decaying_histogram_test.go ---------------------------------------------------------------


def test_percentiles_empty_decaying_histogram() -> None:
    h = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    for p in (-0.5, 0.0, 0.5, 1.0, 1.5):
        assert h.percentile(p) == 0.0


def test_simple_decay() -> None:
    h = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    h.add_sample(2, 1000, START_TIME)
    h.add_sample(1, 1, START_TIME + 20 * HOUR_NS)
    assert in_epsilon(2, h.percentile(0.999))
    assert in_epsilon(3, h.percentile(1.0))


def test_longterm_decay() -> None:
    h = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    h.add_sample(2, 1, START_TIME)
    h.add_sample(1, 1, START_TIME + 101 * HOUR_NS)
    assert in_epsilon(2, h.percentile(1.0))


def test_decaying_histogram_percentiles() -> None:
    h = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    timestamp = START_TIME
    for i in range(1, 5):
        h.add_sample(float(i), float(i), timestamp)
        timestamp += HOUR_NS
    expected = {0.00: 2, 0.02: 2, 0.03: 3, 0.10: 3, 0.11: 4, 0.34: 4, 0.35: 5, 1.00: 5}
    for p, value in expected.items():
        assert in_epsilon(value, h.percentile(p)), p


def test_no_decay() -> None:
    h = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    for i in range(1, 5):
        h.add_sample(float(i), float(i), START_TIME)
    expected = {0.0: 2, 0.2: 3, 0.1: 2, 0.3: 3, 0.4: 4, 0.5: 4, 0.6: 4, 0.7: 5, 0.8: 5}
    expected |= {0.9: 5, 1.0: 5}
    for p, value in expected.items():
        assert in_epsilon(value, h.percentile(p)), p


def test_decaying_histogram_merge() -> None:
    h1 = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    h1.add_sample(1, 1, START_TIME)
    h1.add_sample(2, 1, START_TIME + HOUR_NS)
    h2 = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    h2.add_sample(2, 1, START_TIME + 2 * HOUR_NS)
    h2.add_sample(3, 1, START_TIME + HOUR_NS)
    expected = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    expected.add_sample(2, 1, START_TIME + 2 * HOUR_NS)
    expected.add_sample(2, 1, START_TIME + HOUR_NS)
    expected.add_sample(3, 1, START_TIME + HOUR_NS)
    expected.add_sample(1, 1, START_TIME)
    h1.merge(h2)
    assert h1.equals(expected)


def test_decaying_histogram_save_to_checkpoint() -> None:
    d = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    d.add_sample(2, 1, START_TIME + 100 * HOUR_NS)
    assert d.reference_timestamp_ns != ZERO_TIME_NS
    checkpoint = d.save_to_checkpoint()
    assert checkpoint.reference_timestamp_ns == d.reference_timestamp_ns
    assert checkpoint.bucket_weights
    assert checkpoint.total_weight != 0


def test_decaying_histogram_load_from_checkpoint() -> None:
    timestamp = datetime(2018, 1, 2, 3, 4, 5, tzinfo=UTC)
    timestamp_ns = int(timestamp.timestamp()) * NANOSECONDS_PER_SECOND
    checkpoint = HistogramCheckpoint(
        total_weight=6.0, bucket_weights={0: 1}, reference_timestamp_ns=timestamp_ns
    )
    d = DecayingHistogram(TEST_HISTOGRAM_OPTIONS, HOUR_NS)
    d.load_from_checkpoint(checkpoint)
    assert not Histogram.is_empty(d)
    assert d.reference_timestamp_ns == timestamp_ns
