"""The horizontal controller against the port fakes: every condition and event path, writes,
conflicts, dry run, the status rule, restart seeding, isolation of failures, metrics and logs.

Upstream counterpart of the scenarios: ``pkg/controller/podautoscaler/horizontal_test.go``
(``TestScaleUp``, ``TestScaleDownStabilizeInitialSize``, ``TestAvoidUncessaryUpdates``,
``TestConditionFailedGetMetrics``, ``TestConditionInvalidSelectorMissing``,
``TestConditionInvalidSelectorUnparsable``, ``TestMultipleHPAs``, ``TestScaleUpdateFailed``,
``TestEventNotCreated``...), re-expressed through the ports.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

import hypothesis
import pytest
import structlog
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from hpa.controllers.horizontal import (
    HorizontalController,
    HPASelectorStore,
    status_needs_write,
)
from hpa.controllers.ports import HorizontalPodAutoscalerObject
from hpa.controllers.queue import WorkQueue
from hpa.controllers.settings import DRY_RUN_ANNOTATION, HorizontalControllerSettings
from hpa.core.conditions import (
    ConditionStatus,
    ConditionType,
    HorizontalPodAutoscalerCondition,
    find_condition,
)
from hpa.core.decision import HorizontalPodAutoscalerStatus, MetricStatus, MetricValueStatus
from hpa.core.replicas import ContainerInfo, PodCondition, PodInfo
from hpa.core.selector import parse_selector
from hpa.core.spec import (
    ContainerResourceMetricSource,
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    LabelSelector,
    MetricIdentifier,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
    ScalingRules,
)
from tests.fakes.clock import EPOCH, FakeClock
from tests.fakes.events import FakeEventRecorder
from tests.fakes.metrics import FakeMetricsClient
from tests.fakes.pods import FakePodLister
from tests.fakes.scale import FakeHorizontalPodAutoscalers, FakeScaleClient

NS = "default"
LONG_AGO = EPOCH - timedelta(days=1)


def target(name: str = "web") -> CrossVersionObjectReference:
    return CrossVersionObjectReference(kind="Deployment", name=name, api_version="apps/v1")


def cpu_metric(utilization: int = 50) -> MetricSpec:
    return MetricSpec.for_resource(
        ResourceMetricSource(
            "cpu", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=utilization)
        )
    )


def make_hpa(
    name: str = "web",
    *,
    namespace: str = NS,
    workload: str | None = None,
    metrics: tuple[MetricSpec, ...] | None = None,
    min_replicas: int = 1,
    max_replicas: int = 10,
    behavior: HorizontalPodAutoscalerBehavior | None = None,
    annotations: dict[str, str] | None = None,
    status: HorizontalPodAutoscalerStatus | None = None,
) -> HorizontalPodAutoscalerObject:
    return HorizontalPodAutoscalerObject(
        namespace=namespace,
        name=name,
        spec=HorizontalPodAutoscalerSpec(
            scale_target_ref=target(workload or name),
            max_replicas=max_replicas,
            min_replicas=min_replicas,
            metrics=metrics if metrics is not None else (cpu_metric(),),
            behavior=behavior,
        ),
        status=status or HorizontalPodAutoscalerStatus(),
        generation=1,
        annotations=annotations or {},
    )


def running_pod(name: str, *, cpu_request_milli: int = 1000) -> PodInfo:
    return PodInfo(
        name=name,
        ready_condition=PodCondition(ConditionStatus.TRUE, LONG_AGO),
        start_time=LONG_AGO,
        containers=(
            ContainerInfo("app", {"cpu": cpu_request_milli, "memory": 100 * 2**20 * 1000}),
        ),
    )


class Harness:
    """The controller wired to fakes; one workload per HPA, labelled ``app=<workload>``."""

    def __init__(self, **settings: object) -> None:
        self.clock = FakeClock()
        self.settings = HorizontalControllerSettings(**settings)  # type: ignore[arg-type]
        self.hpas = FakeHorizontalPodAutoscalers()
        self.scales = FakeScaleClient()
        self.metrics = FakeMetricsClient()
        self.pods = FakePodLister()
        self.events = FakeEventRecorder()
        self.registry = CollectorRegistry()
        self.selectors = HPASelectorStore()
        self.controller = self.new_controller()

    def new_controller(self, **options: Any) -> HorizontalController:
        """A fresh controller on the same world (what a restart looks like); ``options`` are
        the constructor's embedding options (``render_explanations``, ``observe``)."""
        self.registry = CollectorRegistry()
        return HorizontalController(
            self.settings,
            hpas=self.hpas,
            scales=self.scales,
            metrics=self.metrics,
            pods=self.pods,
            status_writer=self.hpas,
            events=self.events,
            clock=self.clock,
            selector_index=self.selectors,
            registry=self.registry,
            **options,
        )

    def add(
        self,
        hpa: HorizontalPodAutoscalerObject,
        *,
        replicas: int,
        cpu_milli: int | None = 500,
        selector: str | None = None,
    ) -> HorizontalPodAutoscalerObject:
        """Store ``hpa``, its target's Scale and ``replicas`` pods using ``cpu_milli`` each."""
        workload = hpa.spec.scale_target_ref.name
        labels = {"app": workload}
        self.scales.set_scale(
            hpa.namespace,
            hpa.spec.scale_target_ref,
            replicas=replicas,
            selector=f"app={workload}" if selector is None else selector,
        )
        names = [f"{workload}-{i}" for i in range(replicas)]
        for pod_name in names:
            self.pods.add(hpa.namespace, running_pod(pod_name), labels=labels)
        if cpu_milli is not None:
            self.metrics.set_pod_values(
                hpa.namespace,
                "cpu",
                values_milli=dict.fromkeys(names, cpu_milli),
                timestamp=self.clock.now(),
                selector=f"app={workload}",
            )
        stored = self.hpas.put(hpa)
        self.controller.track(stored.key)
        return stored

    def set_cpu(self, hpa: HorizontalPodAutoscalerObject, cpu_milli: int, *, pods: int) -> None:
        workload = hpa.spec.scale_target_ref.name
        self.metrics.set_pod_values(
            hpa.namespace,
            "cpu",
            values_milli={f"{workload}-{i}": cpu_milli for i in range(pods)},
            timestamp=self.clock.now(),
            selector=f"app={workload}",
        )

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return self.registry.get_sample_value(name, labels or {})

    def status(self, key: str) -> HorizontalPodAutoscalerStatus:
        stored = self.hpas.objects[key]
        return stored.status

    def condition(self, key: str, kind: ConditionType) -> HorizontalPodAutoscalerCondition:
        found = find_condition(self.status(key).conditions, kind)
        assert found is not None, f"no {kind} condition"
        return found


# ----------------------------------------------------------------------------- happy paths


async def test_scale_up_writes_the_scale_once_records_the_event_and_the_status() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)  # 100 % of request, target 50 %
    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.scaled
    assert report.error is None
    assert h.scales.replicas(NS, target()) == 4
    assert [w.replicas for w in h.scales.accepted_writes()] == [4]
    assert h.events.events(hpa.key)[-1].message == (
        "New size: 4; reason: cpu resource utilization (percentage of request) above target"
    )
    assert h.events.reasons(hpa.key) == ["SuccessfulRescale"]
    status = h.status(hpa.key)
    assert (status.current_replicas, status.desired_replicas) == (2, 4)
    assert status.last_scale_time == h.clock.now()
    assert h.condition(hpa.key, ConditionType.ABLE_TO_SCALE).reason == "SucceededRescale"
    assert h.condition(hpa.key, ConditionType.SCALING_ACTIVE).reason == "ValidMetricFound"
    assert h.hpas.status_writes[-1].observed_generation == 1
    assert (
        h.sample(
            "horizontal_pod_autoscaler_controller_reconciliations_total",
            {"action": "scale_up", "error": "none"},
        )
        == 1.0
    )
    assert (
        h.sample(
            "horizontal_pod_autoscaler_controller_desired_replicas",
            {"namespace": NS, "hpa_name": "web"},
        )
        == 4.0
    )
    assert (
        h.sample(
            "horizontal_pod_autoscaler_controller_metric_computation_total",
            {"action": "scale_up", "error": "none", "metric_type": "Resource"},
        )
        == 1.0
    )
    assert h.metrics.calls[0].selector == "app=web"


async def test_every_metric_source_is_fetched_through_its_port_method() -> None:
    h = Harness()
    selector = LabelSelector(match_labels=(("queue", "jobs"),))
    described = CrossVersionObjectReference("Ingress", "main", "networking.k8s.io/v1")
    metrics = (
        MetricSpec.for_container_resource(
            ContainerResourceMetricSource(
                "cpu", "app", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=50)
            )
        ),
        MetricSpec.for_pods(
            PodsMetricSource(
                MetricIdentifier("rps", selector),
                MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=10_000),
            )
        ),
        MetricSpec.for_object(
            ObjectMetricSource(
                described,
                MetricIdentifier("hits"),
                MetricTarget(MetricTargetType.VALUE, value_milli=100_000),
            )
        ),
        MetricSpec.for_external(
            ExternalMetricSource(
                MetricIdentifier("lag", selector),
                MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=5_000),
            )
        ),
    )
    hpa = h.add(make_hpa(metrics=metrics), replicas=2, cpu_milli=None)
    pods = {"web-0": 500, "web-1": 500}
    h.metrics.set_pod_values(NS, "cpu", values_milli=pods, container="app", timestamp=h.clock.now())
    h.metrics.set_pod_values(
        NS, "rps", values_milli={"web-0": 10_000, "web-1": 10_000}, custom=True
    )
    h.metrics.set_object_value(NS, "hits", described_object=described, value_milli=100_000)
    h.metrics.set_external_values(NS, "lag", values_milli=(4_000, 6_000))

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.error is None
    assert not report.rescale
    calls = {call.method: call for call in h.metrics.calls}
    assert set(calls) == {
        "get_resource_metric",
        "get_raw_metric",
        "get_object_metric",
        "get_external_metric",
    }
    assert calls["get_resource_metric"].key == ("resource", NS, "cpu", "app")
    assert calls["get_raw_metric"].metric_selector == "queue=jobs"
    assert calls["get_external_metric"].metric_selector == "queue=jobs"
    statuses = h.status(hpa.key).current_metrics
    assert statuses is not None
    assert [s.type for s in statuses] == ["ContainerResource", "Pods", "Object", "External"]


# ------------------------------------------------------------------------- the scale target


async def test_failed_scale_get_sets_able_to_scale_false_and_writes_nothing_else() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    h.scales.get_errors[(NS, "Deployment", "web")] = RuntimeError("connection refused")

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.error == "failed to query scale subresource for Deployment/default/web: " + (
        "connection refused"
    )
    assert h.events.events(hpa.key)[0].reason == "FailedGetScale"
    assert h.events.events(hpa.key)[0].message == "connection refused"
    able = h.condition(hpa.key, ConditionType.ABLE_TO_SCALE)
    assert (able.status, able.reason) == (ConditionStatus.FALSE, "FailedGetScale")
    assert h.metrics.calls == [], "no metrics are fetched without a scale"
    assert h.scales.writes == []
    assert (
        h.sample(
            "horizontal_pod_autoscaler_controller_reconciliations_total",
            {"action": "none", "error": "internal"},
        )
        == 1.0
    )


async def test_failed_scale_update_records_failed_rescale_and_keeps_the_old_desired() -> None:
    h = Harness()
    hpa = h.add(
        make_hpa(status=HorizontalPodAutoscalerStatus(current_replicas=2, desired_replicas=2)),
        replicas=2,
        cpu_milli=1000,
    )
    h.scales.update_errors[(NS, "Deployment", "web")] = RuntimeError("admission webhook denied")

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert not report.scaled
    assert report.error == "failed to rescale Deployment/default/web: admission webhook denied"
    failed = [e for e in h.events.events(hpa.key) if e.reason == "FailedRescale"]
    assert [e.message for e in failed] == [
        "New size: 4; reason: cpu resource utilization (percentage of request) above target; "
        "error: admission webhook denied"
    ]
    able = h.condition(hpa.key, ConditionType.ABLE_TO_SCALE)
    assert (able.status, able.reason) == (ConditionStatus.FALSE, "FailedUpdateScale")
    assert h.status(hpa.key).desired_replicas == 2
    assert h.scales.replicas(NS, target()) == 2


async def test_a_conflict_is_redecided_once_from_the_fresh_scale_and_written_once() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    h.scales.concurrent_writes[(NS, "Deployment", "web")] = [3]  # someone scales to 3 meanwhile

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.conflict_retried
    assert report.scaled
    writes = h.scales.writes
    assert [(w.replicas, w.accepted) for w in writes] == [(4, False), (4, True)]
    assert h.scales.replicas(NS, target()) == 4
    assert h.events.reasons(hpa.key) == ["SuccessfulRescale"], "one decision, one rescale"
    assert h.status(hpa.key).current_replicas == 3, "the status reflects the fresh read"


async def test_a_second_conflict_gives_up_with_failed_rescale_and_never_writes() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    h.scales.concurrent_writes[(NS, "Deployment", "web")] = [3, 5]

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert not report.scaled
    assert h.scales.accepted_writes() == []
    assert len(h.scales.writes) == 2, "at most one retry"
    assert h.events.reasons(hpa.key) == ["FailedRescale"]
    assert report.error is not None
    assert "the object has been modified" in report.error


async def test_a_conflict_where_the_fresh_scale_already_fits_writes_nothing() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    h.scales.concurrent_writes[(NS, "Deployment", "web")] = [4]  # another writer did our job

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.conflict_retried
    assert not report.scaled
    assert h.scales.accepted_writes() == []
    assert "SuccessfulRescale" not in h.events.reasons(hpa.key)
    assert h.scales.replicas(NS, target()) == 4


# -------------------------------------------------------------------------------- metrics


def _failing_metric_cases() -> list[tuple[str, MetricSpec, tuple[str, ...], str]]:
    described = CrossVersionObjectReference("Service", "front", "v1")
    return [
        ("resource", cpu_metric(), ("resource", NS, "cpu", ""), "FailedGetResourceMetric"),
        (
            "container-resource",
            MetricSpec.for_container_resource(
                ContainerResourceMetricSource(
                    "cpu", "app", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=50)
                )
            ),
            ("resource", NS, "cpu", "app"),
            "FailedGetContainerResourceMetric",
        ),
        (
            "pods",
            MetricSpec.for_pods(
                PodsMetricSource(
                    MetricIdentifier("rps"),
                    MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=1000),
                )
            ),
            ("raw", NS, "rps", ""),
            "FailedGetPodsMetric",
        ),
        (
            "object",
            MetricSpec.for_object(
                ObjectMetricSource(
                    described,
                    MetricIdentifier("hits"),
                    MetricTarget(MetricTargetType.VALUE, value_milli=1000),
                )
            ),
            ("object", NS, "hits", "Service", "front"),
            "FailedGetObjectMetric",
        ),
        (
            "external",
            MetricSpec.for_external(
                ExternalMetricSource(
                    MetricIdentifier("lag"),
                    MetricTarget(MetricTargetType.VALUE, value_milli=1000),
                )
            ),
            ("external", NS, "lag"),
            "FailedGetExternalMetric",
        ),
    ]


@pytest.mark.parametrize(
    ("metric", "key", "reason"),
    [pytest.param(m, k, r, id=i) for i, m, k, r in _failing_metric_cases()],
)
async def test_each_metric_failure_kind_sets_its_condition_and_events(
    metric: MetricSpec, key: tuple[str, ...], reason: str
) -> None:
    h = Harness()
    hpa = h.add(make_hpa(metrics=(metric,)), replicas=2, cpu_milli=None)
    h.metrics.set_error(key, "unable to fetch metrics from some API: the server is on fire")

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert not report.rescale
    assert report.error is not None
    assert report.error.startswith(
        "failed to compute desired number of replicas based on listed metrics for "
        "Deployment/default/web: invalid metrics (1 invalid out of 1), first error is: "
    )
    assert h.events.reasons(hpa.key) == [reason, "FailedComputeMetricsReplicas"]
    assert "the server is on fire" in h.events.events(hpa.key)[0].message
    active = h.condition(hpa.key, ConditionType.SCALING_ACTIVE)
    assert (active.status, active.reason) == (ConditionStatus.FALSE, reason)
    assert active.message.startswith("the HPA was unable to compute the replica count: ")
    assert h.scales.writes == []
    assert (
        h.sample(
            "horizontal_pod_autoscaler_controller_metric_computation_total",
            {"action": "none", "error": "internal", "metric_type": metric.type},
        )
        == 1.0
    )


async def test_a_metrics_client_that_raises_fails_only_that_metric() -> None:
    h = Harness()
    rps = MetricSpec.for_pods(
        PodsMetricSource(
            MetricIdentifier("rps"),
            MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=1000),
        )
    )
    hpa = h.add(make_hpa(metrics=(rps, cpu_metric())), replicas=2, cpu_milli=1000)
    h.metrics.raising[("raw", NS, "rps", "")] = ConnectionResetError("reset by peer")

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.scaled, "the valid metric still scales up"
    assert h.scales.replicas(NS, target()) == 4
    assert report.error is not None
    assert "reset by peer" in report.error
    assert "FailedGetPodsMetric" in h.events.reasons(hpa.key)


async def test_a_metric_past_its_deadline_fails_alone_and_does_not_block_another_hpa() -> None:
    h = Harness(metric_timeout_seconds=0.05)
    slow = h.add(make_hpa(namespace="slow"), replicas=2, cpu_milli=1000)
    fast = h.add(make_hpa(namespace="fast"), replicas=2, cpu_milli=1000)
    h.metrics.hanging.add(("resource", "slow", "cpu", ""))

    slow_task = asyncio.create_task(h.controller.reconcile_key(slow.key))
    await asyncio.sleep(0)  # the slow reconcile is now waiting on its metric
    fast_report = await h.controller.reconcile_key(fast.key)

    assert not slow_task.done(), "the slow metric is still pending"
    assert fast_report is not None
    assert fast_report.scaled
    assert h.scales.replicas("fast", target()) == 4
    slow_report = await slow_task
    assert slow_report is not None
    assert not slow_report.rescale
    assert slow_report.error is not None
    assert "unable to fetch metrics from resource metrics API: context deadline exceeded" in (
        slow_report.error
    )
    assert h.events.reasons(slow.key) == [
        "FailedGetResourceMetric",
        "FailedComputeMetricsReplicas",
    ]


async def test_a_metric_that_suspends_then_answers_within_its_deadline_is_used() -> None:
    h = Harness(metric_timeout_seconds=5)
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    gate = h.metrics.suspending[("resource", NS, "cpu", "")] = asyncio.Event()

    task = asyncio.create_task(h.controller.reconcile_key(hpa.key))
    for _ in range(3):
        await asyncio.sleep(0)
    assert not task.done(), "the reconcile waits on its metric"
    gate.set()
    report = await task

    assert report is not None
    assert report.error is None
    assert report.scaled
    assert h.scales.replicas(NS, target()) == 4
    assert h.metrics.cancelled == []


async def test_cancelling_a_reconcile_cancels_its_pending_metric_call() -> None:
    h = Harness(metric_timeout_seconds=5)
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    h.metrics.suspending[("resource", NS, "cpu", "")] = asyncio.Event()

    task = asyncio.create_task(h.controller.reconcile_key(hpa.key))
    for _ in range(3):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(10):  # a swallowed cancellation would spin forever
            await task

    assert h.metrics.cancelled == [("resource", NS, "cpu", "")]
    assert h.scales.replicas(NS, target()) == 2, "nothing was written"
    assert h.events.reasons(hpa.key) == []


async def test_a_hanging_metric_is_cancelled_at_its_deadline() -> None:
    h = Harness(metric_timeout_seconds=0.05)
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    h.metrics.hanging.add(("resource", NS, "cpu", ""))

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.error is not None
    assert "context deadline exceeded (after 0.05s)" in report.error
    assert h.metrics.cancelled == [("resource", NS, "cpu", "")]


# ------------------------------------------------------------------------------- selectors


async def test_a_target_without_selector_is_selector_required() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, selector="")

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.error is not None
    assert h.events.events(hpa.key)[0].reason == "SelectorRequired"
    assert h.events.events(hpa.key)[0].message == "selector is required"
    active = h.condition(hpa.key, ConditionType.SCALING_ACTIVE)
    assert (active.reason, active.message) == (
        "InvalidSelector",
        "the HPA target's scale is missing a selector",
    )
    assert h.metrics.calls == []


async def test_an_unparsable_selector_is_invalid_selector() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, selector="app in (web")

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.error is not None
    event = h.events.events(hpa.key)[0]
    assert event.reason == "InvalidSelector"
    assert event.message.startswith(
        "couldn't convert selector into a corresponding internal selector object: "
    )
    assert h.condition(hpa.key, ConditionType.SCALING_ACTIVE).reason == "InvalidSelector"
    assert h.metrics.calls == []
    assert h.pods.calls == []


async def test_two_hpas_selecting_the_same_pods_are_ambiguous_once_both_are_known() -> None:
    h = Harness()
    first = h.add(make_hpa("a", workload="web"), replicas=2, cpu_milli=250)
    second = h.add(make_hpa("b", workload="other"), replicas=2, cpu_milli=250, selector="app=web")

    await h.controller.reconcile_key(first.key)  # only a's selector is known yet
    assert "AmbiguousSelector" not in h.events.reasons(first.key)
    await h.controller.reconcile_key(second.key)
    await h.controller.reconcile_key(first.key)

    message = "pods by selector app=web are controlled by multiple HPAs: [default/a default/b]"
    for key in (first.key, second.key):
        ambiguous = [e for e in h.events.events(key) if e.reason == "AmbiguousSelector"]
        assert [e.message for e in ambiguous] == [message]
        active = h.condition(key, ConditionType.SCALING_ACTIVE)
        assert (active.status, active.reason, active.message) == (
            ConditionStatus.FALSE,
            "AmbiguousSelector",
            message,
        )
    assert h.scales.writes == [], "neither HPA scales while ambiguous"


async def test_deleting_one_of_two_overlapping_hpas_lifts_the_ambiguity() -> None:
    h = Harness()
    first = h.add(make_hpa("a", workload="web"), replicas=2, cpu_milli=500)
    second = h.add(make_hpa("b", workload="other"), replicas=2, cpu_milli=500, selector="app=web")
    await h.controller.reconcile_key(first.key)
    await h.controller.reconcile_key(second.key)
    await h.controller.reconcile_key(first.key)
    assert h.condition(first.key, ConditionType.SCALING_ACTIVE).reason == "AmbiguousSelector"
    h.hpas.delete(second.key)

    assert await h.controller.reconcile_key(second.key) is None
    h.events.clear()
    report = await h.controller.reconcile_key(first.key)

    assert report is not None
    assert report.error is None
    assert "AmbiguousSelector" not in h.events.reasons(first.key)
    assert h.condition(first.key, ConditionType.SCALING_ACTIVE).reason == "ValidMetricFound"
    assert h.controller.history(second.key) is None
    assert h.selectors.hpas_matching_pods(NS, [{"app": "web"}]) == (first.key,)


def test_the_selector_store_dedupes_label_sets_and_honours_limits() -> None:
    store = HPASelectorStore()
    assert store.put_if_absent(NS, "default/a", selector=parse_selector("app=web"))
    assert not store.put_if_absent(NS, "default/a", selector=parse_selector("app=other"))
    assert not store.put_if_present(NS, "default/z", selector=parse_selector("app=web"))
    assert store.put_if_absent(NS, "default/b", selector=parse_selector("tier in (front,back)"))
    pods = [{"app": "web", "tier": "front"}] * 50
    assert store.hpas_matching_pods(NS, pods) == ("default/a", "default/b")
    assert len(store.hpas_matching_pods(NS, pods, limit=1)) == 1
    assert store.hpas_matching_pods("elsewhere", pods) == ()
    store.delete(NS, "default/a")
    store.delete(NS, "default/b")
    assert len(store) == 0


async def test_a_changed_target_selector_is_followed_on_the_next_reconcile() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=500)
    h.controller.track(hpa.key)
    await h.controller.reconcile_key(hpa.key)
    assert h.selectors.hpas_matching_pods(NS, [{"app": "web"}]) == (hpa.key,)
    h.scales.set_scale(NS, target(), replicas=2, selector="app=api")
    await h.controller.reconcile_key(hpa.key)
    assert h.selectors.hpas_matching_pods(NS, [{"app": "web"}]) == ()
    assert h.selectors.hpas_matching_pods(NS, [{"app": "api"}]) == (hpa.key,)


_SELECTORS = (
    "app=web",
    "app=api",
    "tier in (front,back)",
    "app=web,tier=front",
    "!tier",
    "tier in (front),app!=api",
    "app notin (api)",
)
_LABEL_SETS: tuple[dict[str, str], ...] = (
    {"app": "web"},
    {"app": "web", "tier": "front"},
    {"app": "api", "tier": "back"},
    {"tier": "front"},
    {},
)


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(
    operations=st.lists(
        st.tuples(
            st.sampled_from(("absent", "present", "delete", "query")),
            st.sampled_from(("ns/a", "ns/b", "ns/c")),
            st.integers(min_value=0, max_value=len(_SELECTORS) - 1),
            st.lists(st.integers(min_value=0, max_value=len(_LABEL_SETS) - 1), max_size=4),
        ),
        max_size=25,
    )
)
def test_the_selector_store_s_cached_answers_follow_every_selector_change(
    operations: list[tuple[str, str, int, list[int]]],
) -> None:
    store = HPASelectorStore()
    model: dict[str, str] = {}
    for operation, key, selector_index, label_indexes in operations:
        selector = _SELECTORS[selector_index]
        if operation == "absent":
            store.put_if_absent("ns", key, selector=parse_selector(selector))
            model.setdefault(key, selector)
        elif operation == "present":
            store.put_if_present("ns", key, selector=parse_selector(selector))
            if key in model:
                model[key] = selector
        elif operation == "delete":
            store.delete("ns", key)
            model.pop(key, None)
        labels = [dict(_LABEL_SETS[i]) for i in label_indexes]
        expected = tuple(
            sorted(
                k
                for k, text in model.items()
                if any(parse_selector(text).matches(x) for x in labels)
            )
        )
        assert store.hpas_matching_pods("ns", labels) == expected


# ----------------------------------------------------------------------- zero replicas


async def test_a_target_at_zero_with_min_one_is_maintenance_mode() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=0)

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.error is None
    assert not report.rescale
    active = h.condition(hpa.key, ConditionType.SCALING_ACTIVE)
    assert (active.status, active.reason) == (ConditionStatus.FALSE, "ScalingDisabled")
    assert h.metrics.calls == [], "metrics are not fetched for a paused target"
    assert h.scales.writes == []


async def test_scale_to_zero_and_back_on_an_external_metric() -> None:
    h = Harness()
    lag = MetricSpec.for_external(
        ExternalMetricSource(
            MetricIdentifier("lag"), MetricTarget(MetricTargetType.VALUE, value_milli=10_000)
        )
    )
    behavior = HorizontalPodAutoscalerBehavior(scale_down=ScalingRules(0))
    hpa = h.add(
        make_hpa(metrics=(lag,), min_replicas=0, behavior=behavior), replicas=3, cpu_milli=None
    )
    h.metrics.set_external_values(NS, "lag", values_milli=(0,))

    down = await h.controller.reconcile_key(hpa.key)

    assert down is not None
    assert down.scaled
    assert h.scales.replicas(NS, target()) == 0
    scaled_to_zero = h.condition(hpa.key, ConditionType.SCALED_TO_ZERO)
    assert (scaled_to_zero.status, scaled_to_zero.reason) == (ConditionStatus.TRUE, "ScaledToZero")

    await h.clock.advance(60)
    h.metrics.set_external_values(NS, "lag", values_milli=(50_000,))
    up = await h.controller.reconcile_key(hpa.key)

    assert up is not None
    assert up.scaled
    assert h.scales.replicas(NS, target()) > 0
    assert h.metrics.calls[-1].method == "get_external_metric", "metrics evaluated at zero"


# -------------------------------------------------------------------------------- dry run


async def test_global_dry_run_writes_nothing_and_reports_what_it_would_do() -> None:
    h = Harness(dry_run=True)
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.dry_run
    assert report.rescale
    assert not report.scaled
    assert h.scales.writes == []
    assert h.hpas.status_writes == []
    events = h.events.events(hpa.key)
    assert {e.reason for e in events} == {"DryRun"}
    assert events[-1].message == (
        "would rescale Deployment/default/web from 2 to 4; reason: cpu resource utilization "
        "(percentage of request) above target"
    )
    assert (
        h.sample("hpa_horizontal_controller_dry_run_rescales_total", {"action": "scale_up"}) == 1.0
    )
    debug = h.controller.debug_state()[hpa.key]
    assert debug["dryRun"] is True
    assert debug["desiredReplicas"] == 4
    assert "cpu resource utilization" in debug["explanation"]


async def test_the_last_reconcile_is_kept_with_its_trace_rendered_for_the_debug_endpoint() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.explanation.entries, "the caller gets the whole trace"
    kept = h.controller.last_report(hpa.key)
    assert kept is not None
    assert (kept.desired_replicas, kept.scaled) == (report.desired_replicas, report.scaled)
    assert h.controller.last_explanation(hpa.key) == report.explanation.render()
    assert h.controller.debug_state()[hpa.key] == report.to_dict()
    h.controller.forget(hpa.key)
    assert h.controller.last_explanation(hpa.key) is None


async def test_dry_run_rewrites_warnings_as_dry_run_events() -> None:
    h = Harness(dry_run=True)
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=None)

    await h.controller.reconcile_key(hpa.key)

    messages = [e.message for e in h.events.events(hpa.key)]
    assert h.events.reasons(hpa.key) == ["DryRun", "DryRun"]
    assert messages[0].startswith("FailedGetResourceMetric: ")
    assert messages[1].startswith("FailedComputeMetricsReplicas: ")
    assert h.hpas.status_writes == []


async def test_the_dry_run_annotation_shadows_one_hpa_only() -> None:
    h = Harness()
    shadow = h.add(
        make_hpa("shadow", annotations={DRY_RUN_ANNOTATION: "true"}), replicas=2, cpu_milli=1000
    )
    live = h.add(make_hpa("live"), replicas=2, cpu_milli=1000)

    await h.controller.reconcile_key(shadow.key)
    await h.controller.reconcile_key(live.key)

    assert h.scales.replicas(NS, target("shadow")) == 2
    assert h.scales.replicas(NS, target("live")) == 4
    assert h.hpas.writes_for(shadow.key) == []
    assert len(h.hpas.writes_for(live.key)) == 1
    assert h.events.reasons(shadow.key) == ["DryRun"]
    assert h.events.reasons(live.key) == ["SuccessfulRescale"]


# --------------------------------------------------------------------------- status writes


async def test_status_is_written_only_when_it_changed_meaningfully() -> None:
    h = Harness(status_value_tolerance=0.05)
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=500)  # exactly on target: no rescale

    await h.controller.reconcile_key(hpa.key)
    assert len(h.hpas.writes_for(hpa.key)) == 1, "first status (conditions appear)"

    await h.controller.reconcile_key(hpa.key)
    assert len(h.hpas.writes_for(hpa.key)) == 1, "identical status: no write"

    h.set_cpu(hpa, 510, pods=2)  # 51 % vs 50 % stored: 2 % lag, within 5 %
    await h.controller.reconcile_key(hpa.key)
    assert len(h.hpas.writes_for(hpa.key)) == 1

    h.set_cpu(hpa, 540, pods=2)  # 54 %: 8 % from the stored 50 %, still no rescale
    report = await h.controller.reconcile_key(hpa.key)
    assert report is not None
    assert not report.rescale
    assert len(h.hpas.writes_for(hpa.key)) == 2
    stored = h.status(hpa.key).current_metrics
    assert stored is not None
    assert stored[0].current.average_utilization == 54
    assert h.sample("hpa_horizontal_controller_status_writes_total", {"outcome": "skipped"}) == 2.0


async def test_a_zero_status_tolerance_writes_every_value_change() -> None:
    h = Harness(status_value_tolerance=0.0)
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=500)
    await h.controller.reconcile_key(hpa.key)
    h.set_cpu(hpa, 510, pods=2)
    await h.controller.reconcile_key(hpa.key)
    assert len(h.hpas.writes_for(hpa.key)) == 2


async def test_a_failed_status_write_is_failed_update_status() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=500)
    h.hpas.status_errors[hpa.key] = RuntimeError("etcdserver: request timed out")

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert report.error == "failed to update status for web: etcdserver: request timed out"
    assert h.events.events(hpa.key)[-1].reason == "FailedUpdateStatus"
    assert h.events.events(hpa.key)[-1].message == "etcdserver: request timed out"


def test_status_rule_compares_shape_exactly_and_values_within_the_ratio() -> None:
    cond = HorizontalPodAutoscalerCondition(
        type="AbleToScale",
        status=ConditionStatus.TRUE,
        reason="ReadyForNewScale",
        message="ok",
        last_transition_time=EPOCH,
    )
    metric = MetricStatus(
        type="Resource", name="cpu", current=MetricValueStatus(average_utilization=100)
    )
    old = HorizontalPodAutoscalerStatus(
        current_replicas=2, desired_replicas=2, current_metrics=(metric,), conditions=(cond,)
    )
    within = replace(
        old,
        current_metrics=(replace(metric, current=MetricValueStatus(average_utilization=104)),),
    )
    beyond = replace(
        old,
        current_metrics=(replace(metric, current=MetricValueStatus(average_utilization=106)),),
    )
    other_shape = replace(old, current_metrics=(replace(metric, name="memory"),))
    sub_second = replace(
        old, conditions=(replace(cond, last_transition_time=EPOCH + timedelta(microseconds=5)),)
    )
    assert not status_needs_write(old, within, value_tolerance=0.05)
    assert status_needs_write(old, within, value_tolerance=0.0)
    assert status_needs_write(old, beyond, value_tolerance=0.05)
    assert status_needs_write(old, other_shape, value_tolerance=0.5)
    assert not status_needs_write(old, sub_second), "the API keeps whole seconds"
    assert status_needs_write(old, replace(old, desired_replicas=3), value_tolerance=0.5)
    assert not status_needs_write(
        replace(old, current_metrics=None), replace(old, current_metrics=())
    )
    assert status_needs_write(old, old, old_observed_generation=1, new_observed_generation=2), (
        "a new generation is always acknowledged"
    )


@hypothesis.given(
    old_value=st.integers(-(10**12), 10**12) | st.none(),
    new_value=st.integers(-(10**12), 10**12) | st.none(),
    tolerance=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25, 0.3333, 0.5, 0.999]),
    field=st.sampled_from(["value_milli", "average_value_milli", "average_utilization"]),
)
@hypothesis.example(old_value=100, new_value=105, tolerance=0.05, field="value_milli")  # edge
@hypothesis.example(old_value=-100, new_value=-95, tolerance=0.05, field="value_milli")
@hypothesis.example(old_value=100, new_value=106, tolerance=0.05, field="average_utilization")
@hypothesis.example(old_value=3, new_value=4, tolerance=0.3333, field="average_value_milli")
def test_the_value_tolerance_is_exact_decimal_arithmetic(
    old_value: int | None, new_value: int | None, tolerance: float, field: str
) -> None:
    """``|new - old| <= tolerance * |old|`` with the flag read as written (0.05 is 5/100)."""

    def status(value: int | None) -> HorizontalPodAutoscalerStatus:
        current = MetricValueStatus(**{field: value})
        metric = MetricStatus(type="Resource", name="cpu", current=current)
        return HorizontalPodAutoscalerStatus(
            current_replicas=2, desired_replicas=2, current_metrics=(metric,)
        )

    if old_value is None or new_value is None:
        close = old_value == new_value
    else:
        difference = abs(Decimal(new_value) - Decimal(old_value))
        close = difference <= Decimal(str(tolerance)) * abs(Decimal(old_value))
    assert status_needs_write(status(old_value), status(new_value), value_tolerance=tolerance) is (
        not close
    )


# ------------------------------------------------------------------------ restart seeding


async def test_after_a_restart_no_scale_down_happens_before_the_window_elapses() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=5, cpu_milli=100)  # 10 % of request: wants 1 replica
    h.controller = h.new_controller()  # a freshly started controller: empty history

    first = await h.controller.reconcile_key(hpa.key)
    assert first is not None
    assert not first.rescale
    assert h.condition(hpa.key, ConditionType.ABLE_TO_SCALE).reason == "ScaleDownStabilized"
    history = h.controller.history(hpa.key)
    assert history is not None
    assert history.recommendations is not None
    assert history.recommendations[0].recommendation == 5, "seeded with the current replicas"

    await h.clock.advance(299)
    h.set_cpu(hpa, 100, pods=5)
    assert (await h.controller.reconcile_key(hpa.key)).rescale is False  # type: ignore[union-attr]
    assert h.scales.replicas(NS, target()) == 5

    await h.clock.advance(2)
    h.set_cpu(hpa, 100, pods=5)
    later = await h.controller.reconcile_key(hpa.key)
    assert later is not None
    assert later.scaled
    assert h.scales.replicas(NS, target()) == 1


# ----------------------------------------------------------------------------- isolation


async def test_an_unexpected_exception_in_one_hpa_does_not_stop_the_others() -> None:
    h = Harness()
    broken = h.add(make_hpa(namespace="broken"), replicas=2, cpu_milli=1000)
    healthy = h.add(make_hpa(namespace="healthy"), replicas=2, cpu_milli=1000)
    h.pods.raising["broken"] = RuntimeError("cache exploded")
    queue = WorkQueue(
        "hpa",
        clock=h.clock,
        rng=random.Random(3),
        log_key="hpa",
        on_depth=h.controller.metrics.observe_queue_depth,
    )
    runner = asyncio.create_task(queue.run(h.controller.reconcile, max_in_flight=2))
    try:
        queue.add(broken.key)
        queue.add(healthy.key)
        await h.clock.settle(50)
        assert h.scales.replicas("healthy", target()) == 4
        assert h.scales.replicas("broken", target()) == 2
        assert queue.num_requeues(broken.key) == 1, "the broken key is backed off"
        assert queue.num_requeues(healthy.key) == 0
        assert not runner.done(), "the loop keeps running"
        assert h.sample("hpa_horizontal_controller_queue_depth") == 0.0
        assert (
            h.sample(
                "horizontal_pod_autoscaler_controller_reconciliations_total",
                {"action": "none", "error": "internal"},
            )
            == 1.0
        )
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


async def test_a_deleted_hpa_is_forgotten() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    await h.controller.reconcile_key(hpa.key)
    assert h.controller.history(hpa.key) is not None
    h.hpas.delete(hpa.key)

    assert await h.controller.reconcile_key(hpa.key) is None
    assert h.controller.history(hpa.key) is None
    assert h.controller.debug_state() == {}
    assert (
        h.sample(
            "horizontal_pod_autoscaler_controller_desired_replicas",
            {"namespace": NS, "hpa_name": "web"},
        )
        is None
    )


async def test_reconcile_logs_carry_the_hpa_key() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
    h.scales.update_errors[(NS, "Deployment", "web")] = RuntimeError("denied")
    with structlog.testing.capture_logs() as logs:
        await h.controller.reconcile_key(hpa.key)
    errors = [entry for entry in logs if entry["event"] == "reconcile_error"]
    assert errors
    assert errors[0]["hpa"] == "default/web"
    assert errors[0]["error"] == "failed to rescale Deployment/default/web: denied"


async def test_an_embedder_without_rendered_traces_or_metrics_sees_the_same_reconciles() -> None:
    """The simulator's options change what is kept and recorded, never what is decided."""
    default, lean = Harness(), Harness()
    lean.controller = lean.new_controller(render_explanations=False, observe=False)
    reports = []
    for h in (default, lean):
        hpa = h.add(make_hpa(), replicas=2, cpu_milli=1000)
        reports.append(await h.controller.reconcile_key(hpa.key))
        h.set_cpu(hpa, 100, pods=4)
        reports.append(await h.controller.reconcile_key(hpa.key))
    assert reports[:2] == reports[2:]
    assert [default.scales.replicas(NS, target()), lean.scales.replicas(NS, target())] == [4, 4]
    key = f"{NS}/web"
    rendered = default.controller.last_explanation(key)
    assert rendered
    assert lean.controller.last_explanation(key) == rendered
    assert lean.controller.debug_state() == default.controller.debug_state()
    reconciled = {"action": "scale_up", "error": "none"}
    assert (
        default.sample("horizontal_pod_autoscaler_controller_reconciliations_total", reconciled)
        == 1
    )
    assert (
        lean.sample("horizontal_pod_autoscaler_controller_reconciliations_total", reconciled)
        is None
    )


async def test_the_per_reconcile_debug_line_follows_the_configured_level() -> None:
    saved = structlog.get_config()
    seen: dict[str, list[str]] = {}
    try:
        for name in ("info", "debug", "warning", "debug again"):
            level = logging.DEBUG if name.startswith("debug") else getattr(logging, name.upper())
            structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))
            h = Harness()
            hpa = h.add(make_hpa(), replicas=2, cpu_milli=200)
            with structlog.testing.capture_logs() as logs:
                await h.controller.reconcile_key(hpa.key)
            seen[name] = [entry["event"] for entry in logs if entry["event"] == "reconciled"]
    finally:
        structlog.configure(**saved)
    assert seen == {
        "info": [],
        "debug": ["reconciled"],
        "warning": [],
        "debug again": ["reconciled"],
    }


async def test_an_unknown_metric_source_type_is_a_spec_error() -> None:
    h = Harness()
    hpa = h.add(make_hpa(metrics=(MetricSpec(type="Bogus"),)), replicas=2, cpu_milli=None)

    report = await h.controller.reconcile_key(hpa.key)

    assert report is not None
    assert h.events.events(hpa.key)[0].reason == "InvalidMetricSourceType"
    assert h.events.events(hpa.key)[0].message == 'unknown metric source type "Bogus"'
    assert h.metrics.calls == [], "nothing to fetch for an unknown source"
    assert h.condition(hpa.key, ConditionType.SCALING_ACTIVE).reason == "InvalidMetricSourceType"


async def test_an_unparsable_target_api_version_counts_as_a_spec_error() -> None:
    h = Harness()
    hpa = make_hpa()
    hpa = replace(
        hpa,
        spec=replace(
            hpa.spec,
            scale_target_ref=CrossVersionObjectReference("Deployment", "web", "apps/v1/extra"),
        ),
    )
    stored = h.add(hpa, replicas=2)
    h.scales.get_errors[(NS, "Deployment", "web")] = ValueError(
        "unexpected GroupVersion string: apps/v1/extra"
    )

    report = await h.controller.reconcile_key(stored.key)

    assert report is not None
    assert report.error_label == "spec"
    assert (
        h.sample(
            "horizontal_pod_autoscaler_controller_reconciliations_total",
            {"action": "none", "error": "spec"},
        )
        == 1.0
    )


async def test_the_effective_sync_interval_is_observed_per_hpa() -> None:
    h = Harness()
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=500)
    await h.controller.reconcile_key(hpa.key)
    await h.clock.advance(15)
    await h.controller.reconcile_key(hpa.key)
    assert h.sample("hpa_horizontal_controller_sync_interval_seconds_count") == 1.0
    assert h.sample("hpa_horizontal_controller_sync_interval_seconds_sum") == 15.0


async def test_each_effective_sync_interval_reaches_the_observer_with_its_key() -> None:
    h = Harness()
    seen: list[tuple[str, float]] = []
    controller = HorizontalController(
        h.settings,
        hpas=h.hpas,
        scales=h.scales,
        metrics=h.metrics,
        pods=h.pods,
        status_writer=h.hpas,
        events=h.events,
        clock=h.clock,
        on_sync_interval=lambda key, seconds: seen.append((key, seconds)),
    )
    hpa = h.add(make_hpa(), replicas=2, cpu_milli=500)
    await controller.reconcile_key(hpa.key)
    await h.clock.advance(15)
    await controller.reconcile_key(hpa.key)
    await h.clock.advance(17)
    await controller.reconcile_key(hpa.key)
    assert seen == [(hpa.key, 15.0), (hpa.key, 17.0)]


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    replicas=st.integers(min_value=1, max_value=8),
    cpu_milli=st.integers(min_value=0, max_value=3000),
    interference=st.lists(st.integers(min_value=0, max_value=12), max_size=3),
    fail_update=st.booleans(),
)
def test_one_reconcile_never_writes_the_scale_twice(
    replicas: int, cpu_milli: int, interference: list[int], fail_update: bool
) -> None:
    async def scenario() -> None:
        h = Harness()
        hpa = h.add(make_hpa(max_replicas=20), replicas=replicas, cpu_milli=cpu_milli)
        h.scales.concurrent_writes[(NS, "Deployment", "web")] = list(interference)
        if fail_update:
            h.scales.update_errors[(NS, "Deployment", "web")] = RuntimeError("denied")
        report = await h.controller.reconcile_key(hpa.key)
        assert report is not None
        accepted = h.scales.accepted_writes()
        assert len(accepted) <= 1
        assert len(h.scales.writes) <= 2
        rescaled = h.events.reasons(hpa.key).count("SuccessfulRescale")
        assert rescaled == len(accepted)
        assert report.scaled == bool(accepted)
        if accepted:
            assert h.scales.replicas(NS, target()) == report.desired_replicas

    asyncio.run(scenario())
