"""The custom metrics client: ``custom.metrics.k8s.io``, v1beta2 preferred, v1beta1 understood.

Upstream counterparts:

* ``customMetricsClient.GetRawMetric`` / ``GetObjectMetric`` of
  ``pkg/controller/podautoscaler/metrics/client.go`` (per-pod shaping, the 60 s default window,
  the error texts ``unable to fetch metrics from custom metrics API: ...`` and ``no metrics
  returned from custom metrics API``, namespaces handled as a root-scoped object);
* ``k8s.io/metrics/pkg/client/custom_metrics``: ``multi_client.go`` (``NewForConfig``: every call
  goes to the client of the preferred version), ``discovery.go`` (``apiVersionsFromDiscovery``:
  the group's preferred version if we know it, else the first known version it serves, cached
  until invalidated; ``no custom metrics API (custom.metrics.k8s.io) registered``;
  ``no known available metric versions found``), ``versioned_client.go`` (paths
  ``namespaces/<ns>/<resource>/<name|*>/<metric>`` and ``namespaces/<ns>/metrics/<metric>``,
  ``labelSelector`` / ``metricLabelSelector`` parameters, exactly one item for a named object,
  ``unable to map kind <Kind.group> to resource: ...``) and ``converter.go`` (v1beta1 results
  converted to v1beta2: ``metricName`` -> ``metric.name``, ``window`` -> ``windowSeconds``).

Deliberate deviations:

* discovery reads the one group (``GET /apis/custom.metrics.k8s.io``) instead of every group
  (``/apis``); the answer is the same ``APIGroup``.
* kube-controller-manager invalidates the cached version every sync period
  (``PeriodicallyInvalidate``); here the cache expires after ``refresh_seconds`` on an injected
  monotonic clock, and a 404 answer to a metrics request also expires it (no sooner than
  ``min_refresh_seconds`` after the last discovery), so an adapter that stops serving v1beta2
  is followed to v1beta1 within one sync instead of one period later.
* kind -> resource mapping goes through the small :class:`ResourceResolver` port (the app wires
  the API server's discovery into it); Pod metrics use ``pods`` without a lookup.
* errors are values (:class:`~hpa.core.decision.MetricFetchError`), not Go errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pydantic import ValidationError

from hpa.api.metrics import MetricValueListV1Beta1, MetricValueListV1Beta2
from hpa.core.decision import MetricFetchError, ObjectMetricObservation, PodMetricsObservation
from hpa.core.quantity import QuantityError, milli_value
from hpa.core.replicas import PodMetric
from hpa.core.spec import CrossVersionObjectReference
from hpa.metrics.transport import JsonGetter, error_code, error_text

__all__ = [
    "CUSTOM_METRICS_GROUP",
    "DEFAULT_METRIC_WINDOW_SECONDS",
    "METRIC_VERSIONS",
    "CustomMetricsClient",
    "CustomMetricsVersions",
    "DiscoveryResourceResolver",
    "ResourceResolver",
]

CUSTOM_METRICS_GROUP = "custom.metrics.k8s.io"
METRIC_VERSIONS = ("v1beta2", "v1beta1")
"""``MetricVersions``: the versions this client speaks, most preferred first."""
DEFAULT_METRIC_WINDOW_SECONDS = 60.0
"""``metricServerDefaultMetricWindow``: the window of a sample that does not report one."""
_PREFIX = f"/apis/{CUSTOM_METRICS_GROUP}"


class MetricsApiError(Exception):
    """A failure inside the custom metrics client (its text is upstream's ``err.Error()``)."""


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _discovery_path(api_version: str) -> str:
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version or 'v1'}"


class ResourceResolver(Protocol):
    """Kind -> qualified resource (``RESTMapper.RESTMapping(...).Resource.GroupResource()``)."""

    async def group_resource(self, api_version: str, kind: str) -> str:
        """``deployments.apps`` for ``apps/v1`` ``Deployment``; ``pods`` for ``v1`` ``Pod``.
        Raises ``LookupError`` when the kind is unknown."""
        ...


class DiscoveryResourceResolver:
    """A :class:`ResourceResolver` over ``/apis/<group>/<version>`` discovery, cached forever
    per group version (re-read once when a kind is missing, for CRDs installed later)."""

    def __init__(self, getter: JsonGetter) -> None:
        self._getter = getter
        self._cache: dict[str, dict[str, str]] = {}

    async def _discover(self, api_version: str) -> dict[str, str]:
        document = await self._getter.get(_discovery_path(api_version))
        group = _group_of(api_version)
        kinds: dict[str, str] = {}
        for resource in document.get("resources") or ():
            name = str(resource.get("name", ""))
            if not name or "/" in name:
                continue
            kinds.setdefault(str(resource.get("kind", "")), f"{name}.{group}" if group else name)
        self._cache[api_version] = kinds
        return kinds

    async def group_resource(self, api_version: str, kind: str) -> str:
        kinds = self._cache.get(api_version)
        if kinds is None or kind not in kinds:
            kinds = await self._discover(api_version)
        found = kinds.get(kind)
        if found is None:
            raise LookupError(f"no matches for kind {kind!r} in version {api_version!r}")
        return found


class CustomMetricsVersions:
    """``apiVersionsFromDiscovery``: the preferred custom metrics version, cached."""

    def __init__(
        self,
        getter: JsonGetter,
        *,
        monotonic: Callable[[], float],
        refresh_seconds: float = 15.0,
        min_refresh_seconds: float = 5.0,
    ) -> None:
        self._getter = getter
        self._monotonic = monotonic
        self._refresh_seconds = refresh_seconds
        self._min_refresh_seconds = min_refresh_seconds
        self._preferred: str | None = None
        self._discovered_at = 0.0
        self._stale = False
        self.discovery_count = 0

    def invalidate(self) -> None:
        """``Invalidate``: rediscover on the next call (rate-limited by ``min_refresh_seconds``)."""
        self._stale = True

    @staticmethod
    def choose_version(group: Mapping[str, Any]) -> str:
        """``chooseVersion``: the preferred version if known, else the first known served one."""
        known = {f"{CUSTOM_METRICS_GROUP}/{version}": version for version in METRIC_VERSIONS}
        preferred = str((group.get("preferredVersion") or {}).get("groupVersion") or "")
        if preferred in known:
            return known[preferred]
        for version in group.get("versions") or ():
            group_version = str(version.get("groupVersion") or "")
            if group_version in known:
                return known[group_version]
        raise MetricsApiError("no known available metric versions found")

    async def preferred_version(self) -> str:
        """``PreferredVersion``."""
        now = self._monotonic()
        age = now - self._discovered_at
        if self._preferred is not None and not (
            age >= self._refresh_seconds or (self._stale and age >= self._min_refresh_seconds)
        ):
            return self._preferred
        self.discovery_count += 1
        try:
            group = await self._getter.get(_PREFIX)
        except Exception as error:
            if error_code(error) == 404:
                raise MetricsApiError(
                    f"no custom metrics API ({CUSTOM_METRICS_GROUP}) registered"
                ) from error
            raise MetricsApiError(error_text(error)) from error
        self._preferred = self.choose_version(group)
        self._discovered_at = now
        self._stale = False
        return self._preferred


@dataclass(frozen=True, slots=True, kw_only=True)
class _Value:
    name: str
    timestamp: datetime | None
    window_seconds: float
    value_milli: int


def _values(document: Mapping[str, Any], version: str) -> list[_Value]:
    """``ConvertResultToVersion(..., v1beta2)``: the items as version-independent values."""
    values: list[_Value] = []
    try:
        if version == "v1beta1":
            for old in MetricValueListV1Beta1.from_dict(document).items:
                window = old.window_seconds
                values.append(
                    _Value(
                        name=old.described_object.name,
                        timestamp=old.timestamp,
                        window_seconds=DEFAULT_METRIC_WINDOW_SECONDS
                        if window is None
                        else float(window),
                        value_milli=milli_value(old.value),
                    )
                )
        else:
            for item in MetricValueListV1Beta2.from_dict(document).items:
                window = item.window_seconds
                values.append(
                    _Value(
                        name=item.described_object.name,
                        timestamp=item.timestamp,
                        window_seconds=DEFAULT_METRIC_WINDOW_SECONDS
                        if window is None
                        else float(window),
                        value_milli=milli_value(item.value),
                    )
                )
    except (ValidationError, QuantityError) as error:
        raise MetricsApiError(
            "the custom metrics API server didn't return a valid MetricValueList"
        ) from error
    return values


class CustomMetricsClient:
    """``GetRawMetric`` and ``GetObjectMetric`` through the aggregation layer."""

    def __init__(
        self,
        getter: JsonGetter,
        *,
        versions: CustomMetricsVersions,
        resolver: ResourceResolver,
    ) -> None:
        self._getter = getter
        self._versions = versions
        self._resolver = resolver

    async def _get(self, path: str, params: Mapping[str, str]) -> list[_Value]:
        version = await self._versions.preferred_version()
        try:
            document = await self._getter.get(f"{_PREFIX}/{version}{path}", params=params)
        except Exception as error:
            if error_code(error) == 404:
                self._versions.invalidate()
            raise MetricsApiError(error_text(error)) from error
        return _values(document, version)

    async def get_raw_metric(
        self, metric_name: str, namespace: str, *, selector: str, metric_selector: str
    ) -> PodMetricsObservation | MetricFetchError:
        """Per-pod values of ``metric_name`` for the pods ``selector`` selects."""
        params = {"labelSelector": selector, "metricLabelSelector": metric_selector}
        try:
            values = await self._get(
                f"/namespaces/{namespace}/pods/*/{metric_name}",
                {key: value for key, value in params.items() if value},
            )
        except MetricsApiError as error:
            return MetricFetchError(f"unable to fetch metrics from custom metrics API: {error}")
        if not values:
            return MetricFetchError("no metrics returned from custom metrics API")
        metrics = {
            value.name: PodMetric(
                value_milli=value.value_milli,
                timestamp=value.timestamp,
                window_seconds=value.window_seconds,
            )
            for value in values
        }
        return PodMetricsObservation(metrics=metrics, timestamp=values[0].timestamp)

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        *,
        described_object: CrossVersionObjectReference,
        metric_selector: str,
    ) -> ObjectMetricObservation | MetricFetchError:
        """The value of ``metric_name`` for one object (a namespace is root-scoped)."""
        params = {"metricLabelSelector": metric_selector} if metric_selector else {}
        group = _group_of(described_object.api_version)
        try:
            if described_object.kind == "Namespace" and group == "":
                path = f"/namespaces/{namespace}/metrics/{metric_name}"
            else:
                try:
                    resource = await self._resolver.group_resource(
                        described_object.api_version, described_object.kind
                    )
                except Exception as error:
                    group_kind = (
                        f"{described_object.kind}.{group}" if group else described_object.kind
                    )
                    raise MetricsApiError(
                        f"unable to map kind {group_kind} to resource: {error_text(error)}"
                    ) from error
                path = f"/namespaces/{namespace}/{resource}/{described_object.name}/{metric_name}"
            values = await self._get(path, params)
            if len(values) != 1:
                raise MetricsApiError(
                    f"the custom metrics API server returned {len(values)} results when we "
                    "asked for exactly one"
                )
        except MetricsApiError as error:
            return MetricFetchError(f"unable to fetch metrics from custom metrics API: {error}")
        return ObjectMetricObservation(
            value_milli=values[0].value_milli, timestamp=values[0].timestamp
        )
