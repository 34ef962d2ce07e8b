"""Checkpoint interop with the real upstream: VPA v1.8.1's histogram code, built from the Go module
proxy (``tests/lab/tools/vpa-checkpoint``: ``k8s.io/autoscaler/vertical-pod-autoscaler`` v1.8.1,
``pkg/recommender/util``), against ours.

* The same samples fed to upstream's decaying histogram and to ours give the same ``v3`` checkpoint
  (bucket weights, total weight, reference timestamp) and the same 101 percentiles (0.00 to 1.00).
* Our checkpoint, written as the JSON a ``VerticalPodAutoscalerCheckpoint`` carries, loads into
  upstream's histogram and gives the percentiles ours gives after loading it.
* A container's usage history (CPU, memory, OOM kills) fed through upstream's
  ``model.ContainerState`` and the default ``logic`` recommender gives our target, lower and upper
  bound exactly, and the same aggregate-state checkpoint; so do random histories, for the
  histogram alone and for whole containers.

The tool is built once and cached under ``$HPA_CACHE/bin/vpa-checkpoint-<key>/`` (key: its
``go.mod``, ``go.sum``, ``main.go`` and the Go version), like the lab's binaries.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hpa.api.types import format_time
from hpa.api.vpa import (
    checkpoint_status_from_core,
    histogram_checkpoint_from_core,
    time_from_ns,
)
from hpa.core.vpa.aggregation import (
    DEFAULT_AGGREGATIONS_CONFIG,
    AggregateContainerState,
    ContainerState,
    OomSampleDiscardedError,
)
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.histogram import DecayingHistogram, HistogramCheckpoint
from hpa.core.vpa.recommender import create_pod_resource_recommender, recommend
from tests.lab.build import cache_root
from tests.lab.toolchain import find_go, go_env

pytestmark = pytest.mark.slow

TOOL_DIR = Path(__file__).resolve().parents[2] / "lab" / "tools" / "vpa-checkpoint"
HALF_LIFE_NS = 24 * 3600 * NANOSECONDS_PER_SECOND
START = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp()) * NANOSECONDS_PER_SECOND


@pytest.fixture(scope="module")
def tool() -> Path:
    go = find_go()
    version = subprocess.run(
        [str(go), "env", "GOVERSION"], env=go_env(go), capture_output=True, text=True, check=True
    ).stdout.strip()
    digest = hashlib.sha256(version.encode())
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((TOOL_DIR / name).read_bytes())
    directory = cache_root() / "bin" / f"vpa-checkpoint-{digest.hexdigest()[:12]}"
    binary = directory / "vpa-checkpoint"
    if not binary.exists():
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / ".vpa-checkpoint.partial"
        subprocess.run(
            [str(go), "build", "-trimpath", "-o", str(partial), "."],
            cwd=TOOL_DIR,
            env=go_env(go),
            check=True,
        )
        partial.rename(binary)
    return binary


def run(tool: Path, command: str, resource: str, document: Any) -> dict[str, Any]:
    result = subprocess.run(
        [str(tool), command, resource],
        input=json.dumps(document),
        capture_output=True,
        text=True,
        check=True,
    )
    output: dict[str, Any] = json.loads(result.stdout)
    return output


def lcg(seed: int) -> float:
    """A deterministic value in [0, 1)."""
    return ((seed * 6364136223846793005 + 1442695040888963407) % 2**64) / 2**64


def samples(resource: str) -> list[tuple[float, float, int]]:
    """Ten days of hourly samples (the oldest decays to about 2**-10 of the newest), spread over
    two orders of magnitude."""
    base = 0.05 if resource == "cpu" else 5e7
    result = []
    for hour in range(240):
        value = base * 10 ** (2 * lcg(hour))
        t = START + hour * 3600 * NANOSECONDS_PER_SECOND
        result.append((value, 0.1 if resource == "cpu" else 1.0, t))
    return result


def options(resource: str) -> Any:
    config = DEFAULT_AGGREGATIONS_CONFIG
    return config.cpu_histogram_options if resource == "cpu" else config.memory_histogram_options


def percentiles(histogram: DecayingHistogram) -> dict[str, float]:
    return {f"{i / 100:.2f}": histogram.percentile(i / 100) for i in range(101)}


def assert_same_histogram(tool: Path, resource: str, fed: list[tuple[float, float, int]]) -> None:
    """Feed the samples to upstream's decaying histogram and ours; compare the checkpoints (every
    bucket weight, the total, the reference timestamp) and the 101 percentiles."""
    ours = DecayingHistogram(options(resource), HALF_LIFE_NS)
    for value, weight, t in fed:
        ours.add_sample(value, weight, t)
    theirs = run(
        tool,
        "write",
        resource,
        [
            {"value": v, "weight": w, "time": format_time(datetime.fromtimestamp(t // 10**9, UTC))}
            for v, w, t in fed
        ],
    )
    checkpoint = ours.save_to_checkpoint()
    expected = theirs["checkpoint"]
    assert {str(k): v for k, v in checkpoint.bucket_weights.items()} == expected["bucketWeights"]
    assert math.isclose(checkpoint.total_weight, expected["totalWeight"], rel_tol=1e-12)
    reference = time_from_ns(checkpoint.reference_timestamp_ns)
    assert reference is not None
    assert format_time(reference) == expected["referenceTimestamp"]
    assert percentiles(ours) == theirs["percentiles"]
    assert ours.is_empty() is theirs["isEmpty"]


@pytest.mark.parametrize("resource", ["cpu", "memory"])
def test_same_samples_give_upstreams_checkpoint_and_percentiles(tool: Path, resource: str) -> None:
    assert_same_histogram(tool, resource, samples(resource))


@pytest.mark.parametrize("resource", ["cpu", "memory"])
def test_our_checkpoint_loads_into_upstream(tool: Path, resource: str) -> None:
    ours = DecayingHistogram(options(resource), HALF_LIFE_NS)
    for value, weight, t in samples(resource)[::3]:
        ours.add_sample(value, weight * 7, t)
    checkpoint = ours.save_to_checkpoint()
    document = histogram_checkpoint_from_core(checkpoint).to_dict()
    theirs = run(tool, "load", resource, document)
    restored = DecayingHistogram(options(resource), HALF_LIFE_NS)
    restored.load_from_checkpoint(
        HistogramCheckpoint(
            total_weight=checkpoint.total_weight,
            bucket_weights=checkpoint.bucket_weights,
            reference_timestamp_ns=checkpoint.reference_timestamp_ns,
        )
    )
    assert percentiles(restored) == theirs["percentiles"]
    assert restored.is_empty() is theirs["isEmpty"]


def history(hours: int, step_minutes: int, *, seed: int) -> dict[str, list[tuple[int, int]]]:
    """Usage every ``step_minutes`` for ``hours``: CPU around 300m with bursts, memory drifting
    from 200 MiB up, and two OOM kills (one fresh, one too old to count)."""
    cpu, memory = [], []
    steps = hours * 60 // step_minutes
    for i in range(steps):
        t = START + i * step_minutes * 60 * NANOSECONDS_PER_SECOND
        burst = 4.0 if lcg(seed + i) > 0.95 else 1.0
        cpu.append((t, int(300 * burst * (0.5 + lcg(seed + 7 * i)))))
        memory.append((t, int(200 * 2**20 * (1 + i / steps) * (0.9 + 0.2 * lcg(seed + 13 * i)))))
    end = START + steps * step_minutes * 60 * NANOSECONDS_PER_SECOND
    ooms = [(end - 3600 * NANOSECONDS_PER_SECOND, 512 * 2**20), (START - 3 * HALF_LIFE_NS, 2**30)]
    return {"cpu": cpu, "memory": memory, "ooms": ooms}


def rfc3339(t_ns: int) -> str:
    return format_time(datetime.fromtimestamp(t_ns // NANOSECONDS_PER_SECOND, UTC))


@pytest.mark.parametrize(
    ("hours", "step_minutes"),
    [pytest.param(120, 10, id="five days"), pytest.param(3, 1, id="three hours")],
)
def test_container_history_gives_upstreams_recommendation(
    tool: Path, hours: int, step_minutes: int
) -> None:
    """End to end through upstream's ``model.ContainerState``, ``AggregateContainerState`` and
    ``logic.CreatePodResourceRecommender`` with the default flags: the same target, lower and upper
    bound to the millicore and the byte, and the same checkpoint."""
    assert_same_recommendation(tool, history(hours, step_minutes, seed=hours))


def assert_same_recommendation(tool: Path, events: dict[str, list[tuple[int, int]]]) -> None:
    """Feed ``events`` to upstream's and our container state; compare the default
    recommendation and the aggregate state's checkpoint."""
    theirs = run(
        tool,
        "recommend",
        "app",
        {
            kind: [{"time": rfc3339(t), "amount": amount} for t, amount in values]
            for kind, values in events.items()
        },
    )
    state = AggregateContainerState()
    container = ContainerState(state)
    ordered = sorted(  # stable, as the tool's sort.SliceStable: input order breaks ties
        [(t, 0, a) for t, a in events["cpu"]]
        + [(t, 1, a) for t, a in events["memory"]]
        + [(t, 2, a) for t, a in events["ooms"]],
        key=lambda event: (event[0], event[1]),
    )
    for t, kind, amount in ordered:
        if kind == 0:
            container.add_cpu_sample(t, amount)
        elif kind == 1:
            container.add_memory_sample(t, amount)
        else:
            with contextlib.suppress(OomSampleDiscardedError):
                container.record_oom(t, amount)
    result = recommend({"app": state}, recommender=create_pod_resource_recommender())
    (ours,) = result.container_recommendations
    for field, key in (
        ("target", "target"),
        ("lower_bound", "lowerBound"),
        ("upper_bound", "upperBound"),
    ):
        resources = getattr(ours, field)
        assert {"cpu": resources.cpu, "memory": resources.memory} == theirs[key], field
    saved = checkpoint_status_from_core(state.save_to_checkpoint(0)).to_dict()
    expected = theirs["checkpoint"]
    for key in ("firstSampleStart", "lastSampleStart", "totalSamplesCount", "version"):
        assert saved[key] == expected[key], key
    for histogram in ("cpuHistogram", "memoryHistogram"):
        assert saved[histogram]["bucketWeights"] == expected[histogram]["bucketWeights"]
        assert saved[histogram]["referenceTimestamp"] == expected[histogram]["referenceTimestamp"]
        assert math.isclose(
            saved[histogram]["totalWeight"], expected[histogram]["totalWeight"], rel_tol=1e-12
        )


@pytest.mark.parametrize("seed", range(10))
def test_random_container_histories_agree_with_upstream(tool: Path, seed: int) -> None:
    """Irregular sample times (1 minute to 4 hours apart, over up to 12 days), idle and bursty
    CPU, memory up and down across intervals, out-of-order samples and OOM kills (fresh and too
    old): upstream's recommendation and checkpoint, exactly."""
    cpu, memory, ooms = [], [], []
    t = START
    for i in range(300):
        k = seed * 10_000 + i
        t += int(1 + lcg(k) * 240) * 60 * NANOSECONDS_PER_SECOND
        jitter = -3600 * NANOSECONDS_PER_SECOND if lcg(k + 1) < 0.05 else 0  # out of order
        cpu.append((t + jitter, int(4000 * lcg(k + 2) ** 3)))
        memory.append((t + jitter, int(2**30 * (0.1 + lcg(k + 3)))))
        if lcg(k + 4) < 0.03:
            back = int(lcg(k + 5) * 48) * 3600 * NANOSECONDS_PER_SECOND
            ooms.append((t - back, int(2**29 * (1 + lcg(k + 6)))))
    assert_same_recommendation(tool, {"cpu": cpu, "memory": memory, "ooms": ooms})


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("resource", ["cpu", "memory"])
def test_random_histories_agree_with_upstream(tool: Path, resource: str, seed: int) -> None:
    """Random values across and past the bucket range, random weights, times spread over 150 days
    (so the reference timestamp moves past 100 half-lives, and old samples decay under epsilon):
    the same checkpoint and percentiles as upstream's decaying histogram."""
    scale = 1.0 if resource == "cpu" else 1e9
    fed = []
    t = START
    for i in range(200):
        k = seed * 1000 + i
        value = scale * 10 ** (6 * lcg(k) - 3)
        weight = 0.1 if lcg(k + 1) < 0.5 else 10 * lcg(k + 2)
        t += int(lcg(k + 3) * 36 * 3600) * NANOSECONDS_PER_SECOND  # 18 h on average
        fed.append((value, weight, t))
    assert_same_histogram(tool, resource, fed)
