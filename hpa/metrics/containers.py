"""The VPA recommender's live container usage from ``metrics.k8s.io/v1beta1`` PodMetrics.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/input/metrics/metrics_source.go`` (``podMetricsSource.List``: one list of
``pods.metrics.k8s.io`` in a namespace, or in all of them) and ``metrics_client.go``
(``GetContainersMetrics``, ``createContainerMetricsSnapshots``, ``newContainerMetricsSnapshot``,
``calculateUsage``).

Conversion, exactly as upstream: each container of each PodMetrics becomes one
:class:`~hpa.controllers.vertical.ports.ContainerMetricsSnapshot`; ``usage`` holds ``cpu`` as the
quantity's ``MilliValue()`` and ``memory`` as its ``Value()`` (bytes of working set), both rounded
up (``hpa.api.vpa.resources_to_core``), and an absent resource reads 0 (Go's zero ``Quantity``);
the snapshot's time and window are the PodMetrics ``timestamp`` (an absent one is Go's zero time)
and ``window`` (a Go duration), in nanoseconds. Any server of the API
works: our adapter and metrics-server write the same wire format.

The namespace rule is upstream's ``--vpa-object-namespace`` (list in that namespace only, or in
all of them when empty); ``--ignored-vpa-object-namespaces`` drops the snapshots of those
namespaces here (upstream lists them and the cluster feeder then finds no pod for them: the same
samples reach the model either way).

Deliberate deviations: a PodMetrics item that does not decode (a quantity, time or window that does
not parse, a mistyped field) is skipped with a warning naming the pod, instead of failing the
whole list inside client-go's decoder; a failed list raises
:class:`~hpa.core.vpa.usage.MetricsSourceError` (one line naming the API) where upstream returns
Go's error.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import structlog
from pydantic import ValidationError

from hpa.api.metrics import PodMetrics
from hpa.api.vpa import resources_to_core, time_to_ns
from hpa.core.duration import DurationError
from hpa.core.quantity import QuantityError
from hpa.core.vpa.cluster import PodId
from hpa.core.vpa.usage import ContainerMetricsSnapshot, MetricsSourceError
from hpa.metrics.resource import RESOURCE_METRICS_PREFIX, window_seconds
from hpa.metrics.transport import JsonGetter, error_text

__all__ = ["METRICS_API", "MetricsApiContainerSource", "container_snapshots"]

log = structlog.get_logger("hpa.metrics.containers")

METRICS_API = "metrics.k8s.io/v1beta1"
_NANOSECONDS_PER_SECOND = 1_000_000_000


def container_snapshots(item: PodMetrics) -> list[ContainerMetricsSnapshot]:
    """``createContainerMetricsSnapshots``: one snapshot per container of ``item``.

    Raises ``ValueError`` (a quantity or window that does not parse)."""
    pod_id = PodId(item.metadata.namespace, item.metadata.name)
    snapshot_time_ns = time_to_ns(item.timestamp)
    window_ns = round(window_seconds(item.window) * _NANOSECONDS_PER_SECOND)
    snapshots = []
    for container in item.containers:
        usage = resources_to_core(container.usage)  # MilliValue() and Value(), as calculateUsage
        snapshots.append(
            ContainerMetricsSnapshot(
                pod_id=pod_id,
                container=container.name,
                snapshot_time_ns=snapshot_time_ns,
                window_ns=window_ns,
                usage={"cpu": usage.cpu or 0, "memory": usage.memory or 0},
            )
        )
    return snapshots


def _first_error(error: ValidationError) -> str:
    """The first decoding error in one line: where and what (``containers.0.usage.cpu: ...``)."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"does not decode: {where}: {first['msg']}{more}"


def _item_name(raw: object) -> str:
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    if isinstance(metadata, dict):
        return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
    return "?"


class MetricsApiContainerSource:
    """``ContainerMetricsSource`` over the aggregated ``metrics.k8s.io`` API (``GET
    /apis/metrics.k8s.io/v1beta1[/namespaces/<ns>]/pods`` through ``getter``, e.g.
    ``hpa.kube.client.KubeClient``)."""

    def __init__(
        self,
        getter: JsonGetter,
        *,
        namespace: str = "",
        ignored_namespaces: Collection[str] = (),
    ) -> None:
        self._getter = getter
        self._namespace = namespace
        self._ignored = frozenset(ignored_namespaces)
        self._path = (
            f"{RESOURCE_METRICS_PREFIX}/namespaces/{namespace}/pods"
            if namespace
            else f"{RESOURCE_METRICS_PREFIX}/pods"
        )

    async def containers_metrics(self) -> Sequence[ContainerMetricsSnapshot]:
        """``GetContainersMetrics``: every container's latest usage."""
        try:
            document = await self._getter.get(self._path)
        except Exception as error:
            raise MetricsSourceError(
                f"cannot list pods.{METRICS_API}: {error_text(error)}"
            ) from error
        items: Any = document.get("items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise MetricsSourceError(f"cannot list pods.{METRICS_API}: items is not a list")
        snapshots: list[ContainerMetricsSnapshot] = []
        for raw in items:
            try:
                item = PodMetrics.from_dict(raw)
                if item.metadata.namespace in self._ignored:
                    continue
                snapshots.extend(container_snapshots(item))
            except ValidationError as error:
                log.warning(
                    "pod_metrics_skipped",
                    pod=_item_name(raw),
                    error=_first_error(error),
                )
            except (QuantityError, DurationError, ValueError) as error:
                log.warning("pod_metrics_skipped", pod=_item_name(raw), error=str(error))
        log.debug(
            "pod_metrics_listed",
            namespace=self._namespace or "*",
            pods=len(items),
            containers=len(snapshots),
        )
        return snapshots
