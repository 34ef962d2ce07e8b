"""The VPA target resolver: the controller fetcher's table from VPA v1.8.1
(``pkg/target/controller_fetcher/controller_fetcher_test.go``, ``TestControllerFetcher``) and the
selector fetcher, over in-memory stores and a recording fake of the ``/scale`` reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from hpa.core.selector import parse_selector
from hpa.core.vpa.matching import ControllerKey
from hpa.kube.targets import (
    ControllerRecord,
    NodeInvalidOwnerError,
    ScaleInfo,
    TargetError,
    TargetResolver,
    parse_controller,
)

NS = "test-namespace"


def obj(
    kind: str, name: str, *, owner: tuple[str, str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "resourceVersion": "1"}
    if owner is not None:
        api_version, owner_kind, owner_name = owner
        metadata["ownerReferences"] = [
            {"apiVersion": api_version, "kind": owner_kind, "name": owner_name, "controller": True}
        ]
    return {"kind": kind, "metadata": metadata, "spec": spec}


@dataclass
class Stores:
    records: dict[tuple[str, str, str], ControllerRecord] = field(default_factory=dict)

    def add(self, data: dict[str, Any]) -> None:
        record = parse_controller(data, kind=data["kind"])
        self.records[(record.kind, record.namespace, record.name)] = record

    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None:
        return self.records.get((kind, namespace, name))


@dataclass
class FakeScales:
    """``iCanScale`` has a /scale (owned by nothing); anything else answers NotFound."""

    scalable: dict[str, ScaleInfo] = field(
        default_factory=lambda: {"iCanScale": ScaleInfo("app=web", None)}
    )
    calls: list[ControllerKey] = field(default_factory=list)

    async def get_scale(self, key: ControllerKey) -> ScaleInfo | None:
        self.calls.append(key)
        return self.scalable.get(key.name)


def key(kind: str, name: str, api_version: str = "") -> ControllerKey:
    return ControllerKey(NS, kind, name, api_version)


CASES: dict[str, tuple[ControllerKey | None, list[dict[str, Any]], ControllerKey | None, str]] = {
    "nils": (None, [], None, ""),
    "deployment doesn't exist": (
        key("Deployment", "test-deployment"), [], None,
        f"Deployment {NS}/test-deployment does not exist",
    ),
    "deployment no parent": (
        key("Deployment", "test-deployment"), [obj("Deployment", "test-deployment")],
        key("Deployment", "test-deployment"), "",
    ),
    "deployment with parent": (
        key("ReplicaSet", "test-rs"),
        [
            obj("ReplicaSet", "test-rs", owner=("apps/v1", "Deployment", "test-deployment")),
            obj("Deployment", "test-deployment"),
        ],
        key("Deployment", "test-deployment", "apps/v1"), "",
    ),
    "StatefulSet": (
        key("StatefulSet", "test-sts"), [obj("StatefulSet", "test-sts")],
        key("StatefulSet", "test-sts"), "",
    ),
    "DaemonSet": (
        key("DaemonSet", "test-ds"), [obj("DaemonSet", "test-ds")], key("DaemonSet", "test-ds"), "",
    ),
    "CronJob": (
        key("Job", "test-job"),
        [
            obj("Job", "test-job", owner=("batch/v1", "CronJob", "test-cronjob")),
            obj("CronJob", "test-cronjob"),
        ],
        key("CronJob", "test-cronjob", "batch/v1"), "",
    ),
    "CronJob no parent": (
        key("CronJob", "test-cronjob"), [obj("CronJob", "test-cronjob")],
        key("CronJob", "test-cronjob"), "",
    ),
    "rc no parent": (
        key("ReplicationController", "test-rc"), [obj("ReplicationController", "test-rc")],
        key("ReplicationController", "test-rc"), "",
    ),
    "deployment cycle in ownership": (
        key("Deployment", "test-deployment"),
        [obj("Deployment", "test-deployment", owner=("", "Deployment", "test-deployment"))],
        None, "cycle detected in ownership chain",
    ),
    "deployment, parent with no scale subresource": (
        key("Deployment", "test-deployment"),
        [obj("Deployment", "test-deployment", owner=("Foo/Foo", "NotScalingResource", "iCant"))],
        key("Deployment", "test-deployment"), "",
    ),
    "deployment, parent not well known with scale subresource": (
        key("Deployment", "test-deployment"),
        [obj("Deployment", "test-deployment", owner=("Foo/Foo", "ScalingResource", "iCanScale"))],
        key("ScalingResource", "iCanScale", "Foo/Foo"), "",
    ),
    "pod, parent is node": (
        key("Deployment", "test-deployment"),
        [obj("Deployment", "test-deployment", owner=("v1", "Node", "node"))],
        None, "unhandled targetRef v1 / Node / node, last error node is not a valid owner",
    ),
    "custom resource with no scale subresource": (
        key("NotScalingResource", "iCanNotScale", "Foo/Foo"), [], None, "",
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("start", "objects", "expected", "error"), CASES.values(), ids=CASES.keys()
)
async def test_controller_fetcher(
    start: ControllerKey | None,
    objects: list[dict[str, Any]],
    expected: ControllerKey | None,
    error: str,
) -> None:
    stores = Stores()
    for data in objects:
        stores.add(data)
    resolver = TargetResolver(stores, FakeScales())
    if error:
        with pytest.raises(TargetError) as raised:
            await resolver.top_most_well_known_or_scalable(start)
        assert str(raised.value) == error
    else:
        assert await resolver.top_most_well_known_or_scalable(start) == expected


async def test_a_pod_owned_by_a_node_has_no_parent_controller() -> None:
    stores = Stores()
    resolver = TargetResolver(stores, FakeScales())
    refs = [{"apiVersion": "v1", "kind": "Node", "name": "n1", "controller": True}]
    assert await resolver.parent_controller_for_pod(NS, refs) is None
    with pytest.raises(NodeInvalidOwnerError):
        await resolver.top_most_well_known_or_scalable(key("Node", "n1", "v1"))


async def test_a_pod_without_a_controlling_owner_has_no_parent() -> None:
    resolver = TargetResolver(Stores(), FakeScales())
    refs = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": False}]
    assert await resolver.parent_controller_for_pod(NS, refs) is None


@pytest.mark.parametrize(
    ("data", "labels", "matches"),
    [
        (obj("Deployment", "d", selector={"matchLabels": {"app": "web"}}), {"app": "web"}, True),
        (obj("Deployment", "d", selector={"matchLabels": {"app": "web"}}), {"app": "db"}, False),
        (obj("Deployment", "d"), {"app": "web"}, False),  # no selector matches nothing
        (obj("ReplicationController", "rc", selector={"app": "web"}), {"app": "web"}, True),
        (
            obj(
                "CronJob",
                "cj",
                jobTemplate={"spec": {"template": {"metadata": {"labels": {"job": "x"}}}}},
            ),
            {"job": "x", "other": "y"},
            True,
        ),
    ],
    ids=["deployment", "deployment, other labels", "no selector", "rc map", "cronjob template"],
)
async def test_selector_of_a_well_known_target(
    data: dict[str, Any], labels: dict[str, str], matches: bool
) -> None:
    stores = Stores()
    stores.add(data)
    resolver = TargetResolver(stores, FakeScales())
    selector = await resolver.selector(key(data["kind"], data["metadata"]["name"]))
    assert selector.matches(labels) is matches


async def test_selector_of_a_scalable_custom_resource_comes_from_its_scale() -> None:
    resolver = TargetResolver(Stores(), FakeScales())
    selector = await resolver.selector(key("ScalingResource", "iCanScale", "Foo/Foo"))
    assert selector == parse_selector("app=web")
    with pytest.raises(TargetError, match="empty selector"):
        await resolver.selector(key("NotScalingResource", "iCanNotScale", "Foo/Foo"))
    with pytest.raises(TargetError, match="does not exist"):
        await resolver.selector(key("Deployment", "missing"))


@pytest.mark.parametrize(
    ("kind", "spec", "status", "replicas"),
    [
        ("Deployment", {"replicas": 3}, {}, 3),
        ("ReplicaSet", {}, {}, None),
        ("DaemonSet", {}, {"desiredNumberScheduled": 4}, 4),
        ("Job", {"parallelism": 2}, {}, None),
    ],
)
def test_configured_replicas(
    kind: str, spec: dict[str, Any], status: dict[str, Any], replicas: int | None
) -> None:
    data = obj(kind, "x", **spec)
    data["status"] = status
    assert parse_controller(data, kind=kind).replicas == replicas
