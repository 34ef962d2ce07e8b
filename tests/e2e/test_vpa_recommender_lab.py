"""End to end: ``hpa vpa recommender`` in the lab, on ``metrics.k8s.io`` served by ``hpa adapter``
from the lab's Prometheus (the exporter's cAdvisor-shaped series).

Upstream counterpart: the VPA e2e suite's recommender tests (``vertical-pod-autoscaler/e2e/v1``
``recommender.go``, ``checkpoint``) and ``pkg/recommender/main.go`` (checkpoints loaded before the
first pass, the Prometheus history provider).

- A Deployment with steady usage gets ``status.recommendation``, ``RecommendationProvided`` and
  a ``VerticalPodAutoscalerCheckpoint`` rewritten every pass; the recommender restarted loads the
  checkpoint before its first pass, and that pass gives the same target, bounds that moved only
  as one pass's samples move them (a fresh model's first upper bound is orders of magnitude
  wider), and a checkpoint with one pass's samples more.
- A Deployment with an HPA on cpu gets memory recommended and cpu marked excluded: still computed
  (users see it), named in ``HorizontalScalingConflictAvoided`` with the HPA, so the webhook and
  the updater leave it to the HPA.
- ``--storage=prometheus``: a fresh recommender, whose workload has no pod running, recommends
  from the history backfilled into a Prometheus of its own (tests/e2e/test_vpa_history_lab.py's
  ``exporter_history``) on its first pass.
- Side by side (smoke): upstream's recommender v1.8.1 and ours on the same pods, each on its
  own VPA (``spec.recommenders``), agree (``run_side_by_side``; the 15-minute run with a scripted
  load is bench/vpa_side_by_side.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from tests.e2e.controller_lab import (
    adapter_rules,
    cpu_utilization_metric,
    deployment_manifest,
    hpa_manifest,
    report,
    start_adapter,
    stop_adapter,
)
from tests.e2e.test_vpa_history_lab import SCRAPE_SECONDS, exporter_history
from tests.e2e.vpa_lab import install_vpa_crds
from tests.e2e.vpa_recommender_lab import (
    LoadStep,
    Recommended,
    SideBySideConfig,
    checkpoint_names,
    checkpoint_samples,
    condition,
    cpu_rates_steady,
    describe,
    log_events,
    recommendations,
    run_side_by_side,
    start_recommender,
    vpa,
    vpa_manifest,
)
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.process import Component
from tests.lab.prometheus import PrometheusServer

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-vpa-rec"
HISTORY_NAMESPACE = "e2e-vpa-rec-history"
SIDE_NAMESPACE = "e2e-vpa-rec-side"
RECOMMENDER = "hpa-vpa-recommender"
INTERVAL = "5s"
TIMEOUT_SECONDS = 90.0
COMMON_FLAGS = (
    f"--recommender-interval={INTERVAL}",
    "--pod-recommendation-min-cpu-millicores=10",
    "--pod-recommendation-min-memory-mb=10",
    "--checkpoints-gc-interval=1m",
)


def profile(workload: str) -> WorkloadProfile:
    """The exporter's model of a Deployment ``workload`` (pods labelled ``app=workload``)."""
    return WorkloadProfile(
        namespace=NAMESPACE,
        workload=workload,
        selector={"app": workload},
        cpu_per_request_milli=10,
        base_cpu_milli=20,
    )


STEADY = profile("steady")
STEADY_PODS = 2
RPS = 10
WINDOW_SECONDS = 30
SCALED = profile("scaled")
HISTORY_WORKLOADS = (("web", ("web-0", "web-1"), 20, 20, 10, 2**20),)
"""One workload of two pods: 10 + 20 * 10 = 210m and 64 + 10 = 74 MiB each."""
HISTORY_CPU_CORES = Decimal("0.210")
HISTORY_MEMORY_BYTES = Decimal(74 * 2**20)
SAFETY_MARGIN = Decimal("1.15")
BUCKET_RATIO = Decimal("1.05")


@dataclass
class Setup:
    lab: Lab
    work: Path
    recommender: Component


def wait_recommended(lab: Lab, namespace: str, name: str) -> Recommended:
    def provided() -> bool:
        found = vpa(lab, namespace, name)
        ok = condition(found, "RecommendationProvided")
        return bool(recommendations(found)) and ok is not None and ok["status"] == "True"

    lab.wait_for(provided, what=f"{name} recommended", timeout_seconds=TIMEOUT_SECONDS)
    return recommendations(vpa(lab, namespace, name))["app"]


def wait_passes(lab: Lab, component: Component, count: int, *, skip_bytes: int = 0) -> None:
    lab.wait_for(
        lambda: len(log_events(component, "recommender_pass", skip_bytes=skip_bytes)) >= count,
        what=f"{count} passes of {component.name}",
        timeout_seconds=TIMEOUT_SECONDS,
    )


def cores(profile: WorkloadProfile, pods: int) -> float:
    """A pod's cpu under RPS spread over ``pods``."""
    return (profile.base_cpu_milli + profile.cpu_per_request_milli * RPS / pods) / 1000


@pytest.fixture(scope="module")
def setup(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    work = tmp_path_factory.mktemp("vpa-recommender-lab")
    install_vpa_crds(lab)
    lab.kubectl("create", "namespace", NAMESPACE)
    lab.kubectl("create", "namespace", HISTORY_NAMESPACE)
    lab.add_workload(STEADY, rps=RPS)
    lab.add_workload(SCALED, rps=RPS)
    lab.apply(
        [
            deployment_manifest("steady", NAMESPACE, replicas=STEADY_PODS),
            deployment_manifest("scaled", NAMESPACE, replicas=1),
            hpa_manifest(
                "scaled",
                NAMESPACE,
                min_replicas=1,
                max_replicas=1,
                metrics=[cpu_utilization_metric(80)],
            ),
            vpa_manifest("steady", NAMESPACE, target="steady"),
            vpa_manifest("scaled", NAMESPACE, target="scaled"),
        ]
    )
    # the 30 s rate() of a new series climbs for 30 s: the samples start once it is steady, so
    # the target no longer moves from one pass to the next
    lab.wait_for(
        lambda: cpu_rates_steady(
            lab,
            NAMESPACE,
            {"steady": (cores(STEADY, STEADY_PODS), STEADY_PODS), "scaled": (cores(SCALED, 1), 1)},
            window_seconds=WINDOW_SECONDS,
        ),
        what="steady cpu rates of every pod",
        timeout_seconds=TIMEOUT_SECONDS,
    )
    adapter = start_adapter(lab, work, rules=adapter_rules(window_seconds=WINDOW_SECONDS))
    recommender = start_recommender(
        lab, RECOMMENDER, *COMMON_FLAGS, f"--vpa-object-namespace={NAMESPACE}"
    )
    try:
        yield Setup(lab, work, recommender)
    finally:
        if RECOMMENDER in lab.group.components:
            lab.group.end(RECOMMENDER)
        stop_adapter(lab, adapter)


def test_steady_usage_gets_a_recommendation_and_a_checkpoint_that_a_restart_resumes(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = setup.lab
    first = wait_recommended(lab, NAMESPACE, "steady")
    lab.wait_for(
        lambda: "steady-app" in set(checkpoint_names(lab, NAMESPACE)),
        what="the checkpoint steady-app",
        timeout_seconds=TIMEOUT_SECONDS,
    )
    wait_passes(lab, setup.recommender, 6)
    lab.group.end(RECOMMENDER)
    before = recommendations(vpa(lab, NAMESPACE, "steady"))["app"]
    samples_before = checkpoint_samples(lab, NAMESPACE, "steady-app")

    skip = setup.recommender.log_path.stat().st_size
    setup.recommender = start_recommender(
        lab, RECOMMENDER, *COMMON_FLAGS, f"--vpa-object-namespace={NAMESPACE}"
    )
    wait_passes(lab, setup.recommender, 1, skip_bytes=skip)
    loaded = log_events(setup.recommender, "checkpoints_loaded", skip_bytes=skip)
    after = recommendations(vpa(lab, NAMESPACE, "steady"))["app"]
    samples_after = checkpoint_samples(lab, NAMESPACE, "steady-app")
    report(
        capsys,
        f"steady: first {describe(first)}; before restart {describe(before)}; "
        f"first pass after restart {describe(after)}; checkpoint samples {samples_before} "
        f"before, {samples_after} after; {loaded}",
    )
    # every pass rewrote the checkpoint (a sample per pod and pass); the restarted one resumed
    # from it and added one pass's samples
    assert samples_before >= 5 * STEADY_PODS
    assert samples_before <= samples_after <= samples_before + STEADY_PODS
    assert loaded
    assert loaded[0]["checkpoints"] >= 2
    for resource in ("cpu", "memory"):
        assert after.get("target", resource) == before.get("target", resource), resource
        for bound in ("lowerBound", "upperBound"):
            was, now = before.get(bound, resource), after.get(bound, resource)
            assert was is not None
            assert now is not None
            assert abs(now - was) <= was * Decimal("0.25"), (bound, resource, was, now)


def test_an_hpa_on_cpu_leaves_memory_to_the_vpa_with_the_condition(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = setup.lab
    got = wait_recommended(lab, NAMESPACE, "scaled")
    found = vpa(lab, NAMESPACE, "scaled")
    avoided = condition(found, "HorizontalScalingConflictAvoided")
    report(capsys, f"scaled: {describe(got)}; {avoided}")
    # the recommender still computes cpu (users see it); the condition marks it excluded, and
    # the webhook and the updater apply memory only
    assert got.get("target", "memory") is not None
    assert got.get("target", "cpu") is not None
    assert avoided is not None
    assert (avoided["status"], avoided["reason"]) == ("True", "ResourcesExcluded")
    assert avoided["message"] == (
        "scaled horizontally, left to the HPA: "
        f"cpu in every container (HPA {NAMESPACE}/scaled, Resource metric)"
    )


def test_the_prometheus_history_fills_a_fresh_recommender(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = setup.lab
    end_seconds = int(time.time()) // SCRAPE_SECONDS * SCRAPE_SECONDS
    history = PrometheusServer()
    history.backfill_openmetrics(
        exporter_history(end_seconds, namespace=HISTORY_NAMESPACE, workloads=HISTORY_WORKLOADS)
    )
    lab.apply(
        [
            deployment_manifest("web", HISTORY_NAMESPACE, replicas=0),
            vpa_manifest("web", HISTORY_NAMESPACE, target="web"),
        ]
    )
    name = "hpa-vpa-recommender-history"
    with history:
        component = start_recommender(
            lab,
            name,
            *COMMON_FLAGS,
            f"--vpa-object-namespace={HISTORY_NAMESPACE}",
            "--storage=prometheus",
            f"--prometheus-address={history.url}",
            "--history-length=6h",
            "--history-resolution=1h",
            "--container-pod-name-label=pod",
            "--container-name-label=container",
            "--history-oom=false",
        )
        try:
            got = wait_recommended(lab, HISTORY_NAMESPACE, "web")
        finally:
            lab.group.end(name)
    applied = log_events(component, "history_applied")
    report(capsys, f"web from history: {describe(got)}; {applied}")
    assert applied
    assert applied[0]["pods"] == 2
    # the target is the 90th percentile's bucket end times the safety margin
    cpu, memory = got.get("target", "cpu"), got.get("target", "memory")
    assert cpu is not None
    assert memory is not None
    assert (
        HISTORY_CPU_CORES * SAFETY_MARGIN
        <= cpu
        <= HISTORY_CPU_CORES * SAFETY_MARGIN * BUCKET_RATIO + Decimal("0.001")
    )
    assert (
        HISTORY_MEMORY_BYTES * SAFETY_MARGIN
        <= memory
        <= HISTORY_MEMORY_BYTES * SAFETY_MARGIN * BUCKET_RATIO + 2**20
    )


def test_side_by_side_smoke_with_upstreams_recommender(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """Upstream's recommender v1.8.1 and ours on the same three pods, each on its own VPA, for
    40 s of steady load (bench/vpa_side_by_side.py runs 15 minutes of a scripted load): the
    targets agree within a bucket plus rounding; the bounds too, or else each recommender's
    bound is what our model gives on that recommender's own checkpoint (they differ only in
    the moments their samples were taken: after 40 s a few seconds of lifespan move the upper
    bound by several percent)."""
    config = SideBySideConfig(
        namespace=SIDE_NAMESPACE,
        steps=(LoadStep(0, 15),),
        duration_seconds=40,
        interval_seconds=5,
        snapshot_every_seconds=20,
        window_seconds=WINDOW_SECONDS,
    )
    comparison = run_side_by_side(setup.lab, config, progress=lambda _: None)
    report(capsys, comparison.report())
    assert all(row.agrees for row in comparison.rows if row.bound == "target"), comparison.report()
    assert comparison.agree_or_timing, comparison.report()
