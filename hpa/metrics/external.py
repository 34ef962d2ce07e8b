"""The external metrics client: ``external.metrics.k8s.io/v1beta1``.

Upstream counterpart: ``externalMetricsClient.GetExternalMetric`` of
``pkg/controller/podautoscaler/metrics/client.go`` and ``namespacedMetrics.List`` of
``k8s.io/metrics/pkg/client/external_metrics/client.go``: ``GET
/apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>?labelSelector=<sel>``, every
item's ``MilliValue()`` in order, the first item's timestamp; ``unable to fetch metrics from
external metrics API: <err>``; an empty list is ``no metrics returned from external metrics API``.

Deliberate deviations: errors are values (:class:`~hpa.core.decision.MetricFetchError`).
"""

from __future__ import annotations

from pydantic import ValidationError

from hpa.api.metrics import ExternalMetricValueList
from hpa.core.decision import ExternalMetricObservation, MetricFetchError
from hpa.core.quantity import QuantityError, milli_value
from hpa.metrics.transport import JsonGetter, error_text

__all__ = ["EXTERNAL_METRICS_PREFIX", "ExternalMetricsClient"]

EXTERNAL_METRICS_PREFIX = "/apis/external.metrics.k8s.io/v1beta1"


class ExternalMetricsClient:
    """``GetExternalMetric`` through the aggregation layer."""

    def __init__(self, getter: JsonGetter) -> None:
        self._getter = getter

    async def get_external_metric(
        self, metric_name: str, namespace: str, *, metric_selector: str
    ) -> ExternalMetricObservation | MetricFetchError:
        """Every series of ``metric_name`` that ``metric_selector`` selects, in milli-units."""
        path = f"{EXTERNAL_METRICS_PREFIX}/namespaces/{namespace}/{metric_name}"
        params = {"labelSelector": metric_selector} if metric_selector else {}
        try:
            document = await self._getter.get(path, params=params)
            listing = ExternalMetricValueList.from_dict(document)
            values = tuple(milli_value(item.value) for item in listing.items)
        except (ValidationError, QuantityError):
            return MetricFetchError(
                "unable to fetch metrics from external metrics API: the external metrics API "
                "server didn't return a valid ExternalMetricValueList"
            )
        except Exception as error:  # noqa: BLE001 - every failure of the call is reported
            return MetricFetchError(
                f"unable to fetch metrics from external metrics API: {error_text(error)}"
            )
        if not values:
            return MetricFetchError("no metrics returned from external metrics API")
        return ExternalMetricObservation(values_milli=values, timestamp=listing.items[0].timestamp)
