"""apps/v1 Deployment, StatefulSet and ReplicaSet."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from hpa.api.workload import Deployment, ReplicaSet, StatefulSet
from tests.hpa.api.data import VPA_DATA, load_yaml_documents
from tests.hpa.api.strategies import assert_round_trip, wire_objects


@pytest.mark.parametrize(
    ("name", "replicas", "cpu"),
    [
        ("hamster.yaml", 2, "100m"),
        ("redis.yaml", 3, "100m"),
        ("hamster-labelselectors.yaml", 2, "100m"),
    ],
)
def test_upstream_example_deployments_round_trip(name: str, replicas: int, cpu: str) -> None:
    (doc,) = [d for d in load_yaml_documents(VPA_DATA / name) if d["kind"] == "Deployment"]
    deployment = assert_round_trip(Deployment, doc)
    assert isinstance(deployment, Deployment)
    assert deployment.spec.replicas == replicas
    assert deployment.spec.selector is not None
    assert deployment.spec.selector.match_labels == doc["spec"]["selector"]["matchLabels"]
    (container,) = deployment.spec.template.spec.containers
    assert container.resources is not None
    assert container.resources.requests["cpu"] == cpu


@pytest.mark.parametrize("model", [Deployment, StatefulSet, ReplicaSet])
def test_status_replica_counts_are_read(model: type[Deployment | StatefulSet | ReplicaSet]) -> None:
    obj = model.from_dict(
        {
            "spec": {"replicas": 4},
            "status": {"replicas": 3, "readyReplicas": 2, "observedGeneration": 7},
        }
    )
    assert obj.spec.replicas == 4
    assert (obj.status.replicas, obj.status.ready_replicas) == (3, 2)
    assert obj.status.observed_generation == 7


@settings(max_examples=300, deadline=None)
@given(wire_objects(Deployment))
def test_any_deployment_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(Deployment, data)


@settings(max_examples=300, deadline=None)
@given(wire_objects(StatefulSet))
def test_any_stateful_set_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(StatefulSet, data)


@settings(max_examples=300, deadline=None)
@given(wire_objects(ReplicaSet))
def test_any_replica_set_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(ReplicaSet, data)
