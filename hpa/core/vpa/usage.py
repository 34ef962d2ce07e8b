"""Live container usage as the recommender reads it: one container's snapshot from the metrics API.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/input/metrics/metrics_client.go`` (``ContainerMetricsSnapshot``).

The type lives in the pure core, as the horizontal controller's observations do
(``hpa.core.decision``), so both the API-backed source (``hpa.metrics.containers``) and the
in-process one (``hpa.app.inprocess_metrics``) build it below the recommender that consumes it
through its port (``hpa.controllers.vertical.ports.ContainerMetricsSource``).

Deliberate deviations: none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hpa.core.vpa.cluster import PodId

__all__ = ["ContainerMetricsSnapshot", "MetricsSourceError"]


@dataclass(frozen=True, slots=True)
class ContainerMetricsSnapshot:
    """``ContainerMetricsSnapshot`` of upstream's ``pkg/recommender/input/metrics``: one container's
    usage over ``[snapshot_time_ns - window_ns, snapshot_time_ns]`` as ``metrics.k8s.io`` reports
    it. ``usage`` maps ``cpu`` to millicores and ``memory`` to bytes (working set)."""

    pod_id: PodId
    container: str
    snapshot_time_ns: int
    window_ns: int
    usage: Mapping[str, int]


class MetricsSourceError(Exception):
    """Live container metrics could not be read; the message names the source and the cause."""
