"""``hpa vpa admission`` wired to an API server (the in-memory one of ``tests.fakes``): real
informers list VPAs, LimitRanges, HPAs and the controllers, and the webhook answers from them."""

from __future__ import annotations

import argparse
import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from hpa.app.webhook import AdmissionSettings, add_flags, build_app, settings_from_args
from hpa.core.vpa.admission import apply_patch
from hpa.kube.client import KubeClient
from hpa.kube.tls import write_self_signed
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer, ResourceInfo, running
from tests.fakes.clock import FakeClock
from tests.hpa.webhook.reviews import pod, review

EXTRA = (
    ResourceInfo(
        prefix="/apis/autoscaling.k8s.io/v1",
        plural="verticalpodautoscalers",
        kind="VerticalPodAutoscaler",
        subresources=("status",),
    ),
    ResourceInfo(prefix="/api/v1", plural="limitranges", kind="LimitRange"),
    ResourceInfo(prefix="/api/v1", plural="replicationcontrollers", kind="ReplicationController"),
    ResourceInfo(prefix="/apis/apps/v1", plural="daemonsets", kind="DaemonSet"),
    ResourceInfo(prefix="/apis/batch/v1", plural="jobs", kind="Job"),
    ResourceInfo(prefix="/apis/batch/v1", plural="cronjobs", kind="CronJob"),
)


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeApiServer, KubeClient]]:
    async with running((*DEFAULT_RESOURCES, *EXTRA)) as pair:
        yield pair


@pytest.fixture
def apiserver(served: tuple[FakeApiServer, KubeClient]) -> FakeApiServer:
    return served[0]


@pytest.fixture
def kube(served: tuple[FakeApiServer, KubeClient]) -> KubeClient:
    return served[1]


def seed(apiserver: FakeApiServer, *, hpa_on_cpu: bool = False) -> None:
    meta = {"namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"}
    apiserver.put_object(
        "/apis/apps/v1",
        "deployments",
        {
            "metadata": {**meta, "name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    apiserver.put_object(
        "/apis/apps/v1",
        "replicasets",
        {
            "metadata": {
                **meta,
                "name": "web-7d4b9c",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "web",
                        "controller": True,
                    }
                ],
            },
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    apiserver.put_object(
        "/apis/autoscaling.k8s.io/v1",
        "verticalpodautoscalers",
        {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": {**meta, "name": "web"},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "resourcePolicy": {
                    "containerPolicies": [{"containerName": "*", "maxAllowed": {"cpu": "1"}}]
                },
            },
            "status": {
                "recommendation": {
                    "containerRecommendations": [
                        {
                            "containerName": "app",
                            "target": {"cpu": "2", "memory": "300Mi"},
                            "lowerBound": {"cpu": "1", "memory": "200Mi"},
                            "upperBound": {"cpu": "3", "memory": "400Mi"},
                        }
                    ]
                }
            },
        },
    )
    apiserver.put_object(
        "/api/v1",
        "limitranges",
        {
            "metadata": {**meta, "name": "floor"},
            "spec": {"limits": [{"type": "Container", "min": {"memory": "320Mi"}}]},
        },
    )
    if hpa_on_cpu:
        apiserver.put_object(
            "/apis/autoscaling/v2",
            "horizontalpodautoscalers",
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {**meta, "name": "web"},
                "spec": {
                    "scaleTargetRef": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "web",
                    },
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
            },
        )


async def answer(
    apiserver: FakeApiServer, kube: KubeClient, tmp_path: Path, body: dict[str, Any]
) -> dict[str, Any]:
    cert, key = write_self_signed(tmp_path)
    settings = AdmissionSettings(tls_cert_file=cert, tls_private_key=key)
    app = build_app(
        settings, kube, clock=FakeClock(auto_advance=True), registry=CollectorRegistry()
    )
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(i.run()) for i in app.informers]
        for informer in app.informers:
            await informer.wait_synced()
        assert app.ready()
        async with TestClient(TestServer(app.webhook)) as client:
            response = await client.post(
                "/", data=orjson.dumps(body), headers={"Content-Type": "application/json"}
            )
            result: dict[str, Any] = await response.json()
        for task in tasks:
            task.cancel()
    return result


def requests_after(result: dict[str, Any]) -> dict[str, str]:
    patches = orjson.loads(base64.b64decode(result["response"]["patch"]))
    patched = apply_patch(pod(), patches)
    requests: dict[str, str] = patched["spec"]["containers"][0]["resources"]["requests"]
    return requests


async def test_a_pod_of_the_deployment_gets_the_capped_recommendation(
    apiserver: FakeApiServer, kube: KubeClient, tmp_path: Path
) -> None:
    seed(apiserver)
    result = await answer(apiserver, kube, tmp_path, review())
    # cpu capped to maxAllowed 1; memory raised to the LimitRange's minimum 320Mi
    assert requests_after(result) == {"cpu": "1", "memory": "320Mi"}


async def test_with_an_hpa_on_cpu_only_memory_is_set(
    apiserver: FakeApiServer, kube: KubeClient, tmp_path: Path
) -> None:
    seed(apiserver, hpa_on_cpu=True)
    result = await answer(apiserver, kube, tmp_path, review())
    assert requests_after(result) == {"cpu": "100m", "memory": "320Mi"}


async def test_a_pod_of_another_workload_is_unchanged(
    apiserver: FakeApiServer, kube: KubeClient, tmp_path: Path
) -> None:
    seed(apiserver)
    apiserver.put_object(
        "/apis/apps/v1",
        "statefulsets",
        {"metadata": {"namespace": "shop", "name": "db"}, "spec": {"selector": {}}},
    )
    other = pod()
    other["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": True}
    ]
    result = await answer(apiserver, kube, tmp_path, review(other))
    assert result["response"] == {"uid": "b5e2-1", "allowed": True}


async def test_a_pod_whose_controller_is_not_known_yet_is_let_through_with_a_warning(
    apiserver: FakeApiServer, kube: KubeClient, tmp_path: Path
) -> None:
    seed(apiserver)
    racing = pod()
    racing["metadata"]["ownerReferences"][0]["name"] = "web-new"
    result = await answer(apiserver, kube, tmp_path, review(racing))
    assert result["response"]["allowed"] is True
    assert "patch" not in result["response"]
    assert result["response"]["warnings"]


def test_flags_are_checked_with_a_one_line_error(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    cert, key = write_self_signed(tmp_path)
    good = parser.parse_args(["--tls-cert-file", str(cert), "--tls-private-key", str(key)])
    settings = settings_from_args(good)
    assert (settings.port, settings.status_lease_update_interval_seconds) == (8000, 10.0)
    assert settings.status_lease_name == "vpa-admission-controller"
    for argv, message in (
        (["--tls-cert-file", "/nope", "--tls-private-key", str(key)], "--tls-cert-file: /nope"),
        (
            ["--tls-cert-file", str(cert), "--tls-private-key", str(key), "--address", "x"],
            "--address",
        ),
        (["--tls-cert-file", str(cert), "--tls-private-key", str(key), "--port", "0"], "--port"),
        (
            [
                *("--tls-cert-file", str(cert), "--tls-private-key", str(key)),
                *("--status-lease-update-interval", "10"),
            ],
            "--status-lease-update-interval",
        ),
    ):
        with pytest.raises(ValueError, match=message):
            settings_from_args(parser.parse_args(argv))
