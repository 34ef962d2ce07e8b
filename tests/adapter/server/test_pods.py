"""Pods and nodes from informer stores: the providers' PodLister and the resource API's lister."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from adapter.providers import BuiltinKinds, MetricFetchError
from adapter.rules import GroupResource
from adapter.server.pods import (
    ApiObjectNameLister,
    InformerObjectLister,
    NodeRecord,
    list_path,
    parse_node,
)
from adapter.server.ports import ObjectMeta
from hpa.core.selector import SelectorError
from hpa.kube.informer import Store
from hpa.kube.records import PodRecord, parse_pod


def _pod(namespace: str, name: str, *, labels: dict[str, str]) -> PodRecord:
    return parse_pod({"metadata": {"namespace": namespace, "name": name, "labels": labels}})


def _lister() -> InformerObjectLister:
    pods: Store[PodRecord] = Store()
    for pod in (
        _pod("x", "web-1", labels={"app": "web", "tier": "front"}),
        _pod("x", "web-2", labels={"app": "web"}),
        _pod("x", "db-0", labels={"app": "db"}),
        _pod("y", "web-9", labels={"app": "web"}),
    ):
        pods.put(f"{pod.namespace}/{pod.name}", pod)
    nodes: Store[NodeRecord] = Store()
    for node in (
        parse_node({"metadata": {"name": "n1", "labels": {"role": "worker"}}}),
        parse_node({"metadata": {"name": "n2", "resourceVersion": "7"}}),
    ):
        nodes.put(node.name, node)
    return InformerObjectLister(pods, nodes)


async def test_pods_for_selector_answers_names_in_the_namespace() -> None:
    lister = _lister()
    assert await lister.pods_for_selector("x", "app=web") == ["web-1", "web-2"]
    assert await lister.pods_for_selector("x", "app in (web,db),tier!=front") == ["db-0", "web-2"]
    assert await lister.pods_for_selector("x", "") == ["db-0", "web-1", "web-2"]
    assert await lister.pods_for_selector("z", "") == []


async def test_remembered_pod_names_follow_every_change_in_the_namespace() -> None:
    pods: Store[PodRecord] = Store()
    pods.put("x/web-1", _pod("x", "web-1", labels={"app": "web"}))
    lister = InformerObjectLister(pods)
    assert await lister.pods_for_selector("x", "app=web") == ["web-1"]
    pods.put("x/web-2", _pod("x", "web-2", labels={"app": "web"}))
    assert await lister.pods_for_selector("x", "app=web") == ["web-1", "web-2"]
    pods.put("x/web-1", _pod("x", "web-1", labels={"app": "old"}))  # relabelled
    assert await lister.pods_for_selector("x", "app=web") == ["web-2"]
    pods.put("y/web-3", _pod("y", "web-3", labels={"app": "web"}))  # another namespace
    assert await lister.pods_for_selector("x", "app=web") == ["web-2"]
    pods.delete("x/web-2")
    assert await lister.pods_for_selector("x", "app=web") == []
    returned = await lister.pods_for_selector("y", "app=web")
    assert isinstance(returned, list)
    returned.append("mutated")  # the caller's copy
    assert await lister.pods_for_selector("y", "app=web") == ["web-3"]


async def test_list_pods_across_namespaces_with_labels() -> None:
    listed = await _lister().list_pods(None, "app=web")
    assert [(p.namespace, p.name) for p in listed] == [
        ("x", "web-1"),
        ("x", "web-2"),
        ("y", "web-9"),
    ]
    assert listed[0] == ObjectMeta("web-1", "x", labels={"app": "web", "tier": "front"})


async def test_list_nodes_and_bad_selectors() -> None:
    lister = _lister()
    assert [n.name for n in await lister.list_nodes("role=worker")] == ["n1"]
    assert [n.name for n in await lister.list_nodes("")] == ["n1", "n2"]
    with pytest.raises(SelectorError):
        await lister.list_pods("x", "app in (")
    assert isinstance(SelectorError("x"), ValueError)  # the server answers ValueError with 400


async def test_without_a_node_informer_no_nodes_are_listed() -> None:
    assert await InformerObjectLister(Store()).list_nodes("") == []


class _RecordingApi:
    """A ``KubeApi`` that answers every LIST with two objects and records the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str] | None]] = []

    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        self.calls.append((path, dict(params) if params is not None else None))
        return {"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}

    async def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        raise AssertionError("no POST expected")


@pytest.mark.parametrize(
    ("resource", "namespace", "path"),
    [
        (GroupResource("apps", "deployments"), "shop", "/apis/apps/v1/namespaces/shop/deployments"),
        (GroupResource("", "services"), "shop", "/api/v1/namespaces/shop/services"),
        (GroupResource("", "namespaces"), None, "/api/v1/namespaces"),
        (GroupResource("", "nodes"), None, "/api/v1/nodes"),
        (GroupResource("", "pods"), None, "/api/v1/pods"),
    ],
)
def test_list_path_of_a_group_resource(
    resource: GroupResource, namespace: str | None, path: str
) -> None:
    assert list_path(resource, namespace, BuiltinKinds()) == path


async def test_api_object_name_lister_lists_with_the_label_selector() -> None:
    api = _RecordingApi()
    lister = ApiObjectNameLister(api)
    names = await lister.names_for_selector(GroupResource("apps", "deployments"), "shop", "a=b")
    every = await lister.names_for_selector(GroupResource("", "namespaces"), None, "")
    with pytest.raises(MetricFetchError) as unknown:
        await lister.names_for_selector(GroupResource("", "widgets"), "shop", "")
    assert "no kind is known" in unknown.value.detail
    assert names == every == ["a", "b"]
    assert api.calls == [
        ("/apis/apps/v1/namespaces/shop/deployments", {"labelSelector": "a=b"}),
        ("/api/v1/namespaces", None),
    ]
