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

Performance: a response is shaped straight from the decoded JSON (:func:`shape_raw_pod_metrics`,
one exact quantity read per value, :func:`hpa.core.quantity.milli_value`); only an answer that
is not of the plain shape (a mistyped or missing field, something that does not parse, a named
container absent from a pod) goes through the validating pydantic models, which word the error.

Deliberate deviations: errors are returned as values (:class:`~hpa.core.decision.MetricFetchError`)
instead of Go's ``error`` results, and a response that does not parse is reported as an error of
the same wrapping instead of a decoding failure inside client-go. Of a well-formed answer only
the fields the shaping reads are checked (every ``usage`` quantity, names, times, windows);
client-go's decoder would also refuse, say, a mistyped ``metadata.labels``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from hpa.api.metrics import PodMetrics, PodMetricsList
from hpa.api.types import parse_time
from hpa.core.decision import MetricFetchError, PodMetricsObservation
from hpa.core.duration import DurationError, parse_duration_seconds
from hpa.core.quantity import QuantityError, milli_value, milli_value_or_none
from hpa.core.replicas import PodMetric
from hpa.metrics.transport import JsonGetter, error_text

__all__ = [
    "RESOURCE_METRICS_PREFIX",
    "ResourceMetricsClient",
    "shape_pod_metrics",
    "shape_raw_pod_metrics",
]

RESOURCE_METRICS_PREFIX = "/apis/metrics.k8s.io/v1beta1"


class _ShapeError(Exception):
    pass


def window_seconds(text: str) -> float:
    """``PodMetrics.window`` (``time.ParseDuration``) in seconds; an absent window is 0."""
    return parse_duration_seconds(text) if text else 0.0


def _window_seconds(item: PodMetrics) -> float:
    try:
        return window_seconds(item.window)
    except DurationError as error:
        raise _ShapeError(str(error)) from error


def _milli(text: str) -> int:
    try:
        return milli_value(text)
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


_NO_USAGE: dict[str, Any] = {}
_NO_CONTAINERS: list[Any] = []


class _IrregularError(Exception):
    """The raw document is not the plain shape the fast path reads: take the validating path."""


def _fast_time(text: object, cache: dict[str, datetime]) -> datetime | None:
    if text is None:
        return None
    if type(text) is not str:
        raise _IrregularError
    found = cache.get(text)
    if found is None:
        try:
            found = parse_time(text).replace(microsecond=0)
        except ValueError as error:
            raise _IrregularError from error
        cache[text] = found
    return found


def _fast_window(text: object) -> float:
    if type(text) is not str:
        raise _IrregularError
    try:
        return window_seconds(text)
    except DurationError as error:
        raise _IrregularError from error


def _fast_container(container: object, resource: str) -> tuple[str, int | None]:
    """A container's name and its ``usage[resource]`` in milli-units (``None``: absent), every
    quantity of its ``usage`` checked once (as decoding the list would)."""
    if type(container) is not dict:
        raise _IrregularError
    name = container.get("name", "")
    usage = container.get("usage", _NO_USAGE)
    if type(name) is not str or type(usage) is not dict:
        raise _IrregularError
    found: int | None = None
    for key, value in usage.items():
        milli = milli_value_or_none(value)
        if milli is None:
            raise _IrregularError
        if key == resource:
            found = milli
    return name, found


def shape_raw_pod_metrics(
    document: Mapping[str, Any], resource: str, *, container: str = ""
) -> tuple[dict[str, PodMetric], datetime | None, int]:
    """``shape_pod_metrics`` straight from the decoded JSON ``PodMetricsList``: the shaped
    samples, the first item's timestamp and the number of items. Each quantity is read once.

    Raises :class:`_IrregularError` for anything but the plain shape (a missing or mistyped field,
    a quantity, time or window that does not parse, a named container absent from a pod): the
    caller then takes the validating path, which reports such answers exactly."""
    if "items" not in document:
        return {}, None, 0
    items = document["items"]
    if type(items) is not list:
        raise _IrregularError
    shaped: dict[str, PodMetric] = {}
    times: dict[str, datetime] = {}
    first_timestamp: datetime | None = None
    for index, item in enumerate(items):
        if type(item) is not dict:
            raise _IrregularError
        metadata = item.get("metadata", _NO_USAGE)  # absent: the defaults, as decoding has
        if type(metadata) is not dict:
            raise _IrregularError
        name = metadata.get("name", "")
        containers = item.get("containers", _NO_CONTAINERS)
        if type(name) is not str or type(containers) is not list:
            raise _IrregularError
        timestamp = _fast_time(item.get("timestamp"), times)
        if index == 0:
            first_timestamp = timestamp
        window = _fast_window(item.get("window", ""))
        values = [_fast_container(entry, resource) for entry in containers]
        if container:
            named = [value for entry_name, value in values if entry_name == container]
            if not named:
                raise _IrregularError  # no such container: the validating path words the error
            if named[0] is not None:
                shaped[name] = PodMetric(
                    value_milli=named[0], timestamp=timestamp, window_seconds=window
                )
            continue
        if not values:
            continue
        total = 0
        for _, value in values:
            if value is None:
                break
            total += value
        else:
            shaped[name] = PodMetric(value_milli=total, timestamp=timestamp, window_seconds=window)
    return shaped, first_timestamp, len(items)


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
        except Exception as error:  # noqa: BLE001 - every failure of the call is reported
            return MetricFetchError(
                f"unable to fetch metrics from resource metrics API: {error_text(error)}"
            )
        try:
            shaped, timestamp, count = shape_raw_pod_metrics(
                document, resource, container=container
            )
        except _IrregularError:
            return self._shape_validated(document, resource, container=container)
        if not count:
            return MetricFetchError("no metrics returned from resource metrics API")
        return PodMetricsObservation(metrics=shaped, timestamp=timestamp)

    @staticmethod
    def _shape_validated(
        document: Mapping[str, Any], resource: str, *, container: str
    ) -> PodMetricsObservation | MetricFetchError:
        """The validating path: decode through the models, then shape."""
        try:
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
