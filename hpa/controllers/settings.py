"""Settings of the horizontal controller role, built from flags with upstream names.

Upstream counterpart: ``HPAControllerConfiguration`` (``pkg/controller/podautoscaler/config``),
its defaults (``config/v1alpha1/defaults.go``) and flags (``options/options.go`` of
kube-controller-manager: ``--horizontal-pod-autoscaler-sync-period``, ``-tolerance``,
``-downscale-stabilization``, ``-cpu-initialization-period``, ``-initial-readiness-delay``,
``--concurrent-horizontal-pod-autoscaler-syncs``) plus the generic ``--kube-api-qps`` /
``--kube-api-burst``. Durations are Go duration strings on the command line (``15s``, ``5m0s``)
and float seconds in :class:`HorizontalControllerSettings`.

Deliberate deviations (flags upstream does not have; each documented on its field):
``--dry-run``, ``--horizontal-pod-autoscaler-metric-timeout``,
``--horizontal-pod-autoscaler-status-value-tolerance``,
``--horizontal-pod-autoscaler-scale-to-zero`` and
``--horizontal-pod-autoscaler-configurable-tolerance`` (the two feature gates as flags),
``--horizontal-pod-autoscaler-resize-aware-utilization``,
``--horizontal-pod-autoscaler-shared-resource-metrics-reads`` and ``--metrics-source``.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Literal

from hpa.core.duration import DurationError, format_duration, parse_duration_seconds
from hpa.core.spec import HorizontalSettings

__all__ = [
    "DRY_RUN_ANNOTATION",
    "HorizontalControllerSettings",
    "add_flags",
    "from_args",
    "switch_flag",
]

DRY_RUN_ANNOTATION = "hpa.dry-run/enabled"
"""Annotation that puts one HPA in dry-run (shadow) mode when its value is ``"true"``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HorizontalControllerSettings:
    """Everything the horizontal controller role reads; one frozen instance per process."""

    sync_period_seconds: float = 15.0
    """``--horizontal-pod-autoscaler-sync-period``, seconds (default 15 s): each HPA is
    reconciled once per period."""
    tolerance: float = 0.1
    """``--horizontal-pod-autoscaler-tolerance``, ratio (default 0.1): usage ratios within
    ``[1 - t, 1 + t]`` do not scale."""
    downscale_stabilization_seconds: float = 300.0
    """``--horizontal-pod-autoscaler-downscale-stabilization``, seconds (default 5 min): the
    scale-down stabilization window of HPAs without ``behavior`` (and the default of those with
    one)."""
    cpu_initialization_period_seconds: float = 300.0
    """``--horizontal-pod-autoscaler-cpu-initialization-period``, seconds (default 5 min): after
    a pod starts, CPU samples may be skipped while it is becoming ready."""
    initial_readiness_delay_seconds: float = 30.0
    """``--horizontal-pod-autoscaler-initial-readiness-delay``, seconds (default 30 s): after a
    pod starts, readiness changes are taken as initial readiness."""
    concurrent_syncs: int = 5
    """``--concurrent-horizontal-pod-autoscaler-syncs``, reconciles (default 5): at most this
    many HPAs are reconciled at once. ``hpa controller`` keeps up to this many HTTP connections
    to the API server on top of the client's 100, so reconciles waiting on slow metrics calls
    never queue the others (or the Lease renewals) behind a full connection pool."""
    kube_api_qps: float = 20.0
    """``--kube-api-qps``, requests per second (default 20) to the API server."""
    kube_api_burst: int = 30
    """``--kube-api-burst``, requests (default 30): the client's token bucket size."""
    metric_timeout_seconds: float = 10.0
    """``--horizontal-pod-autoscaler-metric-timeout``, seconds (default 10; ours): the deadline
    of each metrics call. A metric that misses it fails alone; other metrics and HPAs go on."""
    status_value_tolerance: float = 0.05
    """``--horizontal-pod-autoscaler-status-value-tolerance``, ratio (default 0.05; ours): a
    metric value in ``status.currentMetrics`` may lag the live value by up to this fraction of
    the stored value without a status write; any other change is written at once. 0 is
    upstream's rule (every change is written). See ``docs/controller-status.md``."""
    dry_run: bool = False
    """``--dry-run`` (default off; ours): compute everything, write nothing to ``/scale`` or
    ``/status``; record what would have been done as ``DryRun`` events, a metric and the debug
    endpoint. One HPA opts in with the annotation ``hpa.dry-run/enabled: "true"``."""
    scale_to_zero_enabled: bool = True
    """Feature gate ``HPAScaleToZero`` (default on, KEP-2021 semantics; see
    ``docs/scale-to-zero.md``)."""
    configurable_tolerance_enabled: bool = True
    """Feature gate ``HPAConfigurableTolerance`` (default on): per-direction ``tolerance`` in
    ``behavior``."""
    resize_aware_utilization: bool = True
    """``--horizontal-pod-autoscaler-resize-aware-utilization`` (default on; ours): while a pod is
    resized in place, its utilization is measured against the requests the kubelet applied
    (``status.containerStatuses[].resources``), not the new spec's. ``false`` is upstream's
    behaviour (kubernetes/kubernetes#142155). See ``docs/hpa-core.md``."""
    shared_resource_metrics_reads: bool = True
    """``--horizontal-pod-autoscaler-shared-resource-metrics-reads`` (default on; ours): while
    many resource metrics reads of one namespace are in flight (8), the reads that start share one
    list of the whole namespace, each filtered by its selector, instead of one request each. The
    answer is that of a request in flight when the read started and the decisions are the same.
    ``false`` is upstream's request per HPA per sync. See ``docs/controller-metrics.md``."""
    metrics_source: Literal["api", "inprocess"] = "api"
    """``--metrics-source`` (default ``api``; ours): read metrics through the API server's
    aggregation layer, or call ``adapter``'s providers in this process (``inprocess``: the
    adapter's ``--config`` and ``--prometheus-*`` flags then apply)."""

    def __post_init__(self) -> None:
        checks = {
            "sync_period_seconds": self.sync_period_seconds > 0,
            "tolerance": self.tolerance >= 0,
            "downscale_stabilization_seconds": self.downscale_stabilization_seconds >= 0,
            "cpu_initialization_period_seconds": self.cpu_initialization_period_seconds >= 0,
            "initial_readiness_delay_seconds": self.initial_readiness_delay_seconds >= 0,
            "concurrent_syncs": self.concurrent_syncs >= 1,
            "kube_api_burst": self.kube_api_burst >= 1,
            "metric_timeout_seconds": self.metric_timeout_seconds > 0,
            "status_value_tolerance": 0 <= self.status_value_tolerance < 1,
        }
        for name, ok in checks.items():
            value = getattr(self, name)
            if not ok or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"invalid {name}: {value!r}")

    @property
    def horizontal(self) -> HorizontalSettings:
        """The subset the pure decision reads (:class:`hpa.core.spec.HorizontalSettings`)."""
        return HorizontalSettings(
            tolerance=self.tolerance,
            cpu_initialization_period_seconds=self.cpu_initialization_period_seconds,
            initial_readiness_delay_seconds=self.initial_readiness_delay_seconds,
            downscale_stabilization_seconds=int(self.downscale_stabilization_seconds),
            scale_to_zero_enabled=self.scale_to_zero_enabled,
            configurable_tolerance_enabled=self.configurable_tolerance_enabled,
            resize_aware_utilization=self.resize_aware_utilization,
        )


def duration_flag(text: str) -> float:
    """A Go duration flag value in seconds (an ``argparse`` type)."""
    try:
        return parse_duration_seconds(text)
    except DurationError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def switch_flag(text: str) -> bool:
    """A boolean flag value (``true``/``false``, ``1``/``0``, ...; an ``argparse`` type)."""
    lowered = text.lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Register the role's flags (upstream names and defaults) on ``parser``."""
    d = HorizontalControllerSettings()
    group = parser.add_argument_group("horizontal controller")
    group.add_argument(
        "--horizontal-pod-autoscaler-sync-period",
        type=duration_flag,
        default=d.sync_period_seconds,
        metavar="DURATION",
        help=f"period for syncing each HPA (default {format_duration(d.sync_period_seconds)})",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-tolerance",
        type=float,
        default=d.tolerance,
        metavar="RATIO",
        help=f"minimum change of the usage ratio that scales (default {d.tolerance})",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-downscale-stabilization",
        type=duration_flag,
        default=d.downscale_stabilization_seconds,
        metavar="DURATION",
        help="scale-down stabilization window "
        f"(default {format_duration(d.downscale_stabilization_seconds)})",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-cpu-initialization-period",
        type=duration_flag,
        default=d.cpu_initialization_period_seconds,
        metavar="DURATION",
        help="after pod start, period in which CPU samples may be skipped "
        f"(default {format_duration(d.cpu_initialization_period_seconds)})",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-initial-readiness-delay",
        type=duration_flag,
        default=d.initial_readiness_delay_seconds,
        metavar="DURATION",
        help="after pod start, period in which readiness changes are initial readiness "
        f"(default {format_duration(d.initial_readiness_delay_seconds)})",
    )
    group.add_argument(
        "--concurrent-horizontal-pod-autoscaler-syncs",
        type=int,
        default=d.concurrent_syncs,
        metavar="N",
        help=f"HPAs reconciled at once (default {d.concurrent_syncs})",
    )
    group.add_argument(
        "--kube-api-qps",
        type=float,
        default=d.kube_api_qps,
        metavar="QPS",
        help=f"requests per second to the API server (default {d.kube_api_qps:g})",
    )
    group.add_argument(
        "--kube-api-burst",
        type=int,
        default=d.kube_api_burst,
        metavar="N",
        help=f"burst of requests to the API server (default {d.kube_api_burst})",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-metric-timeout",
        type=duration_flag,
        default=d.metric_timeout_seconds,
        metavar="DURATION",
        help=f"deadline of each metrics call (default {format_duration(d.metric_timeout_seconds)})",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-status-value-tolerance",
        type=float,
        default=d.status_value_tolerance,
        metavar="RATIO",
        help="relative lag of status metric values before the status is rewritten "
        f"(default {d.status_value_tolerance}; 0 writes every change, as upstream)",
    )
    group.add_argument(
        "--dry-run",
        action="store_true",
        default=d.dry_run,
        help="compute every decision but write nothing to scale or status (DryRun events)",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-scale-to-zero",
        type=switch_flag,
        default=d.scale_to_zero_enabled,
        metavar="BOOL",
        help="feature gate HPAScaleToZero (default true)",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-configurable-tolerance",
        type=switch_flag,
        default=d.configurable_tolerance_enabled,
        metavar="BOOL",
        help="feature gate HPAConfigurableTolerance (default true)",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-resize-aware-utilization",
        type=switch_flag,
        default=d.resize_aware_utilization,
        metavar="BOOL",
        help="during an in-place resize, measure utilization against the requests the kubelet "
        "applied (default true; false is upstream's spec requests)",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-shared-resource-metrics-reads",
        type=switch_flag,
        default=d.shared_resource_metrics_reads,
        metavar="BOOL",
        help="while many resource metrics reads of one namespace are in flight, share one list "
        "of the namespace (default true; false is upstream's request per HPA)",
    )
    group.add_argument(
        "--metrics-source",
        choices=("api", "inprocess"),
        default=d.metrics_source,
        help="metrics through the aggregated APIs (api, default) or adapter's providers "
        "in-process (inprocess)",
    )


def from_args(args: argparse.Namespace) -> HorizontalControllerSettings:
    """The frozen settings from parsed flags (``ValueError`` when a value is out of range)."""
    return HorizontalControllerSettings(
        sync_period_seconds=args.horizontal_pod_autoscaler_sync_period,
        tolerance=args.horizontal_pod_autoscaler_tolerance,
        downscale_stabilization_seconds=args.horizontal_pod_autoscaler_downscale_stabilization,
        cpu_initialization_period_seconds=args.horizontal_pod_autoscaler_cpu_initialization_period,
        initial_readiness_delay_seconds=args.horizontal_pod_autoscaler_initial_readiness_delay,
        concurrent_syncs=args.concurrent_horizontal_pod_autoscaler_syncs,
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        metric_timeout_seconds=args.horizontal_pod_autoscaler_metric_timeout,
        status_value_tolerance=args.horizontal_pod_autoscaler_status_value_tolerance,
        dry_run=args.dry_run,
        scale_to_zero_enabled=args.horizontal_pod_autoscaler_scale_to_zero,
        configurable_tolerance_enabled=args.horizontal_pod_autoscaler_configurable_tolerance,
        resize_aware_utilization=args.horizontal_pod_autoscaler_resize_aware_utilization,
        shared_resource_metrics_reads=(
            args.horizontal_pod_autoscaler_shared_resource_metrics_reads
        ),
        metrics_source=getattr(args, "metrics_source", "api"),
    )
