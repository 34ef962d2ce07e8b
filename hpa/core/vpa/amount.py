"""Resource amounts of the VPA model: CPU in millicores, memory in bytes, both integers.

Upstream counterpart: kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/recommender/model/types.go`` (``ResourceAmount``,
``CPUAmountFromCores``, ``MemoryAmountFromBytes``, ``ScaleResource``, ``ResourceAmountMax``,
``RoundUpToScale``, ``MaxResourceAmount``).

A float becomes an amount by truncation toward zero, capped at ``MAX_RESOURCE_AMOUNT`` (1e14) and
floored at 0, as upstream. A NaN (``0 * Inf``, e.g. an empty estimate scaled by the infinite
confidence multiplier of a container without history) converts as Go does on amd64: to the most
negative int64, which the minimum-resource estimator then lifts to the per-container minimum.

Deliberate deviations: none.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from enum import StrEnum

from hpa.core.quantity import Format, Quantity
from hpa.core.vpa.gomath import float_to_int64

__all__ = [
    "MAX_RESOURCE_AMOUNT",
    "NO_RESOURCES",
    "ResourceName",
    "Resources",
    "cores_from_cpu_amount",
    "cpu_amount_from_cores",
    "memory_amount_from_bytes",
    "quantity_text",
    "resource_amount_from_float",
    "round_up_to_scale",
    "scale_resource",
]

MAX_RESOURCE_AMOUNT = 10**14
"""Largest amount the model produces (``MaxResourceAmount``)."""


class ResourceName(StrEnum):
    """The two resources the VPA recommends (``ResourceCPU``, ``ResourceMemory``)."""

    CPU = "cpu"
    MEMORY = "memory"


def resource_amount_from_float(amount: float) -> int:
    """Truncate toward zero, capped to ``[0, MAX_RESOURCE_AMOUNT]`` (NaN as Go on amd64)."""
    if amount > 1e14:
        return MAX_RESOURCE_AMOUNT
    if amount < 0:
        return 0
    if amount != amount:
        return float_to_int64(amount)
    return int(amount)  # Go's int64(x) within the int64 range: truncation


def cpu_amount_from_cores(cores: float) -> int:
    """Millicores from cores (``CPUAmountFromCores``)."""
    return resource_amount_from_float(cores * 1000.0)


def cores_from_cpu_amount(cpu_amount: int) -> float:
    """Cores from millicores (``CoresFromCPUAmount``)."""
    return float(cpu_amount) / 1000.0


def memory_amount_from_bytes(num_bytes: float) -> int:
    """Bytes, truncated and capped (``MemoryAmountFromBytes``)."""
    return resource_amount_from_float(num_bytes)


def scale_resource(amount: int, factor: float) -> int:
    """``amount * factor`` as an amount (``ScaleResource``)."""
    return resource_amount_from_float(amount * factor)  # the int converted as float(amount)


def round_up_to_scale(value: int, scale: int) -> int:
    """The multiple of ``scale`` at or above ``value`` (``RoundUpToScale``)."""
    if scale <= 0:
        raise ValueError(f"rounding scale must be greater than zero, got {scale}")
    return math.ceil(float(value) / float(scale)) * scale


@dataclass(frozen=True, slots=True)
class Resources:
    """Amounts per resource (upstream ``Resources``, a map): ``None`` where a resource is absent
    (e.g. not controlled)."""

    cpu: int | None = None
    memory: int | None = None

    def get(self, resource: ResourceName) -> int | None:
        return self.cpu if resource is ResourceName.CPU else self.memory

    def items(self) -> tuple[tuple[ResourceName, int], ...]:
        """Present resources, cpu first."""
        pairs: list[tuple[ResourceName, int]] = []
        if self.cpu is not None:
            pairs.append((ResourceName.CPU, self.cpu))
        if self.memory is not None:
            pairs.append((ResourceName.MEMORY, self.memory))
        return tuple(pairs)

    def filtered(self, resources: frozenset[ResourceName]) -> Resources:
        """Only the given resources (``FilterControlledResources``)."""
        return Resources(
            cpu=self.cpu if ResourceName.CPU in resources else None,
            memory=self.memory if ResourceName.MEMORY in resources else None,
        )


NO_RESOURCES = Resources()
"""No amounts at all (an absent ``ResourceList``)."""


@functools.lru_cache(maxsize=4096)
def quantity_text(resource: ResourceName, amount: int) -> str:
    """An amount as upstream writes it: ``QuantityFromCPUAmount`` (DecimalSI millicores) and
    ``QuantityFromMemoryAmount`` (BinarySI bytes), canonical form.

    Memoised by value, bounded (a pure function of two values, not of an object's identity: an
    entry can never go stale): a pass renders six amounts per container of every VPA whose
    recommendation moved, and they repeat across VPAs (estimates are histogram bucket boundaries
    times the same few factors: 173 distinct amounts among the 320,000 that two passes of
    ``bench/vpa_recommender.py --vpas 2000`` format). The canonical form goes through
    ``Decimal``: without the memo ``perf stat -e instructions:u python -m bench.vpa_recommender
    --vpas 1000`` counts 19.5 G instructions instead of 14.3 G. Converting once per
    recommendation instead would not help: every moved recommendation has new amounts to write,
    and only their values repeat."""
    if resource is ResourceName.CPU:
        return str(Quantity.from_milli(amount, Format.DECIMAL_SI))
    return str(Quantity.from_int(amount, Format.BINARY_SI))
