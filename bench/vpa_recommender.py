"""The VPA recommender's pass at scale: CPU-seconds per pass, RSS, API writes per pass.

Run::

    flock /tmp/hpa-bench.lock .venv/bin/python -m bench.vpa_recommender --vpas 10000 --containers 10

The cluster: ``--vpas`` VPAs in namespaces of ``--per-namespace`` (100), each on its own
Deployment → ReplicaSet → one pod with ``--containers`` containers (distinct usage per container),
an HPA on cpu for one VPA in ten. Objects are generated as the API server's JSON and converted
by the informers' parse functions into the informers' stores, as ``hpa vpa recommender`` keeps
them (the HPAs reach the recommender through the same ``scalers`` as there); the live metrics
source answers one snapshot per container per pass. The API writes (status patches, checkpoint
writes and deletes) are counted and answered at once, each after its token from the real
client's limiter (``--kube-api-qps`` 50, ``--kube-api-burst`` 100, upstream's defaults) on a
virtual clock: a wait moves the clock instead of sleeping, so ``--checkpoints-timeout`` (1m) ends
the checkpoint writes where a real cluster would, and the CPU figures are the recommender's own
work, not the API server's or the network's.

* **pass CPU-seconds**: ``time.process_time`` around ``Recommender.run_once`` for the first pass
  (every VPA new: every status written) and for a steady pass (one ``--recommender-interval``
  after the first began, or at once when the first overran it; the same usage), and per step
  (upstream's ``vpa_recommender_execution_latency_seconds`` step names); goal <= 5 s per pass;
* **RSS**: ``VmHWM`` (the peak) and ``VmRSS`` after the passes; goal <= 500 MB;
* **API writes per pass**: status patches beside the VPAs whose recommendation changed (status
  writes should equal those: a status is written only when it changed), checkpoint writes (the
  least recently written VPAs first, until ``--checkpoints-timeout``), and the seconds the
  pass's requests waited for the client limit.

* **recommendations digest**: a hash of every VPA's recommendation after the steady pass (each
  container's target, bounds and uncapped target), so that runs before and after a change to the
  model show at a glance whether its outputs are the same.

Only counts and CPU times are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from bench.controller import memory_bytes
from hpa.app.recommender import RecommenderAppSettings
from hpa.app.vertical_informers import scalers
from hpa.controllers.vertical.feeder import ClusterFeeder
from hpa.controllers.vertical.ports import ContainerMetricsSnapshot
from hpa.controllers.vertical.recommender import Recommender
from hpa.core.vpa.aggregation import CheckpointStatus
from hpa.core.vpa.cluster import ClusterState, PodId
from hpa.core.vpa.matching import ControllerKey
from hpa.core.vpa.recommender import create_pod_resource_recommender
from hpa.kube.client import TokenBucket
from hpa.kube.informer import Store
from hpa.kube.logs import configure_logging
from hpa.kube.records import HpaRecord, PodRecord, parse_hpa, parse_pod, record_key
from hpa.kube.targets import ControllerRecord, ScaleInfo, TargetResolver, parse_controller
from hpa.kube.vpa_records import VpaRecord, parse_vpa

MIB = 1024 * 1024
START_SECONDS = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class _Clock:
    def __init__(self) -> None:
        self.seconds = START_SECONDS

    def monotonic(self) -> float:
        return self.seconds

    def now(self) -> Any:
        from datetime import UTC, datetime

        return datetime.fromtimestamp(self.seconds, UTC)

    async def sleep(self, seconds: float) -> None:
        self.seconds += seconds


class _Controllers:
    def __init__(self, stores: dict[str, Store[ControllerRecord]]) -> None:
        self.stores = stores

    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None:
        store = self.stores.get(kind)
        return None if store is None else store.get_by_name(namespace, name)


class _NoScales:
    async def get_scale(self, key: ControllerKey) -> ScaleInfo | None:
        return None


class _Metrics:
    def __init__(self) -> None:
        self.snapshots: list[ContainerMetricsSnapshot] = []

    async def containers_metrics(self) -> Sequence[ContainerMetricsSnapshot]:
        return self.snapshots


class _CountingApi:
    """The recommender's writes, counted and answered at once, each after its token from the
    real client's limiter on the virtual clock (its wait moves the clock instead of sleeping)."""

    def __init__(self, limiter: TokenBucket) -> None:
        self.limiter = limiter
        self.status_writes = 0
        self.checkpoint_writes = 0
        self.checkpoint_deletes = 0

    async def patch_vpa_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        await self.limiter.acquire()
        self.status_writes += 1

    async def list_checkpoints(self) -> list[Mapping[str, Any]]:
        await self.limiter.acquire()
        return []

    async def save_checkpoint(
        self,
        namespace: str,
        name: str,
        *,
        vpa_name: str,
        container_name: str,
        status: CheckpointStatus,
    ) -> None:
        await self.limiter.acquire()
        self.checkpoint_writes += 1

    async def delete_checkpoint(self, namespace: str, name: str) -> None:
        await self.limiter.acquire()
        self.checkpoint_deletes += 1


@dataclass
class Cluster:
    vpas: Store[VpaRecord]
    pods: Store[PodRecord]
    hpas: Store[HpaRecord]
    controllers: dict[str, Store[ControllerRecord]]
    containers: list[tuple[PodId, str, int, int]]
    """(pod, container, millicores, bytes) of every container."""


def generate(vpas: int, containers: int, per_namespace: int) -> Cluster:
    cluster = Cluster(Store(), Store(), Store(), {"Deployment": Store(), "ReplicaSet": Store()}, [])
    deployment = functools.partial(parse_controller, kind="Deployment")
    replica_set = functools.partial(parse_controller, kind="ReplicaSet")
    names = [f"c{j}" for j in range(containers)]
    for i in range(vpas):
        namespace = f"ns-{i // per_namespace}"
        app = f"app-{i}"
        selector = {"matchLabels": {"app": app}}
        record = deployment(
            {"metadata": {"namespace": namespace, "name": app}, "spec": {"selector": selector}}
        )
        cluster.controllers["Deployment"].put(record_key(record), record)
        owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": app, "controller": True}
        record = replica_set(
            {
                "metadata": {
                    "namespace": namespace,
                    "name": f"{app}-rs",
                    "ownerReferences": [owner],
                },
                "spec": {"selector": selector},
            }
        )
        cluster.controllers["ReplicaSet"].put(record_key(record), record)
        pod = parse_pod(
            {
                "metadata": {
                    "namespace": namespace,
                    "name": f"{app}-0",
                    "resourceVersion": "1",
                    "labels": {"app": app, "tier": "web"},
                    "ownerReferences": [
                        {**owner, "kind": "ReplicaSet", "name": f"{app}-rs"},
                    ],
                },
                "spec": {
                    "containers": [
                        {"name": n, "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
                        for n in names
                    ]
                },
                "status": {
                    "phase": "Running",
                    "containerStatuses": [
                        {"name": n, "restartCount": 0, "state": {"running": {}}} for n in names
                    ],
                },
            }
        )
        cluster.pods.put(record_key(pod), pod)
        vpa = parse_vpa(
            {
                "apiVersion": "autoscaling.k8s.io/v1",
                "kind": "VerticalPodAutoscaler",
                "metadata": {
                    "namespace": namespace,
                    "name": app,
                    "resourceVersion": "1",
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                },
                "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": app}},
            }
        )
        cluster.vpas.put(record_key(vpa), vpa)
        if i % 10 == 0:
            hpa = parse_hpa(
                {
                    "metadata": {"namespace": namespace, "name": app},
                    "spec": {
                        "scaleTargetRef": {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": app,
                        },
                        "maxReplicas": 10,
                    },
                }
            )
            cluster.hpas.put(record_key(hpa), hpa)
        for j, name in enumerate(names):
            cluster.containers.append(
                (
                    PodId(namespace, f"{app}-0"),
                    name,
                    50 + (i * 7 + j * 13) % 950,
                    (64 + (i + j) % 512) * MIB,
                )
            )
    return cluster


@dataclass(frozen=True)
class Pass:
    cpu_seconds: float
    steps: Mapping[str, float]
    """CPU seconds of each of upstream's steps."""
    status_writes: int
    moved: int
    """VPAs whose recommendation changed in the pass."""
    checkpoint_writes: int
    clock_seconds: float
    """How long the pass took on the virtual clock: the client limiter's waits."""


@dataclass(frozen=True)
class Result:
    vpas: int
    containers: int
    qps: float
    burst: int
    first: Pass
    steady: Pass
    peak_rss_bytes: int
    rss_bytes: int
    digest: str
    """Of every VPA's recommendation after the steady pass (see :func:`recommendations_digest`)."""


def recommendations_digest(model: ClusterState) -> str:
    """SHA-256 (first 16 hex digits) of every VPA's recommendation, by VPA: each container's
    target, lower and upper bound and uncapped target, so two runs' outputs compare at a glance."""
    digest = hashlib.sha256()
    for vpa_id in sorted(model.vpas, key=lambda v: (v.namespace, v.vpa_name)):
        recommendation = model.vpas[vpa_id].recommendation or ()
        digest.update(f"{vpa_id.namespace}/{vpa_id.vpa_name}:".encode())
        for r in recommendation:
            digest.update(
                repr(
                    (
                        r.container_name,
                        (r.target.cpu, r.target.memory),
                        (r.lower_bound.cpu, r.lower_bound.memory),
                        (r.upper_bound.cpu, r.upper_bound.memory),
                        (r.uncapped_target.cpu, r.uncapped_target.memory),
                    )
                ).encode()
            )
        digest.update(b";")
    return digest.hexdigest()[:16]


async def measure(
    vpas: int, containers: int, per_namespace: int, *, qps: float, burst: int
) -> Result:
    cluster = generate(vpas, containers, per_namespace)
    clock = _Clock()
    metrics = _Metrics()
    api = _CountingApi(TokenBucket(qps, burst, clock=clock))
    lookup = _Controllers(cluster.controllers)

    model = ClusterState(gc_interval_ns=3600 * 10**9)
    feeder = ClusterFeeder(
        model,
        vpas=lambda: iter(cluster.vpas),
        pods=lambda: iter(cluster.pods),
        resolver=TargetResolver(lookup, _NoScales()),
        controllers=lookup,
        metrics=metrics,
    )
    recommender = Recommender(
        feeder,
        pod_recommender=create_pod_resource_recommender(),
        api=api,
        hpas=scalers(cluster.hpas.list_namespace),
        clock=clock,
        registry=CollectorRegistry(),
        settings=RecommenderAppSettings().loop,
    )

    def feed() -> None:
        now_ns = int(clock.seconds) * 10**9
        metrics.snapshots = [
            ContainerMetricsSnapshot(pod, name, now_ns, 60 * 10**9, {"cpu": cpu, "memory": memory})
            for pod, name, cpu, memory in cluster.containers
        ]

    async def one_pass() -> Pass:
        before = {vpa_id: vpa.recommendation for vpa_id, vpa in model.vpas.items()}
        status, checkpoints = api.status_writes, api.checkpoint_writes
        clock_started = clock.seconds
        started = time.process_time()
        await recommender.run_once()
        elapsed = time.process_time() - started
        moved = sum(
            1 for vpa_id, vpa in model.vpas.items() if before.get(vpa_id) != vpa.recommendation
        )
        return Pass(
            cpu_seconds=elapsed,
            steps=recommender.last_pass_cpu_seconds,
            status_writes=api.status_writes - status,
            moved=moved,
            checkpoint_writes=api.checkpoint_writes - checkpoints,
            clock_seconds=clock.seconds - clock_started,
        )

    feed()
    first = await one_pass()
    observe_written_statuses(cluster, model)
    # the loop's next pass: one interval after the first began, or at once if it overran
    clock.seconds = max(START_SECONDS + recommender.settings.interval_seconds, clock.seconds)
    feed()
    steady = await one_pass()
    peak, rss = memory_bytes()
    return Result(
        vpas=vpas,
        containers=containers,
        qps=qps,
        burst=burst,
        first=first,
        steady=steady,
        peak_rss_bytes=peak,
        rss_bytes=rss,
        digest=recommendations_digest(model),
    )


def observe_written_statuses(cluster: Cluster, model: ClusterState) -> None:
    """The informer's copies now carry the statuses the first pass wrote (as after the watch
    delivers our own writes)."""
    from dataclasses import replace

    for vpa_id, vpa in model.vpas.items():
        record = cluster.vpas.get_by_name(vpa_id.namespace, vpa_id.vpa_name)
        if record is None:
            continue
        observed = replace(
            record,
            conditions=tuple(
                replace(c, last_transition_time_ns=c.last_transition_time_ns // 10**9 * 10**9)
                for c in vpa.conditions_list()
            ),
            recommendation=vpa.recommendation,
            observed_generation=vpa.generation,
        )
        cluster.vpas.put(record_key(observed), observed)


def _pass_line(name: str, p: Pass) -> str:
    return (
        f"{name} pass: {p.cpu_seconds:.2f} CPU-s, {p.status_writes} status writes for {p.moved} "
        f"VPAs whose recommendation moved, {p.checkpoint_writes} checkpoint writes, "
        f"{p.clock_seconds:.0f} s of client rate limit"
    )


def render(result: Result, *, command: str) -> str:
    mb = 1_000_000
    return "\n".join(
        [
            f"command: {command}",
            f"VPAs: {result.vpas} x {result.containers} containers "
            f"({result.vpas * result.containers} aggregate container states), "
            f"client limit {result.qps:g} QPS, burst {result.burst}",
            _pass_line("first", result.first),
            _pass_line("steady", result.steady),
            f"RSS: peak {result.peak_rss_bytes / mb:.0f} MB, now {result.rss_bytes / mb:.0f} MB",
            f"recommendations digest: {result.digest}",
            "CPU-s per step (first / steady): "
            + ", ".join(
                f"{step} {result.first.steps.get(step, 0.0):.2f} / {seconds:.2f}"
                for step, seconds in result.steady.steps.items()
            ),
        ]
    )


def main(argv: Sequence[str] | None = None) -> None:
    defaults = RecommenderAppSettings()
    parser = argparse.ArgumentParser(prog="python -m bench.vpa_recommender")
    parser.add_argument("--vpas", type=int, default=10_000)
    parser.add_argument("--containers", type=int, default=10)
    parser.add_argument("--per-namespace", type=int, default=100)
    parser.add_argument("--kube-api-qps", type=float, default=defaults.kube_api_qps)
    parser.add_argument("--kube-api-burst", type=int, default=defaults.kube_api_burst)
    args = parser.parse_args(argv)
    configure_logging("warning")
    result = asyncio.run(
        measure(
            args.vpas,
            args.containers,
            args.per_namespace,
            qps=args.kube_api_qps,
            burst=args.kube_api_burst,
        )
    )
    command = "python -m bench.vpa_recommender " + " ".join(argv or sys.argv[1:])
    print(render(result, command=command.strip()))


if __name__ == "__main__":
    main()
