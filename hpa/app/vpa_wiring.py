"""What the VPA's processes (admission webhook, updater) wire alike: the informers of VPAs,
LimitRanges, HPAs and the well-known controllers, the lookups over their stores, the guarded
tasks and the plain HTTP listener.

Upstream counterpart: the informer factories of ``pkg/admission-controller/main.go`` and
``pkg/updater/main.go`` (``controllerfetcher.NewControllerFetcher``: one informer per well-known
controller kind).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Awaitable, Callable, Sequence

import structlog
from aiohttp import web

from hpa.controllers.conversion import hpa_from_dict
from hpa.core.vpa.awareness import HorizontalScaler
from hpa.kube.client import KubeClient
from hpa.kube.clock import Clock
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
