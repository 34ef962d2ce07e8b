"""``hpa vpa admission``: the VPA admission webhook, wired to a real API server.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/admission-controller/main.go`` (flags ``--port`` 8000, ``--address`` ``:8944`` for
``/metrics`` and health, ``--tls-cert-file``, ``--tls-private-key``, ``--kubeconfig``; informers
for VPAs, LimitRanges and the well-known controllers; the serving certificate reloaded when its
files change).

One ``asyncio.TaskGroup``: the informers (VPAs, LimitRanges, HPAs and the seven well-known
controller kinds), the TLS webhook listener, the operations listener and the certificate reload.
``/readyz`` is ready once every informer has listed. The webhook needs no leader: every replica
answers. Registration (the ``MutatingWebhookConfiguration`` with ``failurePolicy: Ignore``) is the
chart's; see ``docs/vpa.md``.

The status Lease (``--status-lease-name``, ``vpa-admission-controller``) is renewed every
``--status-lease-update-interval`` as upstream's, so upstream's updater, which pauses while it is
stale, works with this webhook.

With ``--recommendation-api-port`` (ours, off by default) the process also serves the
``recommendation.hpa.dev/v1alpha1`` aggregated API (``RecommendationQuery``,
:mod:`hpa.app.recommendation_api`) on that TLS port, with the same serving certificate, the
delegated authentication of ``extension-apiserver-authentication`` and a SubjectAccessReview per
request; see ``docs/vpa.md``.

Deliberate deviations: no ``--register-webhook`` self-registration; ``--hpa-awareness`` and
``--recommendation-api-port`` are ours.
"""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

from adapter.server.authn import DelegatingAuthenticator
from adapter.server.authz import SubjectAccessReviewAuthorizer
from hpa.app.leading import role_main, run_role, run_tasks, serve
from hpa.app.recommendation_api import RecommendationApi, build_recommendation_app
from hpa.app.vertical_informers import build_vertical_informers, scalers
from hpa.core.duration import parse_duration_seconds
from hpa.core.vpa.awareness import HpaAwareness
from hpa.kube.client import ClientSettings, KubeClient, aclose_quietly, load_client
from hpa.kube.clock import Clock, SystemClock
from hpa.kube.informer import Informer
from hpa.kube.leader import KubeLeaseStore, StatusLease
from hpa.kube.logs import add_log_flags
from hpa.kube.tls import ServingCertificates
from hpa.webhook.handler import AdmissionHandler
from hpa.webhook.matcher import InformerVpaMatcher
from hpa.webhook.server import WebhookMetrics, build_operations_app, build_webhook_app

log = structlog.get_logger("hpa.app.webhook")


@dataclass(frozen=True, kw_only=True)
class AdmissionSettings:
    """``hpa vpa admission`` flags (upstream's names where upstream has the flag)."""

    port: int = 8000
    """``--port``: the TLS listener kube-apiserver calls."""
    address: str = ":8944"
    """``--address``: ``host:port`` of ``/metrics``, ``/healthz`` and ``/readyz`` (plain HTTP)."""
    tls_cert_file: Path = Path("/etc/tls-certs/serverCert.pem")
    """``--tls-cert-file``: the serving certificate (PEM), reloaded when it changes."""
    tls_private_key: Path = Path("/etc/tls-certs/serverKey.pem")
    """``--tls-private-key``: its key (PEM)."""
    tls_check_interval_seconds: float = 10.0
    """``--tls-check-interval``: how often the certificate files are checked (seconds)."""
    kubeconfig: str | None = None
    """``--kubeconfig``: empty means in-cluster configuration."""
    hpa_awareness: HpaAwareness = HpaAwareness.EXCLUDE
    """``--hpa-awareness``: exclude, warn or off (see ``docs/vpa.md``)."""
    log_level: str = "info"
    """``--log-level``: debug, info, warning or error."""
    status_lease_name: str = "vpa-admission-controller"
    """``--status-lease-name``: the Lease the updater reads to know the webhook is alive."""
    status_lease_namespace: str = "kube-system"
    """``--status-lease-namespace``: defaults to ``$NAMESPACE``, else ``kube-system``."""
    status_lease_update_interval_seconds: float = 10.0
    """``--status-lease-update-interval`` (a Go duration, 10s): how often that Lease is renewed."""
    identity: str = ""
    """The Lease's ``holderIdentity``: the host name."""
    recommendation_api_port: int = 0
    """``--recommendation-api-port`` (ours): the TLS port of the ``recommendation.hpa.dev``
    aggregated API (``RecommendationQuery``); 0 (the default) serves none."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    d = AdmissionSettings()
    parser.add_argument("--port", type=int, default=d.port, help="TLS port of the webhook")
    parser.add_argument(
        "--address", default=d.address, help="host:port of /metrics, /healthz and /readyz"
    )
    parser.add_argument("--tls-cert-file", type=Path, default=d.tls_cert_file)
    parser.add_argument("--tls-private-key", type=Path, default=d.tls_private_key)
    parser.add_argument(
        "--tls-check-interval", type=float, default=d.tls_check_interval_seconds, metavar="SECONDS"
    )
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument(
        "--hpa-awareness",
        choices=[a.value for a in HpaAwareness],
        default=d.hpa_awareness.value,
        help="leave the resources an HPA scales on alone (exclude), only report (warn), or off",
    )
    add_log_flags(parser, default_level="info")
    parser.add_argument("--status-lease-name", default=d.status_lease_name)
    parser.add_argument("--status-lease-namespace", default="")
    parser.add_argument("--status-lease-update-interval", default="10s", metavar="DURATION")
    parser.add_argument(
        "--recommendation-api-port",
        type=int,
        default=d.recommendation_api_port,
        metavar="PORT",
        help="TLS port of the recommendation.hpa.dev aggregated API (RecommendationQuery); "
        "0 serves none (default 0)",
    )


def settings_from_args(args: argparse.Namespace) -> AdmissionSettings:
    port = str(args.address).rpartition(":")[2]
    if not port.isdigit():
        raise ValueError(f"--address: {args.address!r} is not host:port")
    if not 0 < args.port < 65536:
        raise ValueError(f"--port: {args.port} is not a port")
    if not 0 <= args.recommendation_api_port < 65536 or args.recommendation_api_port == args.port:
        raise ValueError(
            f"--recommendation-api-port: {args.recommendation_api_port} is not a port other "
            "than --port (0 serves none)"
        )
    if args.tls_check_interval <= 0:
        raise ValueError("--tls-check-interval: must be positive")
    for flag, path in (
        ("--tls-cert-file", args.tls_cert_file),
        ("--tls-private-key", args.tls_private_key),
    ):
        if not Path(path).is_file():
            raise ValueError(f"{flag}: {path} does not exist")
    try:
        lease_interval = parse_duration_seconds(args.status_lease_update_interval)
    except ValueError as error:
        raise ValueError(f"--status-lease-update-interval: {error}") from None
    if lease_interval <= 0:
        raise ValueError("--status-lease-update-interval: must be positive")
    return AdmissionSettings(
        status_lease_name=args.status_lease_name,
        status_lease_namespace=args.status_lease_namespace
        or os.environ.get("NAMESPACE")
        or "kube-system",
        status_lease_update_interval_seconds=lease_interval,
        identity=socket.gethostname(),
        port=args.port,
        address=args.address,
        tls_cert_file=Path(args.tls_cert_file),
        tls_private_key=Path(args.tls_private_key),
        tls_check_interval_seconds=args.tls_check_interval,
        kubeconfig=args.kubeconfig or None,
        hpa_awareness=HpaAwareness(args.hpa_awareness),
        log_level=args.log_level,
        recommendation_api_port=args.recommendation_api_port,
    )


@dataclass(frozen=True)
class RecommendationServing:
    """The ``recommendation.hpa.dev`` listener: its app, certificates and authenticator."""

    app: web.Application
    certificates: ServingCertificates
    authenticator: DelegatingAuthenticator


@dataclass
class AdmissionApp:
    settings: AdmissionSettings
    informers: Sequence[Informer[Any]]
    certificates: ServingCertificates
    webhook: web.Application
    operations: web.Application
    clock: Clock
    status_lease: StatusLease
    recommendation: RecommendationServing | None = None

    def ready(self) -> bool:
        return all(informer.has_synced() for informer in self.informers)

    async def run(self) -> None:
        host, _, port = self.settings.address.rpartition(":")
        tasks: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            (f"informer {informer.path}", informer.run) for informer in self.informers
        ]
        tasks += [
            (
                "webhook",
                lambda: serve(
                    self.webhook, "", self.settings.port, ssl_context=self.certificates.context
                ),
            ),
            ("operations", lambda: serve(self.operations, host, int(port))),
            ("status lease", self.status_lease.run),
            (
                "certificates",
                lambda: self.certificates.run(
                    self.clock, interval_seconds=self.settings.tls_check_interval_seconds
                ),
            ),
        ]
        if self.recommendation is not None:
            tasks += self._recommendation_tasks(self.recommendation)
        await run_tasks(tasks)

    def _recommendation_tasks(
        self, serving: RecommendationServing
    ) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
        app, certificates = serving.app, serving.certificates
        authenticator = serving.authenticator

        async def serve_api() -> None:
            try:
                await authenticator.refresh()
            except Exception as error:  # noqa: BLE001 - upstream warns and serves with no CAs
                log.warning("authentication_config_unavailable", error=str(error))
            await serve(
                app, "", self.settings.recommendation_api_port, ssl_context=certificates.context
            )

        return [
            ("recommendation api", serve_api),
            ("authentication config", authenticator.run),
            (
                "recommendation api certificates",
                lambda: certificates.run(
                    self.clock, interval_seconds=self.settings.tls_check_interval_seconds
                ),
            ),
        ]


def build_app(
    settings: AdmissionSettings,
    client: KubeClient,
    *,
    clock: Clock,
    registry: CollectorRegistry,
) -> AdmissionApp:
    informers = build_vertical_informers(client, clock=clock)
    matcher = InformerVpaMatcher(
        vpas=informers.vpas.store.list_namespace,
        limit_ranges=informers.limit_ranges.store.list_namespace,
        hpas=scalers(informers.hpas.store.list_namespace),
        resolver=informers.resolver,
    )
    handler = AdmissionHandler(matcher, awareness=settings.hpa_awareness)
    app = AdmissionApp(
        settings=settings,
        informers=informers.all(),
        certificates=ServingCertificates(settings.tls_cert_file, settings.tls_private_key),
        webhook=build_webhook_app(handler, metrics=WebhookMetrics(registry)),
        operations=build_operations_app(registry=registry, ready=lambda: app.ready()),
        clock=clock,
        status_lease=StatusLease(
            KubeLeaseStore(client, settings.status_lease_namespace, settings.status_lease_name),
            identity=settings.identity or socket.gethostname(),
            interval_seconds=settings.status_lease_update_interval_seconds,
            clock=clock,
        ),
    )
    if settings.recommendation_api_port:
        authenticator = DelegatingAuthenticator(clock=clock, api=client)
        certificates = ServingCertificates(
            settings.tls_cert_file,
            settings.tls_private_key,
            client_ca_pem=authenticator.config.ca_bundle_pem(),
        )
        authenticator.on_change(lambda config: certificates.set_client_ca(config.ca_bundle_pem()))
        api = RecommendationApi(
            matcher=matcher,
            authenticator=authenticator,
            authorizer=SubjectAccessReviewAuthorizer(client, clock=clock),
            ready=app.ready,
            awareness=settings.hpa_awareness,
        )
        app.recommendation = RecommendationServing(
            build_recommendation_app(api), certificates, authenticator
        )
    return app


async def _run(settings: AdmissionSettings) -> int:
    clock = SystemClock()
    registry = CollectorRegistry()
    client = await load_client(
        ClientSettings(kubeconfig_path=settings.kubeconfig, user_agent="hpa-vpa-admission"),
        clock=clock,
        registry=registry,
    )
    app = build_app(settings, client, clock=clock, registry=registry)
    try:
        return await run_role(
            "admission", app.run, starting={"port": settings.port, "address": settings.address}
        )
    finally:
        await aclose_quietly(client)


def main(args: argparse.Namespace) -> int:
    """The ``vpa admission`` subcommand's handler (:func:`hpa.app.leading.role_main`)."""
    return role_main(args, settings_from_args, _run)
