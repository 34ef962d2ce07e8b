"""``hpa vpa updater``: the VPA updater, wired to a real API server.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/updater/main.go`` and ``pkg/updater/config/config.go`` (flags ``--updater-interval`` 1m,
``--min-replicas`` 2, ``--eviction-tolerance`` 0.5, ``--eviction-rate-limit`` -1 (no limit),
``--eviction-rate-burst`` 1, ``--pod-update-threshold`` 0.1,
``--in-recommendation-bounds-eviction-lifetime-threshold`` 12h, ``--evict-after-oom-threshold``
10m, ``--use-admission-controller-status`` true, ``--admission-controller-status-lease-name``/
``-namespace``/``-timeout`` (``vpa-admission-controller``, ``$NAMESPACE`` or ``kube-system``,
1m), ``--vpa-object-namespace``, ``--ignored-vpa-object-namespaces``,
``--in-place-skip-disruption-budget`` false, ``--address`` ``:8943``;
leader election on the Lease ``vpa-updater`` in ``kube-system``, off by default; the pod
informer lists only scheduled pods that are not done: ``spec.nodeName!=,status.phase!=Succeeded,
status.phase!=Failed``; one eviction and one in-place rate limiter with the same settings).

One ``asyncio.TaskGroup``: the informers (VPAs, pods, nodes, LimitRanges, HPAs and the seven
well-known controller kinds), the event writer, the operations listener (``/healthz``,
``/readyz`` once every informer has listed, ``/metrics``) and the loop, which runs every
``--updater-interval`` while this replica leads. Losing the Lease ends the process, as upstream.

Ours: ``--allow-evicting-system-critical``, ``--hpa-awareness``, ``--leader-elect`` defaults to
false as upstream.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

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
from hpa.app.vertical_informers import VerticalInformers, build_vertical_informers, scalers
from hpa.controllers.settings import duration_flag, switch_flag
from hpa.controllers.vertical.updater import Updater, UpdaterConfig
from hpa.controllers.vertical.updater_metrics import UpdaterMetrics
from hpa.core.conditions import Event
from hpa.core.vpa.awareness import HorizontalScaler, HpaAwareness
from hpa.core.vpa.capacity import NodeCapacity
from hpa.core.vpa.update import ReplicaGroup, UpdateConfig
from hpa.kube.client import ClientSettings, KubeClient, TokenBucket, aclose_quietly, load_client
from hpa.kube.clock import Clock, SystemClock
from hpa.kube.events import EventRecorder, ObjectReference
from hpa.kube.fence import Fence, Unfenced
from hpa.kube.informer import Informer
from hpa.kube.leader import LeaderElectionSettings, LeaderElector
from hpa.kube.logs import add_log_flags
from hpa.kube.pod_actions import KubeAdmissionStatus, KubePodActions
from hpa.kube.updater_records import NodeRecord, UpdaterPodRecord, parse_node, parse_updater_pod
from hpa.kube.vpa_records import LimitRangeRecord, VpaRecord
from hpa.webhook.server import build_operations_app

__all__ = ["UpdaterSettings", "add_flags", "build_app", "main", "settings_from_args"]

log = structlog.get_logger("hpa.app.updater")

UPDATER_COMPONENT = "vpa-updater"
SCHEDULED_AND_LIVE = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
POD_PATH = "/api/v1/pods"
NODE_PATH = "/api/v1/nodes"
LEASE_NAME = "vpa-updater"


@dataclass(frozen=True, kw_only=True)
class UpdaterSettings:
    """``hpa vpa updater`` flags (upstream's names where upstream has the flag)."""

    updater_interval_seconds: float = 60.0
    """``--updater-interval`` (a Go duration, 1m): how often the loop runs."""
    loop: UpdaterConfig = field(default_factory=UpdaterConfig)
    """The loop's flags (see :class:`hpa.controllers.vertical.updater.UpdaterConfig`)."""
    eviction_rate_limit: float = -1.0
    """``--eviction-rate-limit``: evictions (and resizes) per second; 0 or less: no limit."""
    eviction_rate_burst: int = 1
    """``--eviction-rate-burst``."""
    status_lease_name: str = "vpa-admission-controller"
    """``--admission-controller-status-lease-name``."""
    status_lease_namespace: str = "kube-system"
    """``--admission-controller-status-lease-namespace`` (default ``$NAMESPACE``, else
    ``kube-system``)."""
    status_lease_timeout_seconds: float = 60.0
    """``--admission-controller-status-lease-timeout`` (1m)."""
    address: str = ":8943"
    """``--address``: ``host:port`` of ``/metrics``, ``/healthz`` and ``/readyz``."""
    kubeconfig: str | None = None
    """``--kubeconfig``: empty means in-cluster configuration."""
    leader: LeaderElectionFlags = field(
        default_factory=lambda: LeaderElectionFlags(leader_elect=False, resource_name=LEASE_NAME)
    )
    """``--leader-elect*`` (``--leader-elect`` defaults to false, as upstream)."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    d = UpdaterSettings()
    c = d.loop
    parser.add_argument("--updater-interval", type=duration_flag, default=60.0, metavar="DURATION")
    parser.add_argument("--min-replicas", type=int, default=c.min_replicas)
    parser.add_argument("--eviction-tolerance", type=float, default=c.eviction_tolerance)
    parser.add_argument("--eviction-rate-limit", type=float, default=d.eviction_rate_limit)
    parser.add_argument("--eviction-rate-burst", type=int, default=d.eviction_rate_burst)
    parser.add_argument("--pod-update-threshold", type=float, default=c.update.min_change_priority)
    parser.add_argument(
        "--in-recommendation-bounds-eviction-lifetime-threshold",
        type=duration_flag,
        default=c.update.pod_lifetime_update_threshold.total_seconds(),
        metavar="DURATION",
    )
    parser.add_argument(
        "--evict-after-oom-threshold",
        type=duration_flag,
        default=c.update.evict_after_oom_threshold.total_seconds(),
        metavar="DURATION",
    )
    parser.add_argument(
        "--use-admission-controller-status",
        type=switch_flag,
        default=c.use_admission_controller_status,
        metavar="BOOL",
    )
    parser.add_argument("--admission-controller-status-lease-name", default=d.status_lease_name)
    parser.add_argument("--admission-controller-status-lease-namespace", default="")
    parser.add_argument(
        "--admission-controller-status-lease-timeout",
        type=duration_flag,
        default=d.status_lease_timeout_seconds,
        metavar="DURATION",
    )
    parser.add_argument(
        "--in-place-skip-disruption-budget",
        type=switch_flag,
        default=c.in_place_skip_disruption_budget,
        metavar="BOOL",
        help="resize in place without the group's budget when no container would restart",
    )
    parser.add_argument("--vpa-object-namespace", default="")
    parser.add_argument("--ignored-vpa-object-namespaces", default="")
    parser.add_argument("--address", default=d.address)
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument(
        "--allow-evicting-system-critical",
        type=switch_flag,
        default=c.allow_evicting_system_critical,
        metavar="BOOL",
        help="also evict pods of the system-cluster-critical and system-node-critical classes",
    )
    parser.add_argument(
        "--hpa-awareness",
        choices=[a.value for a in HpaAwareness],
        default=c.hpa_awareness.value,
        help="leave the resources an HPA scales on alone (exclude), only report (warn), or off",
    )
    add_log_flags(parser, default_level="info")
    add_leader_election_flags(parser.add_argument_group("leader election"), d.leader)


def settings_from_args(args: argparse.Namespace) -> UpdaterSettings:
    """The settings, or ``ValueError`` naming the flag that is out of range."""
    if args.updater_interval <= 0:
        raise ValueError("--updater-interval: must be positive")
    if args.min_replicas < 1:
        raise ValueError(f"--min-replicas: {args.min_replicas} is less than 1")
    if not 0.0 <= args.eviction_tolerance <= 1.0:
        raise ValueError(f"--eviction-tolerance: {args.eviction_tolerance} is not in [0, 1]")
    if args.eviction_rate_burst < 1:
        raise ValueError(f"--eviction-rate-burst: {args.eviction_rate_burst} is less than 1")
    if args.pod_update_threshold < 0:
        raise ValueError(f"--pod-update-threshold: {args.pod_update_threshold} is negative")
    if args.admission_controller_status_lease_timeout <= 0:
        raise ValueError("--admission-controller-status-lease-timeout: must be positive")
    port = str(args.address).rpartition(":")[2]
    if not port.isdigit():
        raise ValueError(f"--address: {args.address!r} is not host:port")
    leader = leader_election_from_args(args)
    try:
        LeaderElectionSettings(
            identity="check",
            lease_duration_seconds=leader.lease_duration_seconds,
            renew_deadline_seconds=leader.renew_deadline_seconds,
            retry_period_seconds=leader.retry_period_seconds,
        )
    except ValueError as error:
        raise ValueError(f"--leader-elect-*: {error}") from None
    ignored = frozenset(n for n in str(args.ignored_vpa_object_namespaces).split(",") if n)
    return UpdaterSettings(
        updater_interval_seconds=args.updater_interval,
        loop=UpdaterConfig(
            min_replicas=args.min_replicas,
            eviction_tolerance=args.eviction_tolerance,
            update=UpdateConfig(
                min_change_priority=args.pod_update_threshold,
                pod_lifetime_update_threshold=timedelta(
                    seconds=args.in_recommendation_bounds_eviction_lifetime_threshold
                ),
                evict_after_oom_threshold=timedelta(seconds=args.evict_after_oom_threshold),
            ),
            use_admission_controller_status=args.use_admission_controller_status,
            vpa_object_namespace=args.vpa_object_namespace,
            ignored_vpa_object_namespaces=ignored,
            allow_evicting_system_critical=args.allow_evicting_system_critical,
            hpa_awareness=HpaAwareness(args.hpa_awareness),
            in_place_skip_disruption_budget=args.in_place_skip_disruption_budget,
        ),
        eviction_rate_limit=args.eviction_rate_limit,
        eviction_rate_burst=args.eviction_rate_burst,
        status_lease_name=args.admission_controller_status_lease_name,
        status_lease_namespace=args.admission_controller_status_lease_namespace
        or os.environ.get("NAMESPACE")
        or "kube-system",
        status_lease_timeout_seconds=args.admission_controller_status_lease_timeout,
        address=args.address,
        kubeconfig=args.kubeconfig or None,
        leader=leader,
    )


class _InformerView:
    """``ClusterView`` over the informers' stores."""

    def __init__(
        self,
        informers: VerticalInformers,
        *,
        pods: Informer[UpdaterPodRecord],
        nodes: Informer[NodeRecord],
    ) -> None:
        self._vpas = informers.vpas
        self._pods = pods
        self._nodes = nodes
        self._limit_ranges = informers.limit_ranges
        self._scalers = scalers(informers.hpas.store.list_namespace)
        self._controllers = informers.lookup

    def vpas(self) -> Iterable[VpaRecord]:
        return list(self._vpas.store)

    def pods(self) -> Iterable[UpdaterPodRecord]:
        return list(self._pods.store)

    def nodes(self) -> Iterable[NodeCapacity]:
        return [n.capacity for n in self._nodes.store]

    def limit_ranges(self, namespace: str) -> Iterable[LimitRangeRecord]:
        return self._limit_ranges.store.list_namespace(namespace)

    def hpas(self, namespace: str) -> Sequence[HorizontalScaler]:
        return self._scalers(namespace)

    def replicas(self, group: ReplicaGroup) -> int | None:
        record = self._controllers.get(group.kind, group.namespace, group.name)
        return None if record is None else record.replicas


class _Events:
    """``UpdaterEvents`` through the event recorder (``source.component: vpa-updater``)."""

    def __init__(self, recorder: EventRecorder) -> None:
        self._recorder = recorder

    def pod_event(self, pod: UpdaterPodRecord, reason: str, message: str) -> None:
        ref = ObjectReference(
            api_version="v1",
            kind="Pod",
            namespace=pod.namespace,
            name=pod.name,
            uid=pod.uid,
            resource_version=pod.resource_version,
        )
        self._recorder.record(ref, Event("Normal", reason, message))

    def vpa_event(
        self, vpa: VpaRecord, reason: str, message: str, *, warning: bool = False
    ) -> None:
        ref = ObjectReference(
            api_version="autoscaling.k8s.io/v1",
            kind="VerticalPodAutoscaler",
            namespace=vpa.namespace,
            name=vpa.name,
            resource_version=vpa.resource_version,
        )
        self._recorder.record(ref, Event("Warning" if warning else "Normal", reason, message))


@dataclass
class UpdaterApp:
    settings: UpdaterSettings
    informers: Sequence[Informer[Any]]
    updater: Updater
    events: EventRecorder
    operations: web.Application
    clock: Clock
    elector: LeaderElector | None = None
    loops: int = 0
    last_loop_monotonic: float | None = None

    def ready(self) -> bool:
        return all(informer.has_synced() for informer in self.informers)

    def healthy(self) -> bool:
        """``metrics.NewHealthCheck(updaterInterval * 5)``: unhealthy when, while leading, no loop
        finished for five intervals (a stuck loop restarts the process)."""
        if self.last_loop_monotonic is None or not self.leading():
            return True
        stalled = self.clock.monotonic() - self.last_loop_monotonic
        return stalled <= 5 * self.settings.updater_interval_seconds

    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    async def loop(self) -> None:
        """Wait for the caches, then run the updater every interval while leading."""
        for informer in self.informers:
            await informer.wait_synced()
        log.info("caches_synced")
        while True:
            if self.leading():
                try:
                    await self.updater.run_once()
                except Exception as error:  # noqa: BLE001 - the next loop starts afresh
                    log.error("updater_loop_failed", error=repr(error))
                self.loops += 1
            self.last_loop_monotonic = self.clock.monotonic()
            await self.clock.sleep(self.settings.updater_interval_seconds)

    async def work(self) -> None:
        await run_while_leading(self.elector, self.loop, name="vpa-updater")

    async def run(self) -> None:
        host, _, port = self.settings.address.rpartition(":")
        jobs: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            (f"informer {informer.path}", informer.run) for informer in self.informers
        ]
        jobs += [
            ("events", self.events.run),
            ("operations", lambda: serve(self.operations, host, int(port))),
            ("updater", self.work),
        ]
        await run_tasks(jobs)


def build_app(
    settings: UpdaterSettings,
    client: KubeClient,
    *,
    clock: Clock,
    registry: CollectorRegistry,
    identity: str | None = None,
) -> UpdaterApp:
    vertical = build_vertical_informers(client, clock=clock)
    pod_informer: Informer[UpdaterPodRecord] = Informer(
        client, POD_PATH, parse=parse_updater_pod, clock=clock, field_selector=SCHEDULED_AND_LIVE
    )
    node_informer: Informer[NodeRecord] = Informer(client, NODE_PATH, parse=parse_node, clock=clock)
    elector = build_elector(settings.leader, client, clock=clock, identity=identity)
    fence: Fence = elector if elector is not None else Unfenced()
    events = EventRecorder(
        client, clock=clock, component=UPDATER_COMPONENT, fence=fence, registry=registry
    )
    updater = Updater(
        view=_InformerView(vertical, pods=pod_informer, nodes=node_informer),
        resolver=vertical.resolver,
        actions=KubePodActions(client),
        events=_Events(events),
        status=KubeAdmissionStatus(
            client,
            namespace=settings.status_lease_namespace,
            name=settings.status_lease_name,
            timeout=timedelta(seconds=settings.status_lease_timeout_seconds),
            clock=clock,
        ),
        eviction_limiter=TokenBucket(
            settings.eviction_rate_limit, settings.eviction_rate_burst, clock=clock
        ),
        in_place_limiter=TokenBucket(
            settings.eviction_rate_limit, settings.eviction_rate_burst, clock=clock
        ),
        metrics=UpdaterMetrics(registry),
        clock=clock,
        config=settings.loop,
    )
    informers: list[Informer[Any]] = [*vertical.all(), pod_informer, node_informer]
    app = UpdaterApp(
        settings=settings,
        informers=informers,
        updater=updater,
        events=events,
        operations=build_operations_app(
            registry=registry, ready=lambda: app.ready(), healthy=lambda: app.healthy()
        ),
        clock=clock,
        elector=elector,
    )
    return app


async def _run(settings: UpdaterSettings) -> int:
    clock = SystemClock()
    registry = CollectorRegistry()
    client = await load_client(
        ClientSettings(kubeconfig_path=settings.kubeconfig, user_agent="hpa-vpa-updater"),
        clock=clock,
        registry=registry,
    )
    app = build_app(settings, client, clock=clock, registry=registry)
    try:
        return await run_role(
            "updater",
            app.run,
            starting={
                "address": settings.address,
                "leader_elect": settings.leader.leader_elect,
                "pid": os.getpid(),
            },
        )
    finally:
        await aclose_quietly(client)


def main(args: argparse.Namespace) -> int:
    """The ``vpa updater`` subcommand's handler (:func:`hpa.app.leading.role_main`)."""
    return role_main(args, settings_from_args, _run)
