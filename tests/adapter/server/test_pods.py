"""Pods and nodes from informer stores: the providers' PodLister and the resource API's lister."""

from __future__ import annotations

import pytest

from adapter.server.pods import InformerObjectLister, NodeRecord, parse_node
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
