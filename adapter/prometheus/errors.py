"""Typed errors of the Prometheus HTTP API client.

Upstream counterpart: prometheus-adapter ``pkg/client/api.go`` (``Error{Type, Msg}`` with
``ErrBadResponse`` for non-JSON answers and the API's own ``errorType``/``error`` otherwise).

Deliberate deviations: the HTTP status, the endpoint and a client-side deadline are kept as typed
fields instead of being folded into one string, and timeouts (ours, or Prometheus's ``timeout``
error type) are one class, so callers can tell "slow" from "broken" without parsing messages.
"""

from __future__ import annotations

# Prometheus's own error types (web/api/v1 ``errorType``), plus upstream client's "bad_response".
ERROR_TIMEOUT = "timeout"
ERROR_CANCELED = "canceled"
ERROR_EXECUTION = "execution"
ERROR_BAD_DATA = "bad_data"
ERROR_INTERNAL = "internal"
ERROR_UNAVAILABLE = "unavailable"
ERROR_NOT_FOUND = "not_found"
ERROR_BAD_RESPONSE = "bad_response"


class PrometheusError(Exception):
    """Any failure to get an answer from Prometheus. ``endpoint`` is the API path."""

    def __init__(self, message: str, *, endpoint: str) -> None:
        super().__init__(message)
        self.message = message
        self.endpoint = endpoint


class PrometheusAPIError(PrometheusError):
    """Prometheus answered ``{"status": "error", "errorType": ..., "error": ...}``."""

    def __init__(self, error_type: str, error: str, *, endpoint: str, status: int) -> None:
        super().__init__(f"{error_type}: {error} (HTTP {status})", endpoint=endpoint)
        self.error_type = error_type
        self.error = error
        self.status = status


class PrometheusHTTPError(PrometheusError):
    """An HTTP status whose body is not a Prometheus API answer (proxy errors, 401, 404, ...)."""

    def __init__(self, status: int, body: str, *, endpoint: str) -> None:
        super().__init__(f"unknown response code {status}: {body}", endpoint=endpoint)
        self.status = status
        self.body = body
        self.error_type = ERROR_BAD_RESPONSE


class PrometheusResponseError(PrometheusError):
    """A 2xx/4xx answer that is not valid JSON or not the shape the endpoint promises."""

    error_type = ERROR_BAD_RESPONSE


class PrometheusTimeoutError(PrometheusError):
    """The per-request deadline passed (``source="client"``) or Prometheus's query timed out
    (``source="server"``, error type ``timeout``)."""

    def __init__(self, message: str, *, endpoint: str, source: str, timeout_seconds: float) -> None:
        super().__init__(message, endpoint=endpoint)
        self.source = source
        self.timeout_seconds = timeout_seconds
        self.error_type = ERROR_TIMEOUT


class PrometheusConnectionError(PrometheusError):
    """No HTTP answer: connection refused, TLS handshake failure, reset."""

    error_type = "connection"
