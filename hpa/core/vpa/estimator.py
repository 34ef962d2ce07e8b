"""Estimators: composable functions from an aggregate container state to one resource amount.

Upstream counterpart: kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/recommender/logic/estimator.go``: the percentile estimators, the
safety margin (``WithCPUMargin``/``WithMemoryMargin``), the confidence multiplier
(``WithCPUConfidenceMultiplier``, ``getConfidence``), the minimum resource
(``WithCPUMinResource``) and the constant estimators used by upstream's tests. Each wraps a base
estimator, so a chain reads like upstream's ``CreatePodResourceRecommender``.

Every ``estimate`` takes an optional ``steps`` list and appends a :data:`Step` for its own
output, innermost first; the recommender turns those steps into the explanation trace. The
arithmetic is the same with or without it.

Deliberate deviations: upstream has a CPU and a memory type of each estimator; here one type
serves both, the percentile estimator naming its resource. ``PercentileEstimator`` with
``per_container_override`` reads the container's ``targetCPUPercentile``/``targetMemoryPercentile``
(upstream's main branch, kubernetes/autoscaler#10056) when the state carries one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.amount import (
    ResourceName,
    cpu_amount_from_cores,
    memory_amount_from_bytes,
    scale_resource,
)
from hpa.core.vpa.gomath import go_pow, sub_ns

__all__ = [
    "ConfidenceMultiplier",
    "ConstEstimator",
    "Estimator",
    "MarginEstimator",
    "MinResourceEstimator",
    "PercentileEstimator",
    "Step",
    "get_confidence",
]

Step = tuple[str, tuple[float, ...], int]
"""One estimator's output: what it did (a ``str.format`` template and its arguments, formatted only
when the trace is rendered) and the amount (millicores or bytes)."""

_MINUTE_NS = 60_000_000_000


class Estimator(Protocol):
    """An estimate of one resource (millicores for CPU, bytes for memory)."""

    def estimate(self, state: AggregateContainerState, steps: list[Step] | None = None) -> int: ...


@dataclass(frozen=True, slots=True)
class ConstEstimator:
    """Always ``value`` (``NewConstCPUEstimator``/``NewConstMemoryEstimator``)."""

    value: int

    def estimate(self, state: AggregateContainerState, steps: list[Step] | None = None) -> int:
        if steps is not None:
            steps.append(("constant", (), self.value))
        return self.value


@dataclass(frozen=True, slots=True)
class PercentileEstimator:
    """The ``percentile`` of the CPU usage histogram (cores to millicores, truncated) or of the
    memory peaks histogram (bytes) (``NewPercentileCPUEstimator``/``...MemoryEstimator``)."""

    resource: ResourceName
    percentile: float
    per_container_override: bool = False
    """Use the state's ``target_cpu_percentile``/``target_memory_percentile`` when set."""

    def estimate(self, state: AggregateContainerState, steps: list[Step] | None = None) -> int:
        percentile = self.percentile
        if self.resource is ResourceName.CPU:
            if self.per_container_override and state.target_cpu_percentile is not None:
                percentile = state.target_cpu_percentile
            value = cpu_amount_from_cores(state.aggregate_cpu_usage.percentile(percentile))
        else:
            if self.per_container_override and state.target_memory_percentile is not None:
                percentile = state.target_memory_percentile
            value = memory_amount_from_bytes(state.aggregate_memory_peaks.percentile(percentile))
        if steps is not None:
            steps.append(("percentile {:g} of the histogram", (percentile,), value))
        return value


@dataclass(frozen=True, slots=True)
class MarginEstimator:
    """``base + base * margin_fraction`` (the margin truncated) (``WithCPUMargin``)."""

    margin_fraction: float
    base_estimator: Estimator

    def estimate(self, state: AggregateContainerState, steps: list[Step] | None = None) -> int:
        base = self.base_estimator.estimate(state, steps)
        value = base + scale_resource(base, self.margin_fraction)
        if steps is not None:
            steps.append(("safety margin {:g}", (self.margin_fraction,), value))
        return value


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

    def estimate(self, state: AggregateContainerState, steps: list[Step] | None = None) -> int:
        confidence = get_confidence(state, self.confidence_interval_ns)
        base = self.base_estimator.estimate(state, steps)
        factor = go_pow(1.0 + _divide(self.multiplier, confidence), self.exponent)
        value = scale_resource(base, factor)
        if steps is not None:
            steps.append(
                (
                    "confidence {:.4f}: x(1+{:g}/confidence)^{:g} = x{:.4f}",
                    (confidence, self.multiplier, self.exponent, factor),
                    value,
                )
            )
        return value


@dataclass(frozen=True, slots=True)
class MinResourceEstimator:
    """``max(base, min_resource)`` (``WithCPUMinResource``/``WithMemoryMinResource``)."""

    min_resource: int
    base_estimator: Estimator

    def estimate(self, state: AggregateContainerState, steps: list[Step] | None = None) -> int:
        base = self.base_estimator.estimate(state, steps)
        value = base if base > self.min_resource else self.min_resource
        if steps is not None:
            steps.append(("at least the per-container minimum", (), value))
        return value
