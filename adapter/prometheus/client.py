"""An asyncio client for the Prometheus HTTP API: instant and range queries, series.

Upstream counterpart: prometheus-adapter ``pkg/client/api.go`` (``httpAPIClient.Do``,
``queryClient.Query``/``QueryRange``/``Series``, ``timeoutFromContext``) and
``pkg/client/metrics/metrics.go`` (the request duration histogram, same name).

As upstream: status codes other than 2xx, 400, 422 and 503 are "unknown response code" errors
(those four carry the API's JSON envelope); an envelope with ``status: error`` becomes a typed
error with Prometheus's ``errorType`` and message; the caller's deadline is sent as ``timeout``.

Deliberate deviations:

- ``timeout`` is the time *left* until the deadline (upstream computes ``now - deadline``, a
  negative duration), and the deadline is also enforced locally: a caller never waits longer.
- At most ``max_concurrent_requests`` requests are in flight; the rest queue within their deadline.
- Concurrent identical requests (same endpoint and parameters, ``timeout`` aside) are coalesced
  into one HTTP request (``SingleFlight``), decoded once for all of them. Joiners share the
  first caller's request and so its deadline toward Prometheus, while each still stops waiting
  at its own deadline.
- Cancelling a caller cancels the HTTP request unless other callers still wait for it.
- Instant queries send no ``time`` unless asked: Prometheus evaluates at its own "now", and
  identical concurrent queries stay identical (and coalesce).
- Requests go through a small keep-alive HTTP/1.1 transport of our own
  (``adapter.prometheus.transport``) rather than aiohttp's client: the same connections, TLS and
  headers at a fraction of the CPU per request. It follows no redirects (a ``3xx`` is an
  "unknown response code" error naming its ``Location``; Go's client follows up to 10) and
  decodes ``gzip`` and ``deflate`` answers only.
- Answers are asked for uncompressed (``Accept-Encoding: identity``; Go's client, and so
  upstream, asks for gzip): Prometheus usually sits next to the adapter, and compressing a
  100-pod answer cost Prometheus about a quarter of its CPU per query
  (docs/performance-adapter.md). A ``headers`` entry for ``Accept-Encoding`` (``--prometheus-header
  Accept-Encoding=gzip``) overrides it.
"""

from __future__ import annotations

import asyncio
import base64
import zlib
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote_plus, unquote, urlencode

import orjson
import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from adapter.prometheus.connection import Credentials, PrometheusConnection
from adapter.prometheus.errors import (
    ERROR_TIMEOUT,
    PrometheusAPIError,
    PrometheusConnectionError,
    PrometheusError,
    PrometheusHTTPError,
    PrometheusResponseError,
    PrometheusTimeoutError,
)
from adapter.prometheus.results import (
    InstantResult,
    RangeSeries,
    decode_instant,
    decode_matrix,
    decode_series,
    series_selectors,
)
from adapter.prometheus.singleflight import SingleFlight
from adapter.prometheus.transport import HttpResponse, HttpTransport, HttpTransportError, Origin
from adapter.rules import Series

log = structlog.get_logger(__name__)

QUERY_PATH = "/api/v1/query"
QUERY_RANGE_PATH = "/api/v1/query_range"
SERIES_PATH = "/api/v1/series"
_JSON_STATUSES = frozenset({400, 422, 503})
USER_AGENT = "hpa-adapter"
_ENCODED_CACHE_SIZE = 256

Params = tuple[tuple[str, str], ...]


def _decode_instant(data: Any) -> InstantResult:
    return decode_instant(data, endpoint=QUERY_PATH)


def _decode_matrix(data: Any) -> list[RangeSeries]:
    return decode_matrix(data, endpoint=QUERY_RANGE_PATH)


def _decode_series(data: Any) -> list[Series]:
    return decode_series(data, endpoint=SERIES_PATH)


class ClientMetrics:
    """The client's own metrics, on an injected registry. Label values are closed sets: ``path``
    is one of the three API paths, ``error`` one of Prometheus's error types, ``bad_response``,
    ``timeout`` or ``connection``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.request_duration = Histogram(
            "prometheus_adapter_prometheus_client_request_duration_seconds",
            "Prometheus client query latency in seconds, by API path.",
            ["path"],
            registry=registry,
        )
        self.errors = Counter(
            "prometheus_adapter_prometheus_client_errors_total",
            "Prometheus requests that failed, by API path and error type.",
            ["path", "error"],
            registry=registry,
        )
        self.coalesced = Counter(
            "prometheus_adapter_prometheus_client_coalesced_total",
            "Calls that shared an identical request already in flight, by API path.",
            ["path"],
            registry=registry,
        )
        self.in_flight = Gauge(
            "prometheus_adapter_prometheus_client_in_flight_requests",
            "HTTP requests to Prometheus in flight.",
            registry=registry,
        )


def format_seconds(value: float) -> str:
    """A Unix time or duration as Prometheus's API accepts it (float seconds, ms precision)."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def format_timeout(seconds: float) -> str:
    """The ``timeout`` parameter: whole milliseconds, at least 1 (``model.ParseDuration``)."""
    return f"{max(1, int(seconds * 1000))}ms"


class PrometheusClient:
    """One Prometheus endpoint. Use ``async with`` (or ``close()``) to release connections."""

    def __init__(
        self,
        connection: PrometheusConnection,
        *,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.connection = connection
        self._credentials = Credentials(connection)
        try:
            self._origin: Origin | None = Origin.parse(connection.url)
            self._url_error = ""
        except ValueError as error:
            self._origin, self._url_error = None, str(error)
        self._display_url = self._origin.display() if self._origin is not None else connection.url
        self._url_authorization: str | None = None
        if self._origin is not None and self._origin.username is not None:
            raw = f"{unquote(self._origin.username)}:{unquote(self._origin.password or '')}"
            self._url_authorization = "Basic " + base64.b64encode(raw.encode()).decode("ascii")
        self._head_fields = self._static_head_fields()
        self._transport: HttpTransport | None = None
        self._encoded: dict[str, str] = {}
        self._semaphore = asyncio.Semaphore(connection.max_concurrent_requests)
        self._flights: SingleFlight[tuple[str, str, Params], Any] = SingleFlight()
        self.metrics = ClientMetrics(registry if registry is not None else CollectorRegistry())

    def _static_head_fields(self) -> str:
        """The header lines sent with every request (each ending in CRLF)."""
        headers = dict(self.connection.headers)
        names = {name.lower() for name in headers}
        if "accept-encoding" not in names:
            headers["Accept-Encoding"] = "identity"
        if "user-agent" not in names:
            headers["User-Agent"] = USER_AGENT
        if "host" not in names and self._origin is not None:
            headers = {"Host": self._origin.host_header, **headers}
        return "".join(f"{name}: {value}\r\n" for name, value in headers.items())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._transport is not None:
            await self._transport.close()
            self._transport = None

    def _http(self, path: str) -> HttpTransport:
        if self._transport is None:
            if self._origin is None:
                raise PrometheusConnectionError(
                    f"cannot reach Prometheus at {self._display_url}: {self._url_error}",
                    endpoint=path,
                )
            tls = self.connection.tls
            try:
                context = tls.ssl_context() if tls is not None else None
            except (OSError, ValueError) as error:
                raise PrometheusConnectionError(
                    f"cannot set up TLS for Prometheus at {self._display_url}: {error}",
                    endpoint=path,
                ) from error
            self._transport = HttpTransport(self._origin, ssl_context=context)
        return self._transport

    # ------------------------------------------------------------------ API

    async def query(
        self,
        query: str,
        *,
        time_seconds: float | None = None,
        timeout_seconds: float | None = None,
    ) -> InstantResult:
        """``Query``: an instant query (at Prometheus's now unless ``time_seconds`` is given)."""
        params: list[tuple[str, str]] = [("query", query)]
        if time_seconds is not None:
            params.append(("time", format_seconds(time_seconds)))
        result: InstantResult = await self._call(
            QUERY_PATH, tuple(params), timeout_seconds=timeout_seconds, decode=_decode_instant
        )
        return result

    async def query_range(
        self,
        query: str,
        *,
        start_seconds: float,
        end_seconds: float,
        step_seconds: float,
        timeout_seconds: float | None = None,
    ) -> list[RangeSeries]:
        """``QueryRange``: a range query from ``start`` to ``end`` every ``step`` seconds."""
        if step_seconds <= 0:
            raise ValueError("step_seconds must be positive")
        params = (
            ("query", query),
            ("start", format_seconds(start_seconds)),
            ("end", format_seconds(end_seconds)),
            ("step", format_seconds(step_seconds)),
        )
        series: list[RangeSeries] = await self._call(
            QUERY_RANGE_PATH, params, timeout_seconds=timeout_seconds, decode=_decode_matrix
        )
        return list(series)

    async def series(
        self,
        matches: Sequence[str],
        *,
        start_seconds: float | None = None,
        end_seconds: float | None = None,
        timeout_seconds: float | None = None,
    ) -> list[Series]:
        """``Series``: the series matching any of ``matches`` in the interval."""
        params = [("match[]", selector) for selector in series_selectors(matches)]
        if start_seconds is not None:
            params.append(("start", format_seconds(start_seconds)))
        if end_seconds is not None:
            params.append(("end", format_seconds(end_seconds)))
        found: list[Series] = await self._call(
            SERIES_PATH, tuple(params), timeout_seconds=timeout_seconds, decode=_decode_series
        )
        return list(found)

    # ------------------------------------------------------------------ plumbing

    async def _call(
        self,
        path: str,
        params: Params,
        *,
        timeout_seconds: float | None,
        decode: Callable[[Any], Any],
    ) -> Any:
        """The decoded answer; the HTTP request and the decoding are shared by coalesced
        callers (the decoded values are immutable)."""
        timeout = self.connection.timeout_seconds if timeout_seconds is None else timeout_seconds
        if timeout <= 0:
            raise ValueError("timeout_seconds must be positive")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        key = (self.connection.method, path, params)

        async def fetch() -> Any:
            return decode(
                await self._request(path, params, deadline=deadline, budget_seconds=timeout)
            )

        try:
            async with asyncio.timeout_at(deadline):
                data, shared = await self._flights.do(key, fetch, name=f"prometheus {path}")
        except TimeoutError:
            error = PrometheusTimeoutError(
                f"no answer from Prometheus within {timeout:g}s",
                endpoint=path,
                source="client",
                timeout_seconds=timeout,
            )
            self.metrics.errors.labels(path, ERROR_TIMEOUT).inc()
            log.warning("prometheus_request_failed", path=path, error=ERROR_TIMEOUT)
            raise error from None
        if shared:
            self.metrics.coalesced.labels(path).inc()
        return data

    async def _request(
        self, path: str, params: Params, *, deadline: float, budget_seconds: float
    ) -> Any:
        loop = asyncio.get_running_loop()
        async with self._semaphore:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError
            sent = (*params, ("timeout", format_timeout(remaining)))
            self.metrics.in_flight.inc()
            started = loop.time()
            try:
                response = await self._send(path, sent)
                return self._decode(path, response, budget_seconds=budget_seconds)
            except PrometheusError as exc:
                self.metrics.errors.labels(path, getattr(exc, "error_type", "unknown")).inc()
                log.warning(
                    "prometheus_request_failed",
                    path=path,
                    error=getattr(exc, "error_type", "unknown"),
                    message=exc.message,
                )
                raise
            finally:
                self.metrics.in_flight.dec()
                self.metrics.request_duration.labels(path).observe(loop.time() - started)

    def _encode(self, params: Params) -> str:
        """``application/x-www-form-urlencoded`` parameters. A value's encoding is kept for
        reuse: the same PromQL (about 1 kB for 100 pods, 80 µs to encode) goes out with every
        request for the same objects."""
        cache = self._encoded
        parts = []
        for name, value in params:
            encoded = cache.get(value)
            if encoded is None:
                if len(cache) >= _ENCODED_CACHE_SIZE:
                    cache.clear()
                encoded = cache[value] = quote_plus(value)
            parts.append(f"{name}={encoded}" if name.isalnum() else urlencode(((name, value),)))
        return "&".join(parts)

    async def _send(self, path: str, params: Params) -> HttpResponse:
        transport = self._http(path)
        authorization = self._credentials.authorization() or self._url_authorization
        fields = self._head_fields
        if authorization is not None:
            if "\r" in authorization or "\n" in authorization:
                raise PrometheusConnectionError(
                    "the Prometheus credentials contain a line break", endpoint=path
                )
            fields += f"Authorization: {authorization}\r\n"
        target = transport.origin.path_prefix + path
        encoded = self._encode(params)
        if self.connection.method == "POST":
            body = encoded.encode()
            head = (
                f"POST {target} HTTP/1.1\r\n{fields}"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            data = head.encode() + body
        else:
            data = f"GET {target}?{encoded} HTTP/1.1\r\n{fields}\r\n".encode()
        try:
            response = await transport.request(data)
        except HttpTransportError as error:
            raise PrometheusConnectionError(
                f"cannot reach Prometheus at {self._display_url}: {error}", endpoint=path
            ) from error
        return response

    @staticmethod
    def _body(path: str, response: HttpResponse) -> bytes:
        """The body without its ``Content-Encoding`` (sent only when a header asked for it)."""
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("identity", ""):
            return response.body
        try:
            if encoding in ("gzip", "x-gzip"):
                return zlib.decompress(response.body, 16 + zlib.MAX_WBITS)
            if encoding == "deflate":
                try:
                    return zlib.decompress(response.body)
                except zlib.error:
                    return zlib.decompress(response.body, -zlib.MAX_WBITS)  # raw deflate
        except zlib.error as error:
            raise PrometheusResponseError(
                f"HTTP {response.status}: cannot decode the {encoding} answer: {error}",
                endpoint=path,
            ) from None
        raise PrometheusResponseError(
            f"HTTP {response.status}: unsupported Content-Encoding {encoding!r}", endpoint=path
        )

    @classmethod
    def _decode(cls, path: str, response: HttpResponse, *, budget_seconds: float) -> Any:
        status = response.status
        if status // 100 != 2 and status not in _JSON_STATUSES:
            text = response.body[:200].decode("utf-8", "replace").strip()
            location = response.headers.get("location")
            if 300 <= status < 400 and location is not None:
                text = f"redirect to {location} (not followed) {text}".strip()
            raise PrometheusHTTPError(status, text, endpoint=path)
        body = cls._body(path, response)
        try:
            envelope = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise PrometheusResponseError(
                f"HTTP {status}: answer is not JSON: {exc}", endpoint=path
            ) from None
        if not isinstance(envelope, dict):
            raise PrometheusResponseError(f"HTTP {status}: answer is not an object", endpoint=path)
        if envelope.get("status") == "error":
            error_type = str(envelope.get("errorType", ""))
            message = str(envelope.get("error", ""))
            if error_type == ERROR_TIMEOUT:
                raise PrometheusTimeoutError(
                    f"Prometheus timed out: {message}",
                    endpoint=path,
                    source="server",
                    timeout_seconds=budget_seconds,
                )
            raise PrometheusAPIError(error_type, message, endpoint=path, status=status)
        if envelope.get("status") != "success" or "data" not in envelope:
            raise PrometheusResponseError(
                f"HTTP {status}: answer has neither data nor an error", endpoint=path
            )
        return envelope["data"]
