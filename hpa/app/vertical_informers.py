"""The informers every VPA role reads (VPAs, LimitRanges, HPAs and the seven well-known
controller kinds) and the lookups built on them, wired once for the admission webhook and the
recommender.

Upstream counterpart: the listers of ``pkg/target/controller_fetcher/controller_fetcher.go``
(one informer per well-known kind), the VPA lister of ``pkg/utils/vpa/api.go`` and the
LimitRange lister of ``pkg/utils/limitrange``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from hpa.controllers.conversion import hpa_from_dict
from hpa.core.vpa.awareness import HorizontalScaler
from hpa.kube.client import KubeClient
from hpa.kube.clock import Clock
from hpa.kube.informer import Informer
from hpa.kube.records import HpaRecord, parse_hpa
from hpa.kube.scale import ResourceMapper, ScaleClient
from hpa.kube.targets import ApiScaleReader, ControllerRecord, TargetResolver, parse_controller
from hpa.kube.vpa_records import LimitRangeRecord, VpaRecord, parse_limit_range, parse_vpa

__all__ = [
    "CONTROLLER_PATHS",
    "HPA_PATH",
    "LIMIT_RANGE_PATH",
    "VPA_PATH",
    "InformerControllers",
    "VerticalInformers",
    "build_vertical_informers",
    "scalers",
]

log = structlog.get_logger("hpa.app.vertical_informers")

VPA_PATH = "/apis/autoscaling.k8s.io/v1/verticalpodautoscalers"
LIMIT_RANGE_PATH = "/api/v1/limitranges"
HPA_PATH = "/apis/autoscaling/v2/horizontalpodautoscalers"
CONTROLLER_PATHS = {
    "Deployment": "/apis/apps/v1/deployments",
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "DaemonSet": "/apis/apps/v1/daemonsets",
    "Job": "/apis/batch/v1/jobs",
    "CronJob": "/apis/batch/v1/cronjobs",
    "ReplicationController": "/api/v1/replicationcontrollers",
}


class InformerControllers:
    """``ControllerLookup`` over the well-known controllers' informer stores."""

    def __init__(self, informers: dict[str, Informer[ControllerRecord]]) -> None:
        self._informers = informers

    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None:
        informer = self._informers.get(kind)
        return None if informer is None else informer.store.get_by_name(namespace, name)


def scalers(
    store_list: Callable[[str], list[HpaRecord]],
) -> Callable[[str], Sequence[HorizontalScaler]]:
    """The HPAs of a namespace in the awareness rule's shape (an HPA that cannot be read is
    logged and skipped)."""

    def listed(namespace: str) -> Sequence[HorizontalScaler]:
        out = []
        for record in store_list(namespace):
            try:
                hpa = hpa_from_dict(record.raw)
            except ValueError as error:
                log.info("hpa_unreadable", hpa=f"{namespace}/{record.name}", error=str(error))
                continue
            out.append(HorizontalScaler(namespace, record.name, hpa.spec, hpa.status))
        return out

    return listed


@dataclass(frozen=True, slots=True)
class VerticalInformers:
    vpas: Informer[VpaRecord]
    limit_ranges: Informer[LimitRangeRecord]
    hpas: Informer[HpaRecord]
    controllers: dict[str, Informer[ControllerRecord]]
    lookup: InformerControllers
    resolver: TargetResolver

    def all(self) -> list[Informer[Any]]:
        return [self.vpas, self.limit_ranges, self.hpas, *self.controllers.values()]


def build_vertical_informers(
    client: KubeClient, *, clock: Clock, vpa_path: str = VPA_PATH
) -> VerticalInformers:
    """The informers (not started) and the target resolver over them (``/scale`` of other
    kinds through the API)."""
    controllers: dict[str, Informer[ControllerRecord]] = {
        kind: Informer(
            client, path, parse=functools.partial(parse_controller, kind=kind), clock=clock
        )
        for kind, path in CONTROLLER_PATHS.items()
    }
    lookup = InformerControllers(controllers)
    scales = ScaleClient(client, ResourceMapper(client, clock=clock))
    return VerticalInformers(
        vpas=Informer(client, vpa_path, parse=parse_vpa, clock=clock),
        limit_ranges=Informer(client, LIMIT_RANGE_PATH, parse=parse_limit_range, clock=clock),
        hpas=Informer(client, HPA_PATH, parse=parse_hpa, clock=clock),
        controllers=controllers,
        lookup=lookup,
        resolver=TargetResolver(lookup, ApiScaleReader(scales)),
    )
