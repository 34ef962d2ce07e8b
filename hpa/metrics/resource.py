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

Shared namespace reads (``share_namespace_reads=True``, what ``hpa controller`` runs with unless
``--horizontal-pod-autoscaler-shared-resource-metrics-reads=false``): upstream lists
``PodMetricses(namespace).List(selector)`` for every HPA at every sync. Here a read that starts
while :data:`SHARE_AFTER_IN_FLIGHT` (8) requests of the same namespace are in flight does not
send its own request: it starts one list of the whole namespace (no ``labelSelector``), which
answers every read of that namespace that starts while it is in flight (single flight: no answer
is older than the request in flight when the read started; nothing is kept after it). Each read
keeps the items its selector selects, matched on each ``PodMetrics``' ``metadata.labels``
(metrics-server and ``hpa adapter`` copy the pod's labels there and filter on them), and shapes
exactly the items the selective request would have returned, in the same order. A selector that
does not parse, or a list that is not of the plain shape (labels that are not a string map,
anything the validating path would word), or a list where no item carries labels (a server
that does not copy them), leaves each read to its own request. See
``docs/controller-metrics.md``.

Deliberate deviations: errors are returned as values (:class:`~hpa.core.decision.MetricFetchError`)
instead of Go's ``error`` results, and a response that does not parse is reported as an error of
the same wrapping instead of a decoding failure inside client-go. Of a well-formed answer only
the fields the shaping reads are checked (every ``usage`` quantity, names, times, windows);
client-go's decoder would also refuse, say, a mistyped ``metadata.labels``.
"""

from __future__ import annotations

import asyncio
import collections
import functools
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from hpa.api.metrics import PodMetrics, PodMetricsList
from hpa.api.types import parse_time
from hpa.core.decision import MetricFetchError, PodMetricsObservation
from hpa.core.duration import DurationError, parse_duration_seconds
from hpa.core.quantity import QuantityError, milli_value, milli_value_or_none
from hpa.core.replicas import PodMetric
from hpa.core.selector import Selector, SelectorError, parse_selector
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


def _fast_window(text: object, cache: dict[str, float]) -> float:
    if type(text) is not str:
        raise _IrregularError
    found = cache.get(text)
    if found is None:
        try:
            found = window_seconds(text)
        except DurationError as error:
            raise _IrregularError from error
        cache[text] = found
    return found


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


_Row = tuple[str, datetime | None, PodMetric | None]
"""One shaped ``PodMetrics`` item: its name, its timestamp and its sample (``None``: left out)."""


def _shape_item(
    item: object,
    resource: str,
    container: str,
    times: dict[str, datetime],
    windows: dict[str, float],
) -> _Row:
    """One item of a ``PodMetricsList`` as ``getPodMetrics`` / ``getContainerMetrics`` shape it;
    :class:`_IrregularError` for anything but the plain shape."""
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
    window = _fast_window(item.get("window", ""), windows)
    values = [_fast_container(entry, resource) for entry in containers]
    if container:
        named = [value for entry_name, value in values if entry_name == container]
        if not named:
            raise _IrregularError  # no such container: the validating path words the error
        if named[0] is None:
            return name, timestamp, None
        return (
            name,
            timestamp,
            PodMetric(value_milli=named[0], timestamp=timestamp, window_seconds=window),
        )
    if not values:
        return name, timestamp, None
    total = 0
    for _, value in values:
        if value is None:
            return name, timestamp, None
        total += value
    return name, timestamp, PodMetric(value_milli=total, timestamp=timestamp, window_seconds=window)


_Shaped = tuple[dict[str, PodMetric], datetime | None, int]
"""The shaped samples by pod name, the first item's timestamp and the number of items."""


def _collect(rows: Iterable[_Row]) -> _Shaped:
    shaped: dict[str, PodMetric] = {}
    first_timestamp: datetime | None = None
    count = 0
    for name, timestamp, sample in rows:
        if not count:
            first_timestamp = timestamp
        count += 1
        if sample is not None:
            shaped[name] = sample
    return shaped, first_timestamp, count


def shape_raw_pod_metrics(
    document: Mapping[str, Any], resource: str, *, container: str = ""
) -> _Shaped:
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
    times: dict[str, datetime] = {}
    windows: dict[str, float] = {}
    return _collect(_shape_item(item, resource, container, times, windows) for item in items)


_NO_LABELS: dict[str, str] = {}


def _plain_labels(item: object) -> Mapping[str, str]:
    """An item's ``metadata.labels`` (absent: none); :class:`_IrregularError` when they are not a
    string map."""
    metadata = item.get("metadata", _NO_LABELS) if type(item) is dict else None
    if type(metadata) is not dict:
        raise _IrregularError
    labels = metadata.get("labels", _NO_LABELS)
    if type(labels) is not dict or not all(type(v) is str for v in labels.values()):
        raise _IrregularError
    return labels


class NamespaceListing:
    """A namespace's ``PodMetricsList`` read without a selector, to be filtered per selector as
    the metrics API filters (on each item's ``metadata.labels``) and shaped for the items a
    selector selects only. The items of one label value are indexed on first use, so a selector
    with a ``key=value`` term looks at its own pods only."""

    __slots__ = ("_indexes", "_items", "_labels", "_times", "_windows")

    def __init__(self, document: Mapping[str, Any]) -> None:
        items = document.get("items", _NO_CONTAINERS)
        self._items: list[Any] | None = None
        self._labels: list[Mapping[str, str]] = []
        self._indexes: dict[str, dict[str, list[int]]] = {}
        self._times: dict[str, datetime] = {}
        self._windows: dict[str, float] = {}
        try:
            if type(items) is not list:
                raise _IrregularError
            self._labels = [_plain_labels(item) for item in items]
        except _IrregularError:
            return  # not the plain shape: every read takes its own request
        if items and not any(self._labels):
            # a server that filters on the pods' labels without copying them onto its
            # PodMetrics: a selector here would select nothing its own request would miss
            return
        self._items = items

    def select(self, selector: Selector, resource: str, *, container: str) -> _Shaped | None:
        """What the request with ``selector`` would have shaped (the same items in the same
        order); ``None`` when the listing is not plain enough to answer for it."""
        items = self._items
        if items is None:
            return None
        labels = self._labels
        candidates: Iterable[int] = range(len(labels))
        for key, value in selector.equality_terms().items():
            candidates = self._index(key).get(value, ())
            break
        times, windows = self._times, self._windows
        try:
            return _collect(
                _shape_item(items[i], resource, container, times, windows)
                for i in candidates
                if selector.matches(labels[i])
            )
        except _IrregularError:
            return None  # its own request's validating path words it

    def _index(self, key: str) -> dict[str, list[int]]:
        index = self._indexes.get(key)
        if index is None:
            grouped: dict[str, list[int]] = collections.defaultdict(list)
            for position, labels in enumerate(self._labels):
                value = labels.get(key)
                if value is not None:
                    grouped[value].append(position)
            index = self._indexes[key] = dict(grouped)
        return index


SHARE_AFTER_IN_FLIGHT = 8
"""A read joins (or starts) a namespace-wide list when at least this many requests of its
namespace are in flight; below that it sends its own selective request. A list costs as much
as several selective reads, so it is sent only where many would be."""


class ResourceMetricsClient:
    """``GetResourceMetric`` through the aggregation layer (``metrics.k8s.io``).

    ``share_namespace_reads``: a read that starts while a namespace-wide list of its namespace
    is in flight, or while ``share_after`` requests of its namespace are, shares that list
    (starting it if need be) instead of sending its own request (module doc)."""

    def __init__(
        self,
        getter: JsonGetter,
        *,
        share_namespace_reads: bool = False,
        share_after: int = SHARE_AFTER_IN_FLIGHT,
    ) -> None:
        self._getter = getter
        self._share = share_namespace_reads
        self._share_after = share_after
        self._reading: collections.Counter[str] = collections.Counter()
        """Requests in flight, by namespace."""
        self._listings: dict[str, asyncio.Future[NamespaceListing]] = {}
        """The namespace-wide list in flight, by namespace."""

    async def _get(self, namespace: str, selector: str) -> Mapping[str, Any]:
        """Upstream's read: the pods ``selector`` selects."""
        path = f"{RESOURCE_METRICS_PREFIX}/namespaces/{namespace}/pods"
        params: Mapping[str, str] = {"labelSelector": selector} if selector else {}
        self._reading[namespace] += 1
        try:
            return await self._getter.get(path, params=params)
        finally:
            self._reading[namespace] -= 1
            if not self._reading[namespace]:
                del self._reading[namespace]

    async def _list(self, namespace: str) -> NamespaceListing:
        return NamespaceListing(await self._get(namespace, ""))

    def _listed(self, namespace: str, listing: asyncio.Future[NamespaceListing]) -> None:
        if self._listings.get(namespace) is listing:
            del self._listings[namespace]  # answers nobody who starts later
        if not listing.cancelled():
            listing.exception()  # retrieved: its waiters may all be gone

    async def _shared_read(
        self, resource: str, namespace: str, *, selector: str, container: str
    ) -> _Shaped | None:
        """The shaped answer from the namespace-wide list in flight; ``None`` when this read
        takes its own request (few reads of its namespace in flight, or not answerable here)."""
        listing = self._listings.get(namespace)
        if listing is None and self._reading[namespace] < self._share_after:
            return None  # upstream's request
        try:
            parsed = parse_selector(selector)
        except SelectorError:
            return None  # the API server words the error
        if listing is None:
            listing = asyncio.ensure_future(self._list(namespace))
            listing.add_done_callback(functools.partial(self._listed, namespace))
            self._listings[namespace] = listing
        return (await asyncio.shield(listing)).select(parsed, resource, container=container)

    async def get_resource_metric(
        self, resource: str, namespace: str, *, selector: str, container: str = ""
    ) -> PodMetricsObservation | MetricFetchError:
        """Per-pod usage of ``resource`` (milli-units) for the pods ``selector`` selects."""
        try:
            shaped: _Shaped | None = None
            if self._share and selector:
                shaped = await self._shared_read(
                    resource, namespace, selector=selector, container=container
                )
            if shaped is None:
                document = await self._get(namespace, selector)
                try:
                    shaped = shape_raw_pod_metrics(document, resource, container=container)
                except _IrregularError:
                    return self._shape_validated(document, resource, container=container)
        except Exception as error:  # noqa: BLE001 - every failure of the call is reported
            return MetricFetchError(
                f"unable to fetch metrics from resource metrics API: {error_text(error)}"
            )
        samples, timestamp, count = shaped
        if not count:
            return MetricFetchError("no metrics returned from resource metrics API")
        return PodMetricsObservation(metrics=samples, timestamp=timestamp)

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
