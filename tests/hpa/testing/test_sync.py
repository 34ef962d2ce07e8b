"""``hpa.testing``'s builder, ``decide``, ``run`` and assertions, case by case."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from hpa.core.decision import MetricFetchError, PodMetricsObservation
from hpa.testing import (
    EPOCH,
    ControllerSettings,
    FakeMetrics,
    HPAAssertionError,
    ManifestError,
    assert_condition,
    assert_event,
    assert_replicas,
    assert_replicas_at,
    assert_replicas_within,
    assert_steps,
    assert_summary,
    container,
    decide,
    load_hpa,
    load_hpas,
    parse_hpas,
    run,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
MEMORY_HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "mem"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "512Mi"},
                },
            }
        ],
    },
}


def test_loading_is_strict_and_keeps_memory_metrics(tmp_path: Path) -> None:
    hpa = load_hpa(MEMORY_HPA)
    assert (hpa.key, hpa.source, hpa.spec.min_replicas) == ("default/mem", "<dict>", 1)
    typo = {**MEMORY_HPA, "spec": {**MEMORY_HPA["spec"], "maxReplica": 3}}  # type: ignore[dict-item]
    with pytest.raises(
        ManifestError, match=r'<dict>: strict decoding error: unknown field "spec.maxReplica"'
    ):
        load_hpa(typo)
    two = tmp_path / "two.yaml"
    text = (EXAMPLES / "fast-scale-up.yaml").read_text()
    two.write_text(text + "---\n" + text.replace("fast-up", "other"))
    assert [h.name for h in load_hpas(two)] == ["fast-up", "other"]
    with pytest.raises(ManifestError, match="expected one HorizontalPodAutoscaler, found 2"):
        load_hpa(two)
    with pytest.raises(ManifestError, match="maxReplicas"):
        parse_hpas(text.replace("maxReplicas: 1000", "maxReplicas: 0"))


def test_memory_usage_decides() -> None:
    metrics = FakeMetrics().pods(2, memory="1Gi", memory_request="1Gi")
    result = decide(load_hpa(MEMORY_HPA), metrics)
    assert_replicas(result, 4)
    assert result.reason == "memory resource above target"


def test_missing_and_unready_pods_are_set_aside_as_upstream() -> None:
    hpa = load_hpa(EXAMPLES / "fast-scale-up.yaml")
    metrics = (
        FakeMetrics()
        .pods(2, cpu="1", cpu_request="500m")
        .pod("new", cpu_request="500m", started_ago="10s", ready=False)  # no sample yet
        .pod("gone", cpu="2", cpu_request="500m", missing=True)
    )
    result = decide(hpa, metrics)
    # usage ratio 4 on the two ready pods; on a scale-up the pods without a sample count at 0 %
    assert_replicas(result, 8)
    assert "missing samples, assumed at 0% of request: gone, new" in result.explain()
    assert "re-balanced usage ratio: 2.0000" in result.explain()


def test_observations_are_the_clients_shapes() -> None:
    hpa = load_hpa(EXAMPLES / "multi-metric.yaml")
    metrics = (
        FakeMetrics()
        .pod(
            "a",
            containers=[
                container("app", cpu="100m", cpu_request="250m"),
                container("sidecar", cpu_request="250m", memory="10Mi"),  # no cpu sample
            ],
        )
        .external_metric("queue_messages_ready", 1)
    )
    cpu, queue = metrics.observations(hpa.spec, now=EPOCH, namespace="demo")
    assert cpu == PodMetricsObservation(metrics={}, timestamp=EPOCH)  # the pod is left out
    with pytest.raises(ValueError, match=r"External metric 'queue_messages_ready'.*metrics\[1\]"):
        FakeMetrics().pods(1, cpu="1").observations(hpa.spec, now=EPOCH, namespace="demo")
    errors = FakeMetrics().metric_error("cpu", "boom").external_metric("queue_messages_ready")
    cpu, queue = errors.observations(hpa.spec, now=EPOCH, namespace="demo")
    assert cpu == MetricFetchError("boom")
    assert queue == MetricFetchError("no metrics returned from external metrics API")
    with pytest.raises(ValueError, match="pod a: app: cpu request: invalid quantity 'lots'"):
        FakeMetrics().pod("a", cpu_request="lots").pod_infos(now=EPOCH)


def test_after_carries_history_and_status() -> None:
    hpa = load_hpa(EXAMPLES / "slow-scale-down.yaml")
    idle = FakeMetrics().pods(5, cpu="10m", cpu_request="500m")
    first = decide(hpa, idle)
    assert_replicas(first, 5)  # the first sync seeds the log with 5: stabilized
    assert_condition(first, "AbleToScale", reason="ScaleDownStabilized")
    later = decide(hpa, idle, after=first, now=first.now + timedelta(minutes=6))
    assert_replicas(later, 4)
    assert_event(later, "SuccessfulRescale", message="New size: 4")
    again = decide(hpa, FakeMetrics().pods(4, cpu="10m", cpu_request="500m"), after=later)
    assert again.now == later.now + timedelta(seconds=15)
    assert_replicas(again, 4)
    assert again.deciding_rule.startswith("[policy] ScaleDownLimit: 1 -> 4")


def test_settings_are_the_controllers_flags() -> None:
    hpa = load_hpa(EXAMPLES / "multi-metric.yaml")
    metrics = (
        FakeMetrics()
        .pods(4, cpu="330m", cpu_request="500m")
        .external_metric("queue_messages_ready", 0)
    )
    assert_replicas(decide(hpa, metrics), 4)  # 10 % over target: within the tolerance
    assert_replicas(decide(hpa, metrics, settings=ControllerSettings(tolerance=0.05)), 5)


def test_failure_messages_name_expected_actual_and_rule() -> None:
    hpa = load_hpa(EXAMPLES / "fast-scale-up.yaml")
    result = decide(hpa, FakeMetrics().pods(1, cpu="5", cpu_request="500m"))
    with pytest.raises(HPAAssertionError) as error:
        assert_replicas(result, 11)
    lines = str(error.value).splitlines()
    assert lines[0] == "demo/fast-up: desired replicas: expected 11, got 10"
    assert lines[1] == (
        "  deciding rule: [policy] ScaleUpLimit: 20 -> 10 (min: 1; max: 1000; scale-up "
        "policies: Max of [Percent 900 per 60s]; scale-up policy limit: 10)"
    )
    assert "  explanation:" in lines
    with pytest.raises(HPAAssertionError, match="reason: expected ScaleDownLimit, got Scale"):
        assert_condition(result, "ScalingLimited", status=True, reason="ScaleDownLimit")
    with pytest.raises(HPAAssertionError, match="condition Nope: expected one, got none"):
        assert_condition(result, "Nope")
    with pytest.raises(HPAAssertionError, match="event: expected FailedRescale, got Normal"):
        assert_event(result, "FailedRescale")


def test_scale_errors_and_ambiguous_selectors() -> None:
    hpa = load_hpa(EXAMPLES / "fast-scale-up.yaml")
    busy = FakeMetrics().pods(1, cpu="5", cpu_request="500m")
    failed = decide(hpa, busy.scale_update_fails("conflict"))
    assert_replicas(failed, 1)
    assert failed.replicas == 1
    assert_event(failed, "FailedRescale", message="error: conflict")
    assert_condition(failed, "AbleToScale", status=False, reason="FailedUpdateScale")
    unread = decide(hpa, busy.scale_read_fails("not found"))
    assert_condition(unread, "AbleToScale", status="False", reason="FailedGetScale")
    assert unread.deciding_rule == "[scale] could not read the target's scale: not found"
    ambiguous = decide(hpa, busy.also_selected_by("demo/other"))
    assert_condition(ambiguous, "ScalingActive", status=False, reason="AmbiguousSelector")
    unparsable = decide(hpa, busy.selector("a b"))
    assert_condition(unparsable, "ScalingActive", status=False, reason="InvalidSelector")


def test_run_assertions() -> None:
    hpa = load_hpa(EXAMPLES / "fast-scale-up.yaml")
    result = run(hpa, "step:base=10,peak=25000,at=1m,duration=7m")
    assert_steps(result, [1, 10, 100, 1000])
    assert_replicas_at(result, 75, 10)
    assert_replicas_within(result, max_replicas=10, end="2m")
    assert_summary(result, scale_ups=3, max_replicas=1000, reversals=0)
    with pytest.raises(HPAAssertionError) as error:
        assert_replicas_at(result, "2m30s", 99)
    lines = str(error.value).splitlines()
    assert lines[0] == "demo/fast-up: replicas at 2m30s: expected 99, got 100"
    assert lines[1].startswith("  deciding rule: sync at 2m30s: [")
    assert "  timeline:" in lines
    with pytest.raises(HPAAssertionError, match=r"within \[-, 100\] from 0s: expected, got 1000"):
        assert_replicas_within(result, max_replicas=100)
    with pytest.raises(HPAAssertionError, match="scale_ups: expected 2, got 3"):
        assert_summary(result, scale_ups=2)
    with pytest.raises(ValueError, match="no summary figure named 'ups'"):
        assert_summary(result, ups=2)


def test_run_refuses_what_the_simulator_cannot_drive() -> None:
    with pytest.raises(ManifestError, match="the simulator models cpu only"):
        run(load_hpa(MEMORY_HPA), [(0, 10)])
