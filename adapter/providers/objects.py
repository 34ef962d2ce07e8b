"""Described objects: group-resource to ``apiVersion``/``kind``, and the request path forms.

Upstream counterparts: custom-metrics-apiserver ``helpers.ReferenceFor`` (``mapper.KindFor``,
``APIVersion: group + "/" + version``, so core objects read ``"/v1"``) and
``pkg/registry/custom_metrics/reststorage.go`` (``List``: ``schema.ParseGroupResource``, the
``/namespaces/{ns}/metrics/{metric}`` rewrite to the namespace object, ``*`` for "by selector").

Deliberate deviation: ``adapter.rules.RESTMapper`` answers only plural/singular questions, so
kinds come from a ``KindMapper`` port; ``BuiltinKinds`` knows the built-in kinds (and more can be
added from discovery by the server). An unknown kind raises ``MetricFetchError`` (upstream: the
``KindFor`` error, a 500).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import NamedTuple, Protocol

from adapter.providers.errors import MetricFetchError
from adapter.rules import NAMESPACES, CustomMetricInfo, GroupResource, Operator, Requirement
from adapter.rules.mapper import guess_plural


class ObjectReference(NamedTuple):
    """``custom_metrics.ObjectReference`` (``describedObject``). A named tuple, not a frozen
    dataclass: one is built per object per answer, and a tuple is built in half the time.
    Pass ``name`` and ``namespace`` by keyword."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""


class KindMapper(Protocol):
    def kind_for(self, resource: GroupResource) -> tuple[str, str]:
        """(``apiVersion`` as ``group/version``, ``Kind``) of a normalized group-resource."""
        ...


BUILTIN_GROUP_VERSIONS: tuple[tuple[str, str, str], ...] = (
    ("", "v1", "Pod"),
    ("", "v1", "Service"),
    ("", "v1", "Endpoints"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "ServiceAccount"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "ReplicationController"),
    ("", "v1", "Node"),
    ("", "v1", "Namespace"),
    ("", "v1", "PersistentVolume"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "ReplicaSet"),
    ("batch", "v1", "Job"),
    ("batch", "v1", "CronJob"),
    ("networking.k8s.io", "v1", "Ingress"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("policy", "v1", "PodDisruptionBudget"),
)


class BuiltinKinds:
    """A fixed ``KindFor`` table: (group, version, Kind) entries, plurals guessed like
    ``DefaultRESTMapper.Add`` (``UnsafeGuessKindToResource``)."""

    def __init__(self, entries: Iterable[tuple[str, str, str]] = BUILTIN_GROUP_VERSIONS) -> None:
        table: dict[GroupResource, tuple[str, str]] = {}
        for group, version, kind in entries:
            plural, _ = guess_plural(kind)
            table[GroupResource(group, plural)] = (f"{group}/{version}", kind)
        self._table: Mapping[GroupResource, tuple[str, str]] = table

    def kind_for(self, resource: GroupResource) -> tuple[str, str]:
        found = self._table.get(resource)
        if found is None:
            raise MetricFetchError(detail=f"no kind is known for resource {resource}")
        return found


def parse_group_resource(text: str) -> GroupResource:
    """``schema.ParseGroupResource``: ``deployments.apps`` -> (apps, deployments)."""
    resource, _, group = text.partition(".")
    return GroupResource(group, resource)


@dataclass(frozen=True)
class CustomMetricRequest:
    """One custom-metrics API request, after reststorage's path rewrites.

    ``name`` is None for ``*`` (by label selector). ``namespace`` is None for root-scoped objects
    (``info.namespaced`` is then false).
    """

    info: CustomMetricInfo
    namespace: str | None
    _: KW_ONLY
    name: str | None


def custom_metric_request(
    *, namespace: str | None, resource: str, name: str, metric: str
) -> CustomMetricRequest:
    """Map the path segments of ``/apis/custom.metrics.k8s.io/<v>/...`` to a request.

    - ``namespaces/{ns}/{resource}/{name|*}/{metric}``: ``namespace=ns``;
    - ``namespaces/{ns}/metrics/{metric}``: pass ``resource="metrics"`` and the metric as
      ``metric`` (or as ``name``, where reststorage finds it): the namespace object itself, and
      for ``ns`` ``*`` every namespace by label selector (reststorage's ``name == "*"``);
    - ``{resource}/{name|*}/{metric}``: ``namespace=None`` (root-scoped).
    """
    if namespace and resource == "metrics":
        info = CustomMetricInfo(NAMESPACES, False, metric or name)
        return CustomMetricRequest(info, None, name=None if namespace == "*" else namespace)
    info = CustomMetricInfo(parse_group_resource(resource), bool(namespace), metric)
    return CustomMetricRequest(info, namespace or None, name=None if name == "*" else name)


_EXPRESSION_OPERATORS = {
    Operator.IN: "In",
    Operator.NOT_IN: "NotIn",
    Operator.NOT_EQUALS: "NotIn",
    Operator.EXISTS: "Exists",
    Operator.DOES_NOT_EXIST: "DoesNotExist",
}


def label_selector_json(requirements: Sequence[Requirement]) -> dict[str, object]:
    """``metav1.ParseToLabelSelector``: the ``metav1.LabelSelector`` JSON for ``metric.selector``.

    ``=``/``==`` go to ``matchLabels``, the rest to ``matchExpressions`` (empty parts omitted).
    Deviation: ``!=`` becomes ``NotIn`` with one value instead of an error, and ``gt``/``lt``
    (which no rendered query can contain: the rules refuse them) raise ``ValueError``.
    """
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, object]] = []
    for requirement in requirements:
        if requirement.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS):
            match_labels[requirement.key] = requirement.values[0]
            continue
        operator = _EXPRESSION_OPERATORS.get(requirement.operator)
        if operator is None:
            raise ValueError(f"{requirement.operator.value!r} has no label selector form")
        expression: dict[str, object] = {"key": requirement.key, "operator": operator}
        if requirement.values:
            expression["values"] = list(requirement.values)
        expressions.append(expression)
    out: dict[str, object] = {}
    if match_labels:
        out["matchLabels"] = match_labels
    if expressions:
        out["matchExpressions"] = expressions
    return out
