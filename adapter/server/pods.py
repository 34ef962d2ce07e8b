"""Pods and nodes from watch caches: the providers' ``PodLister`` and the resource API's lister.

Upstream counterparts: metrics-server ``pkg/api`` (``podLister``/``nodeLister`` from shared
informers, ``labelSelector`` matched against the cache) and custom-metrics-apiserver
``helpers.ListObjectNames`` (which LISTs through the dynamic client on every request).

Deliberate deviations: every lookup is answered from ``hpa.kube`` informers (one pod watch, one
node watch) rather than a LIST per request; a selector that does not parse raises ``ValueError``
(the server answers 400). Pods that are terminating are still listed (metrics-server too).
The pod names for a ``(namespace, selector)`` are remembered until the store changes anything in
that namespace (``Store.namespace_version``): an HPA asks for the same selector every sync, and
re-matching every pod of the namespace cost more than the rest of the lookup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from adapter.server.ports import ObjectMeta
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


NAMES_CACHE_SIZE = 256
"""``(namespace, selector)`` answers of ``pods_for_selector`` kept (the oldest dropped first)."""


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
