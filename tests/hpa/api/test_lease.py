"""coordination.k8s.io/v1 Lease."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings

from hpa.api.lease import Lease
from tests.hpa.api.strategies import assert_round_trip, wire_objects


def test_lease_micro_times() -> None:
    lease = assert_round_trip(
        Lease,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "hpa", "namespace": "kube-system", "resourceVersion": "7"},
            "spec": {
                "holderIdentity": "hpa-0_1234",
                "leaseDurationSeconds": 15,
                "acquireTime": "2026-01-01T00:00:00.000000Z",
                "renewTime": "2026-01-01T00:00:10.250000Z",
                "leaseTransitions": 3,
            },
        },
    )
    assert isinstance(lease, Lease)
    assert lease.spec.renew_time == datetime(2026, 1, 1, 0, 0, 10, 250000, tzinfo=UTC)


@settings(max_examples=300, deadline=None)
@given(wire_objects(Lease))
def test_any_lease_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(Lease, data)
