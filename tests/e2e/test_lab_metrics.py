"""End to end: Prometheus holds the workload's CPU, memory and request series for exactly the
live pods, within 10 s of a change, and their rates follow `set_load`."""

from __future__ import annotations

import pytest

from tests.e2e.test_lab import deployment, exactly_ready, pods
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-metrics"
SERIES_DEADLINE_SECONDS = 10.0
"""The acceptance bound: Prometheus follows a change of the pod set within this time."""
SCALE_TIMEOUT_SECONDS = 90.0
RATE_TIMEOUT_SECONDS = 30.0
SERIES = (
    'container_cpu_usage_seconds_total{{namespace="{ns}",container="app"}}',
    'container_memory_working_set_bytes{{namespace="{ns}",container="app"}}',
    'http_requests_total{{namespace="{ns}"}}',
)
PROFILE = WorkloadProfile(
    namespace=NAMESPACE,
    workload="api",
    selector={"app": "api"},
    cpu_per_request_milli=20,
    base_cpu_milli=10,
)


def running_pod_names(lab: Lab) -> set[str]:
    return {
        p["metadata"]["name"]
        for p in pods(lab, NAMESPACE, "api")
        if p["status"].get("phase") == "Running" and "deletionTimestamp" not in p["metadata"]
    }


def series_follow(lab: Lab, live: set[str]) -> bool:
    """Every series holds exactly the live pods (stale series drop out of instant queries)."""
    return all(
        {s.labels["pod"] for s in lab.prometheus.query(query.format(ns=NAMESPACE))} == live
        for query in SERIES
    )


def scalar(lab: Lab, promql: str) -> float | None:
    samples = lab.prometheus.query(promql)
    return samples[0].value if samples else None


def near(value: float | None, expected: float, *, tolerance_ratio: float = 0.1) -> bool:
    return value is not None and abs(value - expected) <= tolerance_ratio * expected


def scale_and_check_series(lab: Lab, replicas: int) -> None:
    """Scale; from the moment kubectl sees the new set of Running pods, Prometheus must hold
    series for exactly that set within SERIES_DEADLINE_SECONDS."""
    lab.kubectl("scale", "deployment/api", "-n", NAMESPACE, f"--replicas={replicas}")
    lab.wait_for(
        lambda: len(running_pod_names(lab)) == replicas == len(pods(lab, NAMESPACE, "api")),
        what=f"{replicas} Running pods of api",
        timeout_seconds=SCALE_TIMEOUT_SECONDS,
    )
    live = running_pod_names(lab)
    lab.wait_for(
        lambda: series_follow(lab, live),
        what=f"series for exactly {sorted(live)} within {SERIES_DEADLINE_SECONDS} s",
        timeout_seconds=SERIES_DEADLINE_SECONDS,
    )


def rates_follow(lab: Lab, *, rps: int, expected_cpu_cores: float) -> bool:
    requests = f'sum(rate(http_requests_total{{namespace="{NAMESPACE}"}}[5s]))'
    cpu = (
        "sum(rate(container_cpu_usage_seconds_total"
        f'{{namespace="{NAMESPACE}",container="app"}}[5s]))'
    )
    return near(scalar(lab, requests), rps) and near(scalar(lab, cpu), expected_cpu_cores)


def test_series_follow_live_pods_and_rates_follow_load(lab: Lab) -> None:
    lab.kubectl("create", "namespace", NAMESPACE)
    lab.add_workload(PROFILE, rps=20)
    lab.apply([deployment("api", NAMESPACE, 0)])
    scale_and_check_series(lab, 2)
    scale_and_check_series(lab, 4)
    scale_and_check_series(lab, 1)
    lab.wait_for(
        lambda: exactly_ready(lab, NAMESPACE, "api", 1),
        what="1 Running+Ready pod of api",
        timeout_seconds=SCALE_TIMEOUT_SECONDS,
    )

    for rps in (40, 10):
        lab.set_load(NAMESPACE, "api", rps)
        expected = (PROFILE.base_cpu_milli + rps * PROFILE.cpu_per_request_milli) / 1000
        lab.wait_for(
            lambda: rates_follow(lab, rps=rps, expected_cpu_cores=expected),  # noqa: B023
            what=f"request rate {rps}/s and CPU {expected} cores of the one serving pod",
            timeout_seconds=RATE_TIMEOUT_SECONDS,
        )
    memory = scalar(lab, f'sum(container_memory_working_set_bytes{{namespace="{NAMESPACE}"}})')
    assert memory == PROFILE.base_memory_bytes + PROFILE.memory_per_rps_bytes * 10
