"""The ``crane`` recommender: Crane's resource recommendation, selected per VPA by name.

Upstream counterpart: gocrane/crane ``pkg/recommendation/recommender/resource`` (``registry.go``:
the configuration keys and their defaults; ``recommend.go``: CPU and memory from the percentile
predictor, OOM protection, normalisation to resource specifications; ``resource_spec.go``:
``DefaultSpecs``, ``GetResourceSpecifications``, ``GetNormalizedResource``) and
``pkg/prediction/percentile`` (``aggregate_signal.go``: a plain histogram, each sample weighted by
``max(minSampleWeight, value)``; ``estimator.go``: percentile, then ``x (1 + margin)``, then
``/ targetUtilization``; ``config.go``: ``minSampleWeight`` 1e-5, histogram epsilon 1e-10).
It uses the VPA's histogram (:mod:`hpa.core.vpa.histogram`) with linear ("balanced") buckets.

Defaults and where they come from (Crane's resource recommendation documentation, the
"Configuration" table of Crane's ``resource-recommendation.md`` tutorial,
which matches ``registry.go``):

* ``cpu-request-percentile`` 0.99, ``mem-request-percentile`` 0.99;
* ``cpu-request-margin-fraction`` 0.15, ``mem-request-margin-fraction`` 0.15;
* ``cpu-target-utilization`` 1.0, ``mem-target-utilization`` 1.0 (0.8 means value / 0.8);
* ``cpu-histogram-bucket-size`` 0.1 core up to ``cpu-histogram-max-value`` 100 cores;
  ``mem-histogram-bucket-size`` 104857600 bytes (100 MiB) up to ``mem-histogram-max-value``
  104857600000;
* ``cpu-model-history-length``/``mem-model-history-length`` 168h (the caller feeds that much);
* ``oom-protection`` true, ``oom-history-length`` 168h, ``oom-bump-ratio`` 1.2, and the minimum
  bump of the VPA's model, 100 MiB (``recommend.go`` uses ``model.OOMMinBumpUp``);
* ``specification`` false; the specification table ``DefaultSpecs`` of ``resource_spec.go``
  (the documentation's "Default resource specifications configuration" table).

Deliberate deviations: a container without CPU samples, or whose memory estimate is not positive,
gets no recommendation and a trace entry saying why (Crane returns an error for the whole
recommendation). The OOM age limit is ``oom_history_length_ns`` (Crane's code compares with a
fixed seven days, the same as the default).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hpa.core.explain import Explanation, Stage, TraceEntry
from hpa.core.quantity import parse_quantity
from hpa.core.vpa.amount import (
    ResourceName,
    Resources,
    memory_amount_from_bytes,
    scale_resource,
)
from hpa.core.vpa.gomath import ZERO_TIME_NS, float_to_int64
from hpa.core.vpa.histogram import Histogram, LinearHistogramOptions
from hpa.core.vpa.recommender import format_amount

__all__ = [
    "CRANE_RECOMMENDER_NAME",
    "DEFAULT_SPECIFICATIONS",
    "CraneConfig",
    "CraneContainerState",
    "CraneRecommendation",
    "Specification",
    "crane_recommend",
    "get_normalized_resource",
    "parse_specifications",
]

CRANE_RECOMMENDER_NAME = "crane"
"""The ``spec.recommenders[].name`` that selects this recommender."""

_HOUR_NS = 3_600_000_000_000
_GIB = 1024.0 * 1024.0 * 1024.0


@dataclass(frozen=True, slots=True, order=True)
class Specification:
    """One predefined pod size: cores and GiB (Crane's ``Specification``)."""

    cpu: float
    memory: float


_NUMBER = re.compile(r"[0-9.]+")


def parse_specifications(text: str) -> tuple[Specification, ...]:
    """``"0.25c0.5g,1c2g,..."`` as specifications sorted by CPU, then memory
    (``GetResourceSpecifications``)."""
    specs: list[Specification] = []
    for item in text.split(","):
        numbers = _NUMBER.findall(item)
        if len(numbers) != 2:
            raise ValueError(f"specification {item} format error")
        try:
            cpu = float(numbers[0])
        except ValueError as err:
            raise ValueError(f"specification {item} cpu format error") from err
        try:
            memory = float(numbers[1])
        except ValueError as err:
            raise ValueError(f"specification {item} memory format error") from err
        specs.append(Specification(cpu, memory))
    return tuple(sorted(specs))


DEFAULT_SPECIFICATIONS = parse_specifications(
    "0.25c0.25g,0.25c0.5g,0.25c1g,0.5c0.5g,0.5c1g,1c1g,1c2g,1c4g,1c8g,2c2g,2c4g,2c8g,2c16g,"
    "4c4g,4c8g,4c16g,4c32g,8c8g,8c16g,8c32g,8c64g,16c32g,16c64g,16c128g,32c64g,32c128g,32c256g,"
    "64c128g,64c256g"
)
"""Crane's ``DefaultSpecs``."""


@dataclass(frozen=True, slots=True)
class CraneConfig:
    """The recommender's configuration keys (``registry.go``), Crane's defaults."""

    cpu_request_percentile: float = 0.99
    cpu_request_margin_fraction: float = 0.15
    cpu_target_utilization: float = 1.0
    cpu_histogram_bucket_size: float = 0.1
    cpu_histogram_max_value: float = 100.0
    mem_request_percentile: float = 0.99
    mem_request_margin_fraction: float = 0.15
    mem_target_utilization: float = 1.0
    mem_histogram_bucket_size: float = 104857600.0
    mem_histogram_max_value: float = 104857600000.0
    oom_protection: bool = True
    oom_history_length_ns: int = 168 * _HOUR_NS
    oom_bump_ratio: float = 1.2
    oom_min_bump_up_bytes: float = 100.0 * 1024 * 1024
    specification: bool = False
    specifications: tuple[Specification, ...] = DEFAULT_SPECIFICATIONS
    min_sample_weight: float = 1e-5
    histogram_epsilon: float = 1e-10
    cpu_histogram_options: LinearHistogramOptions = field(init=False, compare=False)
    memory_histogram_options: LinearHistogramOptions = field(init=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("cpu_target_utilization", "mem_target_utilization"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("cpu_request_percentile", "mem_request_percentile"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {getattr(self, name)}")
        object.__setattr__(
            self,
            "cpu_histogram_options",
            LinearHistogramOptions(
                self.cpu_histogram_max_value,
                self.cpu_histogram_bucket_size,
                self.histogram_epsilon,
            ),
        )
        object.__setattr__(
            self,
            "memory_histogram_options",
            LinearHistogramOptions(
                self.mem_histogram_max_value,
                self.mem_histogram_bucket_size,
                self.histogram_epsilon,
            ),
        )


class CraneContainerState:
    """One container's history for Crane: a CPU histogram (cores) and a memory histogram (bytes),
    each sample weighted by ``max(min_sample_weight, value)``, and the latest OOM kill."""

    __slots__ = ("cpu", "last_oom_memory_bytes", "last_oom_time_ns", "memory", "min_sample_weight")

    cpu: Histogram
    memory: Histogram
    min_sample_weight: float
    last_oom_time_ns: int
    last_oom_memory_bytes: int

    def __init__(self, config: CraneConfig) -> None:
        self.cpu = Histogram(config.cpu_histogram_options)
        self.memory = Histogram(config.memory_histogram_options)
        self.min_sample_weight = config.min_sample_weight
        self.last_oom_time_ns = ZERO_TIME_NS
        self.last_oom_memory_bytes = 0

    def add_cpu_sample(self, time_ns: int, usage_millicores: int) -> None:
        value = usage_millicores / 1000.0
        weight = value if value > self.min_sample_weight else self.min_sample_weight
        self.cpu.add_sample(value, weight, time_ns)

    def add_memory_sample(self, time_ns: int, usage_bytes: int) -> None:
        value = float(usage_bytes)
        weight = value if value > self.min_sample_weight else self.min_sample_weight
        self.memory.add_sample(value, weight, time_ns)

    def record_oom(self, time_ns: int, memory_bytes: int) -> None:
        """An OOM kill of this container with ``memory_bytes`` in use; the latest one counts."""
        if time_ns >= self.last_oom_time_ns:
            self.last_oom_time_ns = time_ns
            self.last_oom_memory_bytes = memory_bytes


@dataclass(frozen=True, slots=True)
class CraneRecommendation:
    """The target requests (``None`` when there is not enough data) and how they were reached."""

    target: Resources | None
    explanation: Explanation


def get_normalized_resource(
    cpu_millicores: int, memory_bytes: int, specs: Sequence[Specification]
) -> tuple[int, int]:
    """The smallest specification at or above both amounts, CPU first (``GetNormalizedResource``):
    ``(millicores, bytes)``, ``(0, 0)`` when none fits."""
    cpu_cores = 0.0
    mem_gib = 0.0
    want_cpu = float(cpu_millicores) / 1000
    want_mem = float(memory_bytes) / _GIB
    for i, spec in enumerate(specs):
        if cpu_cores > 0:
            break
        if spec.cpu >= want_cpu:
            for other in specs[i:]:
                if other.cpu != spec.cpu:
                    break
                if other.memory >= want_mem:
                    cpu_cores, mem_gib = other.cpu, other.memory
                    break
    cpu = parse_quantity(f"{cpu_cores:.2f}").milli_value()
    memory = parse_quantity(f"{mem_gib:.2f}Gi").value()
    return cpu, memory


def _estimate(histogram: Histogram, percentile: float, margin: float, utilization: float) -> float:
    return histogram.percentile(percentile) * (1 + margin) / utilization


def _estimation_entry(
    name: str,
    resource: ResourceName,
    amount: int,
    histogram: Histogram,
    percentile: float,
    margin: float,
    utilization: float,
) -> TraceEntry:
    return TraceEntry(
        Stage.ESTIMATION,
        f"{name} {resource}: {format_amount(resource, amount)}",
        (
            (f"percentile {percentile:g}", histogram.percentile(percentile)),
            ("margin fraction", margin),
            ("target utilization", utilization),
        ),
    )


def crane_recommend(
    state: CraneContainerState, config: CraneConfig, *, now_ns: int, container_name: str = ""
) -> CraneRecommendation:
    """Crane's recommended requests for one container (``ResourceRecommender.Recommend``)."""
    entries: list[TraceEntry] = []
    name = container_name or "container"
    if state.cpu.is_empty():
        entries.append(TraceEntry(Stage.SAMPLES, f"{name}: no CPU samples, no recommendation"))
        return CraneRecommendation(None, Explanation(tuple(entries)))
    cpu = float_to_int64(
        _estimate(
            state.cpu,
            config.cpu_request_percentile,
            config.cpu_request_margin_fraction,
            config.cpu_target_utilization,
        )
        * 1000
    )
    entries.append(
        _estimation_entry(
            name,
            ResourceName.CPU,
            cpu,
            state.cpu,
            config.cpu_request_percentile,
            config.cpu_request_margin_fraction,
            config.cpu_target_utilization,
        )
    )
    memory = float_to_int64(
        _estimate(
            state.memory,
            config.mem_request_percentile,
            config.mem_request_margin_fraction,
            config.mem_target_utilization,
        )
    )
    if memory <= 0:
        entries.append(
            TraceEntry(Stage.ESTIMATION, f"{name}: no enough memory metrics, no recommendation")
        )
        return CraneRecommendation(None, Explanation(tuple(entries)))
    entries.append(
        _estimation_entry(
            name,
            ResourceName.MEMORY,
            memory,
            state.memory,
            config.mem_request_percentile,
            config.mem_request_margin_fraction,
            config.mem_target_utilization,
        )
    )
    if (
        config.oom_protection
        and state.last_oom_time_ns != ZERO_TIME_NS
        and now_ns - state.last_oom_time_ns <= config.oom_history_length_ns
    ):
        oom = state.last_oom_memory_bytes
        needed = max(
            oom + memory_amount_from_bytes(config.oom_min_bump_up_bytes),
            scale_resource(oom, config.oom_bump_ratio),
        )
        if needed > memory:
            entries.append(
                TraceEntry(
                    Stage.POST_PROCESSING,
                    f"{name} memory raised for an OOM kill: "
                    f"{format_amount(ResourceName.MEMORY, needed)}",
                    (
                        ("memory_at_oom", format_amount(ResourceName.MEMORY, oom)),
                        ("oom_bump_ratio", config.oom_bump_ratio),
                    ),
                )
            )
            memory = needed
    if config.specification:
        normalized_cpu, normalized_memory = get_normalized_resource(
            cpu, memory, config.specifications
        )
        if normalized_cpu > 0 and normalized_memory > 0:
            entries.append(
                TraceEntry(
                    Stage.POST_PROCESSING,
                    f"{name} normalised to the specification "
                    f"{normalized_cpu / 1000:g} cores / {normalized_memory / _GIB:g} GiB",
                    (
                        ("cpu", format_amount(ResourceName.CPU, cpu)),
                        ("memory", format_amount(ResourceName.MEMORY, memory)),
                    ),
                )
            )
            cpu, memory = normalized_cpu, normalized_memory
    return CraneRecommendation(Resources(cpu=cpu, memory=memory), Explanation(tuple(entries)))
