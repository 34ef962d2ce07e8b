"""The ``group-aware`` recommender in the recommender's pass: samples recorded with the target's
replica count from the informers, the model applied to the resources an HPA does not scale on."""

from __future__ import annotations

import pytest

from hpa.controllers.vertical.feeder import selected_model
from hpa.controllers.vertical.group_aware import GroupSizeHistory
from hpa.core.quantity import parse_quantity
from hpa.core.vpa.amount import ResourceName
from tests.hpa.controllers.vertical.harness import (
    MIB,
    Harness,
    deployment_json,
    hpa_json,
    vpa_json,
)
from tests.hpa.controllers.vertical.test_recommender import target

# the HPA moves the Deployment through these replica counts; per-pod memory is
# 200 MiB + 1200 MiB / replicas (the total load shared by the pods)
REPLICAS = [2, 3, 4, 6, 8, 6, 4, 3, 2, 3, 4, 6, 8, 6]


def _bytes(quantity: str) -> int:
    return parse_quantity(quantity).value()


def _memory(replicas: int) -> int:
    return 200 * MIB + 1200 * MIB // replicas


async def _through_the_day(h: Harness, *, final: int) -> None:
    for replicas in [*REPLICAS, final]:
        deployment = deployment_json()
        deployment["spec"]["replicas"] = replicas
        h.put_controller("Deployment", deployment)
        h.feed(cpu=100 * replicas, memory=_memory(replicas))
        await h.run_once()
        await h.clock.advance(60)


async def test_group_aware_recommends_memory_for_the_replicas_the_hpa_holds() -> None:
    h = Harness()
    h.web()  # VPA "web": the plain model
    h.put_vpa(vpa_json("grouped", recommenders=["group-aware"]))
    h.put_hpa(hpa_json("web-hpa"))  # cpu utilization: memory is the VPA's
    await _through_the_day(h, final=6)
    plain, grouped = target(h.status("web")), target(h.status("grouped"))
    history = h.recommender.feeder.group_sizes
    vpa_id = next(v for v in h.cluster.vpas if v.vpa_name == "grouped")
    recorded = history.samples(vpa_id)[("app", ResourceName.MEMORY)]
    assert sorted({s.replicas for s in recorded}) == [2, 3, 4, 6, 8]
    assert all(s.usage == _memory(s.replicas) for s in recorded)
    # at 6 replicas: (200 + 200) MiB plus the 15 % margin
    assert _bytes(grouped["memory"]) == -(-400 * MIB * 115 // 100)
    assert _bytes(plain["memory"]) > _bytes(grouped["memory"])
    # cpu is the HPA's: the group-aware VPA keeps the plain model's cpu
    assert grouped["cpu"] == plain["cpu"]


async def test_without_replica_changes_it_is_the_plain_model() -> None:
    h = Harness()
    h.web()
    h.put_vpa(vpa_json("grouped", recommenders=["group-aware"]))
    h.put_hpa(hpa_json("web-hpa"))
    for _ in range(12):
        h.feed(cpu=200, memory=300 * MIB)
        await h.run_once()
        await h.clock.advance(60)
    assert target(h.status("grouped")) == target(h.status("web"))


@pytest.mark.parametrize(
    ("recommenders", "expected"),
    [(("group-aware",), "group-aware"), (("other", "group-aware"), "group-aware")],
)
def test_the_name_selects_the_model(recommenders: tuple[str, ...], expected: str) -> None:
    assert selected_model(recommenders, "default") == expected


async def test_every_pods_samples_of_the_last_passes_are_kept() -> None:
    """The window is a number of passes, not of samples: three pods fill it three times as
    fast, and it still holds the last ``passes`` passes of each; equal samples taken one after
    the other in a pass are one sample of their summed weight."""
    h = Harness()
    h.web(pods=4)
    h.put_vpa(vpa_json("grouped", recommenders=["group-aware"]))
    h.feeder.group_sizes = GroupSizeHistory(h.controllers, passes=4)
    for step in range(6):
        for i, pod in enumerate(("web-0", "web-1", "web-2")):
            h.feed(pod, cpu=100, memory=(300 + 10 * i + step) * MIB)
        h.feed("web-3", cpu=100, memory=(320 + step) * MIB)  # as web-2, sampled next to it
        await h.run_once()
        await h.clock.advance(60)
    vpa_id = next(v for v in h.cluster.vpas if v.vpa_name == "grouped")
    kept = h.feeder.group_sizes.samples(vpa_id)[("app", ResourceName.MEMORY)]
    expected = {
        ((300 + 10 * i + step) * MIB, 2.0 if i == 2 else 1.0)
        for step in (2, 3, 4, 5)
        for i in range(3)
    }
    assert {(s.usage, s.weight) for s in kept} == expected
    assert len(kept) == 3 * 4


async def test_a_samples_load_is_the_pods_own_cpu_of_the_same_metrics_sample() -> None:
    """The HPA's status says 300m per pod (written up to a sync period before the sample); the
    pod's cpu in the same metrics sample as its memory is 450m: each sample's load is 450m, the
    target still the HPA's, 60 % of the pod's request."""
    h = Harness()
    h.web(pods=1)
    h.put_vpa(vpa_json("grouped", recommenders=["group-aware"]))
    hpa = hpa_json("web-hpa")
    hpa["status"] = {
        "currentReplicas": 1,
        "desiredReplicas": 1,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageValue": "300m", "averageUtilization": 50},
                },
            }
        ],
    }
    h.put_hpa(hpa)
    h.feed(cpu=450, memory=300 * MIB)
    await h.run_once()
    vpa_id = next(v for v in h.cluster.vpas if v.vpa_name == "grouped")
    kept = h.feeder.group_sizes.samples(vpa_id)
    memory = kept[("app", ResourceName.MEMORY)]
    cpu = kept[("app", ResourceName.CPU)]
    assert [(s.usage, s.load) for s in memory] == [(300 * MIB, 0.45)]
    assert [(s.usage, s.load) for s in cpu] == [(450.0, 0.45)]
    # the HPA's target per pod: 60 % of the pod's 100m cpu request
    assert memory[0].target == pytest.approx(0.6 * 0.1)
