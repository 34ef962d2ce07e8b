"""The metrics router: metrics this adapter does not own are forwarded to other metrics API servers.

Upstream counterpart: none. Kubernetes registers one ``APIService`` per metrics group, so a cluster
cannot run prometheus-adapter and KEDA side by side (kedacore/keda#470), nor migrate one metric at
a time; KEP-2580 and KEP-4261 proposed a fix in kube-apiserver and were closed. Here the adapter is
the registered backend of ``custom.metrics.k8s.io`` and ``external.metrics.k8s.io`` and the rule
file's ``routes:`` section (``adapter.rules.config.RoutesConfig``) names the other servers.

Who owns a metric name of an API group, decided from the configuration alone:

1. the backend of a ``metrics[].names`` pattern that matches it (patterns of different backends
   that could match one name are refused when the file loads);
2. else this adapter, when its rules serve it (``resource/metric`` for custom metrics);
3. else the group's ``default`` backend, if any; else this adapter (which answers 404).

A metric both listed by this adapter's rules and matched by a pattern is a configuration conflict:
a reload whose relisted rules produce one is refused (the previous file stays), and one found by a
later relist is logged (``route_conflict``) while the pattern's backend keeps the name.

A forwarded request has already been authenticated and authorized here, once, with a
SubjectAccessReview for the original user (``app.request_handler``). It is sent with this
server's own identity (the backend's client certificate or token file, never the caller's
headers), its raw path and query string unchanged; the backend's status code, ``Content-Type``
and body are passed through. Identical concurrent requests to a backend share one HTTP request
(``SingleFlight``) and each waits at most the backend's ``timeout`` (504 ``Timeout`` after), as
queries to Prometheus do. A backend that cannot be reached answers 503 ``ServiceUnavailable``
for its metrics only; it is marked down (``hpa_adapter_route_backend_up``, ``/readyz?verbose``)
until a request or the periodic discovery refresh reaches it again. Readiness itself is not
failed by a backend: the adapter's own metrics are still served.

Discovery (``/apis/<group>/<version>``) is the union: this adapter's list, each pattern backend's
entries that its patterns match, and the default backend's entries that nobody else owns. Backend
lists are refreshed every ``discoveryInterval`` and the last good list is kept while a backend is
down.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import structlog
import yarl
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from adapter.prometheus import TLSConfig
from adapter.prometheus.client import USER_AGENT, BaseURL
from adapter.prometheus.connection import FileSecret
from adapter.prometheus.singleflight import SingleFlight
from adapter.rules import RuleConfig, RuleConfigError
from adapter.rules.config import ROUTED_GROUPS, GroupRoutes, RouteBackend, RoutesConfig
from adapter.server import status, wire
from adapter.server.ports import Clock, Metrics
from adapter.server.reload import sleep_unless
from adapter.server.status import StatusError

log = structlog.get_logger(__name__)

GROUP_VERSIONS: Mapping[str, tuple[str, ...]] = {
    wire.CUSTOM_GROUP: ("v1beta2", "v1beta1"),
    wire.EXTERNAL_GROUP: ("v1beta1",),
}
MAX_CONNECTIONS_PER_BACKEND = 64
DISCOVERY_TIMEOUT_SECONDS = 5.0

LocalDiscovery = Callable[[str], bytes | None]
"""This adapter's prebuilt ``APIResourceList`` of a group-version (``Metrics.discovery``)."""


class RouterMetrics:
    """``hpa_adapter_route_*`` on the server's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.up = Gauge(
            "hpa_adapter_route_backend_up",
            "Whether a routed metrics backend answered its last request (1) or not (0).",
            ["backend"],
            registry=registry,
        )
        self.requests = Counter(
            "hpa_adapter_route_requests_total",
            "Requests forwarded to a routed metrics backend, by backend and HTTP code "
            "(503 and 504: the backend could not be reached or did not answer in time).",
            ["backend", "code"],
            registry=registry,
        )
        self.duration = Histogram(
            "hpa_adapter_route_request_duration_seconds",
            "Seconds a routed metrics backend took to answer a forwarded request.",
            ["backend"],
            registry=registry,
        )
        self.conflicts = Gauge(
            "hpa_adapter_route_conflicts",
            "Metrics both served by the rules and matched by a route pattern (the route wins).",
            ["group"],
            registry=registry,
        )
        for group in ROUTED_GROUPS:
            self.conflicts.labels(group)

    def forget(self, backend: str) -> None:
        for metric in (self.up, self.duration):
            with contextlib.suppress(KeyError):
                metric.remove(backend)


@dataclass(frozen=True, slots=True)
class Answer:
    """A backend's answer, passed through as it came."""

    status: int
    content_type: str
    body: bytes


def _setup_error(config: RouteBackend, index: int, source: str, reason: str) -> RuleConfigError:
    return RuleConfigError(reason, source=source, field=f"routes.backends[{index}] ({config.name})")


class Backend:
    """One upstream metrics API server: its connection, state and last discovery lists."""

    def __init__(
        self, config: RouteBackend, *, index: int, source: str, metrics: RouterMetrics
    ) -> None:
        self.config = config
        self.name = config.name
        try:
            self.base = BaseURL.parse(config.url)
        except ValueError as error:
            raise _setup_error(config, index, source, f"url: {error}") from None
        tls = TLSConfig(
            ca_file=Path(config.ca_file) if config.ca_file else None,
            cert_file=Path(config.client_cert_file) if config.client_cert_file else None,
            key_file=Path(config.client_key_file) if config.client_key_file else None,
            insecure_skip_verify=config.insecure_skip_tls_verify,
        )
        try:
            self._ssl = tls.ssl_context() if self.base.origin.startswith("https:") else None
        except (OSError, ValueError) as error:
            raise _setup_error(config, index, source, f"TLS: {error}") from None
        self._token = FileSecret(Path(config.token_file)) if config.token_file else None
        if self._token is not None:
            try:
                self._token.read()
            except OSError as error:
                raise _setup_error(config, index, source, f"tokenFile: {error}") from None
        self.timeout_seconds = config.timeout_seconds
        self._metrics = metrics
        self._session: aiohttp.ClientSession | None = None
        self._flights: SingleFlight[tuple[str, str], Answer] = SingleFlight()
        self.up: bool | None = None  # None until the first request or refresh
        self.error = ""
        self.resources: dict[str, list[dict[str, Any]]] = {}  # group/version -> last good list

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                ssl=self._ssl if self._ssl is not None else True,
                limit=MAX_CONNECTIONS_PER_BACKEND,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": USER_AGENT},
                timeout=aiohttp.ClientTimeout(total=None),  # the deadline governs
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _mark(self, *, up: bool, error: str = "") -> None:
        if up != self.up:
            if up:
                log.info("route_backend_up", backend=self.name)
            else:
                log.warning("route_backend_down", backend=self.name, error=error)
        self.up, self.error = up, error
        self._metrics.up.labels(self.name).set(1 if up else 0)

    async def get(
        self, path_qs: str, *, accept: str, timeout_seconds: float | None = None
    ) -> Answer:
        """GET ``path_qs`` (raw path and query) with this server's identity. Raises the 503
        ``StatusError`` when the backend cannot be reached, the 504 one past the deadline."""
        timeout = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout_at(started + timeout):
                answer, _shared = await self._flights.do(
                    (path_qs, accept),
                    lambda: self._send(path_qs, accept),
                    name=f"route {self.name}",
                )
        except TimeoutError:
            self._metrics.requests.labels(self.name, "504").inc()
            raise StatusError(
                504,
                "Timeout",
                message=f'the metrics backend "{self.name}" did not answer within {timeout:g}s',
            ) from None
        except (aiohttp.ClientError, OSError) as error:
            reason = str(error) or type(error).__name__
            self._mark(up=False, error=reason)
            self._metrics.requests.labels(self.name, "503").inc()
            raise status.service_unavailable(
                f'the metrics backend "{self.name}" ({self.base.display}) is unavailable: {reason}'
            ) from None
        self._mark(up=True)
        self._metrics.requests.labels(self.name, str(answer.status)).inc()
        self._metrics.duration.labels(self.name).observe(loop.time() - started)
        return answer

    async def forward(self, request: web.BaseRequest) -> web.Response:
        """Pass ``request`` on with this server's identity; the answer comes back as it is."""
        raw_path = request.rel_url.raw_path
        if any(part in (".", "..") for part in raw_path.split("/")):
            # authorized as written here; a backend that resolves dot segments would read
            # another path, so none is sent
            raise status.bad_request("a path with '.' or '..' segments is not forwarded")
        accept = request.headers.get("Accept", "application/json")
        answer = await self.get(request.rel_url.raw_path_qs, accept=accept)
        return web.Response(
            body=answer.body, status=answer.status, headers={"Content-Type": answer.content_type}
        )

    async def _send(self, path_qs: str, accept: str) -> Answer:
        headers = {"Accept": accept}
        if self._token is not None:
            headers["Authorization"] = "Bearer " + self._token.read()
        url = yarl.URL(self.base.origin + self.base.path_prefix + path_qs, encoded=True)
        async with self._http().get(url, headers=headers, allow_redirects=False) as response:
            body = await response.read()
            return Answer(
                response.status, response.headers.get("Content-Type", "application/json"), body
            )

    async def refresh(self, group_versions: Iterable[str]) -> None:
        """Fetch the discovery lists (the last good one stays when the backend is down)."""
        for group_version in group_versions:
            try:
                answer = await self.get(
                    f"/apis/{group_version}",
                    accept="application/json",
                    timeout_seconds=min(self.timeout_seconds, DISCOVERY_TIMEOUT_SECONDS),
                )
            except StatusError as error:
                log.info("route_discovery_failed", backend=self.name, error=error.message)
                continue
            if answer.status == 404:
                self.resources[group_version] = []
                continue
            try:
                document = orjson.loads(answer.body) if answer.status == 200 else None
            except orjson.JSONDecodeError:
                document = None
            listed = document.get("resources") if isinstance(document, dict) else None
            if not isinstance(listed, list):
                log.warning(
                    "route_discovery_failed",
                    backend=self.name,
                    group_version=group_version,
                    code=answer.status,
                )
                continue
            self.resources[group_version] = [r for r in listed if isinstance(r, dict)]


def metric_of(group: str, entry_name: str) -> str:
    """The metric name of a discovery entry (custom: ``resource/metric``)."""
    if group == wire.CUSTOM_GROUP:
        return entry_name.partition("/")[2]
    return entry_name


def _names(resources: Iterable[Mapping[str, Any]]) -> list[str]:
    return [str(r.get("name", "")) for r in resources]


def merge_resources(
    group: str,
    routes: GroupRoutes,
    *,
    local: list[dict[str, Any]],
    backends: Mapping[str, list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]], list[str]]:
    """The union of a group-version's discovery lists by ownership, and the local entries that
    conflict with a pattern (left out: the pattern's backend owns them)."""
    merged: list[dict[str, Any]] = []
    conflicts: list[str] = []
    taken: set[str] = set()
    for entry in local:
        name = str(entry.get("name", ""))
        if routes.owner(metric_of(group, name)) is not None:
            conflicts.append(name)
            continue
        merged.append(entry)
        taken.add(name)
    for route in routes.metrics:
        for entry in backends.get(route.backend, ()):
            name = str(entry.get("name", ""))
            if name not in taken and route.matches(metric_of(group, name)):
                merged.append(entry)
                taken.add(name)
    for entry in backends.get(routes.default, ()) if routes.default else ():
        name = str(entry.get("name", ""))
        if name not in taken and routes.owner(metric_of(group, name)) is None:
            merged.append(entry)
            taken.add(name)
    return merged, conflicts


@dataclass
class _Table:
    routes: RoutesConfig
    backends: dict[str, Backend] = field(default_factory=dict)


class Router:
    """The current routes (swapped by ``adopt`` on a rule-file load) and their backends."""

    def __init__(
        self, *, registry: CollectorRegistry, clock: Clock, source: str = "config"
    ) -> None:
        self.metrics = RouterMetrics(registry)
        self._clock = clock
        self._source = source
        self._table: _Table | None = None
        self._retired: list[Backend] = []
        self._local_cache: dict[str, tuple[bytes, frozenset[str]]] = {}
        self._conflicts: dict[str, tuple[str, ...]] = {}
        self._changed = asyncio.Event()

    # ------------------------------------------------------------------ configuration

    def prepare(
        self, routes: RoutesConfig | None, local: LocalDiscovery | None = None
    ) -> _Table | None:
        """The table of ``routes`` (backends reused when their settings did not change), or a
        ``RuleConfigError``: a backend's files cannot be read, or ``local`` (the new rules'
        relisted discovery) serves a metric a pattern routes elsewhere."""
        if routes is None:
            return None
        table = _Table(routes)
        old = self._table.backends if self._table is not None else {}
        for index, config in enumerate(routes.backends):
            kept = old.get(config.name)
            if kept is not None and kept.config == config:
                table.backends[config.name] = kept
            else:
                table.backends[config.name] = Backend(
                    config, index=index, source=self._source, metrics=self.metrics
                )
        if local is not None:
            for group, group_version in _group_versions():
                conflicts = self._local_conflicts(
                    group, routes, group_version, local(group_version)
                )
                if conflicts:
                    raise RuleConfigError(
                        f"{', '.join(sorted(conflicts))} served by the rules and also matched by "
                        "a route pattern: a metric name must have one owner",
                        source=self._source,
                        field=f"routes.{group}",
                    )
        return table

    def install(self, table: _Table | None) -> None:
        """Serve ``table`` from now on (backends no longer named are closed later)."""
        keep = set(table.backends.values()) if table is not None else set()
        if self._table is not None:
            for backend in self._table.backends.values():
                if backend not in keep:
                    self._retired.append(backend)
                    self.metrics.forget(backend.name)
        self._table = table
        self._changed.set()

    def adopt(self, routes: RoutesConfig | None, local: LocalDiscovery | None = None) -> None:
        """``prepare`` then ``install`` (raises before anything changes)."""
        self.install(self.prepare(routes, local))

    def stage(self, config: RuleConfig, providers: Metrics | None) -> Callable[[], None]:
        """``reload.Adopt``: the rule file's ``routes``, checked against its providers."""
        table = self.prepare(config.routes, providers.discovery if providers is not None else None)
        return lambda: self.install(table)

    @property
    def routes(self) -> RoutesConfig | None:
        return self._table.routes if self._table is not None else None

    def backends(self) -> list[Backend]:
        return list(self._table.backends.values()) if self._table is not None else []

    # ------------------------------------------------------------------ ownership

    def _local_names(self, group_version: str, body: bytes | None) -> frozenset[str]:
        """The names in this adapter's list of ``group_version``, parsed once per list."""
        if body is None:
            return frozenset()
        cached = self._local_cache.get(group_version)
        if cached is not None and cached[0] == body:
            return cached[1]
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            return frozenset()
        names = frozenset(_names(document.get("resources") or ()))
        self._local_cache[group_version] = (body, names)
        return names

    def _local_conflicts(
        self, group: str, routes: RoutesConfig, group_version: str, body: bytes | None
    ) -> list[str]:
        group_routes = routes.group(group)
        if group_routes is None or not group_routes.metrics:
            return []
        return [
            name
            for name in self._local_names(group_version, body)
            if group_routes.owner(metric_of(group, name)) is not None
        ]

    def owner(
        self, group: str, version: str, *, resource: str, metric: str, local: LocalDiscovery
    ) -> Backend | None:
        """The backend that owns ``metric`` (of ``resource`` for custom metrics), or None when
        this adapter answers it."""
        table = self._table
        if table is None:
            return None
        routes = table.routes.group(group)
        if routes is None:
            return None
        owner = routes.owner(metric)
        if owner is None:
            if not routes.default:
                return None
            if resource == "metrics":  # namespaces/{ns}/metrics/{metric}: a namespace's metric
                resource = "namespaces"
            key = metric if group == wire.EXTERNAL_GROUP else f"{resource}/{metric}"
            group_version = f"{group}/{version}"
            if key in self._local_names(group_version, local(group_version)):
                return None
            owner = routes.default
        return table.backends[owner]

    # ------------------------------------------------------------------ serving

    async def discovery(self, group: str, version: str, local: bytes | None) -> bytes | None:
        """The merged ``APIResourceList`` (``local`` unchanged when the group is not routed)."""
        table = self._table
        routes = table.routes.group(group) if table is not None else None
        if table is None or routes is None or not (routes.metrics or routes.default):
            return local
        group_version = f"{group}/{version}"
        wanted = {route.backend for route in routes.metrics}
        if routes.default:
            wanted.add(routes.default)
        for name in sorted(wanted):
            backend = table.backends[name]
            if group_version not in backend.resources:
                await backend.refresh([group_version])
        document = orjson.loads(local) if local is not None else None
        base: dict[str, Any] = (
            document
            if isinstance(document, dict)
            else {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version}
        )
        merged, conflicts = merge_resources(
            group,
            routes,
            local=list(base.get("resources") or ()),
            backends={n: table.backends[n].resources.get(group_version, []) for n in wanted},
        )
        self._report_conflicts(group, conflicts)
        if local is None and not merged:
            return None
        return orjson.dumps({**base, "resources": merged})

    def _report_conflicts(self, group: str, conflicts: list[str]) -> None:
        found = tuple(sorted(conflicts))
        if found != self._conflicts.get(group, ()):
            if found:
                log.error(
                    "route_conflict",
                    group=group,
                    metrics=list(found),
                    resolution="the route pattern's backend serves them",
                )
            self._conflicts[group] = found
        self.metrics.conflicts.labels(group).set(len(found))

    def readiness(self) -> list[str]:
        """``/readyz?verbose`` lines of the backends (informational: they never fail it)."""
        lines = []
        for backend in self.backends():
            if backend.up is False:
                lines.append(
                    f"[-]route-backend-{backend.name} failed: {backend.error} "
                    "(its metrics answer 503)"
                )
            else:
                lines.append(f"[+]route-backend-{backend.name} ok")
        return lines

    # ------------------------------------------------------------------ background

    async def refresh(self) -> None:
        """Every backend's discovery lists, once (also the health probe)."""
        table = self._table
        if table is None:
            return
        for name, backend in table.backends.items():
            await backend.refresh(_served_by(table.routes, name))
        retired, self._retired = self._retired, []
        for backend in retired:
            await backend.close()

    async def run(self) -> None:
        """Refresh every ``discoveryInterval`` (and at once after a new table is installed)."""
        while True:
            self._changed.clear()
            await self.refresh()
            routes = self.routes
            interval = routes.discovery_interval_seconds if routes is not None else 30.0
            await sleep_unless(self._changed, self._clock, interval)

    async def close(self) -> None:
        for backend in [*self.backends(), *self._retired]:
            await backend.close()
        self._retired = []


def _group_versions() -> list[tuple[str, str]]:
    return [(g, f"{g}/{v}") for g, versions in GROUP_VERSIONS.items() for v in versions]


def _served_by(routes: RoutesConfig, backend: str) -> list[str]:
    """The group-versions whose discovery lists ``backend`` contributes to."""
    out = []
    for group, group_version in _group_versions():
        group_routes = routes.group(group)
        assert group_routes is not None
        if group_routes.default == backend or any(
            r.backend == backend for r in group_routes.metrics
        ):
            out.append(group_version)
    return out
