"""policy/v1 Eviction and PodDisruptionBudget."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from hpa.api.policy import Eviction, PodDisruptionBudget
from tests.hpa.api.strategies import assert_round_trip, wire_objects


def test_pdb_int_or_string_fields_keep_their_type() -> None:
    pdb = PodDisruptionBudget.from_dict(
        {"spec": {"minAvailable": 2, "maxUnavailable": "25%"}, "status": {"disruptionsAllowed": 1}}
    )
    assert (pdb.spec.min_available, pdb.spec.max_unavailable) == (2, "25%")
    assert pdb.to_dict()["spec"] == {"minAvailable": 2, "maxUnavailable": "25%"}
    assert pdb.status.disruptions_allowed == 1


def test_eviction_body() -> None:
    eviction = Eviction(
        api_version="policy/v1",
        kind="Eviction",
        metadata={"name": "p", "namespace": "n"},  # type: ignore[arg-type]
    )
    assert eviction.to_dict() == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "n"},
    }


@settings(max_examples=300, deadline=None)
@given(wire_objects(PodDisruptionBudget))
def test_any_pdb_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(PodDisruptionBudget, data)


@settings(max_examples=300, deadline=None)
@given(wire_objects(Eviction))
def test_any_eviction_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(Eviction, data)
