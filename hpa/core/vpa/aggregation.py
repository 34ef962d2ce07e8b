"""Usage samples into aggregate container states: CPU histograms, memory peaks, OOM bumps.

Upstream counterpart: kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/recommender/model/aggregations_config.go`` (defaults, histogram
options), ``aggregate_container_state.go`` (``AggregateContainerState``, ``MergeContainerState``,
checkpoints, expiry, ``UpdateFromPolicy``, ``AggregateStateByContainerName``) and
``container.go`` (``ContainerState``: per-container sample order, the memory peak of each
aggregation interval, ``RecordOOM``).

* CPU samples go into a decaying histogram of cores with weight :data:`MIN_SAMPLE_WEIGHT` (0.1,
  v1.8.1 no longer weighs by the request) and set first/last sample times and the sample count.
* Each container adds one memory peak per aggregation interval (24 h by default), weight 1.0 at
  the interval's end; a larger sample in the same interval replaces the peak (subtract, add).
* An OOM adds ``max(used + oom_min_bump_up, used * oom_bump_up_ratio)`` as a memory peak, where
  ``used = max(request, current interval's usage peak)``.

Deliberate deviations:

* Samples enter through typed methods (``add_cpu_sample(measure_start_ns, usage_millicores)``,
  ``add_memory_sample(measure_start_ns, usage_bytes)``) rather than a ``ContainerUsageSample``
  dispatched on its resource; a ``ContainerState`` points at its aggregate state directly (upstream
  goes through a proxy into the cluster model).
* The quality metrics upstream observes on every sample belong to the service, not the model.
* ``RecordOOM``'s errors are :class:`OomSampleDiscardedError` exceptions.
* Whether the alpha ``PerVPAConfig`` feature gate is on is an argument of
  :meth:`AggregateContainerState.update_from_policy`.
* ``creation_time_ns`` is passed in (upstream reads the clock).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from hpa.core.vpa.amount import (
    ResourceName,
    Resources,
    memory_amount_from_bytes,
    scale_resource,
)
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND, ZERO_TIME_NS, sub_ns
from hpa.core.vpa.histogram import (
    DecayingHistogram,
    ExponentialHistogramOptions,
    HistogramCheckpoint,
)
from hpa.core.vpa.policy import (
    DEFAULT_CONTROLLED_RESOURCES,
    ContainerResourcePolicy,
    ContainerScalingMode,
)

__all__ = [
    "DEFAULT_AGGREGATIONS_CONFIG",
    "DEFAULT_HISTOGRAM_BUCKET_SIZE_GROWTH",
    "DEFAULT_MEMORY_AGGREGATION_INTERVAL_COUNT",
    "DEFAULT_MEMORY_AGGREGATION_INTERVAL_NS",
    "DEFAULT_OOM_BUMP_UP_RATIO",
    "DEFAULT_OOM_MIN_BUMP_UP_BYTES",
    "EPSILON",
    "MIN_SAMPLE_WEIGHT",
    "SUPPORTED_CHECKPOINT_VERSION",
    "AggregateContainerState",
    "AggregationsConfig",
    "CheckpointStatus",
    "ContainerState",
    "OomSampleDiscardedError",
    "aggregate_state_by_container_name",
]

HOUR_NS = 3600 * NANOSECONDS_PER_SECOND
MIN_SAMPLE_WEIGHT = 0.1
"""Weight of every CPU sample before decay (``minSampleWeight``)."""
EPSILON = 0.001 * MIN_SAMPLE_WEIGHT
"""Smallest bucket weight a histogram keeps (``epsilon``)."""
DEFAULT_MEMORY_AGGREGATION_INTERVAL_COUNT = 8
DEFAULT_MEMORY_AGGREGATION_INTERVAL_NS = 24 * HOUR_NS
DEFAULT_HISTOGRAM_BUCKET_SIZE_GROWTH = 0.05
DEFAULT_MEMORY_HISTOGRAM_DECAY_HALF_LIFE_NS = 24 * HOUR_NS
DEFAULT_CPU_HISTOGRAM_DECAY_HALF_LIFE_NS = 24 * HOUR_NS
DEFAULT_OOM_BUMP_UP_RATIO = 1.2
DEFAULT_OOM_MIN_BUMP_UP_BYTES = 100.0 * 1024 * 1024
SUPPORTED_CHECKPOINT_VERSION = "v3"


class OomSampleDiscardedError(ValueError):
    """An OOM event the model does not record (too old, or refused as a memory sample)."""


@dataclass(frozen=True, slots=True)
class AggregationsConfig:
    """How samples are aggregated (``AggregationsConfig``; flags ``--memory-aggregation-interval``,
    ``--memory-aggregation-interval-count``, ``--memory-histogram-decay-half-life``,
    ``--cpu-histogram-decay-half-life``, ``--oom-bump-up-ratio``, ``--oom-min-bump-up-bytes``).

    CPU histograms: exponential buckets of cores, first 0.01, up to 1000, ratio 1.05 (176
    buckets). Memory histograms: bytes, first 1e7, up to 1e12 (176 buckets)."""

    memory_aggregation_interval_ns: int = DEFAULT_MEMORY_AGGREGATION_INTERVAL_NS
    memory_aggregation_interval_count: int = DEFAULT_MEMORY_AGGREGATION_INTERVAL_COUNT
    memory_histogram_decay_half_life_ns: int = DEFAULT_MEMORY_HISTOGRAM_DECAY_HALF_LIFE_NS
    cpu_histogram_decay_half_life_ns: int = DEFAULT_CPU_HISTOGRAM_DECAY_HALF_LIFE_NS
    oom_bump_up_ratio: float = DEFAULT_OOM_BUMP_UP_RATIO
    oom_min_bump_up_bytes: float = DEFAULT_OOM_MIN_BUMP_UP_BYTES
    histogram_bucket_size_growth: float = DEFAULT_HISTOGRAM_BUCKET_SIZE_GROWTH
    cpu_histogram_options: ExponentialHistogramOptions = field(init=False, compare=False)
    memory_histogram_options: ExponentialHistogramOptions = field(init=False, compare=False)

    def __post_init__(self) -> None:
        for name in (
            "memory_aggregation_interval_ns",
            "memory_aggregation_interval_count",
            "memory_histogram_decay_half_life_ns",
            "cpu_histogram_decay_half_life_ns",
            "histogram_bucket_size_growth",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        ratio = 1.0 + self.histogram_bucket_size_growth
        object.__setattr__(
            self,
            "cpu_histogram_options",
            ExponentialHistogramOptions(1000.0, 0.01, ratio, EPSILON),
        )
        object.__setattr__(
            self,
            "memory_histogram_options",
            ExponentialHistogramOptions(1e12, 1e7, ratio, EPSILON),
        )

    @property
    def memory_aggregation_window_length_ns(self) -> int:
        return self.memory_aggregation_interval_ns * self.memory_aggregation_interval_count


DEFAULT_AGGREGATIONS_CONFIG = AggregationsConfig()


@dataclass(frozen=True, slots=True)
class CheckpointStatus:
    """``VerticalPodAutoscalerCheckpointStatus``: one aggregate state, serialised."""

    version: str
    last_update_time_ns: int
    first_sample_start_ns: int
    last_sample_start_ns: int
    total_samples_count: int
    cpu_histogram: HistogramCheckpoint
    memory_histogram: HistogramCheckpoint


class AggregateContainerState:
    """Usage of a set of containers: CPU samples and memory peaks (``AggregateContainerState``).

    First/last sample times and the sample count come from CPU samples only."""

    __slots__ = (
        "aggregate_cpu_usage",
        "aggregate_memory_peaks",
        "controlled_resources",
        "creation_time_ns",
        "first_sample_start_ns",
        "is_under_vpa",
        "last_recommendation",
        "last_sample_start_ns",
        "memory_aggregation_interval_count",
        "memory_aggregation_interval_ns",
        "oom_bump_up_ratio",
        "oom_min_bump_up_bytes",
        "scaling_mode",
        "target_cpu_percentile",
        "target_memory_percentile",
        "total_samples_count",
    )

    aggregate_cpu_usage: DecayingHistogram
    aggregate_memory_peaks: DecayingHistogram
    first_sample_start_ns: int
    last_sample_start_ns: int
    total_samples_count: int
    creation_time_ns: int
    last_recommendation: Resources | None
    is_under_vpa: bool
    scaling_mode: ContainerScalingMode | None
    controlled_resources: frozenset[ResourceName] | None
    oom_bump_up_ratio: float
    oom_min_bump_up_bytes: float
    memory_aggregation_interval_ns: int
    memory_aggregation_interval_count: int
    target_cpu_percentile: float | None
    target_memory_percentile: float | None

    def __init__(
        self,
        config: AggregationsConfig = DEFAULT_AGGREGATIONS_CONFIG,
        creation_time_ns: int = ZERO_TIME_NS,
        *,
        histograms: tuple[DecayingHistogram, DecayingHistogram] | None = None,
    ) -> None:
        """A new state with empty histograms, or reading ``histograms`` (CPU usage, memory
        peaks: a view's, see :meth:`merged_view`)."""
        if histograms is None:
            self.aggregate_cpu_usage = DecayingHistogram(
                config.cpu_histogram_options, config.cpu_histogram_decay_half_life_ns
            )
            self.aggregate_memory_peaks = DecayingHistogram(
                config.memory_histogram_options, config.memory_histogram_decay_half_life_ns
            )
        else:
            self.aggregate_cpu_usage, self.aggregate_memory_peaks = histograms
        self.first_sample_start_ns = ZERO_TIME_NS
        self.last_sample_start_ns = ZERO_TIME_NS
        self.total_samples_count = 0
        self.creation_time_ns = creation_time_ns
        self.last_recommendation = None
        self.is_under_vpa = False
        self.scaling_mode = None
        self.controlled_resources = None
        self.oom_bump_up_ratio = config.oom_bump_up_ratio
        self.oom_min_bump_up_bytes = config.oom_min_bump_up_bytes
        self.memory_aggregation_interval_ns = config.memory_aggregation_interval_ns
        self.memory_aggregation_interval_count = config.memory_aggregation_interval_count
        self.target_cpu_percentile = None
        self.target_memory_percentile = None

    # -- samples -------------------------------------------------------------------------------

    def add_cpu_sample(self, measure_start_ns: int, usage_millicores: int) -> None:
        """Aggregate one CPU sample (``addCPUSample``)."""
        self.aggregate_cpu_usage.add_sample(
            usage_millicores / 1000.0, MIN_SAMPLE_WEIGHT, measure_start_ns
        )
        if measure_start_ns > self.last_sample_start_ns:
            self.last_sample_start_ns = measure_start_ns
        if (
            self.first_sample_start_ns == ZERO_TIME_NS
            or measure_start_ns < self.first_sample_start_ns
        ):
            self.first_sample_start_ns = measure_start_ns
        self.total_samples_count += 1

    def add_memory_sample(self, measure_start_ns: int, usage_bytes: int) -> None:
        """Aggregate one memory peak with weight 1.0 (``AddSample`` of a memory sample)."""
        self.aggregate_memory_peaks.add_sample(float(usage_bytes), 1.0, measure_start_ns)

    def subtract_memory_sample(self, measure_start_ns: int, usage_bytes: int) -> None:
        """Remove a memory peak added before (``SubtractSample``)."""
        self.aggregate_memory_peaks.subtract_sample(float(usage_bytes), 1.0, measure_start_ns)

    # -- aggregation ---------------------------------------------------------------------------

    def merge_container_state(self, other: AggregateContainerState) -> None:
        """Add ``other``'s histograms, the earliest first and latest last sample, the counts
        (``MergeContainerState``). Like upstream, this may rescale ``other``'s histograms."""
        self.aggregate_cpu_usage.merge(other.aggregate_cpu_usage)
        self.aggregate_memory_peaks.merge(other.aggregate_memory_peaks)
        if self.first_sample_start_ns == ZERO_TIME_NS or (
            other.first_sample_start_ns != ZERO_TIME_NS
            and other.first_sample_start_ns < self.first_sample_start_ns
        ):
            self.first_sample_start_ns = other.first_sample_start_ns
        if other.last_sample_start_ns > self.last_sample_start_ns:
            self.last_sample_start_ns = other.last_sample_start_ns
        self.total_samples_count += other.total_samples_count

    def merged_view(
        self, config: AggregationsConfig = DEFAULT_AGGREGATIONS_CONFIG
    ) -> AggregateContainerState:
        """What merging this state into a new one gives (``merge_container_state``: the sample
        times, the count, every bucket weight, the total and the bucket range), reading this
        state's histograms instead of copies: change them through neither. Only the merged
        histograms' reference timestamp could differ (rounded to the half-life), which no
        percentile reads."""
        view = AggregateContainerState(
            config, histograms=(self.aggregate_cpu_usage, self.aggregate_memory_peaks)
        )
        view.first_sample_start_ns = self.first_sample_start_ns
        view.last_sample_start_ns = self.last_sample_start_ns
        view.total_samples_count = self.total_samples_count
        return view

    def needs_recommendation(self) -> bool:
        """Under a VPA and not in mode Off (``NeedsRecommendation``)."""
        return (
            self.is_under_vpa
            and self.scaling_mode is not None
            and self.scaling_mode is not ContainerScalingMode.OFF
        )

    def get_controlled_resources(self) -> frozenset[ResourceName]:
        """The controlled resources, cpu and memory by default (``GetControlledResources``)."""
        if self.controlled_resources is not None:
            return self.controlled_resources
        return DEFAULT_CONTROLLED_RESOURCES

    def mark_not_autoscaled(self) -> None:
        """No VPA controls these containers any more (``MarkNotAutoscaled``)."""
        self.is_under_vpa = False
        self.last_recommendation = None
        self.scaling_mode = None
        self.controlled_resources = None

    def update_from_policy(
        self, resource_policy: ContainerResourcePolicy | None, *, per_vpa_config: bool
    ) -> None:
        """Scaling mode, controlled resources and per-VPA tuning from the container's policy
        (``UpdateFromPolicy``). The tuning fields apply only with ``per_vpa_config`` (the
        ``PerVPAConfig`` feature gate); unset ones keep their current value (the flags' value
        for a new state)."""
        self.scaling_mode = ContainerScalingMode.AUTO
        if resource_policy is not None and resource_policy.mode is not None:
            self.scaling_mode = resource_policy.mode
        self.controlled_resources = DEFAULT_CONTROLLED_RESOURCES
        if resource_policy is not None and resource_policy.controlled_resources is not None:
            self.controlled_resources = resource_policy.controlled_resources
        if resource_policy is None or not per_vpa_config:
            return
        if resource_policy.oom_bump_up_ratio is not None:
            self.oom_bump_up_ratio = resource_policy.oom_bump_up_ratio
        if resource_policy.oom_min_bump_up_bytes is not None:
            self.oom_min_bump_up_bytes = resource_policy.oom_min_bump_up_bytes
        if resource_policy.memory_aggregation_interval_seconds is not None:
            self.memory_aggregation_interval_ns = (
                resource_policy.memory_aggregation_interval_seconds * NANOSECONDS_PER_SECOND
            )
        if resource_policy.memory_aggregation_interval_count is not None:
            self.memory_aggregation_interval_count = (
                resource_policy.memory_aggregation_interval_count
            )
        if resource_policy.target_cpu_percentile is not None:
            self.target_cpu_percentile = resource_policy.target_cpu_percentile
        if resource_policy.target_memory_percentile is not None:
            self.target_memory_percentile = resource_policy.target_memory_percentile

    # -- lifetime ------------------------------------------------------------------------------

    @property
    def memory_aggregation_window_length_ns(self) -> int:
        return self.memory_aggregation_interval_ns * self.memory_aggregation_interval_count

    def is_empty(self) -> bool:
        """No CPU sample was ever aggregated."""
        return self.total_samples_count == 0

    def is_expired(self, now_ns: int) -> bool:
        """The last sample (or, without samples, the creation) is a window length old or more."""
        since = self.creation_time_ns if self.is_empty() else self.last_sample_start_ns
        return sub_ns(now_ns, since) >= self.memory_aggregation_window_length_ns

    # -- checkpoints ---------------------------------------------------------------------------

    def save_to_checkpoint(self, now_ns: int) -> CheckpointStatus:
        """The state as a ``v3`` checkpoint status (``SaveToCheckpoint``)."""
        return CheckpointStatus(
            version=SUPPORTED_CHECKPOINT_VERSION,
            last_update_time_ns=now_ns,
            first_sample_start_ns=self.first_sample_start_ns,
            last_sample_start_ns=self.last_sample_start_ns,
            total_samples_count=self.total_samples_count,
            cpu_histogram=self.aggregate_cpu_usage.save_to_checkpoint(),
            memory_histogram=self.aggregate_memory_peaks.save_to_checkpoint(),
        )

    def load_from_checkpoint(self, checkpoint: CheckpointStatus) -> None:
        """Restore from a ``v3`` checkpoint status (``LoadFromCheckpoint``)."""
        if checkpoint.version != SUPPORTED_CHECKPOINT_VERSION:
            raise ValueError(f"unsupported checkpoint version {checkpoint.version}")
        self.total_samples_count = checkpoint.total_samples_count
        self.first_sample_start_ns = checkpoint.first_sample_start_ns
        self.last_sample_start_ns = checkpoint.last_sample_start_ns
        self.aggregate_memory_peaks.load_from_checkpoint(checkpoint.memory_histogram)
        self.aggregate_cpu_usage.load_from_checkpoint(checkpoint.cpu_histogram)


def aggregate_state_by_container_name(
    states: Iterable[tuple[str, AggregateContainerState]],
    config: AggregationsConfig = DEFAULT_AGGREGATIONS_CONFIG,
    *,
    read_only: Container[str] = (),
) -> dict[str, AggregateContainerState]:
    """Merge ``(container name, state)`` pairs into one new state per container name
    (``AggregateStateByContainerName``).

    A name in ``read_only`` that has a single state gets :meth:`AggregateContainerState.
    merged_view` of it instead of a merged copy (the same values: merging one state into an empty
    one copies it), for callers that only read the histograms: a VPA's pods usually share one
    label set, so each container name usually has one state, and copying its histograms was most
    of the cost of recommending it."""
    grouped: dict[str, list[AggregateContainerState]] = {}
    for container_name, state in states:
        group = grouped.get(container_name)
        if group is None:
            grouped[container_name] = [state]
        else:
            group.append(state)
    result: dict[str, AggregateContainerState] = {}
    for container_name, group in grouped.items():
        if len(group) == 1 and container_name in read_only:
            result[container_name] = group[0].merged_view(config)
            continue
        merged = result[container_name] = AggregateContainerState(config)
        for state in group:
            merged.merge_container_state(state)
    return result


def _truncate_ns(d_ns: int, m_ns: int) -> int:
    """Go's ``Duration.Truncate``: round toward zero to a multiple of ``m``."""
    if m_ns <= 0:
        return d_ns
    r = abs(d_ns) % m_ns
    return d_ns - r if d_ns >= 0 else d_ns + r


class ContainerState:
    """One running container's sample bookkeeping (``ContainerState``): the order of its samples
    and the memory peak of its current aggregation interval, feeding ``aggregator``."""

    __slots__ = (
        "aggregator",
        "last_cpu_sample_start_ns",
        "last_memory_sample_start_ns",
        "memory_peak",
        "oom_peak",
        "window_end_ns",
    )

    aggregator: AggregateContainerState
    last_cpu_sample_start_ns: int
    memory_peak: int
    """Largest memory usage (bytes) seen in the current interval."""
    oom_peak: int
    """Memory (bytes) estimated from an OOM in the current interval."""
    window_end_ns: int
    """End of the current memory aggregation interval (exclusive)."""
    last_memory_sample_start_ns: int

    def __init__(self, aggregator: AggregateContainerState) -> None:
        self.aggregator = aggregator
        self.last_cpu_sample_start_ns = ZERO_TIME_NS
        self.memory_peak = 0
        self.oom_peak = 0
        self.window_end_ns = ZERO_TIME_NS
        self.last_memory_sample_start_ns = ZERO_TIME_NS

    def get_max_memory_peak(self) -> int:
        """The larger of the usage peak and the OOM peak (``GetMaxMemoryPeak``)."""
        return max(self.memory_peak, self.oom_peak)

    def add_cpu_sample(self, measure_start_ns: int, usage_millicores: int) -> bool:
        """Aggregate a CPU sample; False for a negative, duplicate or out-of-order one."""
        if usage_millicores < 0 or measure_start_ns <= self.last_cpu_sample_start_ns:
            return False
        self.aggregator.add_cpu_sample(measure_start_ns, usage_millicores)
        self.last_cpu_sample_start_ns = measure_start_ns
        return True

    def add_memory_sample(
        self, measure_start_ns: int, usage_bytes: int, *, is_oom: bool = False
    ) -> bool:
        """Fold a memory sample into the current interval's peak (``addMemorySample``); False for
        a negative one or (unless an OOM) one older than the last."""
        ts = measure_start_ns
        if usage_bytes < 0 or (not is_oom and ts < self.last_memory_sample_start_ns):
            return False
        self.last_memory_sample_start_ns = ts
        if self.window_end_ns == ZERO_TIME_NS:
            self.window_end_ns = ts
        add_new_peak = False
        if ts < self.window_end_ns:
            old_max_mem = max(self.memory_peak, self.oom_peak)
            if old_max_mem != 0 and usage_bytes > old_max_mem:
                self.aggregator.subtract_memory_sample(self.window_end_ns, old_max_mem)
                add_new_peak = True
        else:
            interval = self.aggregator.memory_aggregation_interval_ns
            shift = _truncate_ns(sub_ns(ts, self.window_end_ns), interval) + interval
            self.window_end_ns += shift
            self.memory_peak = 0
            self.oom_peak = 0
            add_new_peak = True
        if add_new_peak:
            self.aggregator.add_memory_sample(self.window_end_ns, usage_bytes)
            if is_oom:
                self.oom_peak = usage_bytes
            else:
                self.memory_peak = usage_bytes
        return True

    def record_oom(self, timestamp_ns: int, requested_memory_bytes: int) -> int:
        """Record an OOM kill as a bumped memory sample (``RecordOOM``); returns the bytes added.

        Raises :class:`OomSampleDiscardedError` for an OOM more than an interval older than the last
        memory sample."""
        aggregator = self.aggregator
        if (
            self.last_memory_sample_start_ns != ZERO_TIME_NS
            and timestamp_ns
            < self.last_memory_sample_start_ns - aggregator.memory_aggregation_interval_ns
        ):
            raise OomSampleDiscardedError(
                f"OOM event will be discarded - it is too old ({timestamp_ns} ns)"
            )
        memory_used = max(requested_memory_bytes, self.memory_peak)
        memory_needed = max(
            memory_used + memory_amount_from_bytes(aggregator.oom_min_bump_up_bytes),
            scale_resource(memory_used, aggregator.oom_bump_up_ratio),
        )
        if not self.add_memory_sample(timestamp_ns, memory_needed, is_oom=True):
            raise OomSampleDiscardedError("adding OOM sample failed")
        return memory_needed
