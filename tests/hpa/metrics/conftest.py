"""Fixtures for the API-backed metrics clients: a fake JSON getter answering 404 by default."""

from __future__ import annotations

import pytest

from hpa.kube.client import ApiStatus, NotFoundError
from tests.fakes.metrics import FakeJsonGetter


def not_found(path: str) -> NotFoundError:
    """The aggregator's answer for a path nobody serves (``hpa.kube``'s real error type)."""
    return NotFoundError(
        ApiStatus(404, "NotFound", "the server could not find the requested resource")
    )


@pytest.fixture
def getter() -> FakeJsonGetter:
    return FakeJsonGetter(not_found)
