"""Discovery documents: ``/apis`` (``APIGroupList``), ``/apis/<group>`` (``APIGroup``) and the
static ``APIResourceList`` of ``metrics.k8s.io/v1beta1``.

Upstream counterparts: k8s.io/apiserver ``endpoints/discovery`` (``rootAPIsHandler``,
``APIGroupHandler``), custom-metrics-apiserver ``pkg/apiserver/cmapis.go`` (``v1beta2`` preferred
over ``v1beta1``) and metrics-server ``pkg/api/install.go`` (``nodes``/``pods`` with verbs
``get``, ``list``). The dynamic lists of custom and external metrics are prebuilt by the
providers (``MetricProviders.discovery``) and served as they are.

Deliberate deviations: none in shape; ``metrics.k8s.io`` is listed only when the rule file has
``resourceRules``, as prometheus-adapter registers it only then.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from adapter.server.wire import CUSTOM_GROUP, EXTERNAL_GROUP, RESOURCE_GROUP, JsonObject


@dataclass(frozen=True)
class GroupInfo:
    name: str
    versions: tuple[str, ...]  # preferred first

    def document(self) -> JsonObject:
        versions = [{"groupVersion": f"{self.name}/{v}", "version": v} for v in self.versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": self.name,
            "versions": versions,
            "preferredVersion": versions[0],
        }


CUSTOM = GroupInfo(CUSTOM_GROUP, ("v1beta2", "v1beta1"))
EXTERNAL = GroupInfo(EXTERNAL_GROUP, ("v1beta1",))
RESOURCE = GroupInfo(RESOURCE_GROUP, ("v1beta1",))


def served_groups(*, resource_metrics: bool) -> tuple[GroupInfo, ...]:
    return (CUSTOM, EXTERNAL, RESOURCE) if resource_metrics else (CUSTOM, EXTERNAL)


def api_group_list(groups: tuple[GroupInfo, ...]) -> bytes:
    body = {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {k: v for k, v in g.document().items() if k not in ("kind", "apiVersion")}
            for g in groups
        ],
    }
    return orjson.dumps(body)


def api_group(group: GroupInfo) -> bytes:
    return orjson.dumps(group.document())


RESOURCE_METRICS_RESOURCES: bytes = orjson.dumps(
    {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{RESOURCE_GROUP}/v1beta1",
        "resources": [
            {
                "name": "nodes",
                "singularName": "",
                "namespaced": False,
                "kind": "NodeMetrics",
                "verbs": ["get", "list"],
            },
            {
                "name": "pods",
                "singularName": "",
                "namespaced": True,
                "kind": "PodMetrics",
                "verbs": ["get", "list"],
            },
        ],
    }
)
