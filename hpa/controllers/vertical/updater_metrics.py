"""The updater's metrics, with upstream's names, and ours for the capacity and priority rules.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/utils/metrics/updater/updater.go`` (``vpa_updater_*``: gauges per loop indexed by
``vpa_size_log2`` and ``update_mode``, counters of evicted and resized pods and of failed
attempts, ``execution_latency_seconds`` per step) and ``pkg/utils/metrics/metrics.go``
(``GetVpaSizeLog2``, ``MaxVpaSizeLog`` 20).

Ours (``hpa_vpa_updater_*``): pods not updated because the new requests fit on no node, and pods
not evicted because of their system-critical priority class.
"""

from __future__ import annotations

import math
from collections import Counter as Tally

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["LoopCounts", "UpdaterMetrics", "vpa_size_log2"]

MAX_VPA_SIZE_LOG = 20
_LATENCY_BUCKETS = (
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0,
    80.0, 90.0, 100.0, 120.0, 150.0, 240.0, 300.0,
)  # fmt: skip


def vpa_size_log2(size: int) -> int:
    """``GetVpaSizeLog2``."""
    if size <= 0:
        return 0
    return min(int(math.log2(size)), MAX_VPA_SIZE_LOG)


class LoopCounts:
    """The per-loop gauges (``SizeBasedGauge``, ``UpdateModeAndSizeBasedGauge``), set at the end
    of the loop."""

    def __init__(self) -> None:
        self.controlled: Tally[tuple[str, str]] = Tally()
        self.evictable: Tally[tuple[str, str]] = Tally()
        self.vpas_with_evictable: Tally[tuple[str, str]] = Tally()
        self.vpas_with_evicted: Tally[tuple[str, str]] = Tally()
        self.in_place_updatable: Tally[str] = Tally()
        self.vpas_with_in_place_updatable: Tally[str] = Tally()
        self.vpas_with_in_place_updated: Tally[str] = Tally()


class UpdaterMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        size_mode = ["vpa_size_log2", "update_mode"]
        self.controlled_pods = Gauge(
            "vpa_updater_controlled_pods_total",
            "Number of Pods controlled by VPA updater.",
            size_mode,
            registry=registry,
        )
        self.evictable_pods = Gauge(
            "vpa_updater_evictable_pods_total",
            "Number of Pods matching eviction criteria.",
            size_mode,
            registry=registry,
        )
        self.evicted_pods = Counter(
            "vpa_updater_evicted_pods",
            "Number of Pods evicted by Updater to apply a new recommendation.",
            [*size_mode, "vpa_name", "vpa_namespace"],
            registry=registry,
        )
        self.vpas_with_evictable_pods = Gauge(
            "vpa_updater_vpas_with_evictable_pods_total",
            "Number of VPA objects with at least one Pod matching eviction criteria.",
            size_mode,
            registry=registry,
        )
        self.vpas_with_evicted_pods = Gauge(
            "vpa_updater_vpas_with_evicted_pods_total",
            "Number of VPA objects with at least one evicted Pod.",
            size_mode,
            registry=registry,
        )
        self.failed_eviction_attempts = Counter(
            "vpa_updater_failed_eviction_attempts",
            "Number of failed attempts to update Pods by eviction",
            [*size_mode, "reason", "vpa_name", "vpa_namespace"],
            registry=registry,
        )
        self.in_place_updatable_pods = Gauge(
            "vpa_updater_in_place_updatable_pods_total",
            "Number of Pods matching in place update criteria.",
            ["vpa_size_log2"],
            registry=registry,
        )
        self.in_place_updated_pods = Counter(
            "vpa_updater_in_place_updated_pods",
            "Number of Pods updated in-place by Updater to apply a new recommendation.",
            ["vpa_size_log2", "vpa_name", "vpa_namespace"],
            registry=registry,
        )
        self.vpas_with_in_place_updatable_pods = Gauge(
            "vpa_updater_vpas_with_in_place_updatable_pods_total",
            "Number of VPA objects with at least one Pod matching in place update criteria.",
            ["vpa_size_log2"],
            registry=registry,
        )
        self.vpas_with_in_place_updated_pods = Gauge(
            "vpa_updater_vpas_with_in_place_updated_pods_total",
            "Number of VPA objects with at least one in-place updated Pod.",
            ["vpa_size_log2"],
            registry=registry,
        )
        self.failed_in_place_update_attempts = Counter(
            "vpa_updater_failed_in_place_update_attempts",
            "Number of failed attempts to update Pods in-place.",
            ["vpa_size_log2", "reason", "vpa_name", "vpa_namespace"],
            registry=registry,
        )
        self.in_place_infeasible_skip_pods = Counter(
            "vpa_updater_in_place_infeasible_skip_pods",
            "Number of pods that were skipped for in-place update due to cached infeasibility",
            ["vpa_size_log2", "vpa_name", "vpa_namespace"],
            registry=registry,
        )
        self.execution_latency = Histogram(
            "vpa_updater_execution_latency_seconds",
            "Time spent in various parts of VPA Updater main loop.",
            ["step"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.admission_controller_status_invalid = Counter(
            "vpa_updater_admission_controller_status_invalid",
            "Number of times Updater skipped its main loop because the Admission Controller "
            "status Lease was missing, stale or otherwise invalid.",
            ["reason"],
            registry=registry,
        )
        self.pods_not_fitting = Counter(
            "hpa_vpa_updater_pods_not_fitting",
            "Pods not evicted or resized because their new requests fit on no node "
            "(action: evict or resize).",
            ["action", "vpa_name", "vpa_namespace"],
            registry=registry,
        )
        self.system_critical_skipped = Counter(
            "hpa_vpa_updater_system_critical_skipped_pods",
            "Pods not evicted because of their system-critical priority class.",
            ["vpa_name", "vpa_namespace"],
            registry=registry,
        )

    def init_counters(self, size: int, vpa_name: str, vpa_namespace: str, mode: str) -> None:
        """``InitCounters``: the per-VPA counters appear at 0 before anything happens."""
        log2 = str(vpa_size_log2(size))
        self.evicted_pods.labels(log2, mode, vpa_name, vpa_namespace)
        self.in_place_updated_pods.labels(log2, vpa_name, vpa_namespace)

    def observe(self, counts: LoopCounts) -> None:
        """``Observe``: the loop's gauges replace the previous loop's (``Reset`` first)."""
        pairs: list[tuple[Gauge, Tally[tuple[str, str]]]] = [
            (self.controlled_pods, counts.controlled),
            (self.evictable_pods, counts.evictable),
            (self.vpas_with_evictable_pods, counts.vpas_with_evictable),
            (self.vpas_with_evicted_pods, counts.vpas_with_evicted),
        ]
        for gauge, tally in pairs:
            gauge.clear()
            for (log2, mode), value in tally.items():
                gauge.labels(log2, mode).set(value)
        singles: list[tuple[Gauge, Tally[str]]] = [
            (self.in_place_updatable_pods, counts.in_place_updatable),
            (self.vpas_with_in_place_updatable_pods, counts.vpas_with_in_place_updatable),
            (self.vpas_with_in_place_updated_pods, counts.vpas_with_in_place_updated),
        ]
        for gauge, single in singles:
            gauge.clear()
            for log2 in (str(i) for i in range(MAX_VPA_SIZE_LOG)):
                gauge.labels(log2).set(single.get(log2, 0))
