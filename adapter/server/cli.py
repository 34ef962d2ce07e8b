"""``hpa adapter`` (serve the metrics APIs) and ``hpa adapter explain <path>``: flags to running
process.

Upstream counterpart: prometheus-adapter ``cmd/adapter/adapter.go`` (``makePromClient``,
``makeProvider``, the custom-metrics-apiserver ``AdapterBase`` run loop) and
``--prometheus-auth-config`` (a kubeconfig-format file whose current context's cluster CA /
insecure flag and user's token file, client certificate or basic auth reach Prometheus).

One ``asyncio.TaskGroup`` holds the named tasks: the pod and node informers, the relist loop, the
rule-file watcher, the serving-certificate watcher, the authentication-config refresher and the
routed backends' discovery refresh (``adapter.server.router``); each logs an unexpected exit.
SIGTERM/SIGINT stop the process cleanly, SIGHUP reloads the rule file.

Deliberate deviations: ``--prometheus-auth-config`` supports token files, client certificates and
basic auth but not inline tokens or exec plugins (a clear error says so).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import structlog
import yaml
from aiohttp import web
from prometheus_client import CollectorRegistry

from adapter.prometheus import BasicAuth, PrometheusClient, PrometheusConnection, TLSConfig
from adapter.providers import BatchSettings, MetricProviders, ValueSettings, build_providers
from adapter.providers.clock import SystemClock
from adapter.rules import RuleConfig, load_rules
from adapter.server.app import Server, serving_server
from adapter.server.authn import AuthenticationConfig, DelegatingAuthenticator
from adapter.server.authz import SubjectAccessReviewAuthorizer
from adapter.server.checkconfig import add_check_config_command
from adapter.server.explain import explain
from adapter.server.pods import (
    ApiObjectNameLister,
    InformerObjectLister,
    NodeRecord,
    parse_node,
)
from adapter.server.reload import ReloadingMetrics
from adapter.server.restmapper import RegeneratingRESTMapper
from adapter.server.router import Router
from adapter.server.routing import MetricRequest, parse_metric_request
from adapter.server.settings import Settings, add_flags, check_files, settings_from_args
from adapter.server.telemetry import ServerMetrics
from hpa import __version__
from hpa.kube.client import ClientSettings, KubeClient, aclose_quietly, load_client
from hpa.kube.informer import Informer, wait_all_synced
from hpa.kube.logs import INPUT_ERRORS
from hpa.kube.records import PodRecord, parse_pod
from hpa.kube.runtime import collect_periodically
from hpa.kube.runtime import run as run_on_loop
from hpa.kube.serving import TLSSite
from hpa.kube.tls import ServingCertificates, write_self_signed

log = structlog.get_logger(__name__)


# ---------------------------------------------------------------- Prometheus connection


def _auth_config(path: Path) -> tuple[TLSConfig | None, Path | None, BasicAuth | None]:
    """The parts of a kubeconfig-format ``--prometheus-auth-config`` we support."""
    tree = yaml.safe_load(path.read_text()) or {}
    contexts = {c["name"]: c.get("context", {}) for c in tree.get("contexts") or ()}
    context = contexts.get(tree.get("current-context", ""), {})
    clusters = {c["name"]: c.get("cluster", {}) for c in tree.get("clusters") or ()}
    users = {u["name"]: u.get("user", {}) for u in tree.get("users") or ()}
    cluster = clusters.get(context.get("cluster", ""), {})
    user = users.get(context.get("user", ""), {})
    if "token" in user or "exec" in user or "client-certificate-data" in user:
        raise ValueError(
            f"{path}: only tokenFile, client-certificate/client-key files and basic auth "
            "are supported"
        )
    tls = TLSConfig(
        ca_file=Path(cluster["certificate-authority"])
        if "certificate-authority" in cluster
        else None,
        cert_file=Path(user["client-certificate"]) if "client-certificate" in user else None,
        key_file=Path(user["client-key"]) if "client-key" in user else None,
        insecure_skip_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
    )
    token = Path(user["tokenFile"]) if "tokenFile" in user else None
    basic = (
        BasicAuth(user["username"], str(user.get("password", ""))) if "username" in user else None
    )
    return tls, token, basic


def prometheus_connection(settings: Settings) -> PrometheusConnection:
    tls: TLSConfig | None = None
    token, basic = settings.prometheus_token_file, None
    if settings.prometheus_auth_config is not None:
        tls, token_from_config, basic = _auth_config(settings.prometheus_auth_config)
        token = token or token_from_config
    if any(
        p is not None
        for p in (
            settings.prometheus_ca_file,
            settings.prometheus_client_tls_cert_file,
            settings.prometheus_client_tls_key_file,
        )
    ):
        tls = TLSConfig(
            ca_file=settings.prometheus_ca_file,
            cert_file=settings.prometheus_client_tls_cert_file,
            key_file=settings.prometheus_client_tls_key_file,
        )
    return PrometheusConnection(
        settings.prometheus_url,
        tls=tls,
        bearer_token_file=token,
        basic_auth=basic,
        headers=dict(settings.prometheus_headers),
        timeout_seconds=settings.prometheus_query_timeout_seconds,
    )


def _read(path: Path | None) -> bytes:
    return path.read_bytes() if path is not None else b""


def authentication_overrides(settings: Settings) -> AuthenticationConfig:
    return AuthenticationConfig(
        client_ca_pem=_read(settings.client_ca_file),
        requestheader_ca_pem=_read(settings.requestheader_client_ca_file),
        requestheader_allowed_names=settings.requestheader_allowed_names,
        requestheader_username_headers=settings.requestheader_username_headers,
        requestheader_group_headers=settings.requestheader_group_headers,
        requestheader_extra_headers_prefix=settings.requestheader_extra_headers_prefix,
    )


# ---------------------------------------------------------------- serving


async def _guarded(name: str, work: Awaitable[None]) -> None:
    """A task body that logs an unexpected exit (and never swallows cancellation)."""
    try:
        await work
    except asyncio.CancelledError:
        raise
    except Exception as error:
        log.error("task_failed", task=name, error=repr(error))
        raise
    log.error("task_exited", task=name)


async def serve(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    started: Callable[[int], None] | None = None,
) -> None:
    """Run the adapter until ``stop`` is set; ``started`` gets the bound port."""
    stop = stop or asyncio.Event()
    clock = SystemClock()
    registry = CollectorRegistry()
    server_metrics = ServerMetrics(registry)
    kube = await load_client(
        ClientSettings(
            kubeconfig_path=str(settings.kubeconfig) if settings.kubeconfig else None,
            user_agent="hpa-adapter",
            # the client also sends the SubjectAccessReviews and TokenReviews of every request
            # not cached: k8s.io/apiserver's delegated authentication and authorization clients
            # get QPS 200, burst 400 ("will effectively limit API server responsiveness")
            qps=DELEGATED_AUTH_QPS,
            burst=DELEGATED_AUTH_BURST,
        ),
        clock=clock,
        registry=registry,
    )
    try:
        async with PrometheusClient(prometheus_connection(settings), registry=registry) as prom:
            await _serve(
                settings,
                kube,
                prom=prom,
                registry=registry,
                server_metrics=server_metrics,
                clock=clock,
                stop=stop,
                started=started,
            )
    finally:
        await aclose_quietly(kube)


DELEGATED_AUTH_QPS = 200.0
DELEGATED_AUTH_BURST = 400
"""k8s.io/apiserver ``options.DelegatingAuthorizationOptions.getClient``'s client limits."""


async def initial_discovery(mapper: RegeneratingRESTMapper) -> None:
    """The first discovery read; without it no rule can name a resource, so a failure stops the
    process with one line (upstream: "unable to populate initial set of REST mappings")."""
    try:
        await mapper.regenerate()
    except (OSError, ValueError):
        raise
    except Exception as error:  # noqa: BLE001 - an API error is a start-up failure, not a bug
        raise OSError(f"unable to populate initial set of REST mappings: {error}") from None


async def _serve(
    settings: Settings,
    kube: KubeClient,
    *,
    prom: PrometheusClient,
    registry: CollectorRegistry,
    server_metrics: ServerMetrics,
    clock: SystemClock,
    stop: asyncio.Event,
    started: Callable[[int], None] | None,
) -> None:
    pods: Informer[PodRecord] = Informer(kube, "/api/v1/pods", parse=parse_pod, clock=clock)
    nodes: Informer[NodeRecord] = Informer(kube, "/api/v1/nodes", parse=parse_node, clock=clock)
    lister = InformerObjectLister.from_informers(pods, nodes)
    mapper = RegeneratingRESTMapper(
        kube, clock=clock, interval_seconds=settings.discovery_interval_seconds
    )
    value_settings = ValueSettings(
        max_sample_age_seconds=settings.max_sample_age_seconds or None,
        query_timeout_seconds=settings.prometheus_query_timeout_seconds,
        probe_reuse_seconds=settings.staleness_probe_reuse_seconds,
    )

    def build(config: RuleConfig, provider_registry: CollectorRegistry) -> MetricProviders:
        return build_providers(
            config,
            prom,
            pod_lister=lister,
            object_lister=ApiObjectNameLister(kube, mapper),
            mapper=mapper,
            kinds=mapper,
            settings=value_settings,
            registry=provider_registry,
            relist_interval_seconds=settings.metrics_relist_interval_seconds,
            max_age_seconds=settings.metrics_max_age_seconds,
            source=str(settings.config),
            batching=BatchSettings(
                max_age_seconds=settings.batch_max_age_seconds,
                max_series=settings.batch_max_series,
            ),
        )

    router = Router(registry=registry, clock=clock, source=str(settings.config))
    metrics = ReloadingMetrics(
        settings.config,
        build,
        registry=registry,
        server_metrics=server_metrics,
        clock=clock,
        check_interval_seconds=settings.config_check_interval_seconds,
        before_load=mapper.regenerate,
        adopt=router.stage,
    )
    # The file's own mistakes are reported before the cluster is asked (upstream loads the
    # config before it builds its RESTMapper).
    load_rules(settings.config.read_text(), source=str(settings.config))
    await initial_discovery(mapper)
    metrics.load_initial()
    authenticator = DelegatingAuthenticator(
        clock=clock,
        api=kube,
        overrides=authentication_overrides(settings),
        configmap_namespace=settings.authentication_config_namespace,
        configmap_name=settings.authentication_config_name,
        lookup=not settings.authentication_skip_lookup,
        token_ttl_seconds=settings.authentication_cache_ttl_seconds,
        refresh_interval_seconds=settings.auth_config_refresh_interval_seconds,
    )
    try:
        await authenticator.refresh()
    except Exception as error:  # noqa: BLE001 - upstream warns and serves with the flags' CAs
        log.warning("authentication_config_unavailable", error=str(error))
    if settings.tls_cert_file is not None and settings.tls_private_key_file is not None:
        cert_file, key_file = settings.tls_cert_file, settings.tls_private_key_file
    else:
        cert_file, key_file = write_self_signed(settings.cert_dir)
    tls = ServingCertificates(
        cert_file, key_file, client_ca_pem=authenticator.config.ca_bundle_pem()
    )
    authenticator.on_change(lambda config: tls.set_client_ca(config.ca_bundle_pem()))

    async def explain_request(request: MetricRequest) -> dict[str, Any]:
        return await explain(metrics.current, request, querier=prom)

    server = Server(
        metrics=metrics,
        lister=lister,
        authenticator=authenticator,
        authorizer=SubjectAccessReviewAuthorizer(
            kube, clock=clock, ttl_seconds=settings.authorization_cache_ttl_seconds
        ),
        clock=clock,
        registry=registry,
        server_metrics=server_metrics,
        explain=explain_request if settings.debug_endpoints else None,
        router=router,
        always_allow_paths=settings.always_allow_paths,
        always_allow_groups=settings.always_allow_groups,
        version=__version__,
    )
    runner = web.ServerRunner(serving_server(server))
    await runner.setup()
    site = TLSSite(runner, settings.bind_address, settings.secure_port, ssl_context=tls.context)
    await site.start()
    if started is not None:
        started(runner.addresses[0][1])
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGHUP, metrics.request_reload)
    log.info(
        "adapter_serving",
        port=settings.secure_port,
        config=str(settings.config),
        event_loop=settings.event_loop,
    )
    try:
        async with asyncio.TaskGroup() as group:
            tasks = {
                "pod-informer": pods.run(),
                "node-informer": nodes.run(),
                "metrics-relist": metrics.relist_forever(),
                "discovery": mapper.run(),
                "config-watch": metrics.watch(),
                "tls-watch": tls.run(clock, interval_seconds=settings.tls_check_interval_seconds),
                "authentication-config": authenticator.run(),
                "route-refresh": router.run(),
            }
            running = [
                group.create_task(_guarded(name, work), name=name) for name, work in tasks.items()
            ]
            running.append(
                group.create_task(
                    freeze_when(wait_all_synced((pods, nodes))), name="freeze-after-sync"
                )
            )
            running.append(
                group.create_task(
                    freeze_when(metrics.current.relister.wait_ready()), name="freeze-after-relist"
                )
            )
            await stop.wait()
            for task in running:
                task.cancel()
    finally:
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGHUP)
        await runner.cleanup()
        await router.close()
        log.info("adapter_stopped")


# ---------------------------------------------------------------- explain


class _ListingPodLister:
    """For the one-shot CLI: LIST pods by selector (no watch), or say why it cannot."""

    def __init__(self, kube: KubeClient | None, reason: str = "") -> None:
        self._kube = kube
        self._reason = reason

    async def pods_for_selector(self, namespace: str, selector: str) -> list[str]:
        if self._kube is None:
            raise RuntimeError(f"cannot list pods: {self._reason}")
        params = {"labelSelector": selector} if selector else None
        found = await self._kube.list(f"/api/v1/namespaces/{namespace}/pods", params=params)
        return [str(item["metadata"]["name"]) for item in found.get("items") or ()]


async def run_explain(settings: Settings, request: MetricRequest) -> dict[str, Any]:
    kube: KubeClient | None = None
    reason = ""
    try:
        kube = await load_client(
            ClientSettings(
                kubeconfig_path=str(settings.kubeconfig) if settings.kubeconfig else None,
                user_agent="hpa-adapter-explain",
            )
        )
    except Exception as error:  # noqa: BLE001 - explain still works for named objects
        reason = str(error)
    try:
        config = load_rules(settings.config.read_text(), source=str(settings.config))
        mapper = None
        if kube is not None:
            mapper = RegeneratingRESTMapper(kube, clock=SystemClock())
            await initial_discovery(mapper)
        async with PrometheusClient(prometheus_connection(settings)) as prom:
            providers = build_providers(
                config,
                prom,
                pod_lister=_ListingPodLister(kube, reason),
                object_lister=ApiObjectNameLister(kube, mapper) if kube is not None else None,
                mapper=mapper,
                kinds=mapper,
                relist_interval_seconds=settings.metrics_relist_interval_seconds,
                max_age_seconds=settings.metrics_max_age_seconds,
                source=str(settings.config),
            )
            await providers.relister.relist()
            return await explain(providers, request, querier=prom)
    finally:
        if kube is not None:
            await aclose_quietly(kube)


# ---------------------------------------------------------------- entry points


def add_command(commands: Any) -> None:
    """Register ``adapter`` (and ``adapter explain``) on the top-level subparsers."""
    parser = commands.add_parser(
        "adapter",
        help="serve the custom, external and resource metrics APIs from Prometheus",
        description="A prometheus-adapter compatible metrics API server (upstream flag names).",
        # `check-config --prometheus` must reach the subcommand, not be read as an
        # abbreviation of the server's --prometheus-* flags.
        allow_abbrev=False,
    )
    add_flags(parser)
    parser.set_defaults(handler=main)
    sub = parser.add_subparsers(dest="adapter_command", metavar="SUBCOMMAND")
    explainer = sub.add_parser(
        "explain",
        help="show the rule, PromQL and result behind a metrics API path, and why it is missing",
    )
    explainer.add_argument(
        "path", help="e.g. /apis/custom.metrics.k8s.io/v1beta2/namespaces/x/pods/*/m"
    )
    add_flags(explainer)
    explainer.set_defaults(handler=main_explain)
    add_check_config_command(sub)


GC_YOUNG_THRESHOLD = 10_000
"""Allocations between young-generation collections in the adapter process (CPython: 700)."""


def tune_garbage_collector() -> None:
    """Process-wide GC settings for a serving adapter (called once the server listens).

    A 100-pod answer allocates thousands of short-lived objects, so with CPython's defaults the
    collector runs several times per request and keeps promoting them, and older generations
    are rescanned together with everything imported at start-up (kubernetes_asyncio, pydantic
    models). Freezing the start-up heap takes it out of every later collection, and a larger
    young generation lets a request's objects die before they are scanned: about a fifth of
    the adapter's CPU per request under ``bench/adapter.py``. Cyclic garbage is still
    collected; only the cadence changes."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


async def freeze_when(synced: Awaitable[object]) -> None:
    """``tune_garbage_collector`` again once ``synced`` (the informers' first lists) is done.

    The heap frozen when the server starts listening does not hold the informers' caches yet,
    which then live as long as the process in the oldest generation: at 100,000 pods (a
    ``PodRecord`` and a ``PodInfo`` each) every full collection walked them, one of 216 ms in
    the middle of ``bench/adapter.py --fleet``'s measured load. Frozen after the first lists,
    a full collection walks what was built since (``--fleet --scale 0.1 --seconds 130
    --loop-lag``: 18 collections in the load, the longest 12 ms, against 132 and 40 ms; at full
    size the collection in the load walked 177,690 objects in 113 ms, against 401,161 in
    211 ms). The first relist's index is frozen the same way once it is in: at 10,000 metric
    names it is about 80,000 objects (a ``CustomMetricInfo`` and a ``SeriesInfo`` per rule and
    name), which the one full collection in the load then walked (51 ms over 127,964 objects)."""
    await synced
    tune_garbage_collector()


def main(args: argparse.Namespace) -> int:
    """``hpa adapter``: a mistake in the flags, the files they name or the rule file is one log
    line and exit 2 (logging is configured by ``hpa.cli.main`` from ``--log-level``)."""
    stop = asyncio.Event()

    async def run(settings: Settings) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, stop.set)
        collector = asyncio.create_task(collect_periodically(), name="full-collections")
        try:
            await serve(settings, stop=stop, started=lambda _port: tune_garbage_collector())
        finally:
            collector.cancel()

    try:
        settings = settings_from_args(args)
        check_files(settings)
        run_on_loop(run(settings), event_loop=settings.event_loop)
    except INPUT_ERRORS as error:
        log.error("invalid_input", error=str(error))
        return 2
    return 0


def main_explain(args: argparse.Namespace) -> int:
    """``hpa adapter explain PATH``: the same one error path as :func:`main`."""
    try:
        settings = settings_from_args(args)
        check_files(settings)
        request = parse_metric_request(args.path)
        document = asyncio.run(run_explain(settings, request))
    except INPUT_ERRORS as error:
        log.error("invalid_input", error=str(error))
        return 2
    sys.stdout.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0 if document.get("verdict") == "served" else 1
