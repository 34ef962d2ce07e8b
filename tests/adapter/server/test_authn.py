"""Authentication over real TLS: front-proxy client certificates with request headers, x509
users, bearer tokens through TokenReview; the trust settings come from the ConfigMap."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import orjson
import pytest

from tests.adapter.server.harness import value
from tests.adapter.server.tlsserver import running_server

PATH = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/x/pods/*/m"
FRONT_PROXY_HEADERS = {
    "X-Remote-User": "alice",
    "X-Remote-Group": "system:authenticated",
    "X-Remote-Extra-Scopes": "metrics",
}


async def test_front_proxy_certificate_with_allowed_cn_authenticates_the_header_user(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, sar_allowed={"alice"}) as s:
        s.providers.custom.by_selector = [value("web-1", "m", milli=1000)]
        code, body = await s.get(PATH, cert=s.pki.front_proxy_client, headers=FRONT_PROXY_HEADERS)
        assert s.kube.configmap_reads == 1
    assert code == 200, body
    assert orjson.loads(body)["items"][0]["value"] == "1"
    spec = s.kube.access_reviews[0]["spec"]
    assert spec["user"] == "alice"
    assert spec["groups"] == ["system:authenticated"]
    assert spec["extra"] == {"scopes": ["metrics"]}
    assert spec["resourceAttributes"] == {
        "namespace": "x",
        "verb": "get",
        "group": "custom.metrics.k8s.io",
        "version": "v1beta2",
        "resource": "pods",
        "subresource": "m",
        "name": "*",
    }


async def test_front_proxy_refusals_are_401(tmp_path: Path) -> None:
    async with running_server(tmp_path, sar_allowed={"alice"}) as s:
        disallowed_cn = await s.get(
            PATH, cert=s.pki.front_proxy_intruder, headers=FRONT_PROXY_HEADERS
        )
        no_cert = await s.get(PATH, cert=None, headers=FRONT_PROXY_HEADERS)
        no_user_header = await s.get(PATH, cert=s.pki.front_proxy_client)
    for code, body in (disallowed_cn, no_cert, no_user_header):
        assert code == 401
        assert orjson.loads(body) == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }
    assert s.kube.access_reviews == []  # never got as far as authorization


async def test_certificate_from_another_trusted_ca_does_not_vouch_for_headers(
    tmp_path: Path,
) -> None:
    """A client-CA certificate authenticates its own CN; X-Remote-User is ignored."""
    async with running_server(tmp_path, sar_allowed={"alice"}) as s:
        code, body = await s.get(PATH, cert=s.pki.carol, headers=FRONT_PROXY_HEADERS)
    assert code == 403
    status = orjson.loads(body)
    assert status["reason"] == "Forbidden"
    assert 'User "carol" cannot get resource "pods/m"' in status["message"]
    assert s.kube.access_reviews[0]["spec"]["user"] == "carol"
    assert s.kube.access_reviews[0]["spec"]["groups"] == ["devs", "system:authenticated"]


async def test_certificate_from_an_unknown_ca_fails_the_handshake(tmp_path: Path) -> None:
    async with running_server(tmp_path, sar_allowed={"alice"}) as s:
        with pytest.raises(aiohttp.ClientError):
            await s.get(PATH, cert=s.pki.rogue, headers=FRONT_PROXY_HEADERS)
    assert s.kube.access_reviews == []


async def test_bearer_token_through_token_review_is_cached_for_the_ttl(tmp_path: Path) -> None:
    async with running_server(tmp_path, sar_allowed={"hpa-controller"}) as s:
        s.kube.tokens["good"] = {
            "username": "hpa-controller",
            "uid": "42",
            "groups": ["system:serviceaccounts"],
        }
        s.providers.custom.by_selector = [value("web-1", "m", milli=1000)]
        ok = await s.get(PATH, cert=None, headers={"Authorization": "Bearer good"})
        again = await s.get(PATH, cert=None, headers={"Authorization": "Bearer good"})
        reviews_within_ttl = len(s.kube.token_reviews)
        await s.clock.advance(10.0)
        await s.get(PATH, cert=None, headers={"Authorization": "Bearer good"})
        bad = await s.get(PATH, cert=None, headers={"Authorization": "Bearer bad"})
    assert ok[0] == again[0] == 200
    assert s.kube.access_reviews[0]["spec"]["groups"] == [
        "system:serviceaccounts",
        "system:authenticated",
    ]
    assert reviews_within_ttl == 1
    assert len(s.kube.token_reviews) == 3
    assert s.kube.token_reviews[0]["spec"] == {"token": "good"}
    assert s.kube.access_reviews[0]["spec"]["uid"] == "42"
    assert bad[0] == 401


async def test_health_is_served_without_any_credentials_over_tls(tmp_path: Path) -> None:
    async with running_server(tmp_path, sar_allowed=set()) as s:
        for path in ("/healthz", "/livez", "/readyz"):
            assert await s.get(path, cert=None) == (200, b"ok")
        metrics = await s.get("/metrics", cert=None)
    assert metrics[0] == 401
    assert s.kube.access_reviews == []


async def test_aggregator_identity_without_groups_gets_system_authenticated(tmp_path: Path) -> None:
    """kube-apiserver fetches /openapi/v2 as ``system:aggregator`` with no group headers; RBAC
    grants /openapi/* to ``system:authenticated``, which every authenticated user is in."""
    async with running_server(tmp_path, sar_allowed={"system:aggregator"}) as s:
        code, body = await s.get(
            "/openapi/v2",
            cert=s.pki.front_proxy_client,
            headers={"X-Remote-User": "system:aggregator"},
        )
    assert code == 200
    assert orjson.loads(body)["swagger"] == "2.0"
    assert s.kube.access_reviews[0]["spec"]["groups"] == ["system:authenticated"]
    assert s.kube.access_reviews[0]["spec"]["nonResourceAttributes"] == {
        "path": "/openapi/v2",
        "verb": "get",
    }


async def test_system_masters_are_allowed_without_a_review(tmp_path: Path) -> None:
    async with running_server(tmp_path, sar_allowed=set()) as s:
        code, _ = await s.get(
            "/apis",
            cert=s.pki.front_proxy_client,
            headers={"X-Remote-User": "admin", "X-Remote-Group": "system:masters"},
        )
    assert code == 200
    assert s.kube.access_reviews == []


@pytest.mark.parametrize(
    "status",
    [
        {"authenticated": "false", "user": {"username": "mallory"}},
        {"authenticated": "true", "user": {"username": "mallory"}},
        {"authenticated": 1, "user": {"username": "mallory"}},
        {"authenticated": True, "user": {"username": 7}},
        {"authenticated": True, "user": {"username": "mallory", "groups": "system:masters"}},
        {"authenticated": True, "user": {"username": "mallory", "extra": {"k": "v"}}},
        {"authenticated": True, "user": "mallory"},
    ],
)
async def test_a_malformed_token_review_authenticates_no_one(
    tmp_path: Path, status: dict[str, object]
) -> None:
    """Go's decoder refuses these TokenReviewStatus answers; so do we (401, fail closed)."""
    async with running_server(tmp_path, sar_allowed={"mallory"}) as s:
        s.kube.tokens["t"] = {"username": "mallory"}
        s.kube.token_status = status
        code, _ = await s.get(PATH, cert=None, headers={"Authorization": "Bearer t"})
    assert code == 401
    assert s.kube.access_reviews == []
