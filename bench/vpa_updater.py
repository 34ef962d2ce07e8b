"""The VPA updater's loop at scale: CPU time of one ``run_once`` over many VPAs and pods.

Run::

    .venv/bin/python -m bench.vpa_updater --vpas 1000 --pods-per-vpa 10

Each of ``--vpas`` Deployments has a ReplicaSet of ``--pods-per-vpa`` running pods (requests
100m / 128Mi) and a ``Recreate`` VPA recommending 500m / 512Mi, so every pod is outside the
recommended range and is ranked; the eviction tolerance (0.5) lets half of each group go. The
informers' stores are plain lists of records parsed as the informers parse them; evictions
succeed at once (no API server), events are dropped. Nodes: one per 100 pods, 64 cores each,
so the capacity check runs for every eviction.

Logging is configured as in production (JSON lines), returned instead of written. Reported:
CPU-seconds of one loop (``time.process_time``; the best of ``--repeat``), pods per
CPU-second, and the evictions it made. Only ratios and CPU times are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from hpa.controllers.vertical.updater import Updater, UpdaterConfig
from hpa.controllers.vertical.updater_metrics import UpdaterMetrics
from hpa.core.vpa.awareness import HorizontalScaler
from hpa.core.vpa.capacity import NodeCapacity
from hpa.core.vpa.matching import ControllerKey
from hpa.core.vpa.update import ReplicaGroup
from hpa.kube.clock import SystemClock
from hpa.kube.logs import configure_logging
from hpa.kube.targets import ControllerRecord, ScaleInfo, TargetResolver, parse_controller
from hpa.kube.updater_records import UpdaterPodRecord, parse_node, parse_updater_pod
from hpa.kube.vpa_records import LimitRangeRecord, VpaRecord, parse_vpa

NS = "bench"


def _owner(kind: str, name: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "controller": True}]


class Cluster:
    """``ClusterView`` and ``ControllerLookup`` over lists."""

    def __init__(self, vpas: int, pods_per_vpa: int) -> None:
        self.controllers: dict[tuple[str, str], ControllerRecord] = {}
        self.vpa_records: list[VpaRecord] = []
        self.pod_records: list[UpdaterPodRecord] = []
        for v in range(vpas):
            name = f"w{v}"
            selector = {"matchLabels": {"app": name}}
            deployment = {
                "metadata": {"namespace": NS, "name": name},
                "spec": {"replicas": pods_per_vpa, "selector": selector},
            }
            replica_set = {
                "metadata": {
                    "namespace": NS,
                    "name": f"{name}-rs",
                    "ownerReferences": _owner("Deployment", name),
                },
                "spec": {"replicas": pods_per_vpa, "selector": selector},
            }
            self.controllers[("Deployment", name)] = parse_controller(deployment, kind="Deployment")
            self.controllers[("ReplicaSet", f"{name}-rs")] = parse_controller(
                replica_set, kind="ReplicaSet"
            )
            target = {"cpu": "500m", "memory": "512Mi"}
            self.vpa_records.append(
                parse_vpa(
                    {
                        "metadata": {"namespace": NS, "name": name},
                        "spec": {
                            "targetRef": {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "name": name,
                            },
                            "updatePolicy": {"updateMode": "Recreate"},
                        },
                        "status": {
                            "recommendation": {
                                "containerRecommendations": [
                                    {
                                        "containerName": "app",
                                        "target": target,
                                        "lowerBound": target,
                                        "upperBound": target,
                                    }
                                ]
                            }
                        },
                    }
                )
            )
            for p in range(pods_per_vpa):
                index = v * pods_per_vpa + p
                self.pod_records.append(
                    parse_updater_pod(
                        {
                            "metadata": {
                                "namespace": NS,
                                "name": f"{name}-{p}",
                                "uid": f"uid-{index}",
                                "labels": {"app": name},
                                "ownerReferences": _owner("ReplicaSet", f"{name}-rs"),
                            },
                            "spec": {
                                "nodeName": f"node-{index // 100}",
                                "containers": [
                                    {
                                        "name": "app",
                                        "resources": {
                                            "requests": {"cpu": "100m", "memory": "128Mi"}
                                        },
                                    }
                                ],
                            },
                            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
                        }
                    )
                )
        count = (vpas * pods_per_vpa + 99) // 100
        self.node_records = [
            parse_node(
                {
                    "metadata": {"name": f"node-{n}"},
                    "status": {
                        "allocatable": {"cpu": "64", "memory": "256Gi"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            ).capacity
            for n in range(count)
        ]

    def vpas(self) -> Iterable[VpaRecord]:
        return self.vpa_records

    def pods(self) -> Iterable[UpdaterPodRecord]:
        return self.pod_records

    def nodes(self) -> Iterable[NodeCapacity]:
        return self.node_records

    def limit_ranges(self, namespace: str) -> Iterable[LimitRangeRecord]:
        return ()

    def hpas(self, namespace: str) -> Sequence[HorizontalScaler]:
        return ()

    def replicas(self, group: ReplicaGroup) -> int | None:
        record = self.controllers.get((group.kind, group.name))
        return None if record is None else record.replicas

    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None:
        return self.controllers.get((kind, name))


class NoScales:
    async def get_scale(self, key: ControllerKey) -> ScaleInfo | None:
        return None


class Accepting:
    """Pod actions that succeed at once, counted."""

    def __init__(self) -> None:
        self.evictions = 0

    async def evict(self, namespace: str, name: str) -> None:
        self.evictions += 1

    async def resize(self, namespace: str, name: str, patch: Sequence[dict[str, Any]]) -> None:
        return None

    async def patch(self, namespace: str, name: str, patch: Sequence[dict[str, Any]]) -> None:
        return None


class Quiet:
    def pod_event(self, pod: UpdaterPodRecord, reason: str, message: str) -> None:
        return None

    def vpa_event(
        self, vpa: VpaRecord, reason: str, message: str, *, warning: bool = False
    ) -> None:
        return None


class Alive:
    async def is_valid(self) -> bool:
        return True


class Unlimited:
    async def acquire(self) -> float:
        return 0.0


async def one_loop(cluster: Cluster) -> tuple[float, int]:
    actions = Accepting()
    updater = Updater(
        view=cluster,
        resolver=TargetResolver(cluster, NoScales()),
        actions=actions,
        events=Quiet(),
        status=Alive(),
        eviction_limiter=Unlimited(),
        in_place_limiter=Unlimited(),
        metrics=UpdaterMetrics(CollectorRegistry()),
        clock=SystemClock(),
        config=UpdaterConfig(),
    )
    started = time.process_time()
    await updater.run_once()
    return time.process_time() - started, actions.evictions


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.vpa_updater", description=__doc__)
    parser.add_argument("--vpas", type=int, default=1000, help="VPAs (default 1000)")
    parser.add_argument("--pods-per-vpa", type=int, default=10, help="pods each (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="loops, the best is kept (3)")
    args = parser.parse_args(argv)
    configure_logging("info")  # the JSON lines of production, returned instead of printed
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())
    cluster = Cluster(args.vpas, args.pods_per_vpa)
    results = [asyncio.run(one_loop(cluster)) for _ in range(args.repeat)]
    seconds, evictions = min(results)
    pods = args.vpas * args.pods_per_vpa
    command = " ".join(["python -m bench.vpa_updater", *(argv or sys.argv[1:])])
    print(f"$ {command}")
    print(f"pods                 {pods}")
    print(f"CPU seconds per loop {seconds:.3f}")
    print(f"pods per CPU-second  {pods / seconds:,.0f}")
    print(f"evictions per loop   {evictions}")


if __name__ == "__main__":
    main()
