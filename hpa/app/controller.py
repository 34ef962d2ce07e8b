"""``hpa controller``: the horizontal controller role, wired to a real API server.

Upstream counterpart: ``startHPAController`` / ``startHPAControllerWithMetricsClient`` of
``cmd/kube-controller-manager/app/autoscaling.go`` (REST metrics client over the aggregation
layer, the custom metrics version cache invalidated every sync period, an HPA informer and a pod
informer, ``--concurrent-horizontal-pod-autoscaler-syncs`` workers) and kube-controller-manager's
leader election (``--leader-elect*``; losing the lease ends the process).

This module wires ``hpa.kube`` (informers, Lease) and the API-backed ports of
:mod:`hpa.controllers.api_ports` to the controller and runs everything in one
``asyncio.TaskGroup``:
informers, the event writer, the HTTP endpoint (``/metrics``, ``/healthz``, ``/debug/hpa``),
leader election and, only while the Lease is held, the work queue driving
:meth:`HorizontalController.reconcile`. SIGTERM and SIGINT cancel the group: the Lease is released
and the process exits 0. A lost Lease exits 1.

Deliberate deviations:

* every HPA key is resynced at a random phase of the sync period (``WorkQueue.track``) instead of
  upstream's fixed ``AddRateLimited(resyncPeriod)``; a new HPA, a spec change (generation) or an
  annotation change enqueues at once, a status-only update (our own write) does not;
* the work queue's per-key failure backoff starts at one second (upstream's HPA queue delays
  every requeue by the sync period), so a key that raises unexpectedly is retried soon but not
  in a hot loop;
* converted HPAs and pods are cached per ``resourceVersion`` so a reconcile converts only what
  changed;
* the Scale of a built-in target (``apps`` Deployment, StatefulSet, ReplicaSet) is read from
  informers of those kinds (``hpa.controllers.api_ports.InformerScaleClient``:
  ``spec.replicas``, ``status.replicas``, the selector and the object's resourceVersion, which is
  the Scale's), so a steady HPA costs no
  API request; writes still go through ``/scale`` with that resourceVersion, and a stale read
  ends in 409 and a fresh ``GET /scale`` (the controller's conflict path). Upstream GETs ``/scale``
  every sync. Other kinds, targets missing from the cache and workload informers that have not
  synced (e.g. no RBAC to list them) use ``GET /scale`` as before; readiness does not wait for the
  workload informers;
* the API client keeps one HTTP/1.1 connection per in-flight reconcile on top of its 100
  (:func:`client_settings`): upstream multiplexes over HTTP/2, and a shared pool of 100 let slow
  metrics calls make every other request (Lease renewals too) wait for a connection;
* pod lists are kept per namespace and selector until a pod of that namespace changes;
* the cyclic garbage collector is paused from start-up until every HPA of the synced cache was
  reconciled once (at most two minutes), then every live object is frozen out of later
  collections (``hpa.app.heap``): the first full pass no longer walks the growing caches again
  and again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from adapter.server.settings import Settings as AdapterSettings
from hpa.app import inprocess_metrics
from hpa.app.heap import FirstPass, pause_then_freeze
from hpa.app.leading import (
    LeaderElectionFlags,
    LeaseLostError,
    add_leader_election_flags,
    build_elector,
    guarded,
    role_main,
    run_role,
    run_while_leading,
)
from hpa.controllers import settings as horizontal_flags
from hpa.controllers.api_ports import (
    InformerHPALister,
    InformerPodLister,
    InformerScaleClient,
    KubeEventRecorder,
    KubeScaleClient,
    KubeStatusWriter,
)
from hpa.controllers.horizontal import HorizontalController
from hpa.controllers.ports import MetricsClient, PodLister
from hpa.controllers.queue import ItemExponentialFailureRateLimiter, QueueMetrics, WorkQueue
from hpa.controllers.settings import HorizontalControllerSettings
from hpa.kube import scale as kube_scale
from hpa.kube import status as kube_status
from hpa.kube.client import (
    ClientSettings,
    KubeClient,
    RetryPolicy,
    aclose_quietly,
    load_client,
)
from hpa.kube.clock import Clock, SystemClock
from hpa.kube.events import EventRecorder
from hpa.kube.fence import Fence, Unfenced
from hpa.kube.informer import EventHandler, Informer, wait_all_synced
from hpa.kube.leader import LeaderElector
from hpa.kube.logs import add_log_flags
from hpa.kube.records import (
    HpaRecord,
    PodRecord,
    WorkloadRecord,
    parse_hpa,
    parse_pod,
    parse_workload,
)
from hpa.kube.runtime import collect_periodically
from hpa.metrics.rest import RESTMetricsClient

__all__ = [
    "ControllerAppSettings",
    "HorizontalControllerApp",
    "LeaseLostError",
    "add_flags",
    "build_app",
    "client_settings",
    "from_args",
    "main",
]

log = structlog.get_logger("hpa.app.controller")

HPA_PATH = "/apis/autoscaling/v2/horizontalpodautoscalers"
POD_PATH = "/api/v1/pods"
WORKLOAD_PATHS: Mapping[str, str] = {
    "Deployment": "/apis/apps/v1/deployments",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "ReplicaSet": "/apis/apps/v1/replicasets",
}
"""The built-in scale targets whose Scale is read from an informer (group ``apps``)."""


# ---------------------------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerAppSettings:
    """The ``hpa controller`` process: the controller's settings plus connection, leader
    election and HTTP endpoint."""

    horizontal: HorizontalControllerSettings
    kubeconfig: str | None = None
    """``--kubeconfig``: kubeconfig path (default: in-cluster, else ``$KUBECONFIG``)."""
    context: str | None = None
    """``--context``: kubeconfig context (default: the current one)."""
    leader_elect: bool = True
    """``--leader-elect`` (default true): act only while holding the Lease."""
    leader_elect_lease_duration_seconds: int = 15
    """``--leader-elect-lease-duration``, seconds (default 15 s)."""
    leader_elect_renew_deadline_seconds: float = 10.0
    """``--leader-elect-renew-deadline``, seconds (default 10 s)."""
    leader_elect_retry_period_seconds: float = 2.0
    """``--leader-elect-retry-period``, seconds (default 2 s)."""
    leader_elect_resource_namespace: str = "kube-system"
    """``--leader-elect-resource-namespace`` (default ``kube-system``)."""
    leader_elect_resource_name: str = "hpa-controller"
    """``--leader-elect-resource-name`` (default ``hpa-controller``)."""
    bind_address: str = "0.0.0.0"  # noqa: S104 - a controller serves its metrics to the cluster
    """``--bind-address`` of the HTTP endpoint (default all interfaces)."""
    port: int = 8080
    """``--port`` of the HTTP endpoint (default 8080; 0 disables it)."""
    inprocess_metrics: AdapterSettings | None = None
    """The adapter's rule file and Prometheus settings (``--config``, ``--prometheus-*``), set
    with ``--metrics-source=inprocess`` (:mod:`hpa.app.inprocess_metrics`)."""

    def leader_flags(self) -> LeaderElectionFlags:
        return LeaderElectionFlags(
            leader_elect=self.leader_elect,
            lease_duration_seconds=self.leader_elect_lease_duration_seconds,
            renew_deadline_seconds=self.leader_elect_renew_deadline_seconds,
            retry_period_seconds=self.leader_elect_retry_period_seconds,
            resource_namespace=self.leader_elect_resource_namespace,
            resource_name=self.leader_elect_resource_name,
        )


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The role's flags: the controller's (upstream names) and the process's."""
    horizontal_flags.add_flags(parser)
    inprocess_metrics.add_flags(parser)
    d = ControllerAppSettings(horizontal=HorizontalControllerSettings())
    group = parser.add_argument_group("process")
    group.add_argument("--kubeconfig", default=d.kubeconfig, help="kubeconfig file")
    group.add_argument("--context", default=d.context, help="kubeconfig context")
    add_leader_election_flags(group, d.leader_flags())
    group.add_argument(
        "--bind-address", default=d.bind_address, help="HTTP endpoint address (default 0.0.0.0)"
    )
    group.add_argument(
        "--port", type=int, default=d.port, help="HTTP endpoint port, 0 disables (default 8080)"
    )
    add_log_flags(group)


def from_args(args: argparse.Namespace) -> ControllerAppSettings:
    horizontal = horizontal_flags.from_args(args)
    return ControllerAppSettings(
        horizontal=horizontal,
        inprocess_metrics=inprocess_metrics.settings_from_args(args)
        if horizontal.metrics_source == "inprocess"
        else None,
        kubeconfig=args.kubeconfig,
        context=args.context,
        leader_elect=args.leader_elect,
        leader_elect_lease_duration_seconds=int(args.leader_elect_lease_duration),
        leader_elect_renew_deadline_seconds=args.leader_elect_renew_deadline,
        leader_elect_retry_period_seconds=args.leader_elect_retry_period,
        leader_elect_resource_namespace=args.leader_elect_resource_namespace,
        leader_elect_resource_name=args.leader_elect_resource_name,
        bind_address=args.bind_address,
        port=args.port,
    )


# ---------------------------------------------------------------------------------- the app


@dataclass(slots=True)
class HorizontalControllerApp:
    """Everything ``hpa controller`` runs, built by :func:`build_app`."""

    settings: ControllerAppSettings
    client: KubeClient
    clock: Clock
    registry: CollectorRegistry
    hpa_informer: Informer[HpaRecord]
    pod_informer: Informer[PodRecord]
    workload_informers: Mapping[str, Informer[WorkloadRecord]]
    events: EventRecorder
    controller: HorizontalController
    queue: WorkQueue
    elector: LeaderElector | None
    metric_jobs: Sequence[tuple[str, Callable[[], Awaitable[None]]]] = ()
    """Tasks of the metrics source (the in-process source's relist loop)."""
    first_pass: FirstPass = field(default_factory=FirstPass)
    """Every HPA of the synced cache reconciled once (``hpa.app.heap``)."""

    def ready(self) -> bool:
        synced = self.hpa_informer.has_synced() and self.pod_informer.has_synced()
        return synced and (self.elector is None or self.elector.is_leader())

    async def work(self) -> None:
        """Wait for the caches, then (while leading) reconcile until cancelled."""
        # no cyclic collection during the first full pass, then its heap frozen (hpa.app.heap)
        heap = asyncio.create_task(self._heap(), name="first-pass-heap")
        try:
            await wait_all_synced([self.hpa_informer, self.pod_informer])
            log.info("caches_synced", hpas=len(self.hpa_informer.store))
            self.first_pass.start(self.hpa_informer.store.list_keys())
            concurrency = self.settings.horizontal.concurrent_syncs
            await run_while_leading(
                self.elector,
                lambda: self.queue.run(self._reconcile, max_in_flight=concurrency),
                name="horizontal-controller",
            )
        finally:
            heap.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heap

    async def _first_pass(self) -> None:
        await self.first_pass.done.wait()

    async def _heap(self) -> None:
        """The first pass's heap frozen, then a full collection every two minutes
        (``hpa.kube.runtime.collect_periodically``)."""
        await pause_then_freeze(self._first_pass)
        await collect_periodically()

    async def _reconcile(self, key: str) -> None:
        try:
            await self.controller.reconcile(key)
        finally:
            self.first_pass.processed(key)

    def http_app(self) -> web.Application:
        """``/metrics``, ``/healthz``, ``/readyz`` and ``/debug/hpa`` (the dry-run view)."""

        async def metrics(_: web.Request) -> web.Response:
            body = generate_latest(self.registry)
            return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

        async def healthz(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def readyz(_: web.Request) -> web.Response:
            return web.Response(
                text="ok" if self.ready() else "not ready", status=200 if self.ready() else 503
            )

        async def debug(_: web.Request) -> web.Response:
            return web.json_response(self.controller.debug_state())

        app = web.Application()
        app.router.add_get("/metrics", metrics)
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/readyz", readyz)
        app.router.add_get("/debug/hpa", debug)
        return app

    async def serve_http(self) -> None:
        if self.settings.port == 0:
            return
        runner = web.AppRunner(self.http_app(), access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.settings.bind_address, self.settings.port)
            await site.start()
            log.info("http_listening", address=self.settings.bind_address, port=self.settings.port)
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    async def run(self) -> None:
        """One TaskGroup: informers, events, HTTP and the (leader-gated) work loop."""
        async with asyncio.TaskGroup() as group:
            jobs: list[tuple[str, Callable[[], Awaitable[None]]]] = [
                ("informer:horizontalpodautoscalers", self.hpa_informer.run),
                ("informer:pods", self.pod_informer.run),
            ]
            jobs += [
                (f"informer:{informer.path.rpartition('/')[2]}", informer.run)
                for informer in self.workload_informers.values()
            ]
            jobs += self.metric_jobs
            jobs += [
                ("event-recorder", self.events.run),
                ("http", self.serve_http),
                ("work", self.work),
            ]
            for name, job in jobs:
                group.create_task(guarded(name, job, quiet=name == "http"), name=name)


def _annotations(record: HpaRecord) -> Mapping[str, str]:
    return record.annotations


def build_app(
    settings: ControllerAppSettings,
    client: KubeClient,
    *,
    clock: Clock,
    registry: CollectorRegistry,
    identity: str | None = None,
    on_sync_interval: Callable[[str, float], None] | None = None,
    metrics_factory: Callable[
        [PodLister], tuple[MetricsClient, Sequence[tuple[str, Callable[[], Awaitable[None]]]]]
    ]
    | None = None,
) -> HorizontalControllerApp:
    """Wire the role on ``client`` (tests pass a client pointed at a fake API server;
    ``bench.controller`` passes ``on_sync_interval`` to record every effective sync interval;
    ``metrics_factory`` builds another metrics source over the pod lister, with its tasks)."""
    horizontal = settings.horizontal
    hpa_informer: Informer[HpaRecord] = Informer(client, HPA_PATH, parse=parse_hpa, clock=clock)
    pod_informer: Informer[PodRecord] = Informer(client, POD_PATH, parse=parse_pod, clock=clock)
    workload_informers: dict[str, Informer[WorkloadRecord]] = {
        kind: Informer(
            client, path, parse=functools.partial(parse_workload, kind=kind), clock=clock
        )
        for kind, path in WORKLOAD_PATHS.items()
    }
    elector = build_elector(settings.leader_flags(), client, clock=clock, identity=identity)
    fence: Fence = elector if elector is not None else Unfenced()
    events = EventRecorder(client, clock=clock, fence=fence, registry=registry)
    pods = InformerPodLister(pod_informer.store)
    metrics: MetricsClient = RESTMetricsClient(
        # client-go retries a 5xx only with Retry-After: a failing metrics API shows as
        # ScalingActive=False at the sync that saw it, not seconds of backoff later
        client.with_retry(RetryPolicy(server_errors_need_retry_after=True)),
        monotonic=clock.monotonic,
        version_refresh_seconds=horizontal.sync_period_seconds,
        share_namespace_reads=horizontal.shared_resource_metrics_reads,
    )
    metric_jobs: Sequence[tuple[str, Callable[[], Awaitable[None]]]] = ()
    if metrics_factory is not None:
        metrics, metric_jobs = metrics_factory(pods)
    controller = HorizontalController(
        horizontal,
        hpas=InformerHPALister(hpa_informer.store),
        scales=InformerScaleClient(
            workload_informers,
            KubeScaleClient(
                kube_scale.ScaleClient(
                    client, kube_scale.ResourceMapper(client, clock=clock), fence=fence
                )
            ),
        ),
        metrics=metrics,
        pods=pods,
        status_writer=KubeStatusWriter(
            kube_status.StatusWriter(client, fence=fence), hpa_informer.store
        ),
        events=KubeEventRecorder(events),
        clock=clock,
        registry=registry,
        on_sync_interval=on_sync_interval,
    )
    queue = WorkQueue(
        "horizontalpodautoscaler",
        clock=clock,
        rate_limiter=ItemExponentialFailureRateLimiter(base_delay_seconds=1.0),
        metrics=QueueMetrics(registry),
        on_depth=controller.metrics.observe_queue_depth,
        log_key="hpa",
    )
    period = horizontal.sync_period_seconds

    def added(record: HpaRecord) -> None:
        key = f"{record.namespace}/{record.name}"
        controller.track(key)
        queue.track(key, sync_period_seconds=period)
        queue.add(key)

    def updated(old: HpaRecord, new: HpaRecord) -> None:
        # like upstream, our own status writes do not trigger a reconcile: only spec (generation)
        # and annotation (dry-run switch) changes do; the periodic resync covers the rest
        if old.generation != new.generation or _annotations(old) != _annotations(new):
            queue.add(f"{new.namespace}/{new.name}")

    def deleted(record: HpaRecord) -> None:
        key = f"{record.namespace}/{record.name}"
        queue.untrack(key)
        controller.forget(key)

    hpa_informer.add_handler(EventHandler(on_add=added, on_update=updated, on_delete=deleted))
    return HorizontalControllerApp(
        settings=settings,
        client=client,
        clock=clock,
        registry=registry,
        hpa_informer=hpa_informer,
        pod_informer=pod_informer,
        workload_informers=workload_informers,
        events=events,
        controller=controller,
        queue=queue,
        elector=elector,
        metric_jobs=metric_jobs,
    )


def client_settings(settings: ControllerAppSettings) -> ClientSettings:
    """The API client of ``hpa controller``: ``--kube-api-qps``/``--kube-api-burst``, and one
    HTTP/1.1 connection per in-flight reconcile on top of the client's default pool (watches,
    Lease, events, status), so a reconcile never waits for a connection another reconcile holds
    while its metrics call is slow (upstream multiplexes them over HTTP/2 instead)."""
    horizontal = settings.horizontal
    return ClientSettings(
        kubeconfig_path=settings.kubeconfig,
        context=settings.context,
        qps=horizontal.kube_api_qps,
        burst=horizontal.kube_api_burst,
        user_agent="hpa-controller",
        max_connections=ClientSettings().max_connections + horizontal.concurrent_syncs,
    )


async def _run(settings: ControllerAppSettings) -> int:
    clock = SystemClock()
    registry = CollectorRegistry()
    client = await load_client(client_settings(settings), clock=clock, registry=registry)
    source = None
    if settings.inprocess_metrics is not None:
        source = inprocess_metrics.open_source(settings.inprocess_metrics, registry=registry)
    app = build_app(
        settings,
        client,
        clock=clock,
        registry=registry,
        metrics_factory=source.factory if source is not None else None,
    )
    try:
        return await run_role(
            "controller",
            app.run,
            starting={
                "dry_run": settings.horizontal.dry_run,
                "leader_elect": settings.leader_elect,
                "sync_period_seconds": settings.horizontal.sync_period_seconds,
                "pid": os.getpid(),
            },
        )
    finally:
        await aclose_quietly(client)
        if source is not None:
            await source.aclose()


def main(args: argparse.Namespace) -> int:
    """The ``controller`` subcommand's handler (:func:`hpa.app.leading.role_main`)."""
    return role_main(args, from_args, _run)
