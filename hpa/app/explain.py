"""``hpa explain NAMESPACE/NAME`` (and the kubectl plugin): one HPA's decision, explained.

Upstream counterpart: none. kube-controller-manager explains a decision only through the HPA's
conditions, its events and a few ``klog.V(4)`` lines; ``kubectl describe hpa`` prints those. This
command reads the HPA, its target's Scale, the selected pods (a LIST with the Scale's selector)
and each metric (through the aggregated metrics APIs with ``hpa.metrics``, or ``adapter``'s
providers in-process with ``--metrics-source=inprocess``), then runs the controller's own
reconcile (:class:`~hpa.controllers.horizontal.HorizontalController`, in dry-run: nothing is
written, no event is recorded) and prints the decision's trace: each metric's value and proposal,
each pod's class (ready, unready, missing sample, ignored), the tolerance, the stabilization
window and the policies that applied, the final replica count and why. With ``--controller-url``
it also prints the live controller's last decision for the HPA, read from its ``/debug/hpa``
endpoint (``http(s)://...``, or an API server proxy path such as
``/api/v1/namespaces/hpa-system/services/hpa-controller:http/proxy``).

Deliberate deviations from what the live controller computes (each printed as a note):

* **History.** The controller keeps each HPA's recommendation log and scale events in memory;
  offline there is none, so the log is seeded with the current replica count at ``now`` (what
  the controller does on its first reconcile after a restart) and no scale events are known. A
  scale-down inside the stabilization window is therefore held at the current count, a scale-up
  under a scale-up window likewise, and rate policies see no earlier scaling. The metrics'
  proposals are exact; the stabilized number is the one a freshly restarted controller would
  reach.
* **AmbiguousSelector** is not checked (it needs every HPA's last selector, which only the live
  controller has).

Exit codes: 0 the decision was computed without error; 1 the decision carries the reconcile error
the controller would report (e.g. a metric could not be read: the trace says why); 2 bad
arguments; 3 the HPA does not exist; 4 not allowed (401/403: RBAC); 5 the cluster or the metrics
source could not be reached (kubeconfig, connection, Prometheus).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

import aiohttp
import orjson
import structlog
from prometheus_client import CollectorRegistry

from adapter.providers import RelistError
from hpa.api.types import format_time
from hpa.app import explain_vpa, inprocess_metrics
from hpa.controllers import settings as horizontal_flags
from hpa.controllers.conversion import hpa_from_dict, metric_selector
from hpa.controllers.horizontal import HorizontalController, ReconcileReport
from hpa.controllers.ports import (
    HorizontalPodAutoscalerObject,
    MetricsClient,
)
from hpa.controllers.settings import HorizontalControllerSettings
from hpa.core.conditions import Event
from hpa.core.decision import (
    ExternalMetricObservation,
    HorizontalPodAutoscalerStatus,
    MetricFetchError,
    MetricObservation,
    MetricStatus,
    ObjectMetricObservation,
    PodMetricsObservation,
)
from hpa.core.duration import format_duration
from hpa.core.explain import Stage, format_value
from hpa.core.replicas import PodInfo, group_pods
from hpa.core.selector import Selector, SelectorError, parse_selector
from hpa.core.spec import (
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    default_spec,
)
from hpa.kube import scale as kube_scale
from hpa.kube.client import (
    ApiError,
    ClientSettings,
    KubeClient,
    RetryPolicy,
    TransportError,
    aclose_quietly,
    load_client,
)
from hpa.kube.clock import Clock, SystemClock
from hpa.kube.records import PodRecord, ScaleTargetRef, parse_pod
from hpa.kube.scale import Scale, ScaleUpdateResult
from hpa.kube.status import StatusWriteOutcome
from hpa.metrics.rest import RESTMetricsClient
from hpa.metrics.transport import error_text

__all__ = [
    "EXIT_DECISION_ERROR",
    "EXIT_FORBIDDEN",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_UNREACHABLE",
    "ExplainError",
    "ExplainReport",
    "LiveDecision",
    "MetricView",
    "PodRow",
    "add_command",
    "add_flags",
    "explain_hpa",
    "main",
    "plugin_main",
    "read_live_decision",
]

EXIT_OK = 0
EXIT_DECISION_ERROR = 1
EXIT_NOT_FOUND = 3
EXIT_FORBIDDEN = 4
EXIT_UNREACHABLE = 5

HPA_PATH = "/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{name}"
DEBUG_PATH = "/debug/hpa"
_WHY_STAGES = (Stage.PROPOSAL, Stage.STABILIZATION, Stage.POLICY, Stage.BOUNDS, Stage.SCALE_TO_ZERO)
_PROPOSAL = re.compile(r": proposes (\d+) replicas$")


class ExplainError(Exception):
    """A failure that ends the command with a message and ``exit_code`` (never a traceback)."""

    def __init__(self, message: str, *, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def _api_failure(what: str, error: BaseException) -> ExplainError:
    """A clear message and exit code for a failed API request."""
    code = getattr(error, "code", None)
    text = error_text(error)
    if code == 404:
        return ExplainError(f"{what}: not found ({text})", exit_code=EXIT_NOT_FOUND)
    if code in (401, 403):
        return ExplainError(
            f"{what}: not allowed ({text}); the explain role needs get on "
            "horizontalpodautoscalers and the target's scale, list on pods, and get on the "
            "metrics APIs",
            exit_code=EXIT_FORBIDDEN,
        )
    return ExplainError(f"{what}: {text}", exit_code=EXIT_UNREACHABLE)


# ----------------------------------------------------------------------------- the report


@dataclass(frozen=True, slots=True)
class PodRow:
    """One selected pod as one metric saw it: its class in ``groupPods`` and its sample."""

    name: str
    phase: str
    ready: str
    """The Ready condition's status (``True``/``False``/``-`` when absent)."""
    sample: str
    """The pod's sample in milli-units (``-`` when the metric has none for it)."""
    pod_class: Literal["ready", "unready", "missing", "ignored"]
    why: str


@dataclass(frozen=True, slots=True)
class MetricView:
    """One metric spec with what was observed and what it proposed."""

    index: int
    title: str
    target: str
    observed: str
    proposal: int | None
    error: str | None
    pods: tuple[PodRow, ...] = ()


@dataclass(frozen=True, slots=True)
class LiveDecision:
    """The live controller's last reconcile of this HPA (its ``/debug/hpa`` entry)."""

    url: str
    report: Mapping[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ExplainReport:
    """Everything ``hpa explain`` prints, as text (:meth:`render`) or JSON (:meth:`to_dict`)."""

    key: str
    target: str
    at: datetime
    metrics_source: str
    settings: HorizontalControllerSettings
    selector: str | None
    reconcile: ReconcileReport
    metrics: tuple[MetricView, ...]
    notes: tuple[str, ...]
    live: LiveDecision | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_DECISION_ERROR if self.reconcile.error is not None else EXIT_OK

    def outcome(self) -> str:
        r = self.reconcile
        if r.rescale:
            return f"scale {r.current_replicas} -> {r.desired_replicas} ({r.rescale_reason})"
        if r.error is not None:
            return f"no scaling: replicas stay at {r.current_replicas} (the reconcile fails)"
        return f"no rescale: replicas stay at {r.current_replicas}"

    def why(self) -> str:
        """The steps that moved the number, in order, from the trace."""
        if self.reconcile.error is not None and not self.reconcile.rescale:
            failed = [e for e in self.reconcile.explanation.entries if e.stage == Stage.PROPOSAL]
            return failed[-1].summary if failed else self.reconcile.error
        steps = []
        for entry in self.reconcile.explanation.entries:
            details = dict(entry.details)
            if entry.stage == Stage.METRIC and "outcome" in details:
                steps.append(f"{entry.summary} ({details['outcome']})")
            elif entry.stage in _WHY_STAGES:
                steps.append(entry.summary)
        return "; ".join(steps) or "-"

    def render(self) -> str:
        r = self.reconcile
        s = self.settings
        lines = [
            f"HorizontalPodAutoscaler {self.key} -> {self.target}",
            f"  at {format_time(self.at)}, metrics from {self.metrics_source}",
            f"  settings: tolerance {s.tolerance:g}, cpu initialization period "
            f"{format_duration(s.cpu_initialization_period_seconds)}, initial readiness delay "
            f"{format_duration(s.initial_readiness_delay_seconds)}, downscale stabilization "
            f"{format_duration(s.downscale_stabilization_seconds)}",
            "",
            f"decision: {self.outcome()}",
            f"  current replicas: {r.current_replicas}",
            f"  desired replicas: {r.desired_replicas}",
            f"  why: {self.why()}",
        ]
        if r.error is not None:
            lines.append(f"  error: {r.error}")
        lines += ["", "metrics:"]
        if not self.metrics:
            lines.append("  (not evaluated: see the trace)")
        for view in self.metrics:
            proposal = f"proposes {view.proposal}" if view.proposal is not None else "no proposal"
            lines.append(f"  {view.index}. {view.title}: {proposal}")
            lines.append(f"     target: {view.target}")
            lines.append(f"     observed: {view.observed}")
            if view.error is not None:
                lines.append(f"     error: {view.error}")
            if view.pods:
                lines.append(f"     pods (selector {self.selector}):")
                lines.extend(_pod_table(view.pods, indent="       "))
        lines += ["", "trace:"]
        lines.extend(
            "  " + line for line in r.explanation.render().splitlines() if r.explanation.entries
        )
        lines += [
            "",
            "conditions (as decided; the scale update then sets AbleToScale=SucceededRescale):"
            if r.rescale
            else "conditions (the status the controller would write):",
        ]
        for condition in r.status.conditions:
            lines.append(
                f"  {condition.type}={condition.status} {condition.reason}: {condition.message}"
            )
        events = [e for e in r.events if not e.message.startswith("would rescale")]
        if events:
            lines += ["", "events the controller would record:"]
            lines.extend(f"  {e.type} {_event_text(e)}" for e in events)
        lines += ["", "notes:"]
        lines.extend(f"  - {note}" for note in self.notes)
        if self.live is not None:
            lines += ["", *_render_live(self.live, self.key)]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        r = self.reconcile
        return {
            "hpa": self.key,
            "target": self.target,
            "at": format_time(self.at),
            "metricsSource": self.metrics_source,
            "settings": {
                "tolerance": self.settings.tolerance,
                "cpuInitializationPeriodSeconds": self.settings.cpu_initialization_period_seconds,
                "initialReadinessDelaySeconds": self.settings.initial_readiness_delay_seconds,
                "downscaleStabilizationSeconds": self.settings.downscale_stabilization_seconds,
            },
            "selector": self.selector,
            "decision": {
                "why": self.why(),
                "currentReplicas": r.current_replicas,
                "desiredReplicas": r.desired_replicas,
                "rescale": r.rescale,
                "rescaleReason": r.rescale_reason,
                "error": r.error,
            },
            "metrics": [
                {
                    "index": v.index,
                    "metric": v.title,
                    "target": v.target,
                    "observed": v.observed,
                    "proposal": v.proposal,
                    "error": v.error,
                    "pods": [
                        {
                            "name": p.name,
                            "phase": p.phase,
                            "ready": p.ready,
                            "sample": p.sample,
                            "class": p.pod_class,
                            "why": p.why,
                        }
                        for p in v.pods
                    ],
                }
                for v in self.metrics
            ],
            "trace": [
                {
                    "stage": str(entry.stage),
                    "summary": entry.summary,
                    "details": {key: format_value(value) for key, value in entry.details},
                }
                for entry in r.explanation.entries
            ],
            "conditions": [
                {"type": c.type, "status": str(c.status), "reason": c.reason, "message": c.message}
                for c in r.status.conditions
            ],
            "events": [
                {"type": e.type, "reason": e.reason, "message": e.message} for e in r.events
            ],
            "notes": list(self.notes),
            "liveController": None
            if self.live is None
            else {"url": self.live.url, "lastDecision": self.live.report, "error": self.live.error},
        }


def _event_text(event: Event) -> str:
    # dry-run events are "DryRun" with "<reason>: <message>"; print the real reason
    return event.message if event.reason == "DryRun" else f"{event.reason}: {event.message}"


def _pod_table(rows: Sequence[PodRow], *, indent: str) -> list[str]:
    header = ("NAME", "PHASE", "READY", "SAMPLE", "CLASS")
    cells = [(p.name, p.phase, p.ready, p.sample, f"{p.pod_class} ({p.why})") for p in rows]
    widths = [max(len(row[i]) for row in (header, *cells)) for i in range(4)]
    out = []
    for row in (header, *cells):
        out.append(indent + "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)))
        out[-1] += "  " + row[4]
    return out


def _render_live(live: LiveDecision, key: str) -> list[str]:
    title = f"live controller ({live.url}):"
    if live.error is not None:
        return [title, f"  unreachable: {live.error}"]
    if live.report is None:
        return [
            title,
            f"  no decision for {key} (not the leader, or it has not reconciled this HPA yet)",
        ]
    report = live.report
    lines = [
        title,
        f"  last reconcile at {report.get('at')}: current {report.get('currentReplicas')}, "
        f"desired {report.get('desiredReplicas')}, rescale {report.get('rescale')}"
        + (f" ({report.get('rescaleReason')})" if report.get("rescaleReason") else "")
        + (", dry run" if report.get("dryRun") else ""),
    ]
    if report.get("error"):
        lines.append(f"  error: {report.get('error')}")
    explanation = str(report.get("explanation") or "")
    if explanation:
        lines.append("  trace:")
        lines.extend("    " + line for line in explanation.splitlines())
    return lines


# ------------------------------------------------------------------ one-shot port adapters


class _OneHPA:
    def __init__(self, hpa: HorizontalPodAutoscalerObject) -> None:
        self._hpa = hpa

    def get(self, namespace: str, name: str) -> HorizontalPodAutoscalerObject | None:
        if (namespace, name) == (self._hpa.namespace, self._hpa.name):
            return self._hpa
        return None


class _ReadScale:
    """The Scale read once before the reconcile (or its failure); never written."""

    def __init__(self, scale: Scale | BaseException) -> None:
        self._scale = scale

    async def get_scale(self, namespace: str, target: CrossVersionObjectReference) -> Scale:
        if isinstance(self._scale, BaseException):
            raise self._scale
        return self._scale

    async def update_scale(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        *,
        scale: Scale,
        replicas: int,
    ) -> ScaleUpdateResult:
        raise RuntimeError("hpa explain never writes the scale")


class _ListedPods:
    def __init__(self, pods: Sequence[PodRecord]) -> None:
        self._pods = pods

    def list_pods(self, namespace: str, selector: Selector) -> Sequence[PodRecord]:
        return [pod for pod in self._pods if selector.matches(pod.labels)]


class _NoWrites:
    async def update_status(
        self,
        hpa: HorizontalPodAutoscalerObject,
        status: HorizontalPodAutoscalerStatus,
        *,
        observed_generation: int | None = None,
    ) -> StatusWriteOutcome:
        raise RuntimeError("hpa explain never writes the status")


class _NoEvents:
    def record(self, hpa: HorizontalPodAutoscalerObject, event: Event) -> None:
        return None


class _FixedNow:
    """The real monotonic clock with one ``now`` for the whole explanation."""

    def __init__(self, clock: Clock, now: datetime) -> None:
        self._clock = clock
        self._now = now

    def monotonic(self) -> float:
        return self._clock.monotonic()

    def now(self) -> datetime:
        return self._now


@dataclass(slots=True)
class _RecordingMetrics:
    """The metrics port, remembering each answer by the metric it was asked for."""

    inner: MetricsClient
    answers: dict[tuple[str, ...], MetricObservation] = field(default_factory=dict)

    async def get_resource_metric(
        self, resource: str, namespace: str, *, selector: str, container: str = ""
    ) -> PodMetricsObservation | MetricFetchError:
        answer = await self.inner.get_resource_metric(
            resource, namespace, selector=selector, container=container
        )
        self.answers[("resource", resource, container)] = answer
        return answer

    async def get_raw_metric(
        self, metric_name: str, namespace: str, *, selector: str, metric_selector: str
    ) -> PodMetricsObservation | MetricFetchError:
        answer = await self.inner.get_raw_metric(
            metric_name, namespace, selector=selector, metric_selector=metric_selector
        )
        self.answers[("pods", metric_name, metric_selector)] = answer
        return answer

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        *,
        described_object: CrossVersionObjectReference,
        metric_selector: str,
    ) -> ObjectMetricObservation | MetricFetchError:
        answer = await self.inner.get_object_metric(
            metric_name,
            namespace,
            described_object=described_object,
            metric_selector=metric_selector,
        )
        key = ("object", metric_name, described_object.kind, described_object.name)
        self.answers[key] = answer
        return answer

    async def get_external_metric(
        self, metric_name: str, namespace: str, *, metric_selector: str
    ) -> ExternalMetricObservation | MetricFetchError:
        answer = await self.inner.get_external_metric(
            metric_name, namespace, metric_selector=metric_selector
        )
        self.answers[("external", metric_name, metric_selector)] = answer
        return answer

    def answer_for(self, spec: MetricSpec) -> MetricObservation | None:
        if spec.type == MetricSourceType.RESOURCE and spec.resource is not None:
            return self.answers.get(("resource", spec.resource.name, ""))
        if spec.type == MetricSourceType.CONTAINER_RESOURCE and spec.container_resource:
            source = spec.container_resource
            return self.answers.get(("resource", source.name, source.container))
        if spec.type == MetricSourceType.PODS and spec.pods is not None:
            text = metric_selector(spec.pods.metric.selector).to_string()
            return self.answers.get(("pods", spec.pods.metric.name, text))
        if spec.type == MetricSourceType.OBJECT and spec.object is not None:
            ref = spec.object.described_object
            return self.answers.get(("object", spec.object.metric.name, ref.kind, ref.name))
        if spec.type == MetricSourceType.EXTERNAL and spec.external is not None:
            text = metric_selector(spec.external.metric.selector).to_string()
            return self.answers.get(("external", spec.external.metric.name, text))
        return None


# ------------------------------------------------------------------------ metric views


def _title(spec: MetricSpec) -> tuple[str, str, str]:
    """(title, target text, resource name for pod grouping or "" for custom / "-" for none)."""
    if spec.type == MetricSourceType.RESOURCE and spec.resource is not None:
        target = spec.resource.target
        return f"Resource {spec.resource.name}", _target_text(target), spec.resource.name
    if spec.type == MetricSourceType.CONTAINER_RESOURCE and spec.container_resource is not None:
        source = spec.container_resource
        return (
            f"ContainerResource {source.name} of container {source.container}",
            _target_text(source.target),
            source.name,
        )
    if spec.type == MetricSourceType.PODS and spec.pods is not None:
        return f"Pods {spec.pods.metric.name}", _target_text(spec.pods.target), ""
    if spec.type == MetricSourceType.OBJECT and spec.object is not None:
        ref = spec.object.described_object
        return (
            f"Object {spec.object.metric.name} of {ref.kind}/{ref.name}",
            _target_text(spec.object.target),
            "-",
        )
    if spec.type == MetricSourceType.EXTERNAL and spec.external is not None:
        return f"External {spec.external.metric.name}", _target_text(spec.external.target), "-"
    return f"{spec.type or '(no type)'}", "-", "-"


def _target_text(target: Any) -> str:
    if target.average_utilization is not None:
        return f"average utilization {target.average_utilization}% of request"
    if target.average_value_milli is not None:
        return f"average value {target.average_value_milli}m"
    if target.value_milli is not None:
        return f"value {target.value_milli}m"
    return "-"


def _observed(status: MetricStatus | None, answer: MetricObservation | None) -> str:
    if isinstance(answer, MetricFetchError):
        return "fetch failed"
    parts = []
    if status is not None and status.type:
        current = status.current
        if current.average_utilization is not None:
            parts.append(f"{current.average_utilization}% of request")
        if current.average_value_milli is not None:
            parts.append(f"average {current.average_value_milli}m")
        if current.value_milli is not None:
            parts.append(f"value {current.value_milli}m")
    if isinstance(answer, PodMetricsObservation):
        parts.append(f"{len(answer.metrics)} pod samples")
    elif isinstance(answer, ExternalMetricObservation):
        parts.append(f"{len(answer.values_milli)} series")
    return ", ".join(parts) or "-"


def _pod_rows(
    pods: Sequence[PodInfo],
    answer: PodMetricsObservation,
    *,
    resource: str,
    now: datetime,
    settings: HorizontalControllerSettings,
) -> tuple[PodRow, ...]:
    groups = group_pods(
        pods,
        answer.metrics,
        resource=resource,
        now=now,
        cpu_initialization_period_seconds=settings.cpu_initialization_period_seconds,
        initial_readiness_delay_seconds=settings.initial_readiness_delay_seconds,
    )
    rows = []
    for pod in sorted(pods, key=lambda p: p.name):
        sample = answer.metrics.get(pod.name)
        ready = "-" if pod.ready_condition is None else str(pod.ready_condition.status)
        pod_class: Literal["ready", "unready", "missing", "ignored"]
        if pod.name in groups.ignored_pods:
            pod_class = "ignored"
            why = "being deleted" if pod.deletion_timestamp is not None else "failed"
        elif pod.name in groups.unready_pods:
            pod_class = "unready"
            if str(pod.phase) == "Pending":
                why = "pending"
            elif ready != "True":
                why = "not ready"
            else:
                why = "sample predates readiness"
        elif pod.name in groups.missing_pods:
            pod_class, why = "missing", "no sample"
        else:
            pod_class, why = "ready", "counted"
        rows.append(
            PodRow(
                name=pod.name,
                phase=str(pod.phase),
                ready=ready,
                sample=f"{sample.value_milli}m" if sample is not None else "-",
                pod_class=pod_class,
                why=why,
            )
        )
    return tuple(rows)


def _metric_views(
    specs: Sequence[MetricSpec],
    report: ReconcileReport,
    recorded: _RecordingMetrics,
    *,
    pods: Sequence[PodInfo],
    now: datetime,
    settings: HorizontalControllerSettings,
) -> tuple[MetricView, ...]:
    entries = [e for e in report.explanation.entries if e.stage == Stage.METRIC]
    if not entries:
        return ()
    statuses = report.status.current_metrics or ()
    views = []
    for index, spec in enumerate(specs):
        title, target, resource = _title(spec)
        answer = recorded.answer_for(spec)
        entry = entries[index] if index < len(entries) else None
        proposal = None
        error = None
        if entry is not None:
            match = _PROPOSAL.search(entry.summary)
            if match is not None:
                proposal = int(match.group(1))
            else:
                error = str(dict(entry.details).get("error", entry.summary))
        rows: tuple[PodRow, ...] = ()
        if resource != "-" and isinstance(answer, PodMetricsObservation):
            rows = _pod_rows(pods, answer, resource=resource, now=now, settings=settings)
        status = statuses[index] if index < len(statuses) else None
        views.append(
            MetricView(
                index=index + 1,
                title=title,
                target=target,
                observed=_observed(status, answer),
                proposal=proposal,
                error=error,
                pods=rows,
            )
        )
    return tuple(views)


def _notes(report: ReconcileReport) -> tuple[str, ...]:
    current = report.current_replicas
    notes = [
        "stabilization history: offline there is none, so the recommendation log is seeded "
        f"with the current replicas ({current}) at this instant and no scale events are known "
        "(what the controller does on its first reconcile after a restart). A scale-down "
        "inside the stabilization window is held at the current count, a scale-up under a "
        "scale-up window likewise, and rate policies see no earlier scaling; the live "
        "controller's window may hold other recommendations (use --controller-url to see its "
        "last decision).",
        "AmbiguousSelector is not checked offline (it needs every HPA's selector).",
    ]
    for entry in report.explanation.entries:
        if entry.stage == Stage.PROPOSAL and entry.summary.startswith("largest proposal: "):
            proposed = int(entry.summary.split()[2])
            if proposed < current and report.desired_replicas == current:
                notes.insert(
                    0,
                    f"the metrics propose {proposed} replicas, below the current {current}; "
                    "the scale-down is held by the stabilization window seeded offline with "
                    f"{current}",
                )
    return tuple(notes)


_API_OF_SOURCE = {
    MetricSourceType.RESOURCE: "metrics.k8s.io/v1beta1",
    MetricSourceType.CONTAINER_RESOURCE: "metrics.k8s.io/v1beta1",
    MetricSourceType.PODS: "custom.metrics.k8s.io",
    MetricSourceType.OBJECT: "custom.metrics.k8s.io",
    MetricSourceType.EXTERNAL: "external.metrics.k8s.io/v1beta1",
}


async def _unserved_apis(
    kube: KubeClient, specs: Sequence[MetricSpec], views: Sequence[MetricView]
) -> tuple[str, ...]:
    """For each metric that could not be fetched, whether its metrics API is served at all
    (discovery answers 404 when no APIService routes the group)."""
    notes: list[str] = []
    checked: set[str] = set()
    for spec, view in zip(specs, views, strict=False):
        if view.error is None or "unable to fetch metrics from" not in view.error:
            continue
        api = (
            _API_OF_SOURCE.get(MetricSourceType(spec.type)) if spec.type in _API_OF_SOURCE else None
        )
        if api is None or api in checked:
            continue
        checked.add(api)
        try:
            await kube.get(f"/apis/{api}")
        except ApiError as error:
            if error.code == 404:
                notes.append(
                    f"{api} is not served by this cluster (discovery answers 404): no "
                    "APIService routes it, or its server is not Available (kubectl get "
                    "apiservices); metric "
                    f"{view.index} cannot be read until it is"
                )
        except Exception:  # noqa: BLE001, S112 - a hint only: the trace has the error
            continue
    return tuple(notes)


# ------------------------------------------------------------------------------ explain


async def explain_hpa(
    kube: KubeClient,
    namespace: str,
    name: str,
    *,
    settings: HorizontalControllerSettings,
    clock: Clock,
    metrics: MetricsClient | None = None,
    metrics_source: str = "the aggregated metrics APIs",
    inprocess: inprocess_metrics.InProcessMetricsSource | None = None,
) -> ExplainReport:
    """Read the HPA, its Scale and pods live, run the controller's reconcile in dry-run, and
    return the report. Raises :class:`ExplainError` for what makes an explanation impossible."""
    key = f"{namespace}/{name}"
    try:
        raw = await kube.get(HPA_PATH.format(namespace=namespace, name=name))
    except ApiError as error:
        raise _api_failure(f"horizontalpodautoscaler {key}", error) from error
    try:
        hpa = hpa_from_dict(raw)
    except ValueError as error:
        raise ExplainError(
            f"horizontalpodautoscaler {key} does not parse: {error}", exit_code=EXIT_DECISION_ERROR
        ) from error
    spec = hpa.spec if hpa.spec.metrics and hpa.spec.min_replicas is not None else None
    spec = spec or default_spec(hpa.spec)
    ref = spec.scale_target_ref
    target = f"{ref.kind}/{ref.name}"

    scales = kube_scale.ScaleClient(kube, kube_scale.ResourceMapper(kube, clock=clock))
    scale: Scale | BaseException
    try:
        scale = await scales.get(
            namespace,
            ScaleTargetRef(api_version=ref.api_version, kind=ref.kind, name=ref.name),
        )
    except ApiError as error:
        if error.code in (401, 403):
            raise _api_failure(f"the scale of {target}", error) from error
        scale = error  # the decision reports FailedGetScale
    except Exception as error:  # noqa: BLE001 - the decision reports FailedGetScale
        scale = error

    selector_text: str | None = None
    listed: list[PodRecord] = []
    if isinstance(scale, Scale) and scale.selector:
        try:
            selector_text = parse_selector(scale.selector).to_string()
        except SelectorError:
            selector_text = None
        if selector_text is not None:
            try:
                found = await kube.list(
                    f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": selector_text}
                )
            except ApiError as error:
                raise _api_failure(f"listing the pods of {target}", error) from error
            listed = [parse_pod(item) for item in found.get("items") or ()]

    if inprocess is not None:
        metrics, _ = inprocess.factory(_ListedPods(listed))
        assert inprocess.providers is not None
        try:
            await inprocess.providers.relister.relist()
        except RelistError as error:
            raise ExplainError(
                f"in-process metrics: {error}", exit_code=EXIT_UNREACHABLE
            ) from error
    if metrics is None:
        metrics = RESTMetricsClient(kube, monotonic=clock.monotonic)
    recorded = _RecordingMetrics(metrics)
    now = clock.now()
    dry = replace(settings, dry_run=True)
    controller = HorizontalController(
        dry,
        hpas=_OneHPA(hpa),
        scales=_ReadScale(scale),
        metrics=recorded,
        pods=_ListedPods(listed),
        status_writer=_NoWrites(),
        events=_NoEvents(),
        clock=_FixedNow(clock, now),
        registry=CollectorRegistry(),
    )
    controller.track(key)
    report = await controller.reconcile_key(key)
    assert report is not None  # the lister always has the HPA
    pod_infos = [pod.info for pod in listed]
    views = _metric_views(
        spec.metrics, report, recorded, pods=pod_infos, now=now, settings=settings
    )
    hints = await _unserved_apis(kube, spec.metrics, views) if inprocess is None else ()
    return ExplainReport(
        key=key,
        target=target,
        at=now,
        metrics_source=metrics_source,
        settings=settings,
        selector=selector_text,
        reconcile=report,
        metrics=views,
        notes=(*hints, *_notes(report)),
    )


async def read_live_decision(url: str, key: str, *, kube: KubeClient | None) -> LiveDecision:
    """The live controller's ``/debug/hpa`` entry for ``key``: over HTTP, or through the API
    server when ``url`` is a path (``/api/v1/namespaces/<ns>/services/<svc>:<port>/proxy``)."""
    base = url.rstrip("/")
    endpoint = base if base.endswith(DEBUG_PATH) else base + DEBUG_PATH
    try:
        if endpoint.startswith("/"):
            if kube is None:
                return LiveDecision(url, error="an API server path needs a cluster connection")
            document: Any = await kube.get(endpoint)
        else:
            timeout = aiohttp.ClientTimeout(total=10)
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(endpoint) as response,
            ):
                if response.status != 200:
                    return LiveDecision(url, error=f"HTTP {response.status} from {endpoint}")
                document = orjson.loads(await response.read())
    except (aiohttp.ClientError, TimeoutError, OSError, ApiError, ValueError) as error:
        return LiveDecision(url, error=error_text(error))
    if not isinstance(document, dict):
        return LiveDecision(url, error=f"{endpoint} did not answer a JSON object")
    entry = document.get(key)
    return LiveDecision(url, report=entry if isinstance(entry, dict) else None)


# ---------------------------------------------------------------------------------- CLI


def add_flags(parser: argparse.ArgumentParser) -> None:
    """``NAMESPACE/NAME``, connection, output, the controller's algorithm flags (its own
    ``add_flags``: same names and defaults) and the in-process source's flags."""
    parser.add_argument(
        "hpa", metavar="NAMESPACE/NAME", help="the HorizontalPodAutoscaler (or the word vpa)"
    )
    parser.add_argument(
        "vpa",
        nargs="?",
        metavar="VPA",
        help="after the word vpa: the VerticalPodAutoscaler NAMESPACE/NAME "
        "(hpa explain vpa NAMESPACE/NAME)",
    )
    group = parser.add_argument_group("explain")
    group.add_argument("--kubeconfig", default=None, help="kubeconfig file")
    group.add_argument("--context", default=None, help="kubeconfig context")
    group.add_argument(
        "--controller-url",
        default=None,
        help="the live controller's HTTP endpoint (e.g. http://localhost:8080 after a "
        "port-forward) or an API server proxy path "
        "(/api/v1/namespaces/NS/services/NAME:PORT/proxy); its last decision is printed",
    )
    group.add_argument("-o", "--output", choices=("text", "json"), default="text")
    horizontal_flags.add_flags(parser)
    inprocess_metrics.add_flags(parser)
    explain_vpa.add_flags(parser)


def add_command(commands: Any) -> None:
    """Register ``hpa explain`` on the top-level subparsers."""
    parser = commands.add_parser(
        "explain",
        help="explain one HPA's scaling decision from live cluster data",
        description="Read an HPA, its pods and metrics from the cluster, run the controller's "
        "decision offline and print its trace (see docs/explain.md).",
    )
    add_flags(parser)
    parser.set_defaults(handler=main)


def _split(text: str) -> tuple[str, str]:
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ExplainError(f"expected NAMESPACE/NAME, got {text!r}", exit_code=2)
    return namespace, name


async def _load_kube(
    args: argparse.Namespace, *, clock: Clock, timeout_seconds: float
) -> KubeClient:
    """The cluster client from ``--kubeconfig``/``--context`` (a kubeconfig problem is one
    clear message, exit 5)."""
    try:
        return await load_client(
            ClientSettings(
                kubeconfig_path=args.kubeconfig,
                context=args.context,
                user_agent="hpa-explain",
                request_timeout_seconds=timeout_seconds,
            ),
            clock=clock,
            retry=RetryPolicy(max_attempts=3),  # a CLI: fail within a second or so
        )
    except Exception as error:  # any kubeconfig problem is a clear message
        raise ExplainError(
            f"cannot load the cluster configuration: {error}", exit_code=EXIT_UNREACHABLE
        ) from error


async def _run_vpa(args: argparse.Namespace) -> tuple[str, int]:
    """``hpa explain vpa NAMESPACE/NAME`` (:mod:`hpa.app.explain_vpa`)."""
    if not args.vpa:
        raise ExplainError("expected hpa explain vpa NAMESPACE/NAME", exit_code=2)
    namespace, name = _split(args.vpa)
    try:
        config = explain_vpa.recommendation_config_from_args(args)
    except ValueError as error:
        raise ExplainError(str(error), exit_code=2) from error
    kube = await _load_kube(args, clock=SystemClock(), timeout_seconds=15.0)
    try:
        report = await explain_vpa.explain_vpa(kube, namespace, name, config=config)
    except ApiError as error:
        raise _api_failure(f"VerticalPodAutoscaler {namespace}/{name}", error) from error
    except (TransportError, aiohttp.ClientError, OSError, TimeoutError) as error:
        raise ExplainError(
            f"cannot reach the cluster: {error_text(error)}", exit_code=EXIT_UNREACHABLE
        ) from error
    finally:
        await aclose_quietly(kube)
    if args.output == "json":
        return orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n", 0
    return report.render(), 0


async def _run(args: argparse.Namespace) -> tuple[str, int]:
    if args.hpa == "vpa":
        return await _run_vpa(args)
    if args.vpa:
        raise ExplainError(f"unexpected argument {args.vpa!r}", exit_code=2)
    namespace, name = _split(args.hpa)
    try:
        settings = horizontal_flags.from_args(args)
    except ValueError as error:
        raise ExplainError(str(error), exit_code=2) from error
    inprocess = None
    source_text = "the aggregated metrics APIs"
    if settings.metrics_source == "inprocess":
        try:
            adapter_settings = inprocess_metrics.settings_from_args(args)
        except ValueError as error:
            raise ExplainError(str(error), exit_code=2) from error
        inprocess = inprocess_metrics.open_source(adapter_settings, registry=CollectorRegistry())
        source_text = (
            f"adapter's providers in-process (Prometheus {adapter_settings.prometheus_url})"
        )
    clock = SystemClock()
    try:
        kube = await _load_kube(
            args, clock=clock, timeout_seconds=settings.metric_timeout_seconds + 5
        )
        try:
            report = await explain_hpa(
                kube,
                namespace,
                name,
                settings=settings,
                clock=clock,
                metrics_source=source_text,
                inprocess=inprocess,
            )
            if args.controller_url:
                live = await read_live_decision(args.controller_url, report.key, kube=kube)
                report = replace(report, live=live)
        except (TransportError, aiohttp.ClientError, OSError, TimeoutError) as error:
            raise ExplainError(
                f"cannot reach the cluster: {error_text(error)}", exit_code=EXIT_UNREACHABLE
            ) from error
        finally:
            await aclose_quietly(kube)
    finally:
        if inprocess is not None:
            await inprocess.aclose()
    if args.output == "json":
        text = orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"
    else:
        text = report.render()
    return text, report.exit_code


def main(args: argparse.Namespace) -> int:
    """The ``explain`` subcommand's handler: the report on stdout, failures on stderr (and
    only warnings of the libraries' logs, on stderr too)."""
    previous = structlog.get_config()
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    try:
        text, code = asyncio.run(_run(args))
    except ExplainError as error:
        sys.stderr.write(f"error: {error.message}\n")
        return error.exit_code
    finally:
        structlog.configure(**previous)
    sys.stdout.write(text)
    return code


def plugin_main(argv: Sequence[str] | None = None) -> int:
    """The kubectl plugin (``kubectl-hpa-explain``: ``kubectl hpa explain NAMESPACE/NAME``)."""
    parser = argparse.ArgumentParser(
        prog="kubectl hpa explain",
        description="Explain one HPA's scaling decision from live cluster data "
        "(the kubectl plugin of hpa explain).",
    )
    add_flags(parser)
    args = parser.parse_args(argv)
    return main(args)
