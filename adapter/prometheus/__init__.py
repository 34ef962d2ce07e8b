"""The Prometheus HTTP API client of the metrics layer.

Upstream counterpart: prometheus-adapter ``pkg/client``. See ``adapter.prometheus.client`` for
the deliberate deviations (bounded concurrency, coalescing, cancellation, typed errors).
"""

from adapter.prometheus.client import ClientMetrics, PrometheusClient
from adapter.prometheus.connection import BasicAuth, PrometheusConnection, TLSConfig
from adapter.prometheus.errors import (
    PrometheusAPIError,
    PrometheusConnectionError,
    PrometheusError,
    PrometheusHTTPError,
    PrometheusResponseError,
    PrometheusTimeoutError,
)
from adapter.prometheus.results import InstantResult, RangeSeries, Sample

__all__ = [
    "BasicAuth",
    "ClientMetrics",
    "InstantResult",
    "PrometheusAPIError",
    "PrometheusClient",
    "PrometheusConnection",
    "PrometheusConnectionError",
    "PrometheusError",
    "PrometheusHTTPError",
    "PrometheusResponseError",
    "PrometheusTimeoutError",
    "RangeSeries",
    "Sample",
    "TLSConfig",
]
