"""The admission webhook over HTTP: what kube-apiserver gets back for pods, VPAs and garbage."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from hpa.core.vpa.admission import apply_patch
from hpa.core.vpa.awareness import HorizontalConflict
from hpa.webhook.handler import AdmissionHandler
from hpa.webhook.server import WebhookMetrics, build_operations_app, build_webhook_app
from tests.fakes.webhook import FakeVpaMatcher
from tests.hpa.webhook.reviews import pod, review, web_vpa


@dataclass
class Webhook:
    client: TestClient[Any, Any]
    matcher: FakeVpaMatcher
    registry: CollectorRegistry

    async def post(self, body: Any, *, status: int = 200) -> dict[str, Any]:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        response = await self.client.post(
            "/", data=data, headers={"Content-Type": "application/json"}
        )
        assert response.status == status, await response.text()
        result: dict[str, Any] = await response.json()
        return result

    def metric(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0


@asynccontextmanager
async def webhook(matcher: FakeVpaMatcher | None = None) -> AsyncIterator[Webhook]:
    matcher = matcher or FakeVpaMatcher()
    registry = CollectorRegistry()
    app = build_webhook_app(AdmissionHandler(matcher), metrics=WebhookMetrics(registry))
    async with TestClient(TestServer(app)) as client:
        yield Webhook(client, matcher, registry)


def patched(answer: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    response = answer["response"]
    assert response["patchType"] == "JSONPatch"
    return apply_patch(obj, orjson.loads(base64.b64decode(response["patch"])))


async def test_a_new_pod_of_a_vpa_managed_workload_gets_the_recommended_requests() -> None:
    async with webhook(FakeVpaMatcher(by_app={"web": web_vpa()})) as w:
        answer = await w.post(review())
        applied = w.metric("vpa_admission_controller_admission_pods_total", applied="true")
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["response"]["uid"] == "b5e2-1"
    assert answer["response"]["allowed"] is True
    result = patched(answer, pod())
    assert result["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "250m",
        "memory": "256Mi",
    }
    assert result["metadata"]["annotations"] == {
        "vpaUpdates": "Pod resources updated by web: container 0: cpu request, memory request",
        "vpaObservedContainers": "app",
    }
    assert w.matcher.asked[0].name == "web-7d4b9c-%"
    assert applied == 1.0


async def test_a_pod_without_a_vpa_is_let_through_unchanged() -> None:
    async with webhook() as w:
        answer = await w.post(review(pod(app="other")))
        skipped = w.metric("vpa_admission_controller_admission_pods_total", applied="false")
    assert answer["response"] == {"uid": "b5e2-1", "allowed": True}
    assert skipped == 1.0


async def test_a_pod_that_requires_a_vpa_is_refused_while_none_matches() -> None:
    required = {"vpa.hpa.dev/required": "true"}
    async with webhook(FakeVpaMatcher(by_app={"web": web_vpa()})) as w:
        refused = await w.post(review(pod(app="api", annotations=required)))
        admitted = await w.post(review(pod(app="web", annotations=required)))
        not_required = await w.post(
            review(pod(app="api", annotations={"vpa.hpa.dev/required": "false"}))
        )
    assert refused["response"]["allowed"] is False
    assert refused["response"]["status"]["code"] == 403
    assert refused["response"]["status"]["message"] == (
        'pod shop/web-7d4b9c-% is annotated vpa.hpa.dev/required: "true" but no '
        "VerticalPodAutoscaler matches it: create the VPA first"
    )
    assert admitted["response"]["allowed"] is True
    assert "patch" in admitted["response"]
    assert not_required["response"] == {"uid": "b5e2-1", "allowed": True}


async def test_update_mode_off_writes_only_the_observed_containers() -> None:
    async with webhook(FakeVpaMatcher(by_app={"web": web_vpa(off=True)})) as w:
        answer = await w.post(review())
    result = patched(answer, pod())
    assert result["spec"] == pod()["spec"]
    assert result["metadata"]["annotations"] == {"vpaObservedContainers": "app"}


async def test_a_resource_an_hpa_scales_on_is_never_changed() -> None:
    vpa = replace(web_vpa(), conflicts=(HorizontalConflict("cpu", None, "shop/web"),))
    async with webhook(FakeVpaMatcher(by_app={"web": vpa})) as w:
        answer = await w.post(review())
    requests = patched(answer, pod())["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "100m", "memory": "256Mi"}


async def test_when_matching_fails_the_pod_is_created_unchanged_with_a_warning() -> None:
    async with webhook(FakeVpaMatcher(error=RuntimeError("informer not synced"))) as w:
        answer = await w.post(review())
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]
    assert answer["response"]["warnings"] == [
        "hpa-vpa-admission: pod left unchanged: no VPA could be matched"
    ]


@pytest.mark.parametrize(
    ("containers", "warning"),
    [
        (
            [{"name": "app", "resources": {"requests": {"cpu": "lots"}}}],
            "request.object.spec.containers[0].resources.requests.cpu",
        ),
        ([{"resources": {}}], "request.object.spec.containers[0].name"),
        ("app", "request.object.spec.containers: must be a list"),
    ],
    ids=["invalid quantity", "container without a name", "containers not a list"],
)
async def test_an_unreadable_pod_is_let_through_unchanged(containers: Any, warning: str) -> None:
    async with webhook(FakeVpaMatcher(by_app={"web": web_vpa()})) as w:
        answer = await w.post(review(pod(containers=containers)))
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]
    assert warning in answer["response"]["warnings"][0]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "body: not JSON"),
        (b"[]", "body: must be an object"),
        ({**review(), "apiVersion": "admission.k8s.io/v1beta1"}, "apiVersion: must be"),
        ({**review(), "kind": "Pod"}, "kind: must be 'AdmissionReview'"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "request: must be"),
        (review(uid=""), "request.uid: must be a non-empty string"),
        (review(operation="PATCH"), "request.operation: unsupported value 'PATCH'"),
        (
            {**review(), "request": {**review()["request"], "dryRun": "no"}},
            "request.dryRun: must be a boolean",
        ),
        (
            {**review(), "request": {**review()["request"], "object": []}},
            "request.object: must be an object",
        ),
    ],
    ids=[
        "not json",
        "not an object",
        "v1beta1",
        "wrong kind",
        "no request",
        "empty uid",
        "unknown operation",
        "dryRun not a boolean",
        "object not an object",
    ],
)
async def test_anything_but_an_admission_review_is_a_400_naming_the_field(
    body: Any, message: str
) -> None:
    async with webhook() as w:
        answer = await w.post(body, status=400)
    assert answer["kind"] == "Status"
    assert answer["reason"] == "BadRequest"
    assert message in answer["message"]


async def test_content_type_and_size_are_checked() -> None:
    async with webhook() as w:
        text = await w.client.post("/", data=b"{}", headers={"Content-Type": "text/plain"})
        huge = await w.client.post(
            "/",
            data=b"{" + b" " * (6 * 1024 * 1024) + b"}",
            headers={"Content-Type": "application/json"},
        )
    assert text.status == 415
    assert huge.status == 413


async def test_other_resources_are_let_through() -> None:
    async with webhook() as w:
        answer = await w.post(review({"metadata": {}}, resource=("apps", "v1", "deployments")))
    assert answer["response"] == {"uid": "b5e2-1", "allowed": True}


def vpa_object(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            **spec,
        },
    }


async def test_an_invalid_vpa_is_refused_with_the_invalid_status() -> None:
    vpa_resource = ("autoscaling.k8s.io", "v1", "verticalpodautoscalers")
    bad = vpa_object(updatePolicy={"updateMode": "Sometimes"})
    async with webhook() as w:
        refused = await w.post(review(bad, resource=vpa_resource, kind="VerticalPodAutoscaler"))
        admitted = await w.post(
            review(vpa_object(), resource=vpa_resource, kind="VerticalPodAutoscaler")
        )
    status = refused["response"]["status"]
    assert refused["response"]["allowed"] is False
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(
        'VerticalPodAutoscaler.autoscaling.k8s.io "web" is invalid: '
    )
    assert "Sometimes" in status["message"]
    assert admitted["response"]["allowed"] is True
    assert "warnings" not in admitted["response"]


async def test_a_vpa_without_update_policy_is_defaulted_to_recreate_as_upstream() -> None:
    """``resource/vpa/handler.go``: the differential against upstream's admission-controller found
    that upstream adds ``/spec/updatePolicy``; a VPA that has one is left alone."""
    vpa_resource = ("autoscaling.k8s.io", "v1", "verticalpodautoscalers")
    kind = "VerticalPodAutoscaler"
    with_mode = vpa_object(updatePolicy={"updateMode": "Initial"})
    async with webhook() as w:
        bare = await w.post(review(vpa_object(), resource=vpa_resource, kind=kind))
        updated = await w.post(
            review(vpa_object(), resource=vpa_resource, kind=kind, operation="UPDATE",
                   old=vpa_object())
        )  # fmt: skip
        kept = await w.post(review(with_mode, resource=vpa_resource, kind=kind))
    expected = [{"op": "add", "path": "/spec/updatePolicy", "value": {"updateMode": "Recreate"}}]
    for answer in (bare, updated):
        assert answer["response"]["patchType"] == "JSONPatch"
        assert orjson.loads(base64.b64decode(answer["response"]["patch"])) == expected
    assert kept["response"] == {"uid": "b5e2-1", "allowed": True}


async def test_vpa_warnings_are_returned_allowed_or_refused() -> None:
    vpa_resource = ("autoscaling.k8s.io", "v1", "verticalpodautoscalers")
    kind = "VerticalPodAutoscaler"
    auto = vpa_object(updatePolicy={"updateMode": "Auto"})
    auto_and_bad = vpa_object(
        updatePolicy={"updateMode": "Auto", "minReplicas": 0},
    )
    async with webhook() as w:
        allowed = await w.post(review(auto, resource=vpa_resource, kind=kind))
        refused = await w.post(review(auto_and_bad, resource=vpa_resource, kind=kind))
    for answer in (allowed, refused):
        (warning,) = answer["response"]["warnings"]
        assert warning.startswith('spec.updatePolicy: "Auto" mode is deprecated')
    assert refused["response"]["allowed"] is False


async def test_operations_endpoint() -> None:
    registry = CollectorRegistry()
    WebhookMetrics(registry)
    synced = [False]
    app = build_operations_app(registry=registry, ready=lambda: synced[0])
    async with TestClient(TestServer(app)) as client:
        health = await client.get("/healthz")
        not_ready = await client.get("/readyz")
        synced[0] = True
        ready = await client.get("/readyz")
        metrics = await (await client.get("/metrics")).text()
    assert (health.status, not_ready.status, ready.status) == (200, 500, 200)
    assert "vpa_admission_controller_admission_latency_seconds" in metrics
