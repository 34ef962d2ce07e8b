"""The thin async JSON client to the API server: raw paths in, orjson-parsed dicts out.

Upstream counterparts: client-go's ``rest.Config`` and ``rest.Request`` (``request.go``:
``Do``/``Watch``, the ``checkWait`` retry on 429/5xx, ``transformResponse`` turning a failed
response into ``errors.StatusError``), ``util/flowcontrol`` (the token-bucket QPS/burst limiter)
and ``tools/clientcmd``/``rest.InClusterConfig`` for loading credentials. We load credentials with
kubernetes_asyncio's config loaders and send requests on its ``ClientSession`` (which carries the
TLS context built from the loaded configuration), but never build its model objects.

Deliberate deviations:
- client-go retries 429/5xx only when the server sent ``Retry-After`` (up to 10 times); we retry
  429 honouring ``Retry-After`` (1 s when absent) and 5xx with capped exponential backoff and
  jitter, a bounded number of attempts. 400, 422 and every other 4xx are never retried. A policy
  with ``server_errors_need_retry_after`` retries 5xx only with ``Retry-After``, as client-go
  (the controller's metrics calls: a failing metrics API must show at the sync that saw it).
- transport errors (connection reset, timeout) are retried only for GET, PUT and DELETE: a PUT
  carries a resourceVersion precondition, so a retry after an ambiguous failure gets 409, never a
  second write. POST and PATCH are not retried on transport errors.
- the token bucket reserves a token and sleeps for the deficit, like ``rate.Limiter.Wait``;
  ``qps <= 0`` disables limiting.
- HTTP/1.1 carries one request per connection at a time (client-go multiplexes over one HTTP/2
  connection), so up to ``max_connections`` (default 100) are kept to the API server: a slow
  aggregated metrics call holds one connection, not the whole client. The proxy from the
  environment (``HTTPS_PROXY``/``NO_PROXY``) is resolved once when the client is loaded, not on
  every request (aiohttp's ``trust_env`` looks it up, and ``~/.netrc``, in a thread per request).
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import aiohttp
import aiohttp.helpers
import orjson
import structlog
import yaml
from prometheus_client import CollectorRegistry, Counter
from yarl import URL

from hpa.kube.clock import Clock, SystemClock
from hpa.kube.runtime import register_task_gauge

log = structlog.get_logger("hpa.kube.client")

Method = Literal["GET", "PUT", "POST", "PATCH", "DELETE"]
JsonObject = dict[str, Any]
PatchType = Literal["merge", "json", "strategic"]
PATCH_CONTENT_TYPES: dict[PatchType, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
AuthHeaders = Callable[[], Awaitable[Mapping[str, str]]]


# ---------------------------------------------------------------- errors


@dataclass(frozen=True, slots=True)
class ApiStatus:
    """The slim ``metav1.Status`` of a failed request: ``code``, ``reason``, ``message``."""

    code: int
    reason: str = ""
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, code: int) -> ApiStatus:
        details = data.get("details")
        return cls(
            code=int(data.get("code") or code),
            reason=str(data.get("reason") or ""),
            message=str(data.get("message") or ""),
            details=details if isinstance(details, dict) else {},
        )

    @classmethod
    def from_body(cls, body: bytes, *, code: int) -> ApiStatus:
        try:
            data = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            data = {}
        if isinstance(data, dict) and data.get("kind") == "Status":
            return cls.from_json(data, code=code)
        return cls(code=code, message=body.decode("utf-8", "replace")[:1024])


class ApiError(Exception):
    """A request the API server answered with a failure ``metav1.Status``."""

    def __init__(self, status: ApiStatus) -> None:
        super().__init__(f"{status.code} {status.reason}: {status.message}")
        self.status = status

    @property
    def code(self) -> int:
        return self.status.code

    @property
    def reason(self) -> str:
        return self.status.reason


class BadRequestError(ApiError):
    """400."""


class UnauthorizedError(ApiError):
    """401."""


class ForbiddenError(ApiError):
    """403."""


class NotFoundError(ApiError):
    """404."""


class ConflictError(ApiError):
    """409 ``Conflict``: a resourceVersion precondition failed."""


class AlreadyExistsError(ConflictError):
    """409 ``AlreadyExists`` on create."""


class GoneError(ApiError):
    """410 / ``Expired``: the resourceVersion is too old; relist."""


class InvalidError(ApiError):
    """422 ``Invalid``."""


class TooManyRequestsError(ApiError):
    """429, after the retries ran out."""


class ServerError(ApiError):
    """5xx, after the retries ran out."""


class TransportError(Exception):
    """The request never got an HTTP answer (connection refused, reset, timed out)."""


_ERRORS_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
}


def error_for_status(status: ApiStatus) -> ApiError:
    """The typed error for a failure status (``errors.FromObject``)."""
    if status.code == 409 and status.reason == "AlreadyExists":
        return AlreadyExistsError(status)
    if status.reason in ("Expired", "Gone") or "too old resource version" in status.message:
        return GoneError(status)
    if status.code >= 500:
        return ServerError(status)
    return _ERRORS_BY_CODE.get(status.code, ApiError)(status)


# ---------------------------------------------------------------- rate limiting


class TokenBucket:
    """Client-side QPS/burst limit (``flowcontrol.NewTokenBucketRateLimiterWithClock``).

    The bucket holds up to ``burst`` tokens and refills at ``qps`` tokens per second. ``reserve``
    takes a token now and returns how long the caller must wait for it (0 when one was spare).
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock) -> None:
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last_seconds: float | None = None

    def reserve(self) -> float:
        """Take one token; return the seconds to wait before using it."""
        if self.qps <= 0:
            return 0.0
        now = self._clock.monotonic()
        if self._last_seconds is not None:
            elapsed = max(0.0, now - self._last_seconds)
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last_seconds = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> float:
        """Wait for a token; return the seconds waited (for the latency metric and tests)."""
        wait_seconds = self.reserve()
        if wait_seconds > 0:
            await self._clock.sleep(wait_seconds)
        return wait_seconds


# ---------------------------------------------------------------- retry policy


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryDecision:
    retry: bool
    delay_seconds: float = 0.0


def parse_retry_after(value: str | None, *, now_epoch_seconds: float | None = None) -> float | None:
    """``Retry-After`` as seconds: an integer, or an HTTP date (needs ``now_epoch_seconds``)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    if now_epoch_seconds is None:
        return None
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, float(moment.timestamp()) - now_epoch_seconds)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Which failures to retry, and after how long.

    ``max_attempts`` counts every try (the first one too). 5xx and transport failures back off
    ``base_delay_seconds * 2**(attempt-1)`` capped at ``max_delay_seconds``, stretched by up to
    ``jitter_ratio`` (``wait.Jitter``). 429 waits ``Retry-After`` (capped), default 1 s.
    """

    max_attempts: int = 5
    base_delay_seconds: float = 0.2
    max_delay_seconds: float = 30.0
    jitter_ratio: float = 0.5
    default_retry_after_seconds: float = 1.0
    server_errors_need_retry_after: bool = False
    """Retry a 5xx only when it carries ``Retry-After`` (client-go's ``checkWait``)."""

    def backoff_seconds(self, attempt: int, *, rng: random.Random) -> float:
        delay = min(self.max_delay_seconds, self.base_delay_seconds * 2.0 ** max(0, attempt - 1))
        return delay * (1.0 + self.jitter_ratio * rng.random())

    def decide(
        self,
        status_code: int | None,
        attempt: int,
        *,
        method: Method,
        retry_after_seconds: float | None = None,
        rng: random.Random,
    ) -> RetryDecision:
        """Whether try number ``attempt`` (1-based), which failed with ``status_code`` (``None``
        for a transport failure), is tried again and after how long."""
        if attempt >= self.max_attempts:
            return RetryDecision(retry=False)
        if status_code is None:
            if method in ("GET", "PUT", "DELETE"):
                return RetryDecision(
                    retry=True, delay_seconds=self.backoff_seconds(attempt, rng=rng)
                )
            return RetryDecision(retry=False)
        if status_code == 429:
            wait = self.default_retry_after_seconds
            if retry_after_seconds is not None:
                wait = retry_after_seconds
            return RetryDecision(retry=True, delay_seconds=min(self.max_delay_seconds, wait))
        if status_code >= 500 and status_code != 501:
            if retry_after_seconds is not None:
                return RetryDecision(
                    retry=True,
                    delay_seconds=min(self.max_delay_seconds, retry_after_seconds),
                )
            if self.server_errors_need_retry_after:
                return RetryDecision(retry=False)
            return RetryDecision(retry=True, delay_seconds=self.backoff_seconds(attempt, rng=rng))
        return RetryDecision(retry=False)


# ---------------------------------------------------------------- the client


class ClientMetrics:
    """client-go's ``rest_client_requests_total{code,method}`` and a retries counter."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "rest_client_requests_total",
            "HTTP requests to the API server, by method and status code (0: no answer).",
            ["method", "code"],
            registry=registry,
        )
        self.retries = Counter(
            "rest_client_request_retries_total",
            "Requests to the API server tried again, by method and status code.",
            ["method", "code"],
            registry=registry,
        )
        self.rate_limiter_wait = Counter(
            "rest_client_rate_limiter_wait_seconds_total",
            "Seconds spent waiting for the client-side token bucket.",
            registry=registry,
        )


WatchEvent = JsonObject


class KubeClient:
    """GET/LIST/WATCH/PUT/PATCH/POST/DELETE on raw API paths, parsed with orjson."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        *,
        auth: AuthHeaders | None = None,
        limiter: TokenBucket | None = None,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        request_timeout_seconds: float = 30.0,
        user_agent: str = "hpa",
        server_hostname: str | None = None,
        metrics: ClientMetrics | None = None,
        on_close: Callable[[], Awaitable[None]] | None = None,
        proxy: str | None = None,
    ) -> None:
        """``proxy``: the HTTP proxy every request goes through (``None``: direct)."""
        self.base_url = base_url.rstrip("/")
        self._proxy = proxy
        self.clock = clock or SystemClock()
        self._session = session
        self._auth = auth
        self._limiter = limiter
        self._retry = retry or RetryPolicy()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._timeout = aiohttp.ClientTimeout(total=request_timeout_seconds)
        self._user_agent = user_agent
        self._server_hostname = server_hostname
        self._metrics = metrics
        self._on_close = on_close

    def with_retry(self, retry: RetryPolicy) -> KubeClient:
        """A client on the same session, credentials, limiter and metrics with another retry
        policy; closing it closes nothing."""

        async def keep_session() -> None:
            return None

        sibling = KubeClient(
            self._session,
            self.base_url,
            auth=self._auth,
            limiter=self._limiter,
            retry=retry,
            clock=self.clock,
            rng=self._rng,
            user_agent=self._user_agent,
            server_hostname=self._server_hostname,
            metrics=self._metrics,
            on_close=keep_session,
            proxy=self._proxy,
        )
        sibling._timeout = self._timeout
        return sibling

    async def close(self) -> None:
        if self._on_close is not None:
            await self._on_close()
        else:
            await self._session.close()

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if self._auth is not None:
            headers.update(await self._auth())
        return headers

    async def _wait_for_token(self) -> None:
        if self._limiter is not None:
            waited = await self._limiter.acquire()
            if self._metrics is not None and waited > 0:
                self._metrics.rate_limiter_wait.inc(waited)

    def _request_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self._server_hostname:
            kwargs["server_hostname"] = self._server_hostname
        if self._proxy:
            kwargs["proxy"] = self._proxy
        return kwargs

    async def request_bytes(
        self,
        method: Method,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> bytes:
        """One request with rate limiting and the retry policy; the body of the 2xx answer."""
        attempt = 0
        while True:
            attempt += 1
            await self._wait_for_token()
            headers = await self._headers(content_type)
            code: int | None
            retry_after: float | None = None
            try:
                async with self._session.request(
                    method,
                    self.base_url + path,
                    params=dict(params) if params else None,
                    data=body,
                    headers=headers,
                    timeout=self._timeout,
                    **self._request_kwargs(),
                ) as response:
                    payload = await response.read()
                    code = response.status
                    if code < 400:
                        self._count(method, code)
                        return payload
                    status = ApiStatus.from_body(payload, code=code)
                    retry_after = parse_retry_after(
                        response.headers.get("Retry-After"),
                        now_epoch_seconds=self.clock.now().timestamp(),
                    )
                    failure: Exception = error_for_status(status)
            except (aiohttp.ClientError, TimeoutError) as error:
                code = None
                failure = TransportError(f"{method} {path}: {type(error).__name__}: {error}")
            self._count(method, code or 0)
            decision = self._retry.decide(
                code, attempt, method=method, retry_after_seconds=retry_after, rng=self._rng
            )
            if not decision.retry:
                raise failure
            if self._metrics is not None:
                self._metrics.retries.labels(method=method, code=str(code or 0)).inc()
            log.info(
                "kube_request_retry",
                method=method,
                path=path,
                code=code,
                attempt=attempt,
                delay_seconds=round(decision.delay_seconds, 3),
            )
            await self.clock.sleep(decision.delay_seconds)

    def _count(self, method: str, code: int) -> None:
        if self._metrics is not None:
            self._metrics.requests.labels(method=method, code=str(code)).inc()

    async def request(
        self,
        method: Method,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> JsonObject:
        data = None if body is None else orjson.dumps(body)
        if data is not None and content_type is None:
            content_type = "application/json"
        payload = await self.request_bytes(
            method, path, params=params, body=data, content_type=content_type
        )
        if not payload:
            return {}
        parsed = orjson.loads(payload)
        return parsed if isinstance(parsed, dict) else {"items": parsed}

    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> JsonObject:
        return await self.request("GET", path, params=params)

    async def list(self, path: str, *, params: Mapping[str, str] | None = None) -> JsonObject:
        """A LIST (``kind: XList``); pagination is the caller's (``limit``/``continue``)."""
        return await self.request("GET", path, params=params)

    async def put(self, path: str, body: Mapping[str, Any]) -> JsonObject:
        return await self.request("PUT", path, body=body)

    async def post(self, path: str, body: Mapping[str, Any]) -> JsonObject:
        return await self.request("POST", path, body=body)

    async def patch(self, path: str, body: Any, *, patch_type: PatchType = "merge") -> JsonObject:
        return await self.request(
            "PATCH", path, body=body, content_type=PATCH_CONTENT_TYPES[patch_type]
        )

    async def delete(self, path: str) -> JsonObject:
        return await self.request("DELETE", path)

    async def watch(
        self,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        timeout_seconds: int = 300,
        idle_timeout_seconds: float | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Open a WATCH and yield each event (``{"type", "object"}``) as it arrives.

        Framing is one JSON document per line; lines are split by hand so an object larger than
        aiohttp's line limit still parses. The stream ends when the server closes it (after
        ``timeoutSeconds``). A stream silent for ``idle_timeout_seconds`` (default: the
        ``timeoutSeconds`` asked for, plus 30 s) is taken for a dead connection and fails with
        ``TransportError``. A failed open raises the typed error without retrying: reconnecting
        with backoff, and relisting on 410, is the informer's job.
        """
        await self._wait_for_token()
        query = dict(params or {})
        query["watch"] = "true"
        query.setdefault("timeoutSeconds", str(timeout_seconds))
        headers = await self._headers(None)
        idle = timeout_seconds + 30 if idle_timeout_seconds is None else idle_timeout_seconds
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=idle)
        try:
            async with self._session.get(
                self.base_url + path,
                params=query,
                headers=headers,
                timeout=timeout,
                **self._request_kwargs(),
            ) as response:
                self._count("WATCH", response.status)
                if response.status >= 400:
                    payload = await response.read()
                    raise error_for_status(ApiStatus.from_body(payload, code=response.status))
                buffer = b""
                async for chunk in response.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield orjson.loads(line)
                if buffer.strip():
                    yield orjson.loads(buffer)
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as error:
            self._count("WATCH", 0)
            raise TransportError(f"WATCH {path}: {type(error).__name__}: {error}") from error


# ---------------------------------------------------------------- the factory


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How to reach the API server.

    - ``kubeconfig_path``: kubeconfig file; ``None`` means in-cluster when running in a Pod
      (``KUBERNETES_SERVICE_HOST`` set), else ``$KUBECONFIG`` / ``~/.kube/config``.
    - ``context``: kubeconfig context; ``None`` is the current context.
    - ``qps`` (requests/second, default 20) and ``burst`` (requests, default 30):
      ``--kube-api-qps`` and ``--kube-api-burst`` as in kube-controller-manager.
    - ``request_timeout_seconds`` (default 30): each non-watch request.
    - ``max_connections`` (default 100): HTTP/1.1 connections kept to the API server (each
      carries one request at a time; watches hold one each).
    """

    kubeconfig_path: str | None = None
    context: str | None = None
    qps: float = 20.0
    burst: int = 30
    request_timeout_seconds: float = 30.0
    user_agent: str = "hpa"
    max_connections: int = 100


class KubeconfigError(ValueError):
    """The kubeconfig (or in-cluster configuration) cannot be used; the message names it."""


def _reason(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _check_kubeconfig_exists(path: str | None) -> None:
    if path is not None and not os.path.isfile(path):
        raise KubeconfigError(f"--kubeconfig: {path}: no such file")


async def load_client(
    settings: ClientSettings,
    *,
    clock: Clock | None = None,
    registry: CollectorRegistry | None = None,
    retry: RetryPolicy | None = None,
) -> KubeClient:
    """Load credentials (service account or kubeconfig) and build a rate-limited client.

    With ``registry``, the client's metrics and the process's ``hpa_asyncio_tasks`` gauge
    (:mod:`hpa.kube.runtime`) are registered on it."""
    from kubernetes_asyncio import client as k8s_client
    from kubernetes_asyncio import config as k8s_config

    configuration = k8s_client.Configuration()
    in_cluster = settings.kubeconfig_path is None and "KUBERNETES_SERVICE_HOST" in os.environ
    _check_kubeconfig_exists(settings.kubeconfig_path)
    try:
        if in_cluster:
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        else:
            await k8s_config.load_kube_config(
                config_file=settings.kubeconfig_path,
                context=settings.context,
                client_configuration=configuration,
            )
    except (k8s_config.ConfigException, OSError, yaml.YAMLError, TypeError, KeyError) as error:
        where = "in-cluster config" if in_cluster else (settings.kubeconfig_path or "kubeconfig")
        raise KubeconfigError(f"--kubeconfig: {where}: {_reason(error)}") from error
    configuration.connection_pool_maxsize = settings.max_connections
    api_client = k8s_client.ApiClient(configuration)
    pooled: aiohttp.ClientSession = api_client.rest_client.pool_manager
    # the same connector (and TLS context), without trust_env's per-request proxy/netrc lookups
    # and without a cookie jar (client-go's http.Client has none: cookies are not kept)
    session = aiohttp.ClientSession(
        connector=pooled.connector,
        connector_owner=False,
        trust_env=False,
        read_bufsize=2**21,
        cookie_jar=aiohttp.DummyCookieJar(),
    )
    proxy = environment_proxy(str(configuration.host))

    async def close() -> None:
        await session.close()
        await api_client.close()

    async def auth() -> Mapping[str, str]:
        auth_settings = await configuration.auth_settings()
        bearer = auth_settings.get("BearerToken")
        if bearer and bearer.get("value"):
            return {"Authorization": str(bearer["value"])}
        if configuration.username:
            basic = aiohttp.BasicAuth(configuration.username, configuration.password or "")
            return {"Authorization": basic.encode()}
        return {}

    used_clock = clock or SystemClock()
    if registry is not None:
        register_task_gauge(registry)  # every role that exports the client's metrics
    log.info("kube_client_loaded", host=configuration.host, in_cluster=in_cluster)
    return KubeClient(
        session,
        str(configuration.host),
        auth=auth,
        limiter=TokenBucket(settings.qps, settings.burst, clock=used_clock),
        retry=retry,
        clock=used_clock,
        request_timeout_seconds=settings.request_timeout_seconds,
        user_agent=settings.user_agent,
        server_hostname=getattr(configuration, "tls_server_name", None),
        metrics=ClientMetrics(registry) if registry is not None else None,
        on_close=close,
        proxy=proxy,
    )


def environment_proxy(url: str) -> str | None:
    """The proxy ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` give for ``url`` (``None``: none)."""
    try:
        proxy, _ = aiohttp.helpers.get_env_proxy_for_url(URL(url))
    except LookupError:
        return None
    return str(proxy)


async def aclose_quietly(client: KubeClient) -> None:
    """Close the client during shutdown, logging (not raising) a failure to close."""
    try:
        await client.close()
    except (TimeoutError, aiohttp.ClientError, OSError) as error:
        log.warning("kube_client_close_failed", error=str(error))
