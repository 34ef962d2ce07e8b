"""Shared setup of the lab tests of ``hpa vpa recommender`` (tests/e2e/test_vpa_recommender_lab.py
and bench/vpa_side_by_side.py): VPA manifests, the recommender as a lab process, its log and the
recommendations read back from the API.

Upstream counterpart: the VPA e2e suite's recommender tests (``vertical-pod-autoscaler/e2e/v1``
``recommender.go``: a VPA per workload, wait for ``status.recommendation``). Here the recommender
under test is ``python -m hpa vpa recommender`` from this checkout with the lab's admin
kubeconfig, reading ``metrics.k8s.io`` from ``hpa adapter`` (tests/e2e/controller_lab.py
``start_adapter``), which serves it from the lab's Prometheus.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hpa.core.quantity import parse_quantity
from tests.commands import command_env
from tests.lab.controlplane import free_port
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.process import Component

VPA_API = "autoscaling.k8s.io/v1"
RESOURCES = ("cpu", "memory")
BOUNDS = ("lowerBound", "target", "upperBound")


def vpa_manifest(
    name: str, namespace: str, *, target: str, recommenders: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A VPA on the Deployment ``target`` in ``Off`` mode (recommendations only);
    ``recommenders`` fills ``spec.recommenders`` (empty: the ``default`` recommender's)."""
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "updatePolicy": {"updateMode": "Off"},
    }
    if recommenders:
        spec["recommenders"] = [{"name": name} for name in recommenders]
    return {
        "apiVersion": VPA_API,
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def start_recommender(lab: Lab, name: str, *flags: str) -> Component:
    """``python -m hpa vpa recommender`` on this checkout with the lab's admin kubeconfig, its
    operations listener on a free loopback port, and ``flags``."""
    argv = [
        sys.executable,
        "-m",
        "hpa",
        "vpa",
        "recommender",
        f"--kubeconfig={lab.kubeconfig}",
        f"--address=127.0.0.1:{free_port()}",
        *flags,
    ]
    return lab.group.start(name, argv, cwd=REPO_ROOT, env=command_env())


def log_events(component: Component, event: str, *, skip_bytes: int = 0) -> list[dict[str, Any]]:
    """The structlog JSON records named ``event`` in the component's log (after ``skip_bytes``,
    to see only a restarted process's lines)."""
    with component.log_path.open("rb") as log:
        log.seek(skip_bytes)
        lines = log.read().decode(errors="replace").splitlines()
    found = []
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == event:
            found.append(record)
    return found


def vpa(lab: Lab, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = lab.kubectl_json("get", "vpa", name, "-n", namespace)
    return found


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for found in (obj.get("status") or {}).get("conditions") or ():
        if found.get("type") == kind:
            return dict(found)
    return None


@dataclass(frozen=True, slots=True)
class Recommended:
    """One container's recommendation: ``amounts[(bound, resource)]`` in cores and bytes."""

    container: str
    amounts: dict[tuple[str, str], Decimal]

    def get(self, bound: str, resource: str) -> Decimal | None:
        return self.amounts.get((bound, resource))


def recommendations(obj: dict[str, Any]) -> dict[str, Recommended]:
    """``status.recommendation.containerRecommendations`` by container, quantities parsed."""
    out = {}
    recommendation = (obj.get("status") or {}).get("recommendation") or {}
    for item in recommendation.get("containerRecommendations") or ():
        amounts = {
            (bound, resource): parse_quantity(str(value)).amount
            for bound in BOUNDS
            for resource, value in (item.get(bound) or {}).items()
        }
        out[item["containerName"]] = Recommended(item["containerName"], amounts)
    return out


def describe(recommended: Recommended | None) -> str:
    """``cpu 123m/130m/400m memory 80Mi/...`` (lowerBound/target/upperBound)."""
    if recommended is None:
        return "(none)"
    parts = []
    for resource in RESOURCES:
        values = [recommended.get(bound, resource) for bound in BOUNDS]
        if all(v is None for v in values):
            continue
        parts.append(f"{resource} " + "/".join(_amount(resource, v) for v in values))
    return " ".join(parts)


def _amount(resource: str, value: Decimal | None) -> str:
    if value is None:
        return "-"
    if resource == "cpu":
        return f"{value * 1000:.0f}m"
    return f"{value / 2**20:.1f}Mi"


def checkpoint_names(lab: Lab, namespace: str) -> Iterator[str]:
    listed = lab.kubectl_json("get", "verticalpodautoscalercheckpoints", "-n", namespace)
    for item in listed.get("items") or ():
        yield str(item["metadata"]["name"])


def checkpoint_samples(lab: Lab, namespace: str, name: str) -> int:
    """``status.totalSamplesCount`` of a checkpoint (the cpu samples it holds)."""
    found = lab.kubectl_json("get", "verticalpodautoscalercheckpoints", name, "-n", namespace)
    return int((found.get("status") or {}).get("totalSamplesCount") or 0)
