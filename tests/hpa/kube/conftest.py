"""Fixtures for the protocol-level tests: an in-memory API server and a client pointed at it."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import aiohttp
import pytest

from hpa.kube.client import KubeClient, RetryPolicy
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.clock import FakeClock


@pytest.fixture
async def apiserver() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    await server.start()
    yield server
    await server.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(auto_advance=True)


@pytest.fixture
async def kube(apiserver: FakeApiServer, clock: FakeClock) -> AsyncIterator[KubeClient]:
    session = aiohttp.ClientSession()
    client = KubeClient(
        session,
        apiserver.url,
        clock=clock,
        rng=random.Random(1),
        retry=RetryPolicy(max_attempts=4),
    )
    yield client
    await client.close()
