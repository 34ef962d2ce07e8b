"""Estimators: composable functions from an aggregate container state to one resource amount.

Upstream counterpart: kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/recommender/logic/estimator.go``: the percentile estimators, the
safety margin (``WithCPUMargin``/``WithMemoryMargin``), the confidence multiplier
(``WithCPUConfidenceMultiplier``, ``getConfidence``), the minimum resource
(``WithCPUMinResource``) and the constant estimators used by upstream's tests. Each wraps a base
estimator, so a chain reads like upstream's ``CreatePodResourceRecommender``.

Each estimator estimates a batch of containers at once (``estimate_all``: one call per chain
link for all the containers of a VPA, instead of one per container), and ``estimate`` is that
batch of one. Each takes optional ``records`` (one list per container) and appends the numbers it
computed (its amount, and the percentile or confidence it used), innermost first; ``describe``
turns those numbers back into :data:`Step` lines when the explanation is read. Recording plain
numbers keeps a recommendation's trace to a few tuples of floats. The arithmetic is the same with
or without it.

A recommender's six chains read one container through one :class:`EstimationInput`, which
computes the container's confidence once per confidence interval (upstream computes it in each of
the four confidence multipliers) and each confidence factor once (the lower bounds of CPU and
memory share theirs, as do the upper bounds); the containers of a VPA with the same sample
history (times and count: the containers of one pod) share them too. An estimator given an
:class:`~hpa.core.vpa.aggregation.AggregateContainerState` makes its own. The arithmetic is
upstream's, number for number.

Deliberate deviations: upstream has a CPU and a memory type of each estimator; here one type
serves both, the percentile estimator naming its resource. ``PercentileEstimator`` with
``per_container_override`` reads the container's ``targetCPUPercentile``/``targetMemoryPercentile``
(upstream's main branch, kubernetes/autoscaler#10056) when the state carries one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.amount import (
    ResourceName,
    cpu_amounts_from_cores,
    memory_amounts_from_bytes,
    scale_resources,
)
from hpa.core.vpa.gomath import go_pow, sub_ns

__all__ = [
    "ConfidenceMultiplier",
    "ConstEstimator",
    "EstimationInput",
    "Estimator",
    "MarginEstimator",
    "MinResourceEstimator",
    "PercentileEstimator",
    "Step",
    "estimate_one",
    "get_confidence",
    "sample_history",
]

Step = tuple[str, float]
"""One line of an estimator chain's explanation: what the estimator did and its amount."""

_MINUTE_NS = 60_000_000_000
_CPU = ResourceName.CPU
"""Read once: an enum member's lookup on its class costs more than the estimator's arithmetic."""


class EstimationInput:
    """The container an estimator reads, and the numbers that several estimators read, each
    computed once: the confidence per confidence interval and the confidence multipliers' factors
    by (multiplier, exponent, interval) (the lower bounds of CPU and memory share one, the upper
    bounds another).

    The confidence reads only the state's first and last sample times and its sample count, so
    states with the same three (the containers of one pod, sampled together) can share these
    numbers: ``like`` is another state's input to share them with when its three are the same."""

    __slots__ = ("_confidence", "factors", "history", "state")

    state: AggregateContainerState
    history: tuple[int, int, int]
    """:func:`sample_history` of the state."""
    factors: dict[tuple[float, float, int], float]
    _confidence: dict[int, float]

    def __init__(self, state: AggregateContainerState, like: EstimationInput | None = None) -> None:
        self.state = state
        self.history = sample_history(state)
        if like is not None and like.history == self.history:
            self._confidence = like._confidence
            self.factors = like.factors
        else:
            self._confidence = {}
            self.factors = {}

    def confidence(self, confidence_interval_ns: int) -> float:
        """:func:`get_confidence` of the state."""
        value = self._confidence.get(confidence_interval_ns)
        if value is None:
            value = self._confidence[confidence_interval_ns] = get_confidence(
                self.state, confidence_interval_ns
            )
        return value


def sample_history(state: AggregateContainerState) -> tuple[int, int, int]:
    """What :func:`get_confidence` reads of a state: its first and last sample start and its
    sample count."""
    return (state.first_sample_start_ns, state.last_sample_start_ns, state.total_samples_count)


EstimatorInput = AggregateContainerState | EstimationInput
"""What an estimator reads: a state, or one shared by a recommender's chains."""


class Estimator(Protocol):
    """An estimate of one resource (millicores for CPU, bytes for memory)."""

    def estimate(self, state: EstimatorInput, record: list[float] | None = None) -> int:
        """The estimate of one container (:func:`estimate_one`)."""
        ...

    def estimate_all(
        self, inputs: Sequence[EstimationInput], records: Sequence[list[float]] | None = None
    ) -> list[int]:
        """The estimate of each container of ``inputs``; with ``records``, each container's
        numbers appended to its list."""
        ...

    def describe(self, recorded: Iterator[float]) -> list[Step]:
        """The lines for the numbers ``estimate`` recorded, innermost first."""
        ...


def estimate_one(
    estimator: Estimator, state: EstimatorInput, record: list[float] | None = None
) -> int:
    """``estimator``'s estimate of one container: its batch of one."""
    inputs = state if isinstance(state, EstimationInput) else EstimationInput(state)
    return estimator.estimate_all((inputs,), None if record is None else (record,))[0]


def _record(records: Sequence[list[float]] | None, values: list[int]) -> list[int]:
    if records is not None:
        for record, value in zip(records, values, strict=True):
            record.append(value)
    return values


@dataclass(frozen=True, slots=True)
class ConstEstimator:
    """Always ``value`` (``NewConstCPUEstimator``/``NewConstMemoryEstimator``)."""

    value: int

    def estimate(self, state: EstimatorInput, record: list[float] | None = None) -> int:
        return estimate_one(self, state, record)

    def estimate_all(
        self, inputs: Sequence[EstimationInput], records: Sequence[list[float]] | None = None
    ) -> list[int]:
        return _record(records, [self.value] * len(inputs))

    def describe(self, recorded: Iterator[float]) -> list[Step]:
        return [("constant", next(recorded))]


@dataclass(frozen=True, slots=True)
class PercentileEstimator:
    """The ``percentile`` of the CPU usage histogram (cores to millicores, truncated) or of the
    memory peaks histogram (bytes) (``NewPercentileCPUEstimator``/``...MemoryEstimator``)."""

    resource: ResourceName
    percentile: float
    per_container_override: bool = False
    """Use the state's ``target_cpu_percentile``/``target_memory_percentile`` when set."""

    def estimate(self, state: EstimatorInput, record: list[float] | None = None) -> int:
        return estimate_one(self, state, record)

    def estimate_all(
        self, inputs: Sequence[EstimationInput], records: Sequence[list[float]] | None = None
    ) -> list[int]:
        cpu = self.resource is _CPU
        override = self.per_container_override
        percentiles: list[float] = []
        raw: list[float] = []
        for container_input in inputs:
            container = container_input.state
            percentile = self.percentile
            if cpu:
                if override and container.target_cpu_percentile is not None:
                    percentile = container.target_cpu_percentile
                raw.append(container.aggregate_cpu_usage.percentile(percentile))
            else:
                if override and container.target_memory_percentile is not None:
                    percentile = container.target_memory_percentile
                raw.append(container.aggregate_memory_peaks.percentile(percentile))
            percentiles.append(percentile)
        values = cpu_amounts_from_cores(raw) if cpu else memory_amounts_from_bytes(raw)
        if records is not None:
            for record, percentile, value in zip(records, percentiles, values, strict=True):
                record.append(percentile)
                record.append(value)
        return values

    def describe(self, recorded: Iterator[float]) -> list[Step]:
        percentile = next(recorded)
        return [(f"percentile {percentile:g} of the histogram", next(recorded))]


@dataclass(frozen=True, slots=True)
class MarginEstimator:
    """``base + base * margin_fraction`` (the margin truncated) (``WithCPUMargin``)."""

    margin_fraction: float
    base_estimator: Estimator

    def estimate(self, state: EstimatorInput, record: list[float] | None = None) -> int:
        return estimate_one(self, state, record)

    def estimate_all(
        self, inputs: Sequence[EstimationInput], records: Sequence[list[float]] | None = None
    ) -> list[int]:
        bases = self.base_estimator.estimate_all(inputs, records)
        margins = scale_resources(bases, [self.margin_fraction] * len(bases))
        values = [base + margin for base, margin in zip(bases, margins, strict=True)]
        return _record(records, values)

    def describe(self, recorded: Iterator[float]) -> list[Step]:
        steps = self.base_estimator.describe(recorded)
        steps.append((f"safety margin {self.margin_fraction:g}", next(recorded)))
        return steps


def _minutes(duration_ns: int) -> float:
    """Go's ``Duration.Minutes``."""
    whole, rest = divmod(abs(duration_ns), _MINUTE_NS)
    minutes = float(whole) + float(rest) / 60e9
    return minutes if duration_ns >= 0 else -minutes


def get_confidence(state: AggregateContainerState, confidence_interval_ns: int) -> float:
    """How much history backs the state: the smaller of its lifespan in confidence intervals and
    its sample count over the interval's minutes (``getConfidence``): one day of one sample a
    minute is 1.0 with the default 24 h interval."""
    lifespan = float(sub_ns(state.last_sample_start_ns, state.first_sample_start_ns)) / float(
        confidence_interval_ns
    )
    samples_amount = float(state.total_samples_count) / _minutes(confidence_interval_ns)
    return lifespan if lifespan < samples_amount else samples_amount


def _divide(x: float, y: float) -> float:
    """IEEE division as Go does it: by zero gives ±Inf, or NaN for 0/0."""
    if y != 0:
        return x / y
    if x == 0 or x != x:
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


@dataclass(frozen=True, slots=True)
class ConfidenceMultiplier:
    """``base * (1 + multiplier / confidence) ** exponent`` (``WithCPUConfidenceMultiplier``):
    wide bounds for short histories, converging on the base as history accumulates."""

    multiplier: float
    exponent: float
    base_estimator: Estimator
    confidence_interval_ns: int

    def estimate(self, state: EstimatorInput, record: list[float] | None = None) -> int:
        return estimate_one(self, state, record)

    def estimate_all(
        self, inputs: Sequence[EstimationInput], records: Sequence[list[float]] | None = None
    ) -> list[int]:
        bases = self.base_estimator.estimate_all(inputs, records)
        interval = self.confidence_interval_ns
        key = (self.multiplier, self.exponent, interval)
        factors: list[float] = []
        for container_input in inputs:
            shared = container_input.factors
            factor = shared.get(key)
            if factor is None:
                factor = shared[key] = go_pow(
                    1.0 + _divide(self.multiplier, container_input.confidence(interval)),
                    self.exponent,
                )
            factors.append(factor)
        values = scale_resources(bases, factors)
        if records is not None:
            for record, container_input, factor, value in zip(
                records, inputs, factors, values, strict=True
            ):
                record.append(container_input.confidence(interval))
                record.append(factor)
                record.append(value)
        return values

    def describe(self, recorded: Iterator[float]) -> list[Step]:
        steps = self.base_estimator.describe(recorded)
        confidence, factor = next(recorded), next(recorded)
        steps.append(
            (
                f"confidence {confidence:.4f}: x(1+{self.multiplier:g}/confidence)"
                f"^{self.exponent:g} = x{factor:.4f}",
                next(recorded),
            )
        )
        return steps


@dataclass(frozen=True, slots=True)
class MinResourceEstimator:
    """``max(base, min_resource)`` (``WithCPUMinResource``/``WithMemoryMinResource``)."""

    min_resource: int
    base_estimator: Estimator

    def estimate(self, state: EstimatorInput, record: list[float] | None = None) -> int:
        return estimate_one(self, state, record)

    def estimate_all(
        self, inputs: Sequence[EstimationInput], records: Sequence[list[float]] | None = None
    ) -> list[int]:
        minimum = self.min_resource
        return _record(
            records,
            [
                base if base > minimum else minimum
                for base in self.base_estimator.estimate_all(inputs, records)
            ],
        )

    def describe(self, recorded: Iterator[float]) -> list[Step]:
        steps = self.base_estimator.describe(recorded)
        steps.append(("at least the per-container minimum", next(recorded)))
        return steps
