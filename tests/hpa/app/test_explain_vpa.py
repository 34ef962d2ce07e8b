"""``hpa explain vpa NAMESPACE/NAME``: the model run offline over the recommender's checkpoints
(in-memory API server over real HTTP), with the HPA exclusions and the group-size model."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from hpa.api.vpa import (
    VerticalPodAutoscalerCheckpoint,
    VerticalPodAutoscalerCheckpointSpec,
    checkpoint_status_from_core,
)
from hpa.app.explain import EXIT_NOT_FOUND, main
from hpa.app.explain_vpa import explain_vpa
from hpa.cli import build_parser
from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.recommender import RecommendationConfig
from hpa.kube.client import KubeClient, RetryPolicy
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer, ResourceInfo
from tests.fakes.clock import FakeClock

NS = "shop"
VPA_API = "/apis/autoscaling.k8s.io/v1"
VPAS = ResourceInfo(prefix=VPA_API, plural="verticalpodautoscalers", kind="VerticalPodAutoscaler")
CHECKPOINTS = ResourceInfo(
    prefix=VPA_API,
    plural="verticalpodautoscalercheckpoints",
    kind="VerticalPodAutoscalerCheckpoint",
)
MIB = 1024 * 1024
HOUR_NS = 3600 * 10**9
START_NS = 1_767_225_600 * 10**9  # 2026-01-01


@pytest.fixture
async def apiserver() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer((*DEFAULT_RESOURCES, VPAS, CHECKPOINTS))
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def kube(apiserver: FakeApiServer) -> AsyncIterator[KubeClient]:
    client = KubeClient(
        aiohttp.ClientSession(),
        apiserver.url,
        clock=FakeClock(auto_advance=True),
        rng=random.Random(1),
        retry=RetryPolicy(max_attempts=1),
    )
    yield client
    await client.close()


def _vpa(*, recommenders: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "resourcePolicy": {
            "containerPolicies": [{"containerName": "*", "maxAllowed": {"cpu": "300m"}}]
        },
    }
    if recommenders:
        spec["recommenders"] = [{"name": r} for r in recommenders]
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web", "namespace": NS, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec,
    }


def _checkpoint() -> dict[str, Any]:
    state = AggregateContainerState()
    for hour in range(48):
        state.add_cpu_sample(START_NS + hour * HOUR_NS, 400 + 10 * (hour % 6))
        state.add_memory_sample(START_NS + hour * HOUR_NS, (300 + hour % 4) * MIB)
    body = VerticalPodAutoscalerCheckpoint(
        spec=VerticalPodAutoscalerCheckpointSpec(vpa_object_name="web", container_name="app"),
        status=checkpoint_status_from_core(state.save_to_checkpoint(START_NS + 48 * HOUR_NS)),
    ).to_dict()
    body["apiVersion"] = "autoscaling.k8s.io/v1"
    body["kind"] = "VerticalPodAutoscalerCheckpoint"
    body["metadata"] = {"namespace": NS, "name": "web-app"}
    return body


def _hpa_on_cpu() -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web-hpa", "namespace": NS},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                }
            ],
        },
    }


async def test_the_trace_has_samples_estimators_caps_exclusions_and_the_group_model(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.put_object(VPA_API, "verticalpodautoscalers", _vpa(recommenders=["group-aware"]))
    apiserver.put_object(VPA_API, "verticalpodautoscalercheckpoints", _checkpoint())
    apiserver.put_object("/apis/autoscaling/v2", "horizontalpodautoscalers", _hpa_on_cpu())
    report = await explain_vpa(kube, NS, "web", config=RecommendationConfig())
    text = report.render()
    assert text.startswith("VerticalPodAutoscaler shop/web\n")
    assert "[samples] container app: 48 CPU samples" in text
    assert "[estimation] container app cpu target:" in text
    assert "percentile 0.9 of the histogram" in text
    assert "safety margin 0.15" in text
    assert "[capping] container app cpu target capped to maxAllowed" in text
    assert "HPA exclusions: cpu in every container" in text
    assert "shop/web-hpa" in text
    assert "group-size model (spec.recommenders: group-aware)" in text
    stages = {entry["stage"] for entry in report.to_dict()["trace"]}
    assert {"samples", "estimation", "capping"} <= stages


async def test_without_checkpoints_or_hpas_the_trace_says_so(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.put_object(VPA_API, "verticalpodautoscalers", _vpa())
    text = (await explain_vpa(kube, NS, "web", config=RecommendationConfig())).render()
    assert "no checkpoint: the recommender has not written this VPA's histograms yet" in text
    assert "HPA exclusions: no HPA scales the workload on cpu or memory" in text
    assert "group-size model" not in text


async def test_the_cli_names_a_missing_vpa_and_a_bad_argument(
    apiserver: FakeApiServer, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: k, cluster: {{server: '{apiserver.url}'}}}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    parser = build_parser()
    args = parser.parse_args(["explain", "vpa", "shop/ghost", f"--kubeconfig={kubeconfig}"])
    assert await asyncio.to_thread(main, args) == EXIT_NOT_FOUND  # the server runs on this loop
    assert "VerticalPodAutoscaler shop/ghost: not found" in capsys.readouterr().err
    assert await asyncio.to_thread(main, parser.parse_args(["explain", "vpa", "shop"])) == 2
    assert "expected NAMESPACE/NAME, got 'shop'" in capsys.readouterr().err
