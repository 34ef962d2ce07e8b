"""Pods and nodes from watch caches: the providers' ``PodLister`` and the resource API's lister.

Upstream counterparts: metrics-server ``pkg/api`` (``podLister``/``nodeLister`` from shared
informers, ``labelSelector`` matched against the cache) and custom-metrics-apiserver
``helpers.ListObjectNames`` (which LISTs through the dynamic client on every request).

Deliberate deviations: pod and node lookups are answered from ``hpa.kube`` informers (one pod
watch, one node watch) rather than a LIST per request (``ApiObjectNameLister`` LISTs every other
resource per request, as upstream does); a selector that does not parse raises ``ValueError``
(the server answers 400). Pods that are terminating are still listed (metrics-server too).
The pod names for a ``(namespace, selector)`` are remembered until the store changes anything in
that namespace (``Store.namespace_version``): an HPA asks for the same selector every sync, and
re-matching every pod of the namespace cost more than the rest of the lookup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from adapter.providers import BuiltinKinds, KindMapper
from adapter.rules import GroupResource
from adapter.server.ports import KubeApi, ObjectMeta
from hpa.core.selector import parse_selector
from hpa.kube.informer import Informer, Store
from hpa.kube.records import PodRecord


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """The slim node record the node informer keeps."""

    name: str
    _: KW_ONLY
    labels: Mapping[str, str] = field(default_factory=dict)
    resource_version: str = ""
    namespace: str = ""


def parse_node(data: Mapping[str, Any]) -> NodeRecord:
    metadata = data["metadata"]
    labels = metadata.get("labels") or {}
    return NodeRecord(
        name=str(metadata["name"]),
        labels={str(k): str(v) for k, v in labels.items()},
        resource_version=str(metadata.get("resourceVersion", "")),
    )


NAMES_CACHE_SIZE = 16384
"""``(namespace, selector)`` answers of ``pods_for_selector`` kept (the oldest dropped first):
each HPA asks with its own selector every sync, so the bound is above the number of HPAs of a
large fleet (10,000); below it, HPAs asked in turn never found their answer kept."""


class InformerObjectLister:
    """``ObjectLister`` over the stores of a pod informer and (optionally) a node informer."""

    def __init__(self, pods: Store[PodRecord], nodes: Store[NodeRecord] | None = None) -> None:
        self._pods = pods
        self._nodes = nodes
        self._names: dict[tuple[str, str], tuple[int, tuple[str, ...]]] = {}

    @classmethod
    def from_informers(
        cls, pods: Informer[PodRecord], nodes: Informer[NodeRecord] | None = None
    ) -> InformerObjectLister:
        return cls(pods.store, nodes.store if nodes is not None else None)

    async def pods_for_selector(self, namespace: str, selector: str) -> Sequence[str]:
        key = (namespace, selector)
        version = self._pods.namespace_version(namespace)
        known = self._names.get(key)
        if known is not None and known[0] == version:
            return list(known[1])
        names = tuple(pod.name for pod in self._pods.select(namespace, parse_selector(selector)))
        if known is None and len(self._names) >= NAMES_CACHE_SIZE:
            del self._names[next(iter(self._names))]
        self._names[key] = (version, names)
        return list(names)

    async def list_pods(self, namespace: str | None, selector: str) -> Sequence[ObjectMeta]:
        return [
            ObjectMeta(pod.name, pod.namespace, labels=pod.labels)
            for pod in self._pods.select(namespace, parse_selector(selector))
        ]

    async def list_nodes(self, selector: str) -> Sequence[ObjectMeta]:
        if self._nodes is None:
            return []
        return [
            ObjectMeta(node.name, labels=node.labels)
            for node in self._nodes.select(None, parse_selector(selector))
        ]


def list_path(resource: GroupResource, namespace: str | None, kinds: KindMapper) -> str:
    """The LIST path of ``resource`` at the version ``kinds`` knows, in ``namespace`` (None:
    cluster-scoped, or across namespaces)."""
    api_version, _ = kinds.kind_for(resource)
    group, _, version = api_version.rpartition("/")
    root = f"/apis/{group}/{version}" if group else f"/api/{version}"
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{root}{scope}/{resource.resource}"


class ApiObjectNameLister:
    """The providers' ``ObjectNameLister``: one LIST per request with the label selector
    (custom-metrics-apiserver ``helpers.ListObjectNames`` over the dynamic client). Resources
    ``kinds`` does not know raise ``MetricFetchError`` (upstream: the RESTMapper's error, a 500)."""

    def __init__(self, api: KubeApi, kinds: KindMapper | None = None) -> None:
        self._api = api
        self._kinds: KindMapper = kinds if kinds is not None else BuiltinKinds()

    async def names_for_selector(
        self, resource: GroupResource, namespace: str | None, selector: str
    ) -> Sequence[str]:
        path = list_path(resource, namespace, self._kinds)
        found = await self._api.get(path, params={"labelSelector": selector} if selector else None)
        return [str(item["metadata"]["name"]) for item in found.get("items") or ()]
