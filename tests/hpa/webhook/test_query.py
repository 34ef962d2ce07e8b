"""``RecommendationQuery``: validation of what is posted, the answer for a pod, and the aggregated
API in front of it (authentication, the ``create`` SubjectAccessReview, discovery)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from hpa.app.recommendation_api import RecommendationApi, build_recommendation_app
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.awareness import HorizontalConflict
from hpa.core.vpa.policy import ContainerResourcePolicy, PodResourcePolicy
from hpa.webhook.query import API_VERSION, KIND, QueryError, parse_query, query_status
from tests.adapter.server.harness import ALICE, HeaderAuthenticator, TableAuthorizer
from tests.fakes.webhook import FakeVpaMatcher
from tests.hpa.webhook.reviews import pod, web_vpa

PATH = "/apis/recommendation.hpa.dev/v1alpha1/namespaces/shop/recommendationqueries"


def query(the_pod: Any = None, **changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "what-for-web"},
        "spec": {"pod": pod() if the_pod is None else the_pod},
    }
    document.update(changes)
    return document


def _pod_with(**metadata: Any) -> dict[str, Any]:
    base = pod()
    base["metadata"].update(metadata)
    return base


def _two_apps() -> dict[str, Any]:
    return pod(containers=[{"name": "app"}, {"name": "app"}])


INVALID = [
    ("not JSON", b"{", "body: not JSON", False),
    ("a list", b"[]", "body: must be a JSON object", False),
    (
        "wrong apiVersion",
        query(apiVersion="v1"),
        "apiVersion: must be recommendation.hpa.dev",
        True,
    ),
    ("wrong kind", query(kind="Pod"), "kind: must be RecommendationQuery", True),
    ("no spec", query(spec=None), "spec: must be an object", True),
    ("no pod", query(spec={}), "spec.pod: must be an object", True),
    ("pod not an object", query(spec={"pod": "web"}), "spec.pod: must be an object", True),
    (
        "another namespace in the query",
        query(metadata={"namespace": "other"}),
        "metadata.namespace: 'other' does not match",
        True,
    ),
    (
        "another namespace in the pod",
        query(_pod_with(namespace="other")),
        "spec.pod.metadata.namespace: 'other' does not match",
        True,
    ),
    (
        "containers not a list",
        query({"metadata": {}, "spec": {"containers": {}}}),
        "spec.pod.spec.containers: must be a list",
        True,
    ),
    (
        "no containers",
        query(pod(containers=[])),
        "spec.pod.spec.containers: must list at least one container",
        True,
    ),
    (
        "a bad quantity",
        query(pod(containers=[{"name": "app", "resources": {"requests": {"cpu": "lots"}}}])),
        "spec.pod.spec.containers[0].resources.requests.cpu",
        True,
    ),
    (
        "a nameless container",
        query(pod(containers=[{"image": "x"}])),
        "spec.pod.spec.containers[0].name: must be a non-empty string",
        True,
    ),
    (
        "duplicate containers",
        query(_two_apps()),
        "spec.pod.spec.containers[1].name: duplicate name 'app'",
        True,
    ),
    (
        "labels not strings",
        query(_pod_with(labels={"app": 1})),
        "spec.pod.metadata.labels: must be a map of strings",
        True,
    ),
]


@pytest.mark.parametrize(
    ("body", "message", "invalid"),
    [case[1:] for case in INVALID],
    ids=[case[0] for case in INVALID],
)
def test_a_query_that_cannot_be_answered_is_refused_naming_the_field(
    body: Any, message: str, invalid: bool
) -> None:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    with pytest.raises(QueryError) as raised:
        parse_query(data, namespace="shop")
    assert message in str(raised.value)
    assert raised.value.invalid is invalid


def test_a_pod_without_a_namespace_is_in_the_query_s() -> None:
    the_pod = pod()
    del the_pod["metadata"]["namespace"]
    parsed = parse_query(orjson.dumps(query(the_pod)), namespace="shop")
    assert parsed.pod.namespace == "shop"
    assert parsed.pod.name == "web-7d4b9c-%"
    assert [c.name for c in parsed.pod.containers] == ["app"]


def test_the_answer_is_the_capped_recommendation_for_each_container() -> None:
    the_pod = parse_query(orjson.dumps(query()), namespace="shop").pod
    assert query_status(the_pod, web_vpa()) == {
        "verticalPodAutoscaler": "web",
        "recommendation": {
            "containerRecommendations": [
                {"containerName": "app", "requests": {"cpu": "250m", "memory": "256Mi"}}
            ]
        },
    }
    capped = replace(
        web_vpa(),
        policy=PodResourcePolicy(
            (ContainerResourcePolicy(container_name="*", max_allowed=Resources(cpu=200)),)
        ),
    )
    entry = query_status(the_pod, capped)["recommendation"]["containerRecommendations"][0]
    assert entry["requests"] == {"cpu": "200m", "memory": "256Mi"}
    assert entry["notes"] == ["cpu capped to maxAllowed"]


def test_a_resource_an_hpa_scales_on_is_left_out() -> None:
    the_pod = parse_query(orjson.dumps(query()), namespace="shop").pod
    matched = replace(web_vpa(), conflicts=(HorizontalConflict("cpu", None, "shop/web-hpa"),))
    entry = query_status(the_pod, matched)["recommendation"]["containerRecommendations"][0]
    assert entry["requests"] == {"memory": "256Mi"}


def test_no_vpa_or_no_recommendation_is_the_status_error() -> None:
    the_pod = parse_query(orjson.dumps(query()), namespace="shop").pod
    assert query_status(the_pod, None) == {
        "error": "no VerticalPodAutoscaler matches pod shop/web-7d4b9c-%"
    }
    waiting = query_status(the_pod, replace(web_vpa(), recommendation=None))
    assert waiting["error"] == "VerticalPodAutoscaler shop/web has no recommendation yet"


# ---------------------------------------------------------------- the aggregated API


@asynccontextmanager
async def served(
    matcher: FakeVpaMatcher | None = None,
) -> AsyncIterator[tuple[TestClient[Any, Any], TableAuthorizer]]:
    authorizer = TableAuthorizer()
    api = RecommendationApi(
        matcher=matcher or FakeVpaMatcher(by_app={"web": web_vpa()}),
        authenticator=HeaderAuthenticator(),
        authorizer=authorizer,
        ready=lambda: True,
    )
    async with TestClient(TestServer(build_recommendation_app(api))) as client:
        yield client, authorizer


async def test_create_answers_the_query_with_its_status() -> None:
    async with served() as (client, authorizer):
        response = await client.post(PATH, data=orjson.dumps(query()), headers=ALICE)
        assert response.status == 201, await response.text()
        answer = await response.json()
    assert answer["kind"] == KIND
    assert answer["metadata"] == {"name": "what-for-web", "namespace": "shop"}
    assert answer["spec"] == query()["spec"]
    recommendation = answer["status"]["recommendation"]["containerRecommendations"]
    assert recommendation == [
        {"containerName": "app", "requests": {"cpu": "250m", "memory": "256Mi"}}
    ]
    (user, attributes), *_ = authorizer.asked
    assert (user, attributes.verb, attributes.resource, attributes.namespace) == (
        "alice",
        "create",
        "recommendationqueries",
        "shop",
    )
    assert (attributes.api_group, attributes.api_version) == ("recommendation.hpa.dev", "v1alpha1")


async def test_a_match_that_fails_is_the_status_error_not_a_500() -> None:
    async with served(FakeVpaMatcher(error=RuntimeError("informers not synced"))) as (client, _):
        response = await client.post(PATH, data=orjson.dumps(query()), headers=ALICE)
        assert response.status == 201
        answer = await response.json()
    assert answer["status"] == {
        "error": "no VerticalPodAutoscaler could be matched: informers not synced"
    }


async def test_unauthenticated_is_401_and_unauthorized_is_403() -> None:
    async with served() as (client, _):
        anonymous = await client.post(PATH, data=orjson.dumps(query()))
        assert anonymous.status == 401
        bob = await client.post(PATH, data=orjson.dumps(query()), headers={"X-Test-User": "bob"})
        assert bob.status == 403
        body = await bob.json()
    assert body["reason"] == "Forbidden"
    assert 'User "bob" cannot create resource "recommendationqueries"' in body["message"]
    assert 'in the namespace "shop"' in body["message"]


async def test_an_invalid_query_is_422_and_garbage_400() -> None:
    async with served() as (client, _):
        invalid = await client.post(PATH, data=orjson.dumps(query(kind="Pod")), headers=ALICE)
        assert invalid.status == 422
        body = await invalid.json()
        assert body["reason"] == "Invalid"
        assert body["message"].startswith("RecommendationQuery.recommendation.hpa.dev is invalid")
        garbage = await client.post(PATH, data=b"{", headers=ALICE)
        assert garbage.status == 400


async def test_only_create_is_served_and_discovery_lists_it() -> None:
    async with served() as (client, _):
        listing = await client.get(PATH, headers=ALICE)
        assert listing.status == 405
        named = await client.post(f"{PATH}/x", data=orjson.dumps(query()), headers=ALICE)
        assert named.status == 404
        resources = await (
            await client.get("/apis/recommendation.hpa.dev/v1alpha1", headers=ALICE)
        ).json()
        groups = await (await client.get("/apis", headers=ALICE)).json()
        health = await client.get("/healthz")
        assert health.status == 200
    (resource,) = resources["resources"]
    assert (resource["name"], resource["kind"], resource["verbs"]) == (
        "recommendationqueries",
        "RecommendationQuery",
        ["create"],
    )
    assert [g["name"] for g in groups["groups"]] == ["recommendation.hpa.dev"]
