"""A client connection to the API server that ends (an answer, an error status, a reset, a cut
body, a timeout, a watch ending or failing) leaves no TLS state for the cyclic garbage collector
(each holds a 256 KiB read buffer): with the collector off, none is alive once the client and
its pool are closed."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hpa.kube.client_endings import CLIENT_ENDINGS, client_tls_protocols, ending_server

CONNECTIONS = 3


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("ending", sorted(CLIENT_ENDINGS))
async def test_an_ended_connection_is_freed_without_the_collector(
    ending: str, tmp_path: Path, collector_off: None
) -> None:
    async with ending_server(tmp_path) as kube_client:
        base = client_tls_protocols()
        async with kube_client() as client:
            for _ in range(CONNECTIONS):
                await CLIENT_ENDINGS[ending](client)
        await asyncio.sleep(0.05)
        assert client_tls_protocols() == base
