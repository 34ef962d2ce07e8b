"""The metrics port implemented through the API server's aggregation layer.

Upstream counterpart: ``NewRESTMetricsClient`` / ``restMetricsClient`` of
``pkg/controller/podautoscaler/metrics/client.go``: one object with the four methods of
``MetricsClient`` (``GetResourceMetric``, ``GetRawMetric``, ``GetObjectMetric``,
``GetExternalMetric``), delegating to the resource, custom and external clients. Any metrics
server behind the ``APIService`` objects works (metrics-server, our adapter, others).

A second implementation of the same four methods, calling ``adapter``'s providers in-process,
plugs into the controller the same way (the port is ``hpa.controllers.ports.MetricsClient``).

Deliberate deviations: none beyond those of the three clients (the resource client's shared
namespace reads, when asked for).
"""

from __future__ import annotations

from collections.abc import Callable

from hpa.core.decision import (
    ExternalMetricObservation,
    MetricFetchError,
    ObjectMetricObservation,
    PodMetricsObservation,
)
from hpa.core.spec import CrossVersionObjectReference
from hpa.metrics.custom import (
    CustomMetricsClient,
    CustomMetricsVersions,
    DiscoveryResourceResolver,
    ResourceResolver,
)
from hpa.metrics.external import ExternalMetricsClient
from hpa.metrics.resource import ResourceMetricsClient
from hpa.metrics.transport import JsonGetter

__all__ = ["RESTMetricsClient"]


class RESTMetricsClient:
    """``restMetricsClient``: resource, custom and external metrics over one JSON getter."""

    def __init__(
        self,
        getter: JsonGetter,
        *,
        monotonic: Callable[[], float],
        resolver: ResourceResolver | None = None,
        version_refresh_seconds: float = 15.0,
        share_namespace_reads: bool = False,
    ) -> None:
        """``version_refresh_seconds``: how long the discovered custom metrics version is
        trusted (kube-controller-manager uses its sync period, 15 s); ``share_namespace_reads``:
        concurrent resource metrics reads of one namespace share one list
        (:class:`~hpa.metrics.resource.ResourceMetricsClient`)."""
        self.versions = CustomMetricsVersions(
            getter, monotonic=monotonic, refresh_seconds=version_refresh_seconds
        )
        self._resource = ResourceMetricsClient(getter, share_namespace_reads=share_namespace_reads)
        self._custom = CustomMetricsClient(
            getter,
            versions=self.versions,
            resolver=resolver or DiscoveryResourceResolver(getter),
        )
        self._external = ExternalMetricsClient(getter)

    async def get_resource_metric(
        self, resource: str, namespace: str, *, selector: str, container: str = ""
    ) -> PodMetricsObservation | MetricFetchError:
        return await self._resource.get_resource_metric(
            resource, namespace, selector=selector, container=container
        )

    async def get_raw_metric(
        self, metric_name: str, namespace: str, *, selector: str, metric_selector: str
    ) -> PodMetricsObservation | MetricFetchError:
        return await self._custom.get_raw_metric(
            metric_name, namespace, selector=selector, metric_selector=metric_selector
        )

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        *,
        described_object: CrossVersionObjectReference,
        metric_selector: str,
    ) -> ObjectMetricObservation | MetricFetchError:
        return await self._custom.get_object_metric(
            metric_name,
            namespace,
            described_object=described_object,
            metric_selector=metric_selector,
        )

    async def get_external_metric(
        self, metric_name: str, namespace: str, *, metric_selector: str
    ) -> ExternalMetricObservation | MetricFetchError:
        return await self._external.get_external_metric(
            metric_name, namespace, metric_selector=metric_selector
        )
