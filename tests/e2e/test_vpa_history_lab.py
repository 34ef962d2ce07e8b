"""End to end: the VPA recommender's Prometheus history bootstrap against the lab's real Prometheus.

Seven hours of the lab exporter's cAdvisor-shaped series (``container_cpu_usage_seconds_total``,
``container_memory_working_set_bytes``; the exporter's load model driven by a stepped clock, one
scrape every 5 minutes, under the ``kubernetes-cadvisor`` job) are backfilled into the lab's
Prometheus, with the pods' ``up{job="kubernetes-pods"}`` label series, kube-state-metrics' OOM and
memory-request series for one container, and the pause-container and pod-level series cAdvisor
also writes. The provider, wired as ``hpa vpa recommender --storage=prometheus`` wires it (the
flags, the adapter's Prometheus client), then reads 6 hours at 1 hour resolution: the expected
pods and containers, 7 cpu and 7 memory samples each with the load model's values, the last
labels, and the OOM kill with its memory request. No waiting: the history is backfilled.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction

import pytest
from prometheus_client import CollectorRegistry

from hpa.app import history, inprocess_metrics
from hpa.controllers.vertical.ports import OomRecord
from hpa.core.vpa.cluster import PodId
from tests.fakes.clock import EPOCH, FakeClock
from tests.lab.exporter import InMemoryPodSource, WorkloadExporter
from tests.lab.load_model import PodState, WorkloadProfile
from tests.lab.prometheus import PrometheusServer

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-vpa-history"
SCRAPE_SECONDS = 300
BACKFILL_HOURS = 7
HISTORY_HOURS = 6
NS_PER_SECOND = 10**9
OOM_HOURS_AGO = 3
MEMORY_REQUEST_BYTES = 100 * 2**20
WORKLOADS = (
    # workload, pods, requests/s, cpu per request (m), base cpu (m), memory per rps (bytes)
    ("web", ("web-0", "web-1"), 20, 20, 10, 2**20),
    ("worker", ("worker-0",), 5, 100, 50, 4 * 2**20),
)
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$")


def expected_cpu_milli(rps: int, pods: int, per_request_milli: int, base_milli: int) -> int:
    return int(base_milli + Fraction(rps, pods) * per_request_milli)


def expected_memory_bytes(rps: int, pods: int, per_rps_bytes: int) -> int:
    return int(64 * 2**20 + Fraction(rps, pods) * per_rps_bytes)


def exporter_history(
    end_seconds: int,
    *,
    namespace: str = NAMESPACE,
    workloads: tuple[tuple[str, tuple[str, ...], int, int, int, int], ...] = WORKLOADS,
) -> str:
    """The exporter's /metrics every SCRAPE_SECONDS over BACKFILL_HOURS up to ``end_seconds``,
    as OpenMetrics with timestamps (as Prometheus would have scraped it under the cadvisor job),
    plus the label, kube-state-metrics, pause-container and pod-level series, for ``workloads``
    (name, pods, requests/s, cpu per request, base cpu, memory per rps) of ``namespace``."""
    now = [float(end_seconds - BACKFILL_HOURS * 3600)]
    exporter = WorkloadExporter(pod_source=InMemoryPodSource(), clock=lambda: now[0])
    for workload, pods, rps, per_request, base, per_rps in workloads:
        profile = WorkloadProfile(
            namespace=namespace,
            workload=workload,
            selector={"app": workload},
            cpu_per_request_milli=per_request,
            base_cpu_milli=base,
            memory_per_rps_bytes=per_rps,
        )
        exporter.add_workload(profile, rps=rps)
        exporter.model.replace_pods(
            profile.key,
            [
                PodState(namespace, name, labels={"app": workload}, containers=("app",))
                for name in pods
            ],
        )
    families: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    for t in range(end_seconds - BACKFILL_HOURS * 3600, end_seconds + 1, SCRAPE_SECONDS):
        now[0] = float(t)
        for line in exporter.metrics_text().splitlines():
            match = _SAMPLE.match(line)
            if match is None or not match.group(1).startswith("container_"):
                continue
            name, labels, value = match.groups()
            families[name].append((f'job="kubernetes-cadvisor",{labels}', t, value))
            if name == "container_memory_working_set_bytes" and 'container="app"' in labels:
                pod_level = labels.replace('container="app"', 'container=""')
                pause = labels.replace('container="app"', 'container="POD"')
                families[name].append((f'job="kubernetes-cadvisor",{pod_level}', t, value))
                families[name].append((f'job="kubernetes-cadvisor",{pause}', t, "1048576"))
        for workload, pods, *_ in workloads:
            for pod in pods:
                families["up"].append(
                    (
                        f'job="kubernetes-pods",kubernetes_namespace="{namespace}",'
                        f'kubernetes_pod_name="{pod}",pod_label_app="{workload}"',
                        t,
                        "1",
                    )
                )
        ksm = f'job="kube-state-metrics",namespace="{namespace}",pod="web-0",container="app"'
        families["kube_pod_container_resource_requests"].append(
            (f'{ksm},resource="memory",unit="byte"', t, str(MEMORY_REQUEST_BYTES))
        )
        if t >= end_seconds - OOM_HOURS_AGO * 3600:
            families["kube_pod_container_status_last_terminated_reason"].append(
                (f'{ksm},reason="OOMKilled"', t, "1")
            )
    lines: list[str] = []
    for name, samples in families.items():
        lines.append(f"# TYPE {name} gauge")
        lines += [f"{name}{{{labels}}} {value} {t}" for labels, t, value in sorted(samples)]
    return "\n".join([*lines, "# EOF"]) + "\n"


@pytest.fixture(scope="module")
def end_seconds() -> int:
    return int(time.time()) // SCRAPE_SECONDS * SCRAPE_SECONDS


@pytest.fixture(scope="module")
def prometheus(end_seconds: int) -> Iterator[PrometheusServer]:
    server = PrometheusServer()  # nothing to scrape: the history is backfilled
    server.backfill_openmetrics(exporter_history(end_seconds))
    with server:
        yield server


async def test_the_history_bootstrap_reads_the_exporters_series(
    prometheus: PrometheusServer, end_seconds: int
) -> None:
    parser = argparse.ArgumentParser()
    inprocess_metrics.add_flags(parser)
    history.add_flags(parser)
    args = parser.parse_args(
        [
            "--storage=prometheus",
            f"--prometheus-address={prometheus.url}",
            f"--history-length={HISTORY_HOURS}h",
            "--history-resolution=1h",
            "--container-pod-name-label=pod",
            "--container-name-label=container",
            "--prometheus-query-timeout=30s",
        ]
    )
    settings = history.settings_from_args(args, namespace=NAMESPACE)
    assert settings is not None
    clock = FakeClock()
    await clock.advance(end_seconds - EPOCH.timestamp())
    handle = await history.open_history_provider(
        settings, clock=clock, registry=CollectorRegistry()
    )
    try:
        started = time.monotonic()
        got = await handle.provider.get_cluster_history()
        elapsed = time.monotonic() - started
    finally:
        await handle.aclose()

    steps_ns = [
        (end_seconds - hours * 3600) * NS_PER_SECOND for hours in range(HISTORY_HOURS, -1, -1)
    ]
    expected_pods = {PodId(NAMESPACE, pod) for _, pods, *_ in WORKLOADS for pod in pods}
    assert set(got) == expected_pods
    summary = []
    for workload, pods, rps, per_request, base, per_rps in WORKLOADS:
        cpu = expected_cpu_milli(rps, len(pods), per_request, base)
        memory = expected_memory_bytes(rps, len(pods), per_rps)
        for pod in pods:
            pod_history = got[PodId(NAMESPACE, pod)]
            assert set(pod_history.samples) == {"app"}  # not "POD", not the pod-level ""
            samples = pod_history.samples["app"]
            cpu_samples = [s for s in samples if s.resource == "cpu"]
            memory_samples = [s for s in samples if s.resource == "memory"]
            assert [s.measure_start_ns for s in cpu_samples] == steps_ns
            assert [s.measure_start_ns for s in memory_samples] == steps_ns
            # rate() of a linear counter is its slope, up to float rounding before truncation
            assert all(cpu - 1 <= s.usage <= cpu for s in cpu_samples), (cpu, cpu_samples)
            assert {s.usage for s in memory_samples} == {memory}
            assert [s.measure_start_ns for s in samples] == sorted(
                s.measure_start_ns for s in samples
            )
            assert pod_history.last_labels == {"app": workload}
            assert pod_history.last_seen_ns == end_seconds * NS_PER_SECOND
            summary.append((pod, len(cpu_samples), len(memory_samples), cpu, memory))
    assert got[PodId(NAMESPACE, "web-0")].ooms == (
        OomRecord(
            "app", (end_seconds - OOM_HOURS_AGO * 3600) * NS_PER_SECOND, MEMORY_REQUEST_BYTES
        ),
    )
    assert all(not got[pod].ooms for pod in expected_pods - {PodId(NAMESPACE, "web-0")})
    print(
        f"history of {len(got)} pods in {elapsed:.3f} s: (pod, cpu n, memory n, m, bytes) {summary}"
    )
