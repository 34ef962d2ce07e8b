"""The resource metrics client: ``metrics.k8s.io/v1beta1`` PodMetrics, shaped per pod.

Upstream counterpart: ``resourceMetricsClient.GetResourceMetric``, ``getPodMetrics`` and
``getContainerMetrics`` of ``pkg/controller/podautoscaler/metrics/client.go``.

Shaping, exactly as upstream:

* Resource metrics (no container): a pod's value is the sum of ``MilliValue()`` over its
  containers; a pod with no containers, or with a container lacking the resource, is left out
  (the replica calculator then treats it as missing).
* ContainerResource metrics: a pod's value is the named container's ``MilliValue()``; a pod whose
  named container lacks the resource is left out; a pod without the named container fails the
  whole call (``container <c> not present in metrics for pod <ns>/<pod>``).
* An empty list is the error ``no metrics returned from resource metrics API``; a failed request
  is ``unable to fetch metrics from resource metrics API: <err>``.
* The observation's timestamp is the first item's; each sample keeps its own timestamp and
  window (``PodMetrics.window``, a Go duration).

Deliberate deviations: errors are returned as values (:class:`~hpa.core.decision.MetricFetchError`)
instead of Go's ``error`` results, and a response that does not parse is reported as an error of
the same wrapping instead of a decoding failure inside client-go.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from hpa.api.metrics import PodMetrics, PodMetricsList
from hpa.core.decision import MetricFetchError, PodMetricsObservation
from hpa.core.quantity import QuantityError, parse_quantity
from hpa.core.replicas import PodMetric
from hpa.metrics.duration import DurationError, parse_duration_seconds
from hpa.metrics.transport import JsonGetter, error_text

__all__ = ["RESOURCE_METRICS_PREFIX", "ResourceMetricsClient", "shape_pod_metrics"]

RESOURCE_METRICS_PREFIX = "/apis/metrics.k8s.io/v1beta1"


class _ShapeError(Exception):
    pass


def _window_seconds(item: PodMetrics) -> float:
    if not item.window:
        return 0.0
    try:
        return parse_duration_seconds(item.window)
    except DurationError as error:
        raise _ShapeError(str(error)) from error


def _milli(text: str) -> int:
    try:
        return parse_quantity(text).milli_value()
    except QuantityError as error:
        raise _ShapeError(str(error)) from error


def shape_pod_metrics(
    items: list[PodMetrics], resource: str, *, container: str = ""
) -> dict[str, PodMetric]:
    """``getPodMetrics`` (``container == ""``) or ``getContainerMetrics``; raises ``ValueError``
    with upstream's text when the named container is absent from a pod."""
    shaped: dict[str, PodMetric] = {}
    for item in items:
        name = item.metadata.name
        if container:
            found = next((c for c in item.containers if c.name == container), None)
            if found is None:
                raise ValueError(
                    f"container {container} not present in metrics for pod "
                    f"{item.metadata.namespace}/{name}"
                )
            value = found.usage.get(resource)
            if value is not None:
                shaped[name] = PodMetric(
                    value_milli=_milli(value),
                    timestamp=item.timestamp,
                    window_seconds=_window_seconds(item),
                )
            continue
        if not item.containers:
            continue
        total = 0
        missing = False
        for entry in item.containers:
            value = entry.usage.get(resource)
            if value is None:
                missing = True
                break
            total += _milli(value)
        if not missing:
            shaped[name] = PodMetric(
                value_milli=total, timestamp=item.timestamp, window_seconds=_window_seconds(item)
            )
    return shaped


class ResourceMetricsClient:
    """``GetResourceMetric`` through the aggregation layer (``metrics.k8s.io``)."""

    def __init__(self, getter: JsonGetter) -> None:
        self._getter = getter

    async def get_resource_metric(
        self, resource: str, namespace: str, *, selector: str, container: str = ""
    ) -> PodMetricsObservation | MetricFetchError:
        """Per-pod usage of ``resource`` (milli-units) for the pods ``selector`` selects."""
        path = f"{RESOURCE_METRICS_PREFIX}/namespaces/{namespace}/pods"
        params: Mapping[str, str] = {"labelSelector": selector} if selector else {}
        try:
            document = await self._getter.get(path, params=params)
            listing = PodMetricsList.from_dict(document)
        except ValidationError as error:
            return MetricFetchError(
                "unable to fetch metrics from resource metrics API: "
                f"the response does not parse: {error.error_count()} errors"
            )
        except Exception as error:  # noqa: BLE001 - every failure of the call is reported
            return MetricFetchError(
                f"unable to fetch metrics from resource metrics API: {error_text(error)}"
            )
        if not listing.items:
            return MetricFetchError("no metrics returned from resource metrics API")
        try:
            shaped = shape_pod_metrics(listing.items, resource, container=container)
        except _ShapeError as error:
            return MetricFetchError(f"unable to fetch metrics from resource metrics API: {error}")
        except ValueError as error:
            return MetricFetchError(f"failed to get container metrics: {error}")
        return PodMetricsObservation(metrics=shaped, timestamp=listing.items[0].timestamp)
