"""The priority- and capacity-aware update rule: a grown request must fit somewhere first."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpa.core.vpa.capacity import (
    CapacityVerdict,
    NodeCapacity,
    PlacedPod,
    capacity_index,
    capacity_verdict,
    is_system_critical,
)

GIB = 1024**3 * 1000  # milli-bytes


def node(name: str, cpu: int, mem_gib: int = 16, *, schedulable: bool = True) -> NodeCapacity:
    return NodeCapacity(name, {"cpu": cpu, "memory": mem_gib * GIB}, schedulable=schedulable)


def placed(name: str, where: str, cpu: int, *, priority: int = 1000) -> PlacedPod:
    return PlacedPod("ns", name, where, {"cpu": cpu, "memory": GIB}, priority=priority)


WEB = placed("web-0", "n1", 1000, priority=100)
FITS, PREEMPT, NOWHERE = (
    CapacityVerdict.FITS,
    CapacityVerdict.FITS_WITH_PREEMPTION,
    CapacityVerdict.FITS_NOWHERE,
)


@dataclass(frozen=True)
class Row:
    nodes: tuple[NodeCapacity, ...]
    others: tuple[PlacedPod, ...]
    new_cpu: int
    can_preempt: bool
    in_place: bool
    expected: CapacityVerdict


ROWS = {
    "fits on its own node in place (its old request leaves)": Row(
        (node("n1", 4000),), (placed("a", "n1", 2000),), 2000, True, True, FITS
    ),
    "in place cannot use another node": Row(
        (node("n1", 4000), node("n2", 8000)), (placed("a", "n1", 3000),), 2000, True, True, NOWHERE
    ),
    "eviction may land on another node": Row(
        (node("n1", 4000), node("n2", 8000)), (placed("a", "n1", 3000),), 2000, True, False, FITS
    ),
    "a cordoned node does not count for an eviction": Row(
        (node("n1", 4000), node("n2", 8000, schedulable=False)),
        (placed("a", "n1", 3000),),
        2000,
        True,
        False,
        NOWHERE,
    ),
    "larger than any node": Row(
        (node("n1", 4000), node("n2", 8000)), (), 9000, True, False, NOWHERE
    ),
    "fits only by preempting a lower-priority pod": Row(
        (node("n1", 4000),), (placed("batch", "n1", 3000, priority=10),), 2000, True, True, PREEMPT
    ),
    "preemption never counts equal priority": Row(
        (node("n1", 4000),), (placed("peer", "n1", 3000, priority=100),), 2000, True, True, NOWHERE
    ),
    "preemption never counts higher priority": Row(
        (node("n1", 4000),), (placed("db", "n1", 3000, priority=1000),), 2000, True, True, NOWHERE
    ),
    "preemptionPolicy Never counts nothing as free": Row(
        (node("n1", 4000),), (placed("batch", "n1", 3000, priority=10),), 2000, False, True, NOWHERE
    ),
    "exactly full fits": Row(
        (node("n1", 3000),), (placed("a", "n1", 1000),), 2000, True, True, FITS
    ),
    "one milli over does not": Row(
        (node("n1", 3000),), (placed("a", "n1", 1000),), 2001, True, True, NOWHERE
    ),
    "no nodes": Row((), (), 100, True, False, NOWHERE),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_capacity_table(row: Row) -> None:
    verdict = capacity_verdict(
        WEB,
        {"cpu": row.new_cpu, "memory": GIB},
        nodes=row.nodes,
        placed=(WEB, *row.others),
        can_preempt=row.can_preempt,
        in_place=row.in_place,
    )
    assert verdict is row.expected


def test_memory_counts_as_much_as_cpu() -> None:
    verdict = capacity_verdict(
        WEB,
        {"cpu": 100, "memory": 20 * GIB},
        nodes=(node("n1", 64000, mem_gib=16),),
        placed=(WEB,),
        can_preempt=True,
        in_place=False,
    )
    assert verdict is NOWHERE


@pytest.mark.parametrize(
    ("name", "critical"),
    [
        ("system-cluster-critical", True),
        ("system-node-critical", True),
        ("", False),
        ("high-priority", False),
    ],
)
def test_system_critical_classes(name: str, critical: bool) -> None:
    assert is_system_critical(name) is critical


@given(
    allocatable=st.integers(0, 10_000),
    used=st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 200)), max_size=5),
    new_cpu=st.integers(1, 10_000),
    can_preempt=st.booleans(),
)
def test_fits_is_exactly_what_the_node_has_free(
    allocatable: int, used: list[tuple[int, int]], new_cpu: int, can_preempt: bool
) -> None:
    others = tuple(
        PlacedPod("ns", f"o{i}", "n1", {"cpu": cpu}, priority=p) for i, (cpu, p) in enumerate(used)
    )
    verdict = capacity_verdict(
        WEB,
        {"cpu": new_cpu},
        nodes=(NodeCapacity("n1", {"cpu": allocatable}),),
        placed=(WEB, *others),
        can_preempt=can_preempt,
        in_place=True,
    )
    free = allocatable - sum(cpu for cpu, _ in used)
    lower = sum(cpu for cpu, p in used if p < WEB.priority) if can_preempt else 0
    if new_cpu <= free:
        assert verdict is FITS
    elif new_cpu <= free + lower:
        assert verdict is PREEMPT
    else:
        assert verdict is NOWHERE


@given(
    pods=st.lists(
        st.tuples(st.sampled_from(["n1", "n2", "n3"]), st.integers(0, 4000), st.integers(0, 3)),
        min_size=1,
        max_size=12,
    ),
    grow=st.integers(1, 8000),
    can_preempt=st.booleans(),
    in_place=st.booleans(),
)
def test_one_index_serves_every_pod_of_the_loop(
    pods: list[tuple[str, int, int]], grow: int, can_preempt: bool, in_place: bool
) -> None:
    """The updater sums the cluster once per loop; each pod's verdict is the one computed from
    the nodes and pods directly, with its own requests leaving with it."""
    nodes = (node("n1", 8000), node("n2", 4000), node("n3", 16000, schedulable=False))
    everyone = [
        PlacedPod("ns", f"p{i}", where, {"cpu": cpu}, priority=p)
        for i, (where, cpu, p) in enumerate(pods)
    ]
    index = capacity_index(nodes, everyone)
    for pod in everyone:
        direct_nodes = []
        for n in nodes:
            others = sum(o.requests["cpu"] for o in everyone if o.node == n.name and o is not pod)
            lower = sum(
                o.requests["cpu"]
                for o in everyone
                if o.node == n.name and o.priority < pod.priority and can_preempt
            )
            direct_nodes.append((n, n.allocatable["cpu"] - others, lower))
        expected = NOWHERE
        for n, free, lower in direct_nodes:
            if (in_place and n.name != pod.node) or (not in_place and not n.schedulable):
                continue
            if grow <= free:
                expected = FITS
                break
            if grow <= free + lower:
                expected = PREEMPT
        got = capacity_verdict(
            pod, {"cpu": grow}, index=index, can_preempt=can_preempt, in_place=in_place
        )
        assert got is expected
