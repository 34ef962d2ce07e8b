"""Ports of the VPA recommender: where its usage history and live samples come from.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/input/history/history_provider.go`` (``PodHistory``, ``HistoryProvider``) and
``pkg/recommender/model/types.go`` (``ContainerUsageSample``).

``ContainerMetricsSnapshot`` and ``MetricsSourceError`` are defined in ``hpa.core.vpa.usage`` (the
sources below the controllers build them) and re-exported here.

Amounts are integers in the model's units: millicores for ``cpu``, bytes for ``memory``. Time is
integer nanoseconds since the Unix epoch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hpa.core.vpa.cluster import PodId
from hpa.core.vpa.usage import ContainerMetricsSnapshot, MetricsSourceError

__all__ = [
    "ContainerMetricsSnapshot",
    "ContainerMetricsSource",
    "HistoryError",
    "HistoryProvider",
    "MetricsSourceError",
    "OomRecord",
    "PodHistory",
    "UsageSample",
]


@dataclass(frozen=True, slots=True)
class UsageSample:
    """``ContainerUsageSample``: usage of one resource over the interval starting at
    ``measure_start_ns``."""

    measure_start_ns: int
    resource: str
    """``cpu`` (millicores) or ``memory`` (bytes)."""
    usage: int


@dataclass(frozen=True, slots=True)
class OomRecord:
    """An out-of-memory kill found in history (``kube_pod_container_status_last_terminated_reason``
    and the memory request at that time)."""

    container: str
    timestamp_ns: int
    memory_request_bytes: int


@dataclass(frozen=True, slots=True)
class PodHistory:
    """``PodHistory``: the pod's last labels, when it was last seen, and its samples per
    container name."""

    last_labels: Mapping[str, str]
    last_seen_ns: int
    samples: Mapping[str, Sequence[UsageSample]] = field(default_factory=dict)
    ooms: Sequence[OomRecord] = ()


class HistoryError(Exception):
    """The history could not be read (Prometheus unreachable, slow, or answering an error); the
    message names the source and the cause in one line."""


class HistoryProvider(Protocol):
    """``HistoryProvider.GetClusterHistory``."""

    async def get_cluster_history(self) -> Mapping[PodId, PodHistory]: ...


class ContainerMetricsSource(Protocol):
    """``MetricsClient.GetContainersMetrics``: every container's latest usage (all namespaces, or
    the one the recommender is limited to)."""

    async def containers_metrics(self) -> Sequence[ContainerMetricsSnapshot]: ...
