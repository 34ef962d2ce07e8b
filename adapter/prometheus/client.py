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
- Requests go through one shared ``aiohttp.ClientSession`` per client (keep-alive connections,
  at most ``max_concurrent_requests`` of them, TLS from ``TLSConfig``, no cookies, no proxy from
  the environment). It follows no redirects (a ``3xx`` is an "unknown response code" error naming
  its ``Location``; Go's client follows up to 10) and decodes ``gzip`` and ``deflate`` answers
  only.
- Answers are asked for uncompressed (``Accept-Encoding: identity``; Go's client, and so
  upstream, asks for gzip): Prometheus usually sits next to the adapter, and compressing a
  100-pod answer costs Prometheus about a quarter of its CPU per query (``bench/adapter.py``). A
  ``headers`` entry for ``Accept-Encoding`` (``--prometheus-header Accept-Encoding=gzip``)
  overrides it.
- Requests carry ``User-Agent: hpa-adapter`` unless an extra header sets one (upstream sends Go's
  ``Go-http-client/1.1``); extra headers whose value holds CR, LF or NUL are refused when the
  ``PrometheusConnection`` is built (``check_header``), never sent.
"""

from __future__ import annotations

import asyncio
import base64
import zlib
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, NamedTuple, Self
from urllib.parse import quote_plus, urlencode

import aiohttp
import orjson
import structlog
import yarl
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
    SeriesList,
    decode_instant,
    decode_matrix,
    decode_part,
    decode_series,
    series_selectors,
    split_series_answer,
    split_vector_answer,
)
from adapter.prometheus.singleflight import SingleFlight
from adapter.prometheus.slicing import SLICE_BYTES, between_slices, collector_paused
from adapter.rules import Series

log = structlog.get_logger(__name__)

QUERY_PATH = "/api/v1/query"
QUERY_RANGE_PATH = "/api/v1/query_range"
SERIES_PATH = "/api/v1/series"
_JSON_STATUSES = frozenset({400, 422, 503})
USER_AGENT = "hpa-adapter"
_ENCODED_CACHE_SIZE = 256

Params = tuple[tuple[str, str], ...]


class HttpResponse(NamedTuple):
    """A complete answer: its status, headers (case-insensitive names) and raw body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class BaseURL(NamedTuple):
    """Where requests go: the origin (scheme, host, port), the path prefix, the user name and
    password of the URL (sent as basic auth), and how messages show it (without credentials)."""

    origin: str
    path_prefix: str
    username: str | None
    password: str | None
    display: str

    @classmethod
    def parse(cls, url: str) -> BaseURL:
        """``http(s)://[user[:password]@]host[:port][/prefix]``; ``ValueError`` otherwise."""
        try:
            parsed = yarl.URL(url)
            port = parsed.port  # a bad port raises ValueError
        except ValueError as error:
            raise ValueError(f"{error} in {url!r}") from None
        if parsed.scheme not in ("http", "https"):
            raise ValueError(f"unsupported URL scheme {parsed.scheme!r} in {url!r}")
        if not parsed.host:
            raise ValueError(f"no host in {url!r}")
        if parsed.query_string or parsed.fragment:
            raise ValueError(f"a query or fragment in the base URL {url!r}")
        host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
        prefix = parsed.raw_path.rstrip("/")
        return cls(
            str(parsed.origin()),
            prefix,
            parsed.user,
            parsed.password,
            f"{parsed.scheme}://{host}:{port}{prefix}",
        )


LARGE_ANSWER_BYTES = 1 << 20
"""Series and range answers this large or larger are decoded in a worker thread."""
SLICED_ANSWER_BYTES = 4 * SLICE_BYTES
"""Instant answers this large or larger (256 KiB, about 2,500 samples) are decoded a slice at a
time on the event loop (``adapter.prometheus.slicing``): decoded whole, an answer just under
1 MiB (10,000 samples, a batch of 10 namespaces of 1,000 pods) held the loop for 60 ms."""


def _decode_answer(
    envelope: Callable[..., Any],
    path: str,
    response: Any,
    budget_seconds: float,
    decode: Callable[[Any], Any],
) -> Any:
    return decode(envelope(path, response, budget_seconds=budget_seconds))


def _decode_instant(data: Any) -> InstantResult:
    return decode_instant(data, endpoint=QUERY_PATH)


def _decode_matrix(data: Any) -> list[RangeSeries]:
    return decode_matrix(data, endpoint=QUERY_RANGE_PATH)


def _decode_series(data: Any) -> Sequence[Series]:
    if isinstance(data, SeriesList):
        return data
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
            self._base: BaseURL | None = BaseURL.parse(connection.url)
            self._url_error = ""
        except ValueError as error:
            self._base, self._url_error = None, str(error)
        self._display_url = self._base.display if self._base is not None else connection.url
        self._url_authorization: str | None = None
        if self._base is not None and self._base.username is not None:
            raw = f"{self._base.username}:{self._base.password or ''}"
            self._url_authorization = "Basic " + base64.b64encode(raw.encode()).decode("ascii")
        self._session: aiohttp.ClientSession | None = None
        self._encoded: dict[str, str] = {}
        self._semaphore = asyncio.Semaphore(connection.max_concurrent_requests)
        self._flights: SingleFlight[tuple[str, str, Params, bool], Any] = SingleFlight()
        self.metrics = ClientMetrics(registry if registry is not None else CollectorRegistry())

    def _static_headers(self) -> dict[str, str]:
        """The headers sent with every request: the connection's, then our defaults."""
        headers = dict(self.connection.headers)
        names = {name.lower() for name in headers}
        if "accept-encoding" not in names:
            headers["Accept-Encoding"] = "identity"
        if "user-agent" not in names:
            headers["User-Agent"] = USER_AGENT
        return headers

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
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self, path: str) -> tuple[aiohttp.ClientSession, BaseURL]:
        """The shared session (opened on first use, inside the running loop) and the base URL."""
        if self._base is None:
            raise PrometheusConnectionError(
                f"cannot reach Prometheus at {self._display_url}: {self._url_error}",
                endpoint=path,
            )
        if self._session is None:
            tls = self.connection.tls
            try:
                context = tls.ssl_context() if tls is not None else None
            except (OSError, ValueError) as error:
                raise PrometheusConnectionError(
                    f"cannot set up TLS for Prometheus at {self._display_url}: {error}",
                    endpoint=path,
                ) from error
            connector = aiohttp.TCPConnector(
                ssl=context if context is not None else True,
                limit=self.connection.max_concurrent_requests,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers=self._static_headers(),
                timeout=aiohttp.ClientTimeout(total=None),  # the caller's deadline governs
                auto_decompress=False,  # decoded in _body, which names what it cannot decode
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
            )
        return self._session, self._base

    # ------------------------------------------------------------------ API

    async def query(
        self,
        query: str,
        *,
        time_seconds: float | None = None,
        timeout_seconds: float | None = None,
        in_parts: bool = False,
    ) -> InstantResult:
        """``Query``: an instant query (at Prometheus's now unless ``time_seconds`` is given).

        in_parts: a large vector (``SLICED_ANSWER_BYTES``) comes back with its leading samples
        undecoded (``InstantResult.parts``), for a caller that decodes and uses them a part at
        a time, so that they never all live at once."""
        params: list[tuple[str, str]] = [("query", query)]
        if time_seconds is not None:
            params.append(("time", format_seconds(time_seconds)))
        result: InstantResult = await self._call(
            QUERY_PATH,
            tuple(params),
            timeout_seconds=timeout_seconds,
            decode=_decode_instant,
            sliced=True,
            in_parts=in_parts,
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
    ) -> Sequence[Series]:
        """``Series``: the series matching any of ``matches`` in the interval (a large answer is
        a ``SeriesList``, decoded a piece at a time when read)."""
        params = [("match[]", selector) for selector in series_selectors(matches)]
        if start_seconds is not None:
            params.append(("start", format_seconds(start_seconds)))
        if end_seconds is not None:
            params.append(("end", format_seconds(end_seconds)))
        found: Sequence[Series] = await self._call(
            SERIES_PATH, tuple(params), timeout_seconds=timeout_seconds, decode=_decode_series
        )
        return found if isinstance(found, SeriesList) else list(found)

    # ------------------------------------------------------------------ plumbing

    async def _call(
        self,
        path: str,
        params: Params,
        *,
        timeout_seconds: float | None,
        decode: Callable[[Any], Any],
        sliced: bool = False,
        in_parts: bool = False,
    ) -> Any:
        """The decoded answer; the HTTP request and the decoding are shared by coalesced
        callers (the decoded values are immutable). ``sliced``: an instant query's answer, which
        when large is decoded a slice at a time, or left in parts with ``in_parts``."""
        timeout = self.connection.timeout_seconds if timeout_seconds is None else timeout_seconds
        if timeout <= 0:
            raise ValueError("timeout_seconds must be positive")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        key = (self.connection.method, path, params, in_parts)

        async def fetch() -> Any:
            return await self._request(
                path,
                params,
                deadline=deadline,
                budget_seconds=timeout,
                decode=decode,
                sliced=sliced,
                in_parts=in_parts,
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
        self,
        path: str,
        params: Params,
        *,
        deadline: float,
        budget_seconds: float,
        decode: Callable[[Any], Any],
        sliced: bool = False,
        in_parts: bool = False,
    ) -> Any:
        """The answer, decoded by ``decode``. An instant answer (``sliced``) of
        ``SLICED_ANSWER_BYTES`` or more is decoded a slice at a time on the event loop (a
        batched evaluation's: ``_decode_instant_in_slices``); another answer of
        ``LARGE_ANSWER_BYTES`` or more in a worker thread (a relist's)."""
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
                if sliced and len(response.body) >= SLICED_ANSWER_BYTES:
                    return await self._decode_instant_in_slices(
                        path, response, budget_seconds, in_parts=in_parts
                    )
                if len(response.body) >= LARGE_ANSWER_BYTES:
                    return await asyncio.to_thread(
                        _decode_answer, self._decode, path, response, budget_seconds, decode
                    )
                return decode(self._decode(path, response, budget_seconds=budget_seconds))
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
        session, base = self._http(path)
        headers: dict[str, str] = {}
        authorization = self._credentials.authorization() or self._url_authorization
        if authorization is not None:
            if "\r" in authorization or "\n" in authorization:
                raise PrometheusConnectionError(
                    "the Prometheus credentials contain a line break", endpoint=path
                )
            headers["Authorization"] = authorization
        target = base.origin + base.path_prefix + path
        encoded = self._encode(params)
        body: bytes | None = None
        if self.connection.method == "POST":
            body = encoded.encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            target += "?" + encoded
        try:
            async with session.request(
                self.connection.method,
                yarl.URL(target, encoded=True),
                data=body,
                headers=headers,
                allow_redirects=False,
            ) as response:
                return HttpResponse(response.status, response.headers, await response.read())
        except (aiohttp.ClientError, OSError) as error:
            reason = str(error) or type(error).__name__
            raise PrometheusConnectionError(
                f"cannot reach Prometheus at {self._display_url}: {reason}", endpoint=path
            ) from error

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

    async def _decode_instant_in_slices(
        self, path: str, response: HttpResponse, budget_seconds: float, *, in_parts: bool
    ) -> InstantResult:
        """``decode_instant`` of a large answer, a part (``split_vector_answer``) per slice of
        the event loop (``adapter.prometheus.slicing``); with ``in_parts`` the envelope alone,
        the parts left to the caller."""
        body = self._checked_body(path, response)
        parts, envelope = split_vector_answer(body, part_bytes=SLICE_BYTES)
        samples = []
        if not in_parts:
            for part in parts:
                with collector_paused():
                    samples.extend(decode_part(part, endpoint=path))
                await between_slices()
        with collector_paused():
            data = self._envelope_data(
                path, response.status, envelope, budget_seconds=budget_seconds
            )
            rest = decode_instant(data, endpoint=path)
        if not parts:
            return rest
        if rest.result_type != "vector":
            raise PrometheusResponseError("a vector answer without its result type", endpoint=path)
        if in_parts:
            return InstantResult("vector", rest.samples, tuple(parts))
        samples.extend(rest.samples)
        return InstantResult("vector", tuple(samples))

    @classmethod
    def _decode(cls, path: str, response: HttpResponse, *, budget_seconds: float) -> Any:
        body = cls._checked_body(path, response)
        split = split_series_answer(body, endpoint=path) if path == SERIES_PATH else None
        if split is not None:
            body = split[0]
        data = cls._envelope_data(path, response.status, body, budget_seconds=budget_seconds)
        if split is not None and data == []:
            return split[1]
        return data

    @classmethod
    def _checked_body(cls, path: str, response: HttpResponse) -> bytes:
        """The body of an answer whose status carries the API's JSON envelope."""
        status = response.status
        if status // 100 != 2 and status not in _JSON_STATUSES:
            text = response.body[:200].decode("utf-8", "replace").strip()
            location = response.headers.get("location")
            if 300 <= status < 400 and location is not None:
                text = f"redirect to {location} (not followed) {text}".strip()
            raise PrometheusHTTPError(status, text, endpoint=path)
        return cls._body(path, response)

    @staticmethod
    def _json(path: str, status: int, body: bytes) -> Any:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise PrometheusResponseError(
                f"HTTP {status}: answer is not JSON: {exc}", endpoint=path
            ) from None

    @classmethod
    def _envelope_data(cls, path: str, status: int, body: bytes, *, budget_seconds: float) -> Any:
        """The envelope's ``data``; an ``error`` envelope raises its typed error."""
        envelope = cls._json(path, status, body)
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
