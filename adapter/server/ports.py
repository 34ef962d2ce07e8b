"""What the server needs from the outside, as small Protocols owned by the server.

- ``KubeApi``: JSON GET/POST on raw API paths (``hpa.kube.client.KubeClient`` satisfies it) for
  TokenReview, SubjectAccessReview and the ``extension-apiserver-authentication`` ConfigMap.
- ``ObjectLister``: pods and nodes with their labels, from a watch cache (``adapter.server.pods``
  implements it over ``hpa.kube``'s informer); the resource metrics API lists through it, and it
  is also the providers' ``PodLister``.
- ``Metrics``: the providers (``adapter.providers.MetricProviders`` satisfies it).
- ``Clock``: monotonic seconds and UTC wall time, plus ``sleep`` for the refresh loops.

Upstream counterparts: the client-go interfaces that k8s.io/apiserver's delegating
authenticator/authorizer and metrics-server's ``PodLister``/``NodeLister`` take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Any, Protocol

from adapter.providers import (
    CustomMetricValue,
    ExternalMetricValue,
    NodeUsage,
    PodUsage,
)
from adapter.rules import CustomMetricInfo


class KubeApi(Protocol):
    async def get(
        self, path: str, *, params: Mapping[str, str] | None = None
    ) -> dict[str, Any]: ...

    async def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ObjectMeta:
    """A listed object's identity and labels."""

    name: str
    namespace: str = ""
    _: KW_ONLY
    labels: Mapping[str, str] = field(default_factory=dict)


class ObjectLister(Protocol):
    async def pods_for_selector(self, namespace: str, selector: str) -> Sequence[str]:
        """The providers' ``PodLister``."""
        ...

    async def list_pods(self, namespace: str | None, selector: str) -> Sequence[ObjectMeta]:
        """Pods in ``namespace`` (every namespace when None) matching a label selector text;
        raises ``ValueError`` for a malformed selector."""
        ...

    async def list_nodes(self, selector: str) -> Sequence[ObjectMeta]: ...


class CustomMetrics(Protocol):
    async def get_metric_by_name(
        self,
        info: CustomMetricInfo,
        name: str,
        *,
        namespace: str | None = None,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> CustomMetricValue: ...

    async def get_metric_by_selector(
        self,
        info: CustomMetricInfo,
        *,
        namespace: str | None = None,
        selector: str = "",
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> list[CustomMetricValue]: ...


class ExternalMetrics(Protocol):
    async def get_external_metric(
        self,
        metric: str,
        *,
        namespace: str,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> list[ExternalMetricValue]: ...


class ResourceMetrics(Protocol):
    async def get_pod_metrics(
        self, pods: Sequence[tuple[str, str]], *, timeout_seconds: float | None = None
    ) -> list[PodUsage]: ...

    async def get_node_metrics(
        self, nodes: Sequence[str], *, timeout_seconds: float | None = None
    ) -> list[NodeUsage]: ...


class Metrics(Protocol):
    @property
    def custom(self) -> CustomMetrics: ...

    @property
    def external(self) -> ExternalMetrics: ...

    @property
    def resource(self) -> ResourceMetrics | None: ...

    def discovery(self, group_version: str) -> bytes | None: ...

    def discovery_gzip(self, group_version: str) -> bytes | None: ...


class MetricsSource(Protocol):
    """Where the current providers are (swapped atomically by a config reload)."""

    @property
    def current(self) -> Metrics: ...

    @property
    def ready(self) -> bool:
        """True once the metric index has been listed at least once."""
        ...


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...
