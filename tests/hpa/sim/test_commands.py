"""``hpa simulate`` and ``hpa demo`` end to end, through the real command line."""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path

import pytest

from hpa.cli import main
from hpa.sim.scenarios import SCENARIOS, hpa_manifest

FAST_UP = "scaleUp:\n  policies:\n  - {type: Percent, value: 900, periodSeconds: 60}"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture
def manifests(tmp_path: Path) -> list[Path]:
    fast = tmp_path / "fast.yaml"
    fast.write_text(hpa_manifest("fast", behavior=FAST_UP, max_replicas=1000))
    default = tmp_path / "default.yaml"
    default.write_text(hpa_manifest("default", max_replicas=1000))
    return [fast, default]


def test_simulate_two_hpas_side_by_side_writes_timelines_summary_and_plot(
    manifests: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"

    code = main(
        [
            "simulate",
            *map(str, manifests),
            "--trace",
            "step:base=10,peak=25000,at=1m,duration=6m",
            "--output",
            str(out),
        ]
    )

    assert code == 0
    printed = capsys.readouterr().out
    assert "pod-hours (cost)" in printed
    assert "cpu per request/s" in printed  # every model parameter is stated
    assert "sync period" in printed
    header = printed.splitlines()
    table_header = next(line for line in header if line.split()[:1] == ["fast"])
    assert "default" in table_header
    with (out / "fast.timeline.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["event"] for r in rows if r["event"]] == [
        "scale 1 -> 10",
        "scale 10 -> 100",
        "scale 100 -> 1000",
    ]
    assert rows[0]["target_percent"] == "50.0"
    assert rows[0]["rps_per_pod"] == "10.0"  # 10 req/s on the one Ready pod
    assert rows[-1]["rps_per_pod"] == "25.0"  # 25,000 req/s on 1000 pods
    assert (out / "default.timeline.csv").exists()
    summary = (out / "summary.md").read_text()
    assert "direction reversals" in summary
    assert "longest reaction to a step" in summary
    assert png_size(out / "plot.png")[0] == 1800  # 12 in at 150 dpi
    assert (out / "plot.svg").exists()


def test_simulate_a_csv_trace_to_json(
    manifests: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "load.csv"
    trace.write_text("timestamp,load\n0,25\n60,100\n600,100\n")
    out = tmp_path / "json"

    code = main(
        [
            "simulate",
            str(manifests[1]),
            "--trace",
            str(trace),
            "--format",
            "json",
            "--no-plot",
            "--output",
            str(out),
            "--capacity",
            "100",
            "--horizontal-pod-autoscaler-sync-period",
            "30s",
        ]
    )

    assert code == 0
    document = json.loads((out / "default.timeline.json").read_text())
    assert document["parameters"]["capacity at 100% of request"] == "100 req/s per pod"
    assert document["parameters"]["sync period"] == "30s"
    assert document["trace"].startswith("CSV ")
    assert document["summary"]["scale_events"] >= 1
    rescale = document["events"][0]
    assert (rescale["reason"], rescale["type"]) == ("SuccessfulRescale", "Normal")
    assert rescale["message"].startswith("New size: ")
    assert len(document["rescales"]) == document["summary"]["scale_events"]
    assert "rescale" in document["rescales"][0]["explanation"]
    assert {row["t_seconds"] for row in document["rows"]} >= {0, 30, 60}
    assert not (out / "plot.png").exists()
    assert not (out / "plot.svg").exists()
    assert "wrote" in capsys.readouterr().out


def test_simulate_reports_a_bad_manifest_with_its_field_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(hpa_manifest("web").replace("maxReplicas: 100", "maxReplicas: 0"))

    code = main(["simulate", str(bad), "--trace", "step", "--output", str(tmp_path / "o")])

    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "ERROR   hpa.sim: invalid_input error=" in err
    assert "bad.yaml: HorizontalPodAutoscaler is invalid: spec.maxReplicas" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--trace", "wobble"], "unknown trace shape 'wobble'"),
        ([], "give a load trace"),
        (["--from-prometheus", "http://127.0.0.1:9"], "--from-prometheus needs --query"),
        (["--trace", "step", "--capacity", "5", "--cpu-per-request", "1m"], "not both"),
    ],
)
def test_simulate_reports_bad_inputs(
    manifests: list[Path], args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", str(manifests[0]), *args]) == 2
    assert message in capsys.readouterr().err


def test_simulate_progress_bar_goes_to_stderr_when_asked(
    manifests: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "simulate",
            str(manifests[1]),
            "--trace",
            "diurnal:duration=2h",
            "--progress",
            "--no-plot",
            "--output",
            str(tmp_path / "p"),
        ]
    )

    assert code == 0
    captured = capsys.readouterr()
    assert "100.0% of virtual time" in captured.err
    assert "simulating [" not in captured.out


EXTERNAL_HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: queue, namespace: demo}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 20
  metrics:
  - type: External
    external:
      metric: {name: sqs_queue_depth}
      target: {type: AverageValue, averageValue: "20"}
  - type: Object
    object:
      describedObject: {apiVersion: v1, kind: Service, name: web}
      metric: {name: latency_p99}
      target: {type: Value, value: "300"}
  behavior:
    scaleUp: {tolerance: 0.05}
"""


def test_simulate_states_its_assumptions_and_start_replicas(
    manifests: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = tmp_path / "queue.yaml"
    queue.write_text(EXTERNAL_HPA)
    out = tmp_path / "a"

    code = main(
        [
            "simulate",
            str(manifests[1]),
            str(queue),
            "--trace",
            "step:duration=5m",
            "--start-replicas",
            "3",
            "--no-plot",
            "--output",
            str(out),
        ]
    )

    assert code == 0
    printed = capsys.readouterr().out
    summary = (out / "summary.md").read_text()
    for text in (printed, summary):
        assert "start replicas                      3" in text
        assert "default: starts at 3 replica(s); tolerance usage/target within 0.9..1.1" in text
        assert "'time above target' counts cpu utilization above 55%" in text
        assert "queue: starts at 3 replica(s); tolerance usage/target within 0.9..1.05" in text
        assert (
            "metrics[0] External: 'sqs_queue_depth': the offered load in requests/s (the trace), "
            "whatever the metric's name" in text
        )
        assert "metrics[1] Object: 'latency_p99': the offered load in requests/s" in text
    rows = list(csv.DictReader((out / "default.timeline.csv").read_text().splitlines()))
    assert rows[0]["event"] == "scale 3 -> 4"  # the first sync starts from the 3 replicas


def test_simulate_refuses_an_existing_file_as_output_before_simulating(
    manifests: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "taken"
    taken.write_text("keep me")

    code = main(["simulate", str(manifests[0]), "--trace", "step", "--output", str(taken)])

    assert code == 2
    captured = capsys.readouterr()
    assert f"--output: {taken}: exists and is not a directory" in captured.err
    assert captured.out == ""  # nothing simulated, nothing printed
    assert taken.read_text() == "keep me"


def test_simulate_reads_manifests_strictly_like_kubectl_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    misspelled = tmp_path / "misspelled.yaml"
    misspelled.write_text(
        hpa_manifest("web", behavior="scaleDown:\n  stabilisationWindowSeconds: 900")
    )

    assert main(["simulate", str(misspelled), "--trace", "step"]) == 2
    err = capsys.readouterr().err
    assert (
        "misspelled.yaml: strict decoding error: unknown field "
        '"spec.behavior.scaleDown.stabilisationWindowSeconds"' in err
    )


@pytest.mark.slow
def test_demo_writes_a_plot_per_scenario_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo-out"

    assert main(["demo", "--quick", "--output", str(out)]) == 0

    plots = sorted(out.glob("*.png"))
    assert [p.stem for p in plots] == [
        f"{n:02d}-{s.slug}" for n, s in enumerate(SCENARIOS, start=1)
    ]
    assert all(png_size(p)[0] == 1800 for p in plots)
    assert sorted(p.stem for p in out.glob("*.svg")) == [p.stem for p in plots]
    summary = (out / "summary.md").read_text()
    assert summary.count("![") == len(SCENARIOS)
    printed = capsys.readouterr().out
    assert "1 (20%)" in printed
    assert "10 (" in printed
    assert "1000 (" in printed
    assert "make lab" in printed
    assert "charts/hpa" in printed
