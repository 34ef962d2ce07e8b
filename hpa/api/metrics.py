"""Metrics API types: custom (v1beta1, v1beta2), external (v1beta1) and resource (v1beta1).

Upstream counterparts (kubernetes/kubernetes ``staging/src/k8s.io/metrics/pkg/apis/``):

* ``custom_metrics/v1beta2/types.go``: ``MetricValueList``, ``MetricValue`` with
  ``metric{name, selector}`` and ``windowSeconds``;
* ``custom_metrics/v1beta1/types.go``: the same list with ``metricName``, a top-level
  ``selector`` and the window serialized as ``window``;
* ``external_metrics/v1beta1/types.go``: ``ExternalMetricValueList``;
* ``metrics/v1beta1/types.go``: ``PodMetrics`` / ``NodeMetrics`` (and their lists), whose
  ``window`` is a Go duration string such as ``"30s"``.

An adapter that wants to emit ``"selector": null`` (as upstream's servers do) sets the field to
``None`` explicitly; an unset field is not written.

Deliberate deviations: none.
"""

from __future__ import annotations

from pydantic import Field

from hpa.api.base import KubeModel
from hpa.api.meta import LabelSelector, ListMeta, ObjectMeta, ObjectReference, TypeMeta
from hpa.api.types import Quantity, ResourceList, Time

__all__ = [
    "ContainerMetrics",
    "ExternalMetricValue",
    "ExternalMetricValueList",
    "MetricIdentifierV1Beta2",
    "MetricValueListV1Beta1",
    "MetricValueListV1Beta2",
    "MetricValueV1Beta1",
    "MetricValueV1Beta2",
    "NodeMetrics",
    "NodeMetricsList",
    "PodMetrics",
    "PodMetricsList",
]


class MetricIdentifierV1Beta2(KubeModel):
    """``custom_metrics/v1beta2.MetricIdentifier``."""

    name: str = ""
    selector: LabelSelector | None = None


class MetricValueV1Beta2(KubeModel):
    """``custom_metrics/v1beta2.MetricValue``."""

    described_object: ObjectReference = Field(default_factory=ObjectReference)
    metric: MetricIdentifierV1Beta2 = Field(default_factory=MetricIdentifierV1Beta2)
    timestamp: Time | None = None
    window_seconds: int | None = None
    value: Quantity = "0"


class MetricValueListV1Beta2(TypeMeta):
    """``custom.metrics.k8s.io/v1beta2`` ``MetricValueList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[MetricValueV1Beta2] = Field(default_factory=list)


class MetricValueV1Beta1(KubeModel):
    """``custom_metrics/v1beta1.MetricValue`` (window on the wire as ``window``)."""

    described_object: ObjectReference = Field(default_factory=ObjectReference)
    metric_name: str = ""
    timestamp: Time | None = None
    window_seconds: int | None = Field(default=None, alias="window")
    value: Quantity = "0"
    selector: LabelSelector | None = None


class MetricValueListV1Beta1(TypeMeta):
    """``custom.metrics.k8s.io/v1beta1`` ``MetricValueList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[MetricValueV1Beta1] = Field(default_factory=list)


class ExternalMetricValue(KubeModel):
    """``external_metrics/v1beta1.ExternalMetricValue`` (window on the wire as ``window``)."""

    metric_name: str = ""
    metric_labels: dict[str, str] = Field(default_factory=dict)
    timestamp: Time | None = None
    window_seconds: int | None = Field(default=None, alias="window")
    value: Quantity = "0"


class ExternalMetricValueList(TypeMeta):
    """``external.metrics.k8s.io/v1beta1`` ``ExternalMetricValueList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[ExternalMetricValue] = Field(default_factory=list)


class ContainerMetrics(KubeModel):
    """``metrics/v1beta1.ContainerMetrics``."""

    name: str = ""
    usage: ResourceList = Field(default_factory=dict)


class PodMetrics(TypeMeta):
    """``metrics.k8s.io/v1beta1`` ``PodMetrics``; ``window`` is a duration string."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    timestamp: Time | None = None
    window: str = ""
    containers: list[ContainerMetrics] = Field(default_factory=list)


class PodMetricsList(TypeMeta):
    """``PodMetricsList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[PodMetrics] = Field(default_factory=list)


class NodeMetrics(TypeMeta):
    """``metrics.k8s.io/v1beta1`` ``NodeMetrics``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    timestamp: Time | None = None
    window: str = ""
    usage: ResourceList = Field(default_factory=dict)


class NodeMetricsList(TypeMeta):
    """``NodeMetricsList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[NodeMetrics] = Field(default_factory=list)
