"""Every command meets user mistakes with one line naming the input and a non-zero exit, never a
traceback: each case runs ``python -m hpa ...`` in a subprocess, as a user would."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from hpa.sim.scenarios import hpa_manifest
from tests.commands import UNREACHABLE_KUBECONFIG, command_env

VALID_HPA = hpa_manifest("web", max_replicas=10)

FILES: Mapping[str, str] = {
    "hpa.yaml": VALID_HPA,
    "misspelled.yaml": hpa_manifest(
        "web", max_replicas=10, behavior="scaleDown:\n  stabilisationWindowSeconds: 900"
    ),
    "invalid.yaml": VALID_HPA.replace("maxReplicas: 10", "maxReplicas: 0"),
    "not-yaml.yaml": "spec: [unclosed\n",
    "deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
    "memory.yaml": VALID_HPA.replace("name: cpu", "name: memory"),
    "trace.csv": "timestamp,load\n0,10\nlater,20\n",
    "rules.yaml": "rules:\n- seriesQuery: 'up'\n  name: {matches: '(unclosed'}\n",
    "rules-not-yaml.yaml": "rules: [\n",
    "good-rules.yaml": "rules: []\n",
    "empty-configmap.yaml": "kind: ConfigMap\napiVersion: v1\nmetadata: {name: adapter}\n",
    "kubeconfig": UNREACHABLE_KUBECONFIG,
    "garbage-kubeconfig": "just: [a, list\n",
    "cert.pem": "not a certificate\n",
    "existing-file": "",
}


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    names: str
    """What the error line must contain: the input at fault ({d} is the files' directory)."""


def _cases() -> dict[str, Case]:
    def c(names: str, *args: str) -> Case:
        return Case(args, names)

    adapter = ("adapter", "--config", "{d}/good-rules.yaml", "--kubeconfig", "{d}/kubeconfig")
    sim = ("simulate", "{d}/hpa.yaml", "--trace", "step", "--output", "{d}/out", "--no-plot")
    admission = (
        "vpa",
        "admission",
        "--tls-cert-file",
        "{d}/cert.pem",
        "--tls-private-key",
        "{d}/cert.pem",
        "--kubeconfig",
        "{d}/kubeconfig",
    )
    return {
        # hpa controller
        "controller-kubeconfig-missing": c(
            "/nonexistent", "controller", "--kubeconfig", "/nonexistent"
        ),
        "controller-kubeconfig-garbage": c(
            "garbage-kubeconfig", "controller", "--kubeconfig", "{d}/garbage-kubeconfig"
        ),
        "controller-bad-port": c("--port", "controller", "--port", "eighty"),
        "controller-bad-duration": c(
            "15x", "controller", "--horizontal-pod-autoscaler-sync-period", "15x"
        ),
        "controller-unknown-flag": c("--no-such-flag", "controller", "--no-such-flag"),
        "controller-bad-switch": c("maybe", "controller", "--leader-elect", "maybe"),
        "controller-bad-log-level": c("loud", "controller", "--log-level", "loud"),
        "controller-inprocess-rules-missing": c(
            "/nonexistent.yaml",
            "controller",
            "--metrics-source",
            "inprocess",
            "--config",
            "/nonexistent.yaml",
        ),
        # hpa adapter
        "adapter-config-missing": c(
            "/nonexistent.yaml", "adapter", "--config", "/nonexistent.yaml"
        ),
        "adapter-config-absent": c("--config", "adapter"),
        "adapter-rule-error": c("rules.yaml", *adapter[:2], "{d}/rules.yaml", *adapter[3:]),
        "adapter-rules-not-yaml": c(
            "rules-not-yaml.yaml", *adapter[:2], "{d}/rules-not-yaml.yaml", *adapter[3:]
        ),
        "adapter-kubeconfig-missing": c(
            "/nonexistent",
            "adapter",
            "--config",
            "{d}/good-rules.yaml",
            "--kubeconfig",
            "/nonexistent",
        ),
        "adapter-tls-missing": c(
            "/nonexistent.pem",
            *adapter,
            "--tls-cert-file",
            "/nonexistent.pem",
            "--tls-private-key-file",
            "{d}/cert.pem",
        ),
        "adapter-bad-duration": c("1y", *adapter, "--metrics-relist-interval", "1y"),
        "adapter-bad-header": c("no-colon", *adapter, "--prometheus-header", "no-colon"),
        "adapter-check-config-missing": c(
            "/nonexistent-rules.yaml", "adapter", "check-config", "/nonexistent-rules.yaml"
        ),
        "adapter-check-config-bad-max-age": c(
            "9parsecs",
            "adapter",
            "check-config",
            "{d}/good-rules.yaml",
            "--metrics-max-age",
            "9parsecs",
        ),
        "adapter-check-config-empty-configmap": c(
            "empty-configmap.yaml", "adapter", "check-config", "{d}/empty-configmap.yaml"
        ),
        "adapter-explain-bad-path": c(
            "/no/such/api", "adapter", "explain", "/no/such/api", *adapter[1:]
        ),
        # hpa vpa admission
        "admission-tls-missing": c(
            "/nonexistent/cert.pem", "vpa", "admission", "--tls-cert-file", "/nonexistent/cert.pem"
        ),
        "admission-bad-address": c("nohostport", *admission, "--address", "nohostport"),
        "admission-bad-duration": c(
            "10parsecs", *admission, "--status-lease-update-interval", "10parsecs"
        ),
        "admission-kubeconfig-missing": c("/nonexistent", *admission[:-1], "/nonexistent"),
        "admission-bad-choice": c("maybe", *admission, "--hpa-awareness", "maybe"),
        "vpa-without-part": c("vpa", "vpa"),
        # hpa vpa updater
        "updater-kubeconfig-missing": c(
            "/nonexistent", "vpa", "updater", "--kubeconfig", "/nonexistent"
        ),
        "updater-bad-tolerance": c(
            "--eviction-tolerance", "vpa", "updater", "--eviction-tolerance", "1.5"
        ),
        "updater-bad-interval": c("10parsecs", "vpa", "updater", "--updater-interval", "10parsecs"),
        "updater-bad-address": c("nohostport", "vpa", "updater", "--address", "nohostport"),
        # hpa vpa recommender
        "recommender-kubeconfig-missing": c(
            "/nonexistent", "vpa", "recommender", "--kubeconfig", "/nonexistent"
        ),
        "recommender-bad-interval": c(
            "--recommender-interval", "vpa", "recommender", "--recommender-interval", "0s"
        ),
        "recommender-inprocess-rules-missing": c(
            "/nonexistent.yaml",
            "vpa",
            "recommender",
            "--metrics-source",
            "inprocess",
            "--config",
            "/nonexistent.yaml",
        ),
        "recommender-bad-storage": c("--storage", "vpa", "recommender", "--storage", "etcd"),
        "recommender-bad-history-length": c(
            "8 days", "vpa", "recommender", "--storage", "prometheus", "--history-length", "8 days"
        ),
        # hpa simulate
        "simulate-manifest-missing": c("/nonexistent.yaml", "simulate", "/nonexistent.yaml"),
        "simulate-unknown-field": c(
            "stabilisationWindowSeconds", sim[0], "{d}/misspelled.yaml", *sim[2:]
        ),
        "simulate-invalid-manifest": c("maxReplicas", sim[0], "{d}/invalid.yaml", *sim[2:]),
        "simulate-not-yaml": c("not-yaml.yaml", sim[0], "{d}/not-yaml.yaml", *sim[2:]),
        "simulate-not-an-hpa": c("Deployment", sim[0], "{d}/deployment.yaml", *sim[2:]),
        "simulate-memory-metric": c("memory", sim[0], "{d}/memory.yaml", *sim[2:]),
        "simulate-output-is-a-file": c("existing-file", *sim[:-2], "{d}/existing-file"),
        "simulate-unknown-shape": c("no-such-shape", *sim[:2], "--trace", "no-such-shape"),
        "simulate-bad-trace": c("trace.csv", *sim[:2], "--trace", "{d}/trace.csv"),
        "simulate-bad-duration": c("5parsecs", *sim, "--duration", "5parsecs"),
        "simulate-bad-quantity": c("lots", *sim, "--cpu-request", "lots"),
        "simulate-conflicting-flags": c(
            "--capacity", *sim, "--capacity", "10", "--cpu-per-request", "100m"
        ),
        "simulate-bad-start-replicas": c("--start-replicas", *sim, "--start-replicas", "-1"),
        # hpa demo
        "demo-output-is-a-file": c("existing-file", "demo", "--output", "{d}/existing-file"),
        "demo-bad-log-format": c("xml", "demo", "--log-format", "xml"),
    }


CASES = _cases()


def _run(case: Case, directory: Path) -> subprocess.CompletedProcess[str]:
    args = [a.replace("{d}", str(directory)) for a in case.args]
    return subprocess.run(
        [sys.executable, "-m", "hpa", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=command_env(),
        cwd=directory,
    )


@pytest.fixture(scope="module")
def outcomes(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], subprocess.CompletedProcess[str]]:
    """Every case run once, two at a time (each is a fresh interpreter)."""
    directory = tmp_path_factory.mktemp("bad-input")
    for name, text in FILES.items():
        (directory / name).write_text(text)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_run, case, directory) for name, case in CASES.items()}
        done = {name: future.result() for name, future in futures.items()}
    return done.__getitem__


def test_there_are_at_least_25_cases() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_mistake_is_one_line_naming_the_input(
    name: str, outcomes: Callable[[str], subprocess.CompletedProcess[str]]
) -> None:
    done = outcomes(name)
    needle = CASES[name].names
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    naming = [line for line in lines if needle in line]
    assert naming, f"no line names {needle!r}:\n{done.stderr}"
    assert len(lines) <= 2, f"expected one line, got:\n{done.stderr}"
