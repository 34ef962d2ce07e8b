"""A TLS test server for the adapter: PKI (serving, front-proxy, client and rogue CAs), the real
app with the delegated authenticator/authorizer over the fake Kubernetes API, and client
contexts presenting each certificate."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry

from adapter.server.app import Server, serving_server
from adapter.server.authn import DelegatingAuthenticator
from adapter.server.authz import SubjectAccessReviewAuthorizer
from adapter.server.telemetry import ServerMetrics
from hpa.kube.client import KubeClient, RetryPolicy
from hpa.kube.tls import ServingCertificates
from tests.adapter.server.harness import FakeLister, FakeProviders, FakeSource
from tests.fakes.clock import FakeClock
from tests.fakes.kubeauth import FakeKubeAuth
from tests.lab.pki import CertificateAuthority, KeyPair, create_ca, issue_certificate


class CertClock(FakeClock):
    """A fake clock whose wall time starts at the real time (certificates are issued for now)."""

    def __init__(self) -> None:
        super().__init__()
        self._wall_start = datetime.now(UTC)

    def now(self) -> datetime:
        return self._wall_start + timedelta(seconds=self.monotonic() - 1000.0)


@dataclass(frozen=True, kw_only=True)
class TestPki:
    serving_ca: CertificateAuthority
    serving: KeyPair
    front_proxy_ca: CertificateAuthority
    front_proxy_client: KeyPair
    front_proxy_intruder: KeyPair  # right CA, CN not in the allowed names
    client_ca: CertificateAuthority
    carol: KeyPair  # an x509 user of the client CA
    rogue_ca: CertificateAuthority
    rogue: KeyPair


def create_test_pki(directory: Path) -> TestPki:
    directory.mkdir(parents=True, exist_ok=True)
    serving_ca = create_ca(directory, "serving-ca", common_name="serving-ca")
    front_proxy_ca = create_ca(directory, "front-proxy-ca", common_name="front-proxy-ca")
    client_ca = create_ca(directory, "client-ca", common_name="client-ca")
    rogue_ca = create_ca(directory, "rogue-ca", common_name="front-proxy-ca")  # same name!
    return TestPki(
        serving_ca=serving_ca,
        serving=issue_certificate(
            serving_ca,
            directory / "serving",
            common_name="adapter",
            ip_addresses=("127.0.0.1",),
            server=True,
        ),
        front_proxy_ca=front_proxy_ca,
        front_proxy_client=issue_certificate(
            front_proxy_ca, directory / "fp-client", common_name="front-proxy-client", client=True
        ),
        front_proxy_intruder=issue_certificate(
            front_proxy_ca, directory / "fp-intruder", common_name="intruder", client=True
        ),
        client_ca=client_ca,
        carol=issue_certificate(
            client_ca,
            directory / "carol",
            common_name="carol",
            organizations=("devs",),
            client=True,
        ),
        rogue_ca=rogue_ca,
        rogue=issue_certificate(
            rogue_ca, directory / "rogue", common_name="front-proxy-client", client=True
        ),
    )


def configmap_for(pki: TestPki) -> dict[str, str]:
    return {
        "client-ca-file": pki.client_ca.pair.cert_path.read_text(),
        "requestheader-client-ca-file": pki.front_proxy_ca.pair.cert_path.read_text(),
        "requestheader-allowed-names": orjson.dumps(["front-proxy-client"]).decode(),
        "requestheader-username-headers": orjson.dumps(["X-Remote-User"]).decode(),
        "requestheader-group-headers": orjson.dumps(["X-Remote-Group"]).decode(),
        "requestheader-extra-headers-prefix": orjson.dumps(["X-Remote-Extra-"]).decode(),
    }


def client_context(pki: TestPki, pair: KeyPair | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.serving_ca.pair.cert_path))
    if pair is not None:
        context.load_cert_chain(str(pair.cert_path), str(pair.key_path))
    return context


@dataclass(kw_only=True)
class Running:
    url: str
    pki: TestPki
    kube: FakeKubeAuth
    clock: FakeClock
    tls: ServingCertificates
    authenticator: DelegatingAuthenticator
    authorizer: SubjectAccessReviewAuthorizer
    providers: FakeProviders

    async def get(
        self, path: str, *, cert: KeyPair | None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(self.url + path, ssl=client_context(self.pki, cert), headers=headers) as r,
        ):
            return r.status, await r.read()


@asynccontextmanager
async def running_server(directory: Path, *, sar_allowed: set[str]) -> AsyncIterator[Running]:
    pki = create_test_pki(directory)
    clock = CertClock()
    async with FakeKubeAuth(configmap=configmap_for(pki)) as kube, aiohttp.ClientSession() as http:
        kube.sar_rule = lambda spec: (
            spec["user"] in sar_allowed,
            "" if spec["user"] in sar_allowed else "no RBAC policy matched",
        )
        api = KubeClient(http, kube.url, retry=RetryPolicy(max_attempts=1), clock=clock)
        tls = ServingCertificates(pki.serving.cert_path, pki.serving.key_path)
        authenticator = DelegatingAuthenticator(clock=clock, api=api)
        authenticator.on_change(lambda config: tls.set_client_ca(config.ca_bundle_pem()))
        await authenticator.refresh()
        authorizer = SubjectAccessReviewAuthorizer(api, clock=clock)
        providers = FakeProviders()
        registry = CollectorRegistry()
        server = Server(
            metrics=FakeSource(providers),
            lister=FakeLister(),
            authenticator=authenticator,
            authorizer=authorizer,
            clock=clock,
            registry=registry,
            server_metrics=ServerMetrics(registry),
        )
        runner = web.ServerRunner(serving_server(server))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context)
        await site.start()
        port = runner.addresses[0][1]
        try:
            yield Running(
                url=f"https://127.0.0.1:{port}",
                pki=pki,
                kube=kube,
                clock=clock,
                tls=tls,
                authenticator=authenticator,
                authorizer=authorizer,
                providers=providers,
            )
        finally:
            await runner.cleanup()
