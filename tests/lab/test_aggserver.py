"""The aggregated test server trusts identity headers only from the front proxy (no lab needed)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from tests.lab import aggserver
from tests.lab.pki import KeyPair, Pki, create_pki, issue_certificate

WHOAMI = f"/apis/{aggserver.GROUP}/{aggserver.VERSION}/{aggserver.RESOURCE}"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return create_pki(
        tmp_path_factory.mktemp("pki"), apiserver_ips=("198.18.0.1",), service_ip="198.19.0.1"
    )


@pytest.fixture
async def base_url(pki: Pki, tmp_path: Path) -> AsyncIterator[str]:
    serving = issue_certificate(
        pki.ca, tmp_path / "serving", common_name="test", ip_addresses=("127.0.0.1",), server=True
    )
    context = aggserver.tls_context(
        cert=str(serving.cert_path),
        key=str(serving.key_path),
        front_proxy_ca=str(pki.front_proxy_ca.pair.cert_path),
    )
    runner = web.AppRunner(aggserver.build_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def client_tls(pki: Pki, client: KeyPair | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca.pair.cert_path))
    if client is not None:
        context.load_cert_chain(client.cert_path, client.key_path)
    return context


async def get(
    url: str, context: ssl.SSLContext, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, object]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, ssl=context, headers=headers) as response,
    ):
        return response.status, await response.json()


async def test_front_proxy_identity_is_echoed(pki: Pki, base_url: str) -> None:
    headers = {"X-Remote-User": "alice", "X-Remote-Group": "devs"}
    status, body = await get(
        base_url + WHOAMI, client_tls(pki, pki.front_proxy_client), headers=headers
    )
    assert status == 200
    assert body["user"] == "alice"
    assert body["groups"] == ["devs"]
    assert body["frontProxy"] == "front-proxy-client"


async def test_discovery_lists_the_resource(pki: Pki, base_url: str) -> None:
    status, body = await get(
        f"{base_url}/apis/{aggserver.GROUP}/{aggserver.VERSION}",
        client_tls(pki, pki.front_proxy_client),
    )
    assert status == 200
    assert body["groupVersion"] == f"{aggserver.GROUP}/{aggserver.VERSION}"


@pytest.mark.parametrize("who", ["nobody", "admin"])
async def test_clients_without_a_front_proxy_certificate_are_refused(
    pki: Pki, base_url: str, who: str
) -> None:
    client = None if who == "nobody" else pki.admin  # admin chains to the cluster CA only
    with pytest.raises(aiohttp.ClientError):
        await get(base_url + WHOAMI, client_tls(pki, client), headers={"X-Remote-User": "eve"})


async def test_front_proxy_ca_certificate_with_another_name_is_unauthorized(
    pki: Pki, base_url: str, tmp_path: Path
) -> None:
    impostor = issue_certificate(
        pki.front_proxy_ca, tmp_path / "impostor", common_name="impostor", client=True
    )
    status, body = await get(
        base_url + WHOAMI, client_tls(pki, impostor), headers={"X-Remote-User": "eve"}
    )
    assert status == 401
    assert body["reason"] == "Unauthorized"
