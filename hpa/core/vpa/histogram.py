"""Histograms of resource usage: plain, decaying, and their checkpoint form.

Upstream counterpart: kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/recommender/util/histogram.go``, ``histogram_options.go`` and
``decaying_histogram.go``. Names follow upstream in snake_case (``add_sample``,
``subtract_sample``, ``merge``, ``percentile``, ``is_empty``, ``equals``,
``save_to_checkpoint``, ``load_from_checkpoint``, ``min_bucket``/``max_bucket``,
``reference_timestamp``, ``half_life``).

Data layout: upstream keeps a dense ``[]float64`` of every bucket (176 for the default CPU and
memory schemes). Here the weights live in an ``array('d')`` that covers only the buckets ever
touched (``_offset`` is the index of its first element); every other bucket weighs 0, exactly as
in upstream's dense slice, so the arithmetic is the same while a state of a steady container
takes a few dozen buckets instead of 176.

Deliberate deviations:

* Times are integer nanoseconds since the Unix epoch; Go's zero ``time.Time`` (the initial
  reference timestamp) is :data:`~hpa.core.vpa.gomath.ZERO_TIME_NS`.
* Where upstream panics (negative weight, merging different options or half-lives, a bucket index
  out of range) this raises ``ValueError`` with a one-line message; loading a bad checkpoint also
  raises ``ValueError`` (upstream returns an error). A non-finite sample value is refused
  (upstream would index out of range).
* Options are compared by value (upstream compares the option pointers).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field

from hpa.core.vpa.gomath import (
    MAX_INT64,
    MIN_INT64,
    ZERO_TIME_NS,
    go_pow,
    go_round,
    sub_ns,
    time_round_ns,
)

__all__ = [
    "MAX_CHECKPOINT_WEIGHT",
    "MAX_DECAY_EXPONENT",
    "DecayingHistogram",
    "ExponentialHistogramOptions",
    "Histogram",
    "HistogramCheckpoint",
    "HistogramOptions",
    "LinearHistogramOptions",
]

MAX_CHECKPOINT_WEIGHT = 10000
"""The largest bucket weight stored in a checkpoint (upstream ``MaxCheckpointWeight``)."""

MAX_DECAY_EXPONENT = 100
"""Past ``reference + 100 half-lives`` the reference timestamp is moved (``maxDecayExponent``)."""

_MAX_UINT32 = 2**32 - 1
_INF = math.inf
_EQUALS_TOLERANCE = 1e-15


def _check_index(bucket: int, num_buckets: int) -> None:
    if bucket < 0 or bucket >= num_buckets:
        raise ValueError(f"index {bucket} out of range [0..{num_buckets - 1}]")


@dataclass(frozen=True, slots=True)
class LinearHistogramOptions:
    """Buckets of width ``bucket_size`` up to ``max_value`` (``NewLinearHistogramOptions``)."""

    max_value: float
    bucket_size: float
    epsilon: float
    num_buckets: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if not (self.max_value > 0.0 and self.bucket_size > 0.0 and self.epsilon > 0.0):
            raise ValueError("maxValue and bucketSize must both be positive")
        object.__setattr__(self, "num_buckets", math.ceil(self.max_value / self.bucket_size) + 1)

    def find_bucket(self, value: float) -> int:
        """The bucket holding ``value``, clamped to ``[0, num_buckets - 1]``."""
        if not value < _INF:
            raise ValueError(f"histogram sample value {value} is not finite")
        scaled = value / self.bucket_size
        if scaled < 0.0:
            return 0
        return min(int(scaled), self.num_buckets - 1)

    def get_bucket_start(self, bucket: int) -> float:
        """The lower edge of ``bucket``."""
        _check_index(bucket, self.num_buckets)
        return float(bucket) * self.bucket_size


@dataclass(frozen=True, slots=True)
class ExponentialHistogramOptions:
    """Buckets growing by ``ratio`` from ``first_bucket_size`` (``NewExponentialHistogramOptions``).

    Bucket ``n`` starts at ``first_bucket_size * (ratio**n - 1) / (ratio - 1)`` (``ratio**n`` as
    Go's ``math.Pow`` computes it); the last bucket is open-ended."""

    max_value: float
    first_bucket_size: float
    ratio: float
    epsilon: float
    num_buckets: int = field(init=False, compare=False)
    _starts: tuple[float, ...] = field(init=False, compare=False, repr=False)
    _ratio_minus_one: float = field(init=False, compare=False, repr=False)
    _log_ratio: float = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not (
            self.max_value > 0.0
            and self.first_bucket_size > 0.0
            and self.ratio > 1.0
            and self.epsilon > 0.0
        ):
            raise ValueError(
                "maxValue, firstBucketSize and epsilon must be > 0.0, ratio must be > 1.0"
            )
        ratio_minus_one = self.ratio - 1
        log_ratio = math.log(self.ratio)
        num_buckets = (
            math.ceil(
                math.log(self.max_value * ratio_minus_one / self.first_bucket_size + 1) / log_ratio
            )
            + 1
        )
        starts = [0.0] + [
            self.first_bucket_size * (go_pow(self.ratio, float(b)) - 1) / ratio_minus_one
            for b in range(1, num_buckets)
        ]
        object.__setattr__(self, "num_buckets", num_buckets)
        object.__setattr__(self, "_starts", tuple(starts))
        object.__setattr__(self, "_ratio_minus_one", ratio_minus_one)
        object.__setattr__(self, "_log_ratio", log_ratio)

    def find_bucket(self, value: float) -> int:
        """The bucket holding ``value``; values past the last bucket's start land in it."""
        if value < self.first_bucket_size:
            return 0
        if not value < _INF:
            raise ValueError(f"histogram sample value {value} is not finite")
        bucket = int(
            math.log(value * self._ratio_minus_one / self.first_bucket_size + 1) / self._log_ratio
        )
        if bucket >= self.num_buckets:
            return self.num_buckets - 1
        return bucket

    def get_bucket_start(self, bucket: int) -> float:
        """The lower edge of ``bucket``."""
        if not 0 <= bucket < self.num_buckets:
            _check_index(bucket, self.num_buckets)
        return self._starts[bucket]


HistogramOptions = LinearHistogramOptions | ExponentialHistogramOptions


@dataclass(frozen=True, slots=True)
class HistogramCheckpoint:
    """``HistogramCheckpoint``: bucket weights scaled to at most 10000, the total, the reference.

    ``bucket_weights`` maps a bucket index to its stored weight (a uint32 upstream);
    ``reference_timestamp_ns`` is :data:`ZERO_TIME_NS` for a plain histogram (upstream writes
    ``null``)."""

    total_weight: float = 0.0
    bucket_weights: Mapping[int, int] = field(default_factory=dict)
    reference_timestamp_ns: int = ZERO_TIME_NS


class Histogram:
    """A histogram of sample values with float weights (upstream ``histogram``)."""

    __slots__ = ("_offset", "_weights", "max_bucket", "min_bucket", "options", "total_weight")

    options: HistogramOptions
    total_weight: float
    min_bucket: int
    """First bucket weighing at least epsilon (``num_buckets - 1`` while empty)."""
    max_bucket: int
    """Last bucket weighing at least epsilon (0 while empty)."""
    _weights: array[float]
    _offset: int

    def __init__(self, options: HistogramOptions) -> None:
        self.options = options
        self.total_weight = 0.0
        self.min_bucket = options.num_buckets - 1
        self.max_bucket = 0
        self._weights = array("d")
        self._offset = 0

    # -- storage -------------------------------------------------------------------------------

    def bucket_weight(self, bucket: int) -> float:
        """The weight held in ``bucket`` (0 for a bucket never touched)."""
        i = bucket - self._offset
        if 0 <= i < len(self._weights):
            return self._weights[i]
        return 0.0

    def _cover(self, low: int, high: int) -> None:
        """Extend the stored range to include buckets ``low..high``."""
        weights = self._weights
        if not weights:
            self._weights = array("d", bytes(8 * (high - low + 1)))
            self._offset = low
            return
        first = self._offset
        last = first + len(weights) - 1
        if low < first:
            self._weights = array("d", bytes(8 * (first - low))) + weights
            self._offset = low
        if high > last:
            self._weights.extend(array("d", bytes(8 * (high - last))))

    # -- upstream operations -------------------------------------------------------------------

    def add_sample(self, value: float, weight: float, time_ns: int = ZERO_TIME_NS) -> None:
        """Add ``weight`` to the bucket of ``value`` (``AddSample``; ``time_ns`` is unused)."""
        if not weight >= 0.0:
            raise ValueError("sample weight must be non-negative")
        options = self.options
        bucket = options.find_bucket(value)
        i = bucket - self._offset
        weights = self._weights
        if i < 0 or i >= len(weights):
            self._cover(bucket, bucket)
            weights = self._weights
            i = bucket - self._offset
        new_weight = weights[i] + weight
        weights[i] = new_weight
        self.total_weight += weight
        if new_weight >= options.epsilon:
            if bucket < self.min_bucket:
                self.min_bucket = bucket
            if bucket > self.max_bucket:
                self.max_bucket = bucket

    def subtract_sample(self, value: float, weight: float, time_ns: int = ZERO_TIME_NS) -> None:
        """Take ``weight`` from the bucket of ``value``, never below 0 (``SubtractSample``)."""
        if not weight >= 0.0:
            raise ValueError("sample weight must be non-negative")
        bucket = self.options.find_bucket(value)
        epsilon = self.options.epsilon
        total = self.total_weight - weight
        self.total_weight = 0.0 if total < epsilon else total
        i = bucket - self._offset
        if 0 <= i < len(self._weights):
            remaining = self._weights[i] - weight
            self._weights[i] = 0.0 if remaining < epsilon else remaining
        self._update_min_and_max_bucket()

    def merge(self, other: Histogram) -> None:
        """Add every bucket of ``other`` in its ``[min_bucket, max_bucket]`` (``Merge``)."""
        if self.options != other.options:
            raise ValueError("can't merge histograms with different options")
        low, high = other.min_bucket, other.max_bucket
        if low <= high:
            self._cover(low, high)
            weights, offset = self._weights, self._offset
            for bucket in range(low, high + 1):
                weights[bucket - offset] += other.bucket_weight(bucket)
        self.total_weight += other.total_weight
        if other.min_bucket < self.min_bucket:
            self.min_bucket = other.min_bucket
        if other.max_bucket > self.max_bucket:
            self.max_bucket = other.max_bucket

    def percentile(self, percentile: float) -> float:
        """The end of the first bucket where the cumulative weight reaches ``percentile`` of the
        total, never past ``max_bucket``; the start of the last bucket if that is where it ends;
        0.0 when empty (``Percentile``)."""
        if self.is_empty():
            return 0.0
        partial_sum = 0.0
        threshold = percentile * self.total_weight
        bucket = self.min_bucket
        max_bucket = self.max_bucket
        weights, offset = self._weights, self._offset
        while bucket < max_bucket:
            partial_sum += weights[bucket - offset]
            if partial_sum >= threshold:
                break
            bucket += 1
        if bucket < self.options.num_buckets - 1:
            return self.options.get_bucket_start(bucket + 1)
        return self.options.get_bucket_start(bucket)

    def is_empty(self) -> bool:
        """True when the first non-empty bucket weighs less than epsilon (``IsEmpty``)."""
        return self.bucket_weight(self.min_bucket) < self.options.epsilon

    def equals(self, other: Histogram) -> bool:
        """Same kind, options and bucket range, every weight within 1e-15 (``Equals``)."""
        if type(other) is not Histogram:
            return False
        return self._equal_buckets(other)

    def _equal_buckets(self, other: Histogram) -> bool:
        if (
            self.options != other.options
            or self.min_bucket != other.min_bucket
            or self.max_bucket != other.max_bucket
        ):
            return False
        for bucket in range(self.min_bucket, self.max_bucket + 1):
            diff = self.bucket_weight(bucket) - other.bucket_weight(bucket)
            if diff > _EQUALS_TOLERANCE or diff < -_EQUALS_TOLERANCE:
                return False
        return True

    def __str__(self) -> str:
        lines = [
            f"minBucket: {self.min_bucket}, maxBucket: {self.max_bucket}, "
            f"totalWeight: {self.total_weight:.3f}",
            "%-tile\tvalue",
        ]
        lines.extend(f"{i}\t{self.percentile(0.01 * i):.3f}" for i in range(0, 101, 5))
        return "\n".join(lines)

    def _update_min_and_max_bucket(self) -> None:
        """Move ``min_bucket`` up and ``max_bucket`` down past buckets under epsilon."""
        epsilon = self.options.epsilon
        last_bucket = self.options.num_buckets - 1
        weights, offset = self._weights, self._offset
        stored_last = offset + len(weights) - 1
        low = self.min_bucket
        new_min = last_bucket
        for bucket in range(max(low, offset), min(last_bucket, stored_last + 1)):
            if weights[bucket - offset] >= epsilon:
                new_min = bucket
                break
        self.min_bucket = new_min
        high = self.max_bucket
        new_max = 0
        for bucket in range(min(high, stored_last), max(0, offset - 1), -1):
            if weights[bucket - offset] >= epsilon:
                new_max = bucket
                break
        self.max_bucket = new_max

    def scale(self, factor: float) -> None:
        """Multiply the buckets in ``[min_bucket, max_bucket]`` and the total by ``factor``."""
        if factor < 0.0:
            raise ValueError("scale factor must be non-negative")
        low, high = self.min_bucket, self.max_bucket
        weights, offset = self._weights, self._offset
        for bucket in range(low, high + 1):
            i = bucket - offset
            if 0 <= i < len(weights):
                weights[i] *= factor
        self.total_weight *= factor
        self._update_min_and_max_bucket()

    def save_to_checkpoint(self) -> HistogramCheckpoint:
        """Bucket weights scaled so the largest is 10000, rounded, zeros dropped
        (upstream ``SaveToChekpoint``)."""
        low, high = self.min_bucket, self.max_bucket
        max_weight = 0.0
        for bucket in range(low, high + 1):
            weight = self.bucket_weight(bucket)
            if weight > max_weight:
                max_weight = weight
        bucket_weights: dict[int, int] = {}
        if max_weight > 0.0:
            ratio = float(MAX_CHECKPOINT_WEIGHT) / max_weight
            for bucket in range(low, high + 1):
                new_weight = go_round(self.bucket_weight(bucket) * ratio) & _MAX_UINT32
                if new_weight > 0:
                    bucket_weights[bucket] = new_weight
        return HistogramCheckpoint(total_weight=self.total_weight, bucket_weights=bucket_weights)

    def load_from_checkpoint(self, checkpoint: HistogramCheckpoint | None) -> None:
        """Add a checkpoint's buckets, rescaled to its total weight (``LoadFromCheckpoint``)."""
        if checkpoint is None:
            raise ValueError("cannot load from empty checkpoint")
        if checkpoint.total_weight < 0.0:
            raise ValueError(
                f"cannot load checkpoint with negative weight {checkpoint.total_weight}"
            )
        num_buckets = self.options.num_buckets
        total = 0
        for bucket, weight in checkpoint.bucket_weights.items():
            total += weight
            if bucket >= num_buckets:
                raise ValueError(
                    f"checkpoint has bucket {bucket} that is exceeding histogram buckets "
                    f"{num_buckets}"
                )
            if bucket < 0:
                raise ValueError(f"checkpoint has a negative bucket {bucket}")
            if weight < 0 or weight > _MAX_UINT32:
                raise ValueError(f"checkpoint bucket {bucket} has weight {weight} outside uint32")
        if total == 0:
            return
        ratio = checkpoint.total_weight / float(total)
        buckets = checkpoint.bucket_weights
        self._cover(min(buckets), max(buckets))
        weights, offset = self._weights, self._offset
        for bucket, weight in buckets.items():
            if bucket < self.min_bucket:
                self.min_bucket = bucket
            if bucket > self.max_bucket:
                self.max_bucket = bucket
            weights[bucket - offset] += float(weight) * ratio
        self.total_weight += checkpoint.total_weight
        self._update_min_and_max_bucket()


class DecayingHistogram(Histogram):
    """A histogram whose samples lose half their weight every ``half_life_ns``
    (upstream ``decayingHistogram``).

    A sample at ``t`` is added with ``weight * 2**((t - reference) / half_life)``; the reference
    moves forward (to ``t`` rounded to a multiple of the half-life) once ``t`` is more than
    :data:`MAX_DECAY_EXPONENT` half-lives past it, rescaling the stored weights."""

    __slots__ = ("half_life_ns", "reference_timestamp_ns")

    half_life_ns: int
    reference_timestamp_ns: int

    def __init__(self, options: HistogramOptions, half_life_ns: int) -> None:
        Histogram.__init__(self, options)
        self.half_life_ns = half_life_ns
        self.reference_timestamp_ns = ZERO_TIME_NS

    def add_sample(self, value: float, weight: float, time_ns: int = ZERO_TIME_NS) -> None:
        Histogram.add_sample(self, value, weight * self._decay_factor(time_ns), time_ns)

    def subtract_sample(self, value: float, weight: float, time_ns: int = ZERO_TIME_NS) -> None:
        Histogram.subtract_sample(self, value, weight * self._decay_factor(time_ns), time_ns)

    def merge(self, other: Histogram) -> None:
        """Merge after moving the older reference to the younger one; like upstream, this may
        rescale ``other``."""
        if not isinstance(other, DecayingHistogram):
            raise ValueError("can't merge a plain histogram into a decaying one")
        if self.half_life_ns != other.half_life_ns:
            raise ValueError("can't merge decaying histograms with different half life periods")
        if self.reference_timestamp_ns < other.reference_timestamp_ns:
            self._shift_reference_timestamp(other.reference_timestamp_ns)
        elif other.reference_timestamp_ns < self.reference_timestamp_ns:
            other._shift_reference_timestamp(self.reference_timestamp_ns)
        Histogram.merge(self, other)

    def equals(self, other: Histogram) -> bool:
        return (
            type(other) is DecayingHistogram
            and self.half_life_ns == other.half_life_ns
            and self.reference_timestamp_ns == other.reference_timestamp_ns
            and self._equal_buckets(other)
        )

    def __str__(self) -> str:
        return (
            f"referenceTimestamp: {self.reference_timestamp_ns}, halfLife: {self.half_life_ns}\n"
            + Histogram.__str__(self)
        )

    def _shift_reference_timestamp(self, new_reference_timestamp_ns: int) -> None:
        half_life = self.half_life_ns
        new_reference = time_round_ns(new_reference_timestamp_ns, half_life)
        exponent = go_round(
            float(sub_ns(self.reference_timestamp_ns, new_reference)) / float(half_life)
        )
        self.scale(math.ldexp(1.0, exponent) if exponent < 1024 else _INF)
        self.reference_timestamp_ns = new_reference

    def _decay_factor(self, timestamp_ns: int) -> float:
        half_life = self.half_life_ns
        if timestamp_ns > self.reference_timestamp_ns + half_life * MAX_DECAY_EXPONENT:
            self._shift_reference_timestamp(timestamp_ns)
        elapsed = timestamp_ns - self.reference_timestamp_ns
        if not MIN_INT64 <= elapsed <= MAX_INT64:
            elapsed = sub_ns(timestamp_ns, self.reference_timestamp_ns)
        return math.exp2(float(elapsed) / float(half_life))

    def save_to_checkpoint(self) -> HistogramCheckpoint:
        checkpoint = Histogram.save_to_checkpoint(self)
        return HistogramCheckpoint(
            total_weight=checkpoint.total_weight,
            bucket_weights=checkpoint.bucket_weights,
            reference_timestamp_ns=self.reference_timestamp_ns,
        )

    def load_from_checkpoint(self, checkpoint: HistogramCheckpoint | None) -> None:
        Histogram.load_from_checkpoint(self, checkpoint)
        assert checkpoint is not None  # checked by the plain load
        self.reference_timestamp_ns = checkpoint.reference_timestamp_ns
