"""Resource rules: the ``containerQuery``/``nodeQuery`` behind ``metrics.k8s.io``.

Upstream counterpart: prometheus-adapter ``pkg/resourceprovider/provider.go``
(``newResourceQuery``, ``NewProvider``, and the query half of ``runQuery``): container queries are
``Build("", pods, namespace, [containerLabel], Everything, names...)``, node queries are
``Build("", nodes, "", nil, Everything, names...)``; ``window`` is reported with the results.

Converting samples into ``PodMetrics``/``NodeMetrics`` (NaN and negatives to zero, earliest
timestamp) is the provider's job and is not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adapter.rules.config import ResourceRule, ResourceRules
from adapter.rules.mapper import NODES, PODS, RESTMapper
from adapter.rules.naming import MetricsQuery, ResourceConverter, resource_converter_for


@dataclass(frozen=True)
class ResourceQuery:
    """``resourceQuery``: the queries for one resource (CPU or memory)."""

    resource_converter: ResourceConverter
    container_query: MetricsQuery
    node_query: MetricsQuery
    container_label: str

    @classmethod
    def from_rule(
        cls, rule: ResourceRule, mapper: RESTMapper, *, source: str, name: str
    ) -> ResourceQuery:
        converter = resource_converter_for(
            rule.resources, mapper, source=source, rule=f"resourceRules.{name}", field_prefix=""
        )
        return cls(
            resource_converter=converter,
            container_query=MetricsQuery(rule.container_query_template, converter),
            node_query=MetricsQuery(rule.node_query_template, converter),
            container_label=rule.container_label,
        )

    def build_container_query(self, names: Sequence[str], *, namespace: str) -> str:
        """The per-container query for pods ``names`` in ``namespace``, grouped by container."""
        return self.container_query.build(
            "",
            PODS,
            namespace=namespace,
            names=names,
            extra_group_by=(self.container_label,),
        )

    def build_node_query(self, names: Sequence[str]) -> str:
        """The per-node query for nodes ``names``."""
        return self.node_query.build("", NODES, namespace=None, names=names)

    def pod_label(self) -> str:
        """The label whose value names the pod in container query results."""
        return self.resource_converter.label_for_resource(PODS)

    def node_label(self) -> str:
        """The label whose value names the node in node query results."""
        return self.resource_converter.label_for_resource(NODES)


@dataclass(frozen=True)
class ResourceQueries:
    """``resourceProvider``'s query side: CPU, memory and the reported window."""

    cpu: ResourceQuery
    memory: ResourceQuery
    window_milliseconds: int

    @classmethod
    def from_config(
        cls, rules: ResourceRules, mapper: RESTMapper, *, source: str = "config"
    ) -> ResourceQueries:
        return cls(
            cpu=ResourceQuery.from_rule(rules.cpu, mapper, source=source, name="cpu"),
            memory=ResourceQuery.from_rule(rules.memory, mapper, source=source, name="memory"),
            window_milliseconds=rules.window_milliseconds,
        )
