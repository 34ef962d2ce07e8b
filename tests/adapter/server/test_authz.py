"""SubjectAccessReview authorization: the review sent, the ≤10 s cache on an injected clock,
and failing closed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import pytest

from adapter.server.authn import UserInfo
from adapter.server.authz import AuthorizationError, SubjectAccessReviewAuthorizer
from adapter.server.requestinfo import request_attributes
from hpa.kube.client import KubeClient, RetryPolicy
from tests.adapter.server.harness import ALICE, TableAuthorizer, serve
from tests.fakes.clock import FakeClock
from tests.fakes.kubeauth import FakeKubeAuth

ALICE_USER = UserInfo("alice", uid="u1", groups=("team-a",), extra={"scopes": ("x",)})
PODS = request_attributes(
    "GET", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/x/pods/*/m", query={}
)


@asynccontextmanager
async def authorizer(
    *, ttl_seconds: float = 10.0
) -> AsyncIterator[tuple[SubjectAccessReviewAuthorizer, FakeKubeAuth, FakeClock]]:
    clock = FakeClock()
    async with FakeKubeAuth() as kube, aiohttp.ClientSession() as http:
        kube.sar_rule = lambda spec: (spec["user"] == "alice", "")
        api = KubeClient(http, kube.url, retry=RetryPolicy(max_attempts=1), clock=clock)
        yield SubjectAccessReviewAuthorizer(api, clock=clock, ttl_seconds=ttl_seconds), kube, clock


async def test_review_carries_user_and_resource_attributes() -> None:
    async with authorizer() as (authz, kube, _):
        decision = await authz.authorize(ALICE_USER, PODS)
    assert decision.allowed
    assert kube.access_reviews == [
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "alice",
                "groups": ["team-a"],
                "uid": "u1",
                "extra": {"scopes": ["x"]},
                "resourceAttributes": {
                    "namespace": "x",
                    "verb": "get",
                    "group": "custom.metrics.k8s.io",
                    "version": "v1beta2",
                    "resource": "pods",
                    "subresource": "m",
                    "name": "*",
                },
            },
        }
    ]


async def test_non_resource_review_for_metrics() -> None:
    async with authorizer() as (authz, kube, _):
        await authz.authorize(ALICE_USER, request_attributes("GET", "/metrics", query={}))
    assert kube.access_reviews[0]["spec"]["nonResourceAttributes"] == {
        "path": "/metrics",
        "verb": "get",
    }


async def test_answers_are_cached_at_most_ttl_seconds() -> None:
    bob = UserInfo("bob")
    async with authorizer(ttl_seconds=10.0) as (authz, kube, clock):
        for _ in range(3):
            assert (await authz.authorize(ALICE_USER, PODS)).allowed
            assert not (await authz.authorize(bob, PODS)).allowed  # denials are cached too
        assert len(kube.access_reviews) == 2
        await clock.advance(9.999)
        await authz.authorize(ALICE_USER, PODS)
        assert len(kube.access_reviews) == 2
        await clock.advance(0.001)
        await authz.authorize(ALICE_USER, PODS)
        assert len(kube.access_reviews) == 3


async def test_a_revoked_grant_takes_effect_within_the_ttl() -> None:
    async with authorizer(ttl_seconds=5.0) as (authz, kube, clock):
        assert (await authz.authorize(ALICE_USER, PODS)).allowed
        kube.sar_rule = lambda spec: (False, "revoked")
        await clock.advance(5.0)
        decision = await authz.authorize(ALICE_USER, PODS)
    assert (decision.allowed, decision.reason) == (False, "revoked")


async def test_failed_review_fails_closed_and_is_not_cached() -> None:
    async with authorizer() as (authz, kube, _):
        kube.sar_failures = 1
        with pytest.raises(AuthorizationError):
            await authz.authorize(ALICE_USER, PODS)
        assert (await authz.authorize(ALICE_USER, PODS)).allowed
    assert len(kube.access_reviews) == 2


@pytest.mark.parametrize("ttl", [0.0, 10.5, 60.0])
def test_cache_ttl_above_ten_seconds_is_refused(ttl: float) -> None:
    with pytest.raises(ValueError, match="10"):
        SubjectAccessReviewAuthorizer(object(), clock=FakeClock(), ttl_seconds=ttl)  # type: ignore[arg-type]


async def test_server_answers_500_status_when_authorization_fails() -> None:
    async with serve(authorizer=TableAuthorizer(fail=True)) as h:
        response = await h.client.get(
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/x/pods/a/m", headers=ALICE
        )
        body = await response.json()
    assert response.status == 500
    assert body["reason"] == "InternalError"
    assert body["message"] == "Internal error occurred: authorization failed: connection refused"


async def test_forbidden_status_names_user_verb_resource_and_namespace() -> None:
    async with serve() as h:
        response = await h.client.get(
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/x/pods/a/m",
            headers={"X-Test-User": "bob"},
        )
        body = await response.json()
        external = await h.client.get(
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/lag",
            headers={"X-Test-User": "bob"},
        )
        external_body = await external.json()
    assert response.status == 403
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods.custom.metrics.k8s.io "a" is forbidden: User "bob" cannot get resource '
        '"pods/m" in API group "custom.metrics.k8s.io" in the namespace "x"',
        "reason": "Forbidden",
        "details": {"name": "a", "group": "custom.metrics.k8s.io", "kind": "pods"},
        "code": 403,
    }
    assert external_body["message"] == (
        'lag.external.metrics.k8s.io is forbidden: User "bob" cannot list resource "lag" '
        'in API group "external.metrics.k8s.io" in the namespace "default"'
    )


@pytest.mark.parametrize(
    "status",
    [
        {"allowed": "false"},
        {"allowed": "true"},
        {"allowed": 1},
        {"allowed": [True]},
        {"allowed": True, "denied": "false"},
        {"allowed": True, "reason": 7},
        {"allowed": True, "evaluationError": {"x": 1}},
    ],
)
async def test_a_non_boolean_review_answer_is_a_failed_review_never_an_allow(
    status: dict[str, object],
) -> None:
    """Go's decoder refuses a string where SubjectAccessReviewStatus has a bool: fail closed."""
    async with authorizer() as (authz, kube, _):
        kube.sar_status = status
        with pytest.raises(AuthorizationError, match=r"status\.\w+ is a"):
            await authz.authorize(ALICE_USER, PODS)
        with pytest.raises(AuthorizationError):
            await authz.authorize(ALICE_USER, PODS)
    assert len(kube.access_reviews) == 2  # a failed review is not cached


@pytest.mark.parametrize(
    ("status", "allowed"),
    [({}, False), ({"allowed": None}, False), ({"allowed": True, "denied": True}, False)],
)
async def test_absent_or_null_booleans_are_false(status: dict[str, object], allowed: bool) -> None:
    async with authorizer() as (authz, kube, _):
        kube.sar_status = status
        assert (await authz.authorize(ALICE_USER, PODS)).allowed is allowed


async def test_concurrent_requests_without_a_cached_decision_share_one_review() -> None:
    bob = UserInfo("bob")
    async with authorizer() as (authz, kube, _):
        decisions = await asyncio.gather(
            *(authz.authorize(ALICE_USER, PODS) for _ in range(5)),
            *(authz.authorize(bob, PODS) for _ in range(3)),
        )
        assert [decision.allowed for decision in decisions] == [True] * 5 + [False] * 3
        assert len(kube.access_reviews) == 2  # one per user, not one per request
        assert authz.reviews == 2
