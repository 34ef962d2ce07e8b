"""Does a pod's grown request fit somewhere before the updater evicts or resizes it?

Upstream counterpart: none. The VPA updater evicts a pod whatever its new requests are; when they
fit on no node the replacement stays Pending, or the scheduler preempts someone else's pod. The VPA
design proposal leaves "adjust to cluster state (quota, node space)" undesigned. This rule is the
updater's estimate, made from its informers before it acts:

- a node counts when it is schedulable (Ready, not cordoned);
- its free capacity is its allocatable less the requests of the pods bound to it, the pod being
  updated excluded (its old requests leave with it);
- when the pod may preempt (``preemptionPolicy`` is not ``Never``), what pods of **strictly lower**
  priority hold on a node counts as free as well, as the scheduler's preemption would free it;
- an in-place resize can only use the pod's own node; an eviction may land anywhere;
- the pod fits when, for every resource it requests, the new request is at most the node's free
  capacity of that resource, on at least one node.

The estimate ignores taints, affinity, topology spread and extended resources; it errs on the side
of acting (a pod that fits by this count may still not schedule, exactly as without this rule).
The updater sums the cluster once per loop (:func:`capacity_index`: what each node's pods hold,
and by priority), so a verdict costs a pass over the nodes; it does not count the pods it moved
earlier in the same loop.

Pods of the ``system-cluster-critical`` and ``system-node-critical`` priority classes are never
evicted unless the operator allows it (``hpa vpa updater --allow-evicting-system-critical``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "SYSTEM_CRITICAL_PRIORITY_CLASSES",
    "CapacityIndex",
    "CapacityVerdict",
    "NodeCapacity",
    "PlacedPod",
    "capacity_index",
    "capacity_verdict",
    "is_system_critical",
]

SYSTEM_CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})

ResourceMilli = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    """A node's ``status.allocatable`` (milli-units) and whether new pods may land on it."""

    name: str
    allocatable: ResourceMilli
    schedulable: bool = True


@dataclass(frozen=True, slots=True)
class PlacedPod:
    """A pod bound to a node: the sum of its containers' requests and its priority."""

    namespace: str
    name: str
    node: str
    requests: ResourceMilli
    priority: int = 0


class CapacityVerdict(StrEnum):
    FITS = "Fits"
    FITS_WITH_PREEMPTION = "FitsWithPreemption"
    FITS_NOWHERE = "FitsNowhere"


def is_system_critical(priority_class_name: str) -> bool:
    return priority_class_name in SYSTEM_CRITICAL_PRIORITY_CLASSES


@dataclass(frozen=True, slots=True)
class CapacityIndex:
    """The nodes and what their pods hold, summed once (per updater loop) so each verdict costs
    a pass over the nodes, not over every pod: ``used`` per node, and per node the pods'
    priorities in increasing order with the running totals of their requests
    (``held[node][i]`` is what the first ``i + 1`` pods by priority hold)."""

    nodes: tuple[NodeCapacity, ...]
    used: Mapping[str, Mapping[str, int]]
    priorities: Mapping[str, tuple[int, ...]]
    held: Mapping[str, tuple[Mapping[str, int], ...]]
    members: frozenset[tuple[str, str, str]]
    """(namespace, name, node) of every placed pod."""


def capacity_index(nodes: Iterable[NodeCapacity], placed: Iterable[PlacedPod]) -> CapacityIndex:
    used: dict[str, dict[str, int]] = {}
    on_node: dict[str, list[PlacedPod]] = {}
    for other in placed:
        _add(used.setdefault(other.node, {}), other.requests)
        on_node.setdefault(other.node, []).append(other)
    priorities: dict[str, tuple[int, ...]] = {}
    held: dict[str, tuple[Mapping[str, int], ...]] = {}
    for node, pods in on_node.items():
        pods.sort(key=lambda p: p.priority)
        running: dict[str, int] = {}
        totals = []
        for other in pods:
            _add(running, other.requests)
            totals.append(dict(running))
        priorities[node] = tuple(p.priority for p in pods)
        held[node] = tuple(totals)
    members = frozenset((p.namespace, p.name, p.node) for ps in on_node.values() for p in ps)
    return CapacityIndex(tuple(nodes), used, priorities, held, members)


def _held_below(index: CapacityIndex, node: str, priority: int) -> Mapping[str, int]:
    """What the pods of ``node`` with a priority strictly below ``priority`` hold."""
    count = bisect.bisect_left(index.priorities.get(node, ()), priority)
    return index.held[node][count - 1] if count else {}


def capacity_verdict(
    pod: PlacedPod,
    new_requests: ResourceMilli,
    *,
    nodes: Iterable[NodeCapacity] | None = None,
    placed: Iterable[PlacedPod] = (),
    index: CapacityIndex | None = None,
    can_preempt: bool,
    in_place: bool,
) -> CapacityVerdict:
    """Whether ``pod`` with ``new_requests`` fits on its own node (``in_place``) or on any
    schedulable node (eviction); ``FITS_WITH_PREEMPTION`` when it fits only by counting what
    lower-priority pods hold. The cluster is ``index`` or, built here, ``nodes`` and ``placed``
    (``pod`` itself among them or not: its old requests leave with it)."""
    if index is None:
        index = capacity_index(nodes or (), placed)
    verdict = CapacityVerdict.FITS_NOWHERE
    for node in index.nodes:
        if in_place and node.name != pod.node:
            continue
        if not in_place and not node.schedulable:
            continue
        free = _free(node.allocatable, index.used.get(node.name, {}))
        if (pod.namespace, pod.name, node.name) in index.members:
            for resource, amount in pod.requests.items():  # its old requests leave with it
                if resource in free:
                    free[resource] += amount
        if _fits(new_requests, free):
            return CapacityVerdict.FITS
        if not can_preempt:
            continue
        _add(free, _held_below(index, node.name, pod.priority))
        if _fits(new_requests, free):
            verdict = CapacityVerdict.FITS_WITH_PREEMPTION
    return verdict


def _add(total: dict[str, int], amounts: ResourceMilli) -> None:
    for resource, amount in amounts.items():
        total[resource] = total.get(resource, 0) + amount


def _free(allocatable: ResourceMilli, used: Mapping[str, int]) -> dict[str, int]:
    return {resource: amount - used.get(resource, 0) for resource, amount in allocatable.items()}


def _fits(requests: ResourceMilli, free: Mapping[str, int]) -> bool:
    """A resource the node does not report has no capacity (as the scheduler's fit check)."""
    return all(amount <= free.get(resource, 0) for resource, amount in requests.items() if amount)
