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
from collections.abc import Iterable
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
    "cpu_amounts_from_cores",
    "memory_amount_from_bytes",
    "memory_amounts_from_bytes",
    "quantity_text",
    "resource_amount_from_float",
    "resource_amounts_from_floats",
    "round_up_to_scale",
    "scale_resource",
    "scale_resources",
]

MAX_RESOURCE_AMOUNT = 10**14
"""Largest amount the model produces (``MaxResourceAmount``)."""


class ResourceName(StrEnum):
    """The two resources the VPA recommends (``ResourceCPU``, ``ResourceMemory``)."""

    CPU = "cpu"
    MEMORY = "memory"


def resource_amounts_from_floats(amounts: Iterable[float]) -> list[int]:
    """Each amount truncated toward zero, capped to ``[0, MAX_RESOURCE_AMOUNT]`` (NaN as Go on
    amd64). The conversions below are this one, for one amount or for a batch (a VPA's
    containers, estimated together)."""
    out: list[int] = []
    for amount in amounts:
        if amount > 1e14:
            out.append(MAX_RESOURCE_AMOUNT)
        elif amount < 0:
            out.append(0)
        elif amount != amount:
            out.append(float_to_int64(amount))
        else:
            out.append(int(amount))  # Go's int64(x) within the int64 range: truncation
    return out


def resource_amount_from_float(amount: float) -> int:
    """Truncate toward zero, capped to ``[0, MAX_RESOURCE_AMOUNT]`` (NaN as Go on amd64)."""
    return resource_amounts_from_floats((amount,))[0]


def cpu_amounts_from_cores(cores: Iterable[float]) -> list[int]:
    """Millicores from cores (``CPUAmountFromCores``), of each."""
    return resource_amounts_from_floats([c * 1000.0 for c in cores])


def cpu_amount_from_cores(cores: float) -> int:
    """Millicores from cores (``CPUAmountFromCores``)."""
    return cpu_amounts_from_cores((cores,))[0]


def cores_from_cpu_amount(cpu_amount: int) -> float:
    """Cores from millicores (``CoresFromCPUAmount``)."""
    return float(cpu_amount) / 1000.0


def memory_amounts_from_bytes(num_bytes: Iterable[float]) -> list[int]:
    """Bytes, truncated and capped (``MemoryAmountFromBytes``), of each."""
    return resource_amounts_from_floats(num_bytes)


def memory_amount_from_bytes(num_bytes: float) -> int:
    """Bytes, truncated and capped (``MemoryAmountFromBytes``)."""
    return memory_amounts_from_bytes((num_bytes,))[0]


def scale_resources(amounts: Iterable[int], factors: Iterable[float]) -> list[int]:
    """``amount * factor`` as an amount (``ScaleResource``), of each pair."""
    # the int converted as float(amount)
    return resource_amounts_from_floats([a * f for a, f in zip(amounts, factors, strict=True)])


def scale_resource(amount: int, factor: float) -> int:
    """``amount * factor`` as an amount (``ScaleResource``)."""
    return scale_resources((amount,), (factor,))[0]


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
