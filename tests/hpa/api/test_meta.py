"""meta/v1: Status, discovery documents and object metadata."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from hpa.api.base import KubeModel
from hpa.api.meta import APIGroupList, APIResource, APIResourceList, ObjectMeta, Status
from tests.hpa.api.strategies import assert_round_trip, wire_objects

DISCOVERY = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "custom.metrics.k8s.io/v1beta2",
    "resources": [
        {
            "name": "pods/http_requests_per_second",
            "singularName": "",
            "namespaced": True,
            "kind": "MetricValueList",
            "verbs": ["get"],
        }
    ],
}
GROUPS = {
    "kind": "APIGroupList",
    "apiVersion": "v1",
    "groups": [
        {
            "name": "custom.metrics.k8s.io",
            "versions": [{"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"}],
            "preferredVersion": {
                "groupVersion": "custom.metrics.k8s.io/v1beta2",
                "version": "v1beta2",
            },
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "a:443"}],
        }
    ],
}
NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server could not find the metric http_requests for pods",
    "reason": "NotFound",
    "details": {"kind": "pods", "causes": [{"reason": "x", "message": "y", "field": "z"}]},
    "code": 404,
}


@pytest.mark.parametrize(
    ("model", "data"),
    [(APIResourceList, DISCOVERY), (APIGroupList, GROUPS), (Status, NOT_FOUND)],
)
def test_documented_shapes_round_trip(model: type[KubeModel], data: dict[str, Any]) -> None:
    assert_round_trip(model, data)


def test_discovery_entry_written_by_an_adapter_keeps_the_empty_singular_name() -> None:
    entry = APIResource(
        name="pods/x", singular_name="", namespaced=True, kind="MetricValueList", verbs=["get"]
    )
    assert entry.to_dict()["singularName"] == ""
    groups = APIGroupList.from_dict(GROUPS)
    assert groups.groups[0].server_address_by_client_cidrs[0].client_cidr == "0.0.0.0/0"


def test_object_meta_continue_and_owner_fields_use_wire_names() -> None:
    meta = ObjectMeta.from_dict({"ownerReferences": [{"blockOwnerDeletion": False}]})
    assert meta.owner_references[0].block_owner_deletion is False
    from hpa.api.meta import ListMeta

    assert ListMeta(continue_="token").to_dict() == {"continue": "token"}


@pytest.mark.parametrize("model", [Status, APIResourceList, APIGroupList])
def test_any_meta_object_round_trips(model: type[KubeModel]) -> None:
    @settings(max_examples=300, deadline=None)
    @given(wire_objects(model))
    def round_trip(data: dict[str, Any]) -> None:
        assert_round_trip(model, data)

    round_trip()
