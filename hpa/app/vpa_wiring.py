"""What the VPA's processes (admission webhook, updater) wire alike: the informers of VPAs,
LimitRanges, HPAs and the well-known controllers, the lookups over their stores, the guarded
tasks and the plain HTTP listener.

Upstream counterpart: the informer factories of ``pkg/admission-controller/main.go`` and
``pkg/updater/main.go`` (``controllerfetcher.NewControllerFetcher``: one informer per well-known
controller kind).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

from adapter.server.cli import configure_logging
from hpa.app.signals import run_until_stopped
from hpa.controllers.conversion import hpa_from_dict
from hpa.core.vpa.awareness import HorizontalScaler
from hpa.kube.client import ClientSettings, KubeClient, aclose_quietly, load_client
from hpa.kube.clock import Clock, SystemClock
from hpa.kube.informer import Informer
from hpa.kube.records import HpaRecord
from hpa.kube.targets import ControllerRecord, parse_controller

__all__ = [
    "CONTROLLER_PATHS",
    "HPA_PATH",
    "LIMIT_RANGE_PATH",
    "NODE_PATH",
    "POD_PATH",
    "VPA_PATH",
    "InformerControllers",
    "controller_informers",
    "guarded",
    "informer_scalers",
    "role_main",
    "run_role",
    "serve",
]

log = structlog.get_logger("hpa.app.vpa")

VPA_PATH = "/apis/autoscaling.k8s.io/v1/verticalpodautoscalers"
LIMIT_RANGE_PATH = "/api/v1/limitranges"
HPA_PATH = "/apis/autoscaling/v2/horizontalpodautoscalers"
POD_PATH = "/api/v1/pods"
NODE_PATH = "/api/v1/nodes"
CONTROLLER_PATHS = {
    "Deployment": "/apis/apps/v1/deployments",
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "DaemonSet": "/apis/apps/v1/daemonsets",
    "Job": "/apis/batch/v1/jobs",
    "CronJob": "/apis/batch/v1/cronjobs",
    "ReplicationController": "/api/v1/replicationcontrollers",
}


def controller_informers(
    client: KubeClient, *, clock: Clock
) -> dict[str, Informer[ControllerRecord]]:
    """One informer per well-known controller kind."""
    return {
        kind: Informer(
            client, path, parse=functools.partial(parse_controller, kind=kind), clock=clock
        )
        for kind, path in CONTROLLER_PATHS.items()
    }


class InformerControllers:
    """``ControllerLookup`` over the well-known controllers' informer stores."""

    def __init__(self, informers: dict[str, Informer[ControllerRecord]]) -> None:
        self._informers = informers

    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None:
        informer = self._informers.get(kind)
        return None if informer is None else informer.store.get_by_name(namespace, name)


def informer_scalers(
    store_list: Callable[[str], list[HpaRecord]],
) -> Callable[[str], Sequence[HorizontalScaler]]:
    """The HPAs of a namespace in the awareness rule's shape; an unreadable one is logged and
    left out."""

    def scalers(namespace: str) -> Sequence[HorizontalScaler]:
        out = []
        for record in store_list(namespace):
            try:
                hpa = hpa_from_dict(record.raw)
            except ValueError as error:
                log.info("hpa_unreadable", hpa=f"{namespace}/{record.name}", error=str(error))
                continue
            out.append(HorizontalScaler(namespace, record.name, hpa.spec))
        return out

    return scalers


async def guarded(name: str, run: Callable[[], Awaitable[None]]) -> None:
    """Run a task of the process's TaskGroup; log an unexpected failure, never swallow a
    cancellation."""
    try:
        await run()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("task_failed", task=name)
        raise


async def serve(
    app: web.Application, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None
) -> None:
    """Listen until cancelled."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host or None, port, ssl_context=ssl_context)
        await site.start()
        log.info("listening", host=host or "*", port=port, tls=ssl_context is not None)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


class _Role(Protocol):
    async def run(self) -> None: ...


async def run_role(
    build: Callable[[KubeClient, Clock, CollectorRegistry], _Role],
    *,
    kubeconfig: str | None,
    user_agent: str,
    role: str,
) -> int:
    """Connect, build the role's app and run it until SIGTERM (0) or a lost Lease (1)."""
    clock = SystemClock()
    registry = CollectorRegistry()
    client = await load_client(
        ClientSettings(kubeconfig_path=kubeconfig, user_agent=user_agent),
        clock=clock,
        registry=registry,
    )
    app = build(client, clock, registry)
    log.info("starting", role=role)
    return await run_until_stopped(app.run, role=role, close=lambda: aclose_quietly(client))


class _RoleSettings(Protocol):
    @property
    def kubeconfig(self) -> str | None: ...


S = TypeVar("S", bound=_RoleSettings)


def role_main(
    args: argparse.Namespace,
    *,
    settings_from_args: Callable[[argparse.Namespace], S],
    build: Callable[[S, KubeClient, Clock, CollectorRegistry], _Role],
    user_agent: str,
    role: str,
) -> int:
    """A VPA subcommand's handler: JSON logs, the settings (a flag out of range: one line, exit
    2), then the role until it stops."""
    configure_logging(getattr(args, "log_level", "info"))
    try:
        settings = settings_from_args(args)
    except ValueError as error:
        log.error("invalid_settings", role=role, error=str(error))
        return 2
    return asyncio.run(
        run_role(
            lambda client, clock, registry: build(settings, client, clock, registry),
            kubeconfig=settings.kubeconfig,
            user_agent=user_agent,
            role=role,
        )
    )
