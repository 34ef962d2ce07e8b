"""The vertical autoscaler in the simulator: memory model, OOM kills, evictions, in-place
resizes, VPA manifests read strictly, and what a run's vertical summary shows."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from hpa.cli import main
from hpa.core.replicas import PodPhase
from hpa.sim.engine import SimulationConfig, simulate
from hpa.sim.manifest import ManifestError
from hpa.sim.trace import TraceError, points_trace, shape_trace
from hpa.sim.vertical import MI, ResourceModel, VerticalRun
from hpa.sim.vpa_manifest import VPA, load_manifest_set, vpa_from_document
from hpa.sim.workload import Deployment, MetricPipeline, WorkloadModel

HPA_YAML = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
"""


def vpa_document(mode: str = "Recreate", **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "updatePolicy": {"updateMode": mode},
            **spec,
        },
    }


def vertical(
    load: float,
    *,
    replicas: int = 2,
    mode: str = "Recreate",
    model: ResourceModel | None = None,
    update_policy: Mapping[str, object] | None = None,
) -> VerticalRun:
    trace = points_trace([(0, load)], duration_seconds=7200, description="t")
    deployment = Deployment(
        "web", model=WorkloadModel(), pipeline=MetricPipeline(), trace=trace, replicas=replicas
    )
    extra = {} if update_policy is None else {"updatePolicy": update_policy}
    document = vpa_document(mode, **extra)
    vpa = vpa_from_document(document, "web.yaml")
    return VerticalRun(vpa, deployment, model or ResourceModel())


@pytest.mark.parametrize(
    ("load", "limit_mi", "ooms"),
    [
        (100, 512, 0),  # 50 req/s per pod: 200Mi + 50 x 4Mi = 400Mi, under the limit
        (200, 512, 2),  # 100 req/s per pod: 600Mi, over the limit: both pods killed
        (200, 600, 0),  # exactly at the limit is not over it
    ],
)
def test_a_ready_pod_is_oom_killed_when_its_memory_use_exceeds_its_limit(
    load: float, limit_mi: int, ooms: int
) -> None:
    run = vertical(
        load,
        mode="Off",  # no updater: the kill and the restart alone
        model=ResourceModel(memory_request_bytes=limit_mi * MI, memory_limit_bytes=limit_mi * MI),
    )
    names = [pod.name for pod in run.deployment.pods]

    run.step(0)

    assert run.oom_kills == ooms
    assert [pod.name for pod in run.deployment.pods] == names  # restarted in place, same pods
    assert run.deployment.ready_pods == 2 - ooms
    run.deployment.advance_to(30)  # 10 s restart + 10 s readiness
    assert run.deployment.ready_pods == 2


def test_an_eviction_replaces_the_pod_with_a_new_one_that_starts_from_pending() -> None:
    run = vertical(100)
    deployment = run.deployment
    victim = deployment.pods[0]

    replacement = deployment.evict(victim, 60)

    listed = {info.name: info for info, _ in deployment.pod_infos(60)}
    assert victim.name not in listed
    assert listed[replacement.name].phase is PodPhase.PENDING
    assert deployment.ready_pods == 1


def test_an_in_place_resize_keeps_the_pod_ready_with_its_new_request() -> None:
    run = vertical(100)
    deployment = run.deployment
    pod = deployment.pods[0]

    deployment.set_requests(pod, cpu_milli=800)

    listed = {info.name: info for info, _ in deployment.pod_infos(60)}
    assert listed[pod.name].phase is PodPhase.RUNNING
    assert listed[pod.name].containers[0].requests_milli == {"cpu": 800}
    assert deployment.ready_pods == 2


@pytest.mark.parametrize(
    ("mode", "evictions", "resizes", "same_pods"),
    [
        ("Recreate", True, False, False),
        ("InPlaceOrRecreate", False, True, True),
        ("Off", False, False, True),
    ],
)
def test_the_updater_applies_an_oom_bump_by_eviction_or_in_place_as_the_mode_says(
    mode: str, evictions: bool, resizes: bool, same_pods: bool
) -> None:
    # 600Mi used against a 512Mi limit: OOM kills until the recommendation is applied
    run = vertical(200, mode=mode)
    names = {pod.name for pod in run.deployment.pods}

    for minute in range(30):
        run.step(60.0 * minute)

    summary = run.summary(1800)
    assert summary.oom_kills >= 2
    assert (summary.evictions >= 2, summary.in_place_resizes >= 2) == (evictions, resizes)
    assert ({pod.name for pod in run.deployment.pods} == names) is same_pods
    if mode == "Off":
        assert summary.oom_kills >= 20  # killed again after every restart
    else:
        assert summary.oom_kills == 2  # once, then the bumped limit holds
        assert all((pod.memory_limit_bytes or 0) > 600 * MI for pod in run.deployment.pods)


@pytest.mark.parametrize(
    ("change", "evicted"),
    [("TargetHigherThanRequests", True), ("TargetLowerThanRequests", False)],
)
def test_eviction_requirements_decide_whether_the_oom_bump_is_applied(
    change: str, evicted: bool
) -> None:
    # the OOM bump raises the memory target above the 512Mi request
    policy = {
        "updateMode": "Recreate",
        "evictionRequirements": [{"resources": ["memory"], "changeRequirement": change}],
    }
    run = vertical(200, update_policy=policy)

    for minute in range(30):
        run.step(60.0 * minute)

    summary = run.summary(1800)
    assert (summary.evictions >= 2) is evicted
    assert (summary.oom_kills >= 20) is not evicted  # never bumped: killed after every restart


def test_a_simulated_day_shows_ooms_then_the_vpa_fixing_them_in_the_summary(
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        HPA_YAML
        + "---\n"
        + "apiVersion: autoscaling.k8s.io/v1\nkind: VerticalPodAutoscaler\n"
        + "metadata: {name: web}\nspec:\n"
        + "  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n"
        + "  updatePolicy: {updateMode: Recreate}\n"
        + "  resourcePolicy: {containerPolicies: [{containerName: '*', "
        + "controlledResources: [memory]}]}\n"
    )
    hpas, vpas = load_manifest_set([manifest])
    # 30 req/s per pod at the HPA's 60 % target: 320Mi used, against a 256Mi limit
    config = SimulationConfig(
        vpas=tuple(vpas),
        resources=ResourceModel(memory_request_bytes=256 * MI, memory_limit_bytes=256 * MI),
    )
    trace = points_trace([(0, 120)], duration_seconds=3 * 3600, description="flat")

    result = simulate(hpas, trace, config=config)

    run = result.runs[0]
    assert run.vertical is not None
    summary = run.vertical.summary(result.duration_seconds)
    assert summary.oom_kills > 0
    assert summary.evictions > 0
    last = run.vertical.rows[-1]
    assert last.oom_kills == 0
    assert last.memory_request_bytes > last.memory_used_bytes  # the VPA caught up
    assert summary.memory_under_seconds > 0
    assert max(row.replicas for row in run.timeline) >= 4  # the HPA kept scaling on cpu


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"apiVersion": "autoscaling.k8s.io/v1beta2"},
            "apiVersion: expected autoscaling.k8s.io/v1",
        ),
        (
            {"spec": {"targetRef": {"kind": "Deployment", "name": "web"}, "updatePolcy": {}}},
            'unknown field "spec.updatePolcy"',
        ),
        (
            {
                "spec": {
                    "targetRef": {"kind": "Deployment", "name": "web"},
                    "updatePolicy": {"updateMode": "Sometimes"},
                }
            },
            "updateMode",
        ),
    ],
)
def test_a_bad_vpa_manifest_is_one_error_naming_the_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    document = {**vpa_document(), **change}
    manifest = tmp_path / "web.yaml"
    manifest.write_text(HPA_YAML + "---\n" + yaml.safe_dump(document))

    with pytest.raises(ManifestError, match=message) as raised:
        load_manifest_set([manifest])

    assert str(manifest) in str(raised.value)


def test_vpa_manifests_alone_are_not_a_simulation(tmp_path: Path) -> None:
    manifest = tmp_path / "vpa.yaml"
    manifest.write_text(yaml.safe_dump(vpa_document()))

    with pytest.raises(ManifestError, match="no HorizontalPodAutoscaler"):
        load_manifest_set([manifest])


def test_a_vpa_names_its_recommender() -> None:
    vpa: VPA = vpa_from_document(vpa_document(recommenders=[{"name": "group-aware"}]), "w")

    assert vpa.recommenders == ("group-aware",)


def test_simulate_prints_the_vertical_table_and_compares_recommenders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(HPA_YAML + "---\n" + yaml.safe_dump(vpa_document()))
    args = ["simulate", str(manifest), "--trace", "step:base=100,peak=300,at=10m,duration=1h"]

    assert main([*args, "--no-plot", "--output", str(tmp_path / "one")]) == 0
    one = capsys.readouterr().out
    assert main([*args, "--compare-recommenders", "--output", str(tmp_path / "cmp")]) == 0
    compared = capsys.readouterr().out

    assert "| OOM kills | evictions | in-place resizes |" in one
    assert "memory limit (template)" in one
    rows = [line for line in compared.splitlines() if line.startswith("| web |")]
    assert [row.split("|")[2].strip() for row in rows] == ["default", "crane", "group-aware"]
    assert (tmp_path / "cmp" / "compare.md").read_text().count("| web |") == 3


def test_compare_recommenders_needs_a_vpa(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(HPA_YAML)

    code = main(
        [
            "simulate",
            str(manifest),
            "--trace",
            "step",
            "--compare-recommenders",
            "--output",
            str(tmp_path / "o"),
        ]
    )

    assert code == 2
    assert "needs a VerticalPodAutoscaler" in capsys.readouterr().err


def test_the_bursty_trace_keeps_its_mean_and_is_bursty() -> None:
    trace = shape_trace("bursty:base=10,mean=100,bias=0.7,levels=6,duration=64m,resolution=1m")

    above = [load - 10 for load in trace.loads]
    assert sum(above) / len(above) == pytest.approx(100)
    assert max(above) > 3 * 100  # the b-model's bursts: far above the mean
    assert shape_trace("bursty:levels=6,duration=64m,resolution=1m,seed=2").loads != tuple(
        shape_trace("bursty:levels=6,duration=64m,resolution=1m,seed=1").loads
    )


def test_the_bursty_trace_rejects_a_bias_below_one_half() -> None:
    with pytest.raises(TraceError, match=r"bias must be in \[0.5, 1\]"):
        shape_trace("bursty:bias=0.3")


def test_the_plot_of_a_run_with_a_vpa_shows_memory_requested_used_and_oom_kills(
    tmp_path: Path,
) -> None:
    from matplotlib import pyplot

    from hpa.sim.plot import build_figure

    manifest = tmp_path / "web.yaml"
    manifest.write_text(HPA_YAML + "---\n" + yaml.safe_dump(vpa_document()))
    hpas, vpas = load_manifest_set([manifest])
    config = SimulationConfig(
        vpas=tuple(vpas),
        resources=ResourceModel(memory_request_bytes=256 * MI, memory_limit_bytes=256 * MI),
    )
    result = simulate(
        hpas, points_trace([(0, 120)], duration_seconds=1800, description="flat"), config=config
    )

    figure = build_figure(result, title="t")
    try:
        memory = next(ax for ax in figure.axes if ax.get_ylabel() == "memory per pod (MiB)")
        labels = memory.get_legend_handles_labels()[1]
    finally:
        pyplot.close(figure)
    assert labels[0].startswith("web: requested")
    assert "web: used" in labels
    assert any(label.startswith("web: OOM kills (") for label in labels)


def test_group_aware_fits_memory_on_the_hpas_cpu_per_pod_and_recommends_at_its_target(
    tmp_path: Path,
) -> None:
    """The HPA (cpu at 60 % of 500m) moves the replicas with the load; the group-aware model
    fits per-pod memory (200Mi + 4Mi per req/s) on the HPA's cpu per pod (10m per req/s) from
    the status the controller wrote, and recommends memory at the target: 300m of cpu, 30 req/s
    per pod, 320Mi, plus the 15 % margin."""
    manifest = tmp_path / "web.yaml"
    vpa = vpa_document(
        recommenders=[{"name": "group-aware"}],
        resourcePolicy={
            "containerPolicies": [{"containerName": "*", "controlledResources": ["memory"]}]
        },
    )
    manifest.write_text(HPA_YAML + "---\n" + yaml.safe_dump(vpa))
    hpas, vpas = load_manifest_set([manifest])
    config = SimulationConfig(
        vpas=tuple(vpas),
        resources=ResourceModel(memory_request_bytes=1024 * MI, memory_limit_bytes=1024 * MI),
    )
    trace = points_trace(
        [(0, 60), (1800, 150), (3600, 300), (5400, 200), (7200, 100)],
        duration_seconds=3 * 3600,
        description="ramp",
    )

    result = simulate(hpas, trace, config=config)

    run = result.runs[0].vertical
    assert run is not None
    assert len({row.replicas for row in result.runs[0].timeline}) >= 3
    (verdict,) = run.group_model
    assert verdict.summary == "container app memory: group-size model"
    details = dict(verdict.details)
    assert details["per-pod load"] == "metric"
    assert details["target load"] == "0.3"  # cores: 60 % of the pods' 500m
    (recommended,) = run.cluster.vpas[next(iter(run.cluster.vpas))].recommendation or ()
    assert recommended.target.memory == pytest.approx(320 * MI * 1.15, rel=0.01)
