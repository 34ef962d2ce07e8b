"""``hpa vpa recommender``: the VPA recommender, wired to a real API server.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/main.go`` and ``pkg/recommender/config/config.go`` (flags and defaults:
``--recommender-interval`` 1m, ``--checkpoints-timeout`` 1m, ``--checkpoints-gc-interval`` 10m,
``--min-checkpoints`` 10, ``--recommender-name`` default, ``--target-cpu-percentile`` and
``--target-memory-percentile`` 0.9, ``--pod-recommendation-min-cpu-millicores`` 25,
``--pod-recommendation-min-memory-mb`` 250, ``--memory-saver`` false, ``--vpa-object-namespace``,
``--ignored-vpa-object-namespaces`` (``common/flags.go``: exclusive with the former),
``--address`` :8942, ``--kubeconfig``, leader election off by default with the Lease
``vpa-recommender-lease``) and ``common/flags.go`` (``--kube-api-qps`` 50, ``--kube-api-burst``
100: the client-side limit of every request, status and checkpoint writes included).

One ``asyncio.TaskGroup``: the informers (VPAs, LimitRanges, HPAs, the seven well-known
controller kinds, Pods, and Events with reason ``Evicted`` for the OOM observer, which readiness
does not wait for, as upstream's recommender does not), the operations listener (``/healthz``,
``/readyz`` once every other informer has listed, ``/metrics``), the metrics source's tasks and,
once the caches are synced and (with ``--leader-elect``) while the Lease is held, the
recommender loop. SIGTERM and SIGINT stop it
cleanly (exit 0); a lost Lease exits 1.

Deliberate deviations: ``--metrics-source=api|inprocess`` and ``--hpa-awareness`` are ours; the
live metrics source and the history provider are passed in by the caller (``main``'s
``container_metrics`` and ``history`` factories), so the loop is the same whichever is used.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

from adapter.server.settings import Settings as AdapterSettings
from hpa.app import history, inprocess_metrics
from hpa.app.history import HistorySettings
from hpa.app.leading import (
    LeaderElectionFlags,
    add_leader_election_flags,
    build_elector,
    leader_election_from_args,
    role_main,
    run_role,
    run_tasks,
    run_while_leading,
    serve,
)
from hpa.app.vertical_informers import (
    VerticalInformers,
    build_vertical_informers,
    scalers,
)
from hpa.controllers.settings import duration_flag
from hpa.controllers.vertical.feeder import (
    EVICTION_FIELD_SELECTOR,
    ClusterFeeder,
    EvictionEvent,
    parse_eviction_event,
)
from hpa.controllers.vertical.ports import ContainerMetricsSource, HistoryProvider
from hpa.controllers.vertical.recommender import Recommender, RecommenderSettings
from hpa.core.vpa.aggregation import HOUR_NS
from hpa.core.vpa.awareness import HpaAwareness
from hpa.core.vpa.cluster import ClusterState, PodId
from hpa.core.vpa.recommender import RecommendationConfig, create_pod_resource_recommender
from hpa.kube.client import ClientSettings, KubeClient, aclose_quietly, load_client
from hpa.kube.clock import Clock, SystemClock
from hpa.kube.informer import EventHandler, Informer, wait_all_synced
from hpa.kube.leader import LeaderElector
from hpa.kube.logs import add_log_flags
from hpa.kube.records import PodRecord, parse_pod
from hpa.kube.vpa_client import VpaClient
from hpa.webhook.server import build_operations_app

__all__ = [
    "RecommenderApp",
    "RecommenderAppSettings",
    "add_flags",
    "build_app",
    "main",
    "settings_from_args",
]

log = structlog.get_logger("hpa.app.recommender")

POD_PATH = "/api/v1/pods"
EVENT_PATH = "/api/v1/events"
LEASE_NAME = "vpa-recommender-lease"
AGGREGATE_GC_INTERVAL_NS = HOUR_NS
"""``AggregateContainerStateGCInterval`` (1h)."""

Jobs = Sequence[tuple[str, Callable[[], Awaitable[None]]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecommenderAppSettings:
    """``hpa vpa recommender`` flags (upstream's names where upstream has the flag)."""

    loop: RecommenderSettings = field(default_factory=RecommenderSettings)
    """``--recommender-interval``, ``--checkpoints-timeout``, ``--checkpoints-gc-interval``,
    ``--min-checkpoints``, ``--hpa-awareness``."""
    recommendation: RecommendationConfig = field(default_factory=RecommendationConfig)
    """``--target-cpu-percentile``, ``--target-memory-percentile`` (0.9),
    ``--pod-recommendation-min-cpu-millicores`` (25), ``--pod-recommendation-min-memory-mb``
    (250)."""
    recommender_name: str = "default"
    """``--recommender-name``: the ``spec.recommenders[].name`` upstream's model answers to."""
    memory_saver: bool = False
    """``--memory-saver``: keep only pods that some VPA selects."""
    vpa_object_namespace: str = ""
    """``--vpa-object-namespace``: serve only VPAs of this namespace (empty: all)."""
    ignored_vpa_object_namespaces: frozenset[str] = frozenset()
    """``--ignored-vpa-object-namespaces``: namespaces whose VPAs are not served and whose
    checkpoints are neither loaded nor garbage-collected."""
    address: str = ":8942"
    """``--address``: ``host:port`` of ``/metrics``, ``/healthz`` and ``/readyz``."""
    kubeconfig: str | None = None
    """``--kubeconfig``: empty means in-cluster configuration."""
    kube_api_qps: float = 50.0
    """``--kube-api-qps``: requests per second to the API server (0 or less: no limit)."""
    kube_api_burst: int = 100
    """``--kube-api-burst``: requests the client may send at once above ``--kube-api-qps``."""
    leader: LeaderElectionFlags = field(
        default_factory=lambda: LeaderElectionFlags(leader_elect=False, resource_name=LEASE_NAME)
    )
    metrics_source: Literal["api", "inprocess"] = "api"
    """``--metrics-source``: ``metrics.k8s.io`` through the API server, or the adapter's
    providers in-process."""
    inprocess_metrics: AdapterSettings | None = None
    """The adapter's settings, with ``--metrics-source=inprocess``."""
    history: HistorySettings | None = None
    """``--storage=prometheus`` and the history flags (None: no history bootstrap)."""
    log_level: str = "info"


def add_flags(parser: argparse.ArgumentParser) -> None:
    d = RecommenderAppSettings()
    loop, rec = d.loop, d.recommendation
    add = parser.add_argument
    add(
        "--recommender-interval",
        type=duration_flag,
        default=loop.interval_seconds,
        metavar="DURATION",
        help="how often recommendations are computed (default 1m)",
    )
    add(
        "--checkpoints-timeout",
        type=duration_flag,
        default=loop.checkpoints_timeout_seconds,
        metavar="DURATION",
        help="time budget of a pass's checkpoint writes (default 1m)",
    )
    add(
        "--checkpoints-gc-interval",
        type=duration_flag,
        default=loop.checkpoints_gc_interval_seconds,
        metavar="DURATION",
        help="how often orphaned checkpoints are deleted (default 10m)",
    )
    add(
        "--min-checkpoints",
        type=int,
        default=loop.min_checkpoints,
        help="VPAs checkpointed per pass even past --checkpoints-timeout (default 10)",
    )
    add("--recommender-name", default=d.recommender_name)
    add("--target-cpu-percentile", type=float, default=rec.target_cpu_percentile)
    add("--target-memory-percentile", type=float, default=rec.target_memory_percentile)
    add("--pod-recommendation-min-cpu-millicores", type=float, default=rec.pod_min_cpu_millicores)
    add("--pod-recommendation-min-memory-mb", type=float, default=rec.pod_min_memory_mb)
    add("--memory-saver", action="store_true", default=d.memory_saver)
    add(
        "--vpa-object-namespace",
        default=d.vpa_object_namespace,
        help="serve only the VPAs (and read only the pods and checkpoints) of this namespace",
    )
    add(
        "--ignored-vpa-object-namespaces",
        default="",
        metavar="NAMESPACES",
        help="comma-separated namespaces whose VPAs are not served and whose checkpoints are "
        "left alone",
    )
    add("--address", default=d.address, help="host:port of /metrics, /healthz and /readyz")
    add("--kubeconfig", default=None)
    add(
        "--kube-api-qps",
        type=float,
        default=d.kube_api_qps,
        metavar="QPS",
        help=f"requests per second to the API server (default {d.kube_api_qps:g})",
    )
    add(
        "--kube-api-burst",
        type=int,
        default=d.kube_api_burst,
        metavar="N",
        help=f"burst of requests to the API server (default {d.kube_api_burst})",
    )
    add(
        "--metrics-source",
        choices=["api", "inprocess"],
        default=d.metrics_source,
        help="metrics.k8s.io through the API server (api) or the adapter in-process",
    )
    add(
        "--hpa-awareness",
        choices=[a.value for a in HpaAwareness],
        default=loop.hpa_awareness.value,
        help="leave the resources an HPA scales on alone (exclude), only report (warn), or off",
    )
    add_log_flags(parser, default_level="info")
    add_leader_election_flags(parser.add_argument_group("leader election"), d.leader)
    inprocess_metrics.add_flags(parser)
    history.add_flags(parser)


def settings_from_args(args: argparse.Namespace) -> RecommenderAppSettings:
    """The settings; ``ValueError`` naming the flag for a value out of range."""
    port = str(args.address).rpartition(":")[2]
    if not port.isdigit():
        raise ValueError(f"--address: {args.address!r} is not host:port")
    for flag, value in (
        ("--recommender-interval", args.recommender_interval),
        ("--checkpoints-timeout", args.checkpoints_timeout),
        ("--checkpoints-gc-interval", args.checkpoints_gc_interval),
    ):
        if value <= 0:
            raise ValueError(f"{flag}: must be positive")
    if args.min_checkpoints < 0:
        raise ValueError("--min-checkpoints: must not be negative")
    if args.kube_api_burst < 1:
        raise ValueError("--kube-api-burst: must be at least 1")
    ignored = frozenset(n for n in str(args.ignored_vpa_object_namespaces).split(",") if n)
    if args.vpa_object_namespace and ignored:
        raise ValueError(
            "--vpa-object-namespace and --ignored-vpa-object-namespaces are mutually exclusive"
        )
    recommendation = RecommendationConfig(
        target_cpu_percentile=args.target_cpu_percentile,
        target_memory_percentile=args.target_memory_percentile,
        pod_min_cpu_millicores=args.pod_recommendation_min_cpu_millicores,
        pod_min_memory_mb=args.pod_recommendation_min_memory_mb,
    )
    return RecommenderAppSettings(
        loop=RecommenderSettings(
            interval_seconds=args.recommender_interval,
            checkpoints_timeout_seconds=args.checkpoints_timeout,
            checkpoints_gc_interval_seconds=args.checkpoints_gc_interval,
            min_checkpoints=args.min_checkpoints,
            hpa_awareness=HpaAwareness(args.hpa_awareness),
            safety_margin_fraction=recommendation.safety_margin_fraction,
        ),
        recommendation=recommendation,
        recommender_name=args.recommender_name,
        memory_saver=args.memory_saver,
        vpa_object_namespace=args.vpa_object_namespace,
        ignored_vpa_object_namespaces=ignored,
        address=args.address,
        kubeconfig=args.kubeconfig or None,
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        leader=leader_election_from_args(args),
        metrics_source=args.metrics_source,
        inprocess_metrics=inprocess_metrics.settings_from_args(args)
        if args.metrics_source == "inprocess"
        else None,
        history=history.settings_from_args(args, namespace=args.vpa_object_namespace),
        log_level=args.log_level,
    )


@dataclass
class RecommenderApp:
    settings: RecommenderAppSettings
    informers: VerticalInformers
    pod_informer: Informer[PodRecord]
    event_informer: Informer[EvictionEvent]
    """Events with reason ``Evicted`` (the OOM observer's); readiness does not wait for it."""
    recommender: Recommender
    elector: LeaderElector | None
    operations: web.Application
    metric_jobs: Jobs = ()

    def all_informers(self) -> list[Informer[Any]]:
        return [*self.informers.all(), self.pod_informer]

    def ready(self) -> bool:
        return all(informer.has_synced() for informer in self.all_informers())

    async def work(self) -> None:
        await wait_all_synced(self.all_informers())
        log.info("caches_synced", vpas=len(self.informers.vpas.store))
        await run_while_leading(self.elector, self.recommender.run, name="vpa-recommender")

    async def _serve(self) -> None:
        host, _, port = self.settings.address.rpartition(":")
        await serve(self.operations, host, int(port))

    async def run(self) -> None:
        jobs: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            (f"informer {informer.path}", informer.run)
            for informer in (*self.all_informers(), self.event_informer)
        ]
        jobs += [*self.metric_jobs, ("operations", self._serve), ("recommender", self.work)]
        await run_tasks(jobs)


def build_app(
    settings: RecommenderAppSettings,
    client: KubeClient,
    *,
    clock: Clock,
    registry: CollectorRegistry,
    metrics: ContainerMetricsSource,
    history: HistoryProvider | None = None,
    metric_jobs: Jobs = (),
    identity: str | None = None,
) -> RecommenderApp:
    """Wire the role on ``client`` with the live ``metrics`` source and the optional
    ``history`` provider (tests pass fakes and a client of the fake API server)."""
    informers = build_vertical_informers(client, clock=clock)
    pod_informer: Informer[PodRecord] = Informer(client, POD_PATH, parse=parse_pod, clock=clock)
    cluster = ClusterState(gc_interval_ns=AGGREGATE_GC_INTERVAL_NS)
    hpas = scalers(informers.hpas.store.list_namespace)
    feeder = ClusterFeeder(
        cluster,
        vpas=lambda: iter(informers.vpas.store),
        pods=lambda: iter(pod_informer.store),
        resolver=informers.resolver,
        controllers=informers.lookup,
        metrics=metrics,
        recommender_name=settings.recommender_name,
        vpa_object_namespace=settings.vpa_object_namespace,
        ignored_vpa_object_namespaces=settings.ignored_vpa_object_namespaces,
        memory_saver=settings.memory_saver,
        hpas=hpas,
    )
    event_informer: Informer[EvictionEvent] = Informer(
        client,
        EVENT_PATH,
        parse=parse_eviction_event,
        clock=clock,
        field_selector=EVICTION_FIELD_SELECTOR,
    )
    event_informer.add_handler(EventHandler(on_add=feeder.observe_eviction_event))
    recommender = Recommender(
        feeder,
        pod_recommender=create_pod_resource_recommender(settings.recommendation),
        api=VpaClient(client, namespace=settings.vpa_object_namespace),
        hpas=hpas,
        clock=clock,
        registry=registry,
        settings=settings.loop,
        history=history,
    )
    app = RecommenderApp(
        settings=settings,
        informers=informers,
        pod_informer=pod_informer,
        event_informer=event_informer,
        recommender=recommender,
        elector=build_elector(settings.leader, client, clock=clock, identity=identity),
        operations=build_operations_app(registry=registry, ready=lambda: app.ready()),
        metric_jobs=metric_jobs,
    )
    return app


async def _run(settings: RecommenderAppSettings) -> int:
    clock = SystemClock()
    registry = CollectorRegistry()
    client = await load_client(
        ClientSettings(
            kubeconfig_path=settings.kubeconfig,
            qps=settings.kube_api_qps,
            burst=settings.kube_api_burst,
            user_agent="hpa-vpa-recommender",
        ),
        clock=clock,
        registry=registry,
    )
    app: RecommenderApp | None = None

    def known_pods() -> Iterable[PodId]:
        """The pods the recommender's informer holds (the in-process source asks for these)."""
        if app is None:
            return ()
        return (PodId(pod.namespace, pod.name) for pod in app.pod_informer.store)

    live = await history.open_containers_source(
        settings.metrics_source,
        kube=client,
        pods=known_pods,
        namespace=settings.vpa_object_namespace,
        inprocess=settings.inprocess_metrics,
        registry=registry,
    )
    bootstrap = (
        await history.open_history_provider(
            settings.history, clock=clock, registry=registry, querier=live.querier
        )
        if settings.history is not None
        else None
    )
    app = build_app(
        settings,
        client,
        clock=clock,
        registry=registry,
        metrics=live.source,
        history=bootstrap.provider if bootstrap is not None else None,
    )
    try:
        return await run_role(
            "recommender",
            app.run,
            starting={
                "address": settings.address,
                "recommender_name": settings.recommender_name,
                "metrics_source": settings.metrics_source,
                "storage": "prometheus" if settings.history is not None else "checkpoint",
                "leader_elect": settings.leader.leader_elect,
                "pid": os.getpid(),
            },
        )
    finally:
        if bootstrap is not None:
            await bootstrap.aclose()
        await live.aclose()
        await aclose_quietly(client)


def main(args: argparse.Namespace) -> int:
    """The ``vpa recommender`` subcommand's handler (:func:`hpa.app.leading.role_main`)."""
    return role_main(args, settings_from_args, _run)
