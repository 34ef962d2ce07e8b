"""One parse per request: what authorization checks is what routing serves.

Regression tests for three authorization holes: an encoded slash that made authorization and
routing read different segments, ``/debug/explain`` revealing a metric its user may not read, and a
root-form namespace path served under attributes that grant nothing about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from yarl import URL

from adapter.providers import ExternalMetricValue
from adapter.server.authn import UserInfo
from adapter.server.authz import Decision
from adapter.server.requestinfo import RequestAttributes, RequestPathError, parse_request
from adapter.server.routing import (
    CustomMetricTarget,
    ExternalMetricTarget,
    MetricRequest,
    parse_metric_request,
    route,
)
from hpa.core.quantity import Format, Quantity
from tests.adapter.server.harness import ALICE, STAMP, serve, value

EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"
CUSTOM = "/apis/custom.metrics.k8s.io/v1beta2"


@dataclass
class GrantAuthorizer:
    """Allows exactly the listed (verb, group, namespace, resource, name) grants; ``*`` in the
    name allows any name, and non-resource paths are granted by path."""

    grants: set[tuple[str, str, str, str, str]] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    asked: list[RequestAttributes] = field(default_factory=list)

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> Decision:
        self.asked.append(attributes)
        if not attributes.is_resource_request:
            return Decision(attributes.path in self.paths)
        a = attributes
        exact = (a.verb, a.api_group, a.namespace, a.resource, a.name)
        wildcard = (a.verb, a.api_group, a.namespace, a.resource, "*")
        return Decision(exact in self.grants or wildcard in self.grants)


def _external(name: str) -> ExternalMetricValue:
    return ExternalMetricValue(
        name,
        {},
        value=Quantity.from_milli(1000, Format.DECIMAL_SI),
        timestamp=STAMP,
        window_seconds=None,
    )


async def test_an_encoded_slash_in_a_segment_is_refused_before_authorization() -> None:
    """Was: authorized as ``list allowed-metric`` in ns1, served ``other-metric`` for the
    namespace ``ns1/allowed-metric``."""
    authorizer = GrantAuthorizer(
        grants={("list", "external.metrics.k8s.io", "ns1", "allowed-metric", "")}
    )
    async with serve(authorizer=authorizer) as h:  # type: ignore[arg-type]
        h.providers.external.values = [_external("v")]
        attack = URL(EXTERNAL + "/namespaces/ns1%2Fallowed-metric/other-metric", encoded=True)
        response = await h.client.get(attack, headers=ALICE)
        body = await response.json()
        lower = URL(EXTERNAL + "/namespaces/ns1%2fallowed-metric/other-metric", encoded=True)
        lower_case = await h.client.get(lower, headers=ALICE)
        allowed = await h.client.get(EXTERNAL + "/namespaces/ns1/allowed-metric", headers=ALICE)
        other = await h.client.get(EXTERNAL + "/namespaces/ns1/other-metric", headers=ALICE)
    assert (response.status, body["reason"]) == (400, "BadRequest")
    assert "encodes a slash" in body["message"]
    assert lower_case.status == 400
    assert allowed.status == 200
    assert other.status == 403
    assert h.providers.external.calls == [("allowed-metric", "ns1", "")]
    assert [a.resource for a in authorizer.asked] == ["allowed-metric", "other-metric"]


@pytest.mark.parametrize(
    "raw",
    [
        CUSTOM + "/namespaces/x/pods/a%2Fb/m",
        CUSTOM + "/namespaces/x/pods/%2E%2E/m",
        CUSTOM + "/namespaces/x/pods/a%zz/m",
        CUSTOM + "/namespaces/x/pods/%ff/m",
    ],
)
async def test_paths_with_more_than_one_reading_are_400(raw: str) -> None:
    async with serve() as h:
        response = await h.client.get(URL(raw, encoded=True), headers=ALICE)
        body = await response.json()
    assert (response.status, body["kind"], body["reason"]) == (400, "Status", "BadRequest")
    assert h.providers.custom.calls == []
    assert h.authorizer.asked == []


@pytest.mark.parametrize(
    "path",
    [
        CUSTOM + "///m",
        CUSTOM + "/namespaces//pods/a/m",
        CUSTOM + "/namespaces/x//a/m",
        EXTERNAL + "/namespaces//lag",
        "/apis/metrics.k8s.io/v1beta1/namespaces//pods",
    ],
)
async def test_an_empty_segment_names_nothing(path: str) -> None:
    """Found by the property below: ``…/v1beta1///m`` was routed as a custom metric of the
    resource ``""``."""
    async with serve() as h:
        response = await h.client.get(URL(path, encoded=True), headers=ALICE)
    assert response.status == 404
    assert h.providers.custom.calls == []
    assert h.providers.external.calls == []


async def test_percent_encoded_ordinary_characters_are_decoded_once() -> None:
    authorizer = GrantAuthorizer(grants={("get", "custom.metrics.k8s.io", "x", "pods", "web-1")})
    async with serve(authorizer=authorizer) as h:  # type: ignore[arg-type]
        h.providers.custom.by_name[("pods", "x", "web-1", "m")] = value("web-1", "m", milli=1)
        response = await h.client.get(
            URL(CUSTOM + "/namespaces/x/pods/web%2D1/m", encoded=True), headers=ALICE
        )
    assert response.status == 200
    assert authorizer.asked[0].name == "web-1"


async def test_the_root_form_namespace_path_is_not_served() -> None:
    """Was: ``namespaces/x/m`` served the namespace's metric ``m`` while authorization read
    ``list m``. The canonical ``namespaces/x/metrics/m`` is ``get metrics/m``."""
    authorizer = GrantAuthorizer(
        grants={
            ("list", "custom.metrics.k8s.io", "x", "m", ""),
            ("get", "custom.metrics.k8s.io", "x", "metrics", "m"),
        }
    )
    async with serve(authorizer=authorizer) as h:  # type: ignore[arg-type]
        h.providers.custom.by_name[("namespaces", None, "x", "m")] = value(
            "x", "m", milli=5, namespace="", kind="Namespace"
        )
        root_form = await h.client.get(CUSTOM + "/namespaces/x/m", headers=ALICE)
        root_form_body = await root_form.json()
        calls_after_root_form = list(h.providers.custom.calls)
        canonical = await h.client.get(CUSTOM + "/namespaces/x/metrics/m", headers=ALICE)
    assert root_form.status == 400  # prometheus-adapter: BadRequest "invalid request path"
    assert root_form_body["message"] == "invalid request path"
    assert calls_after_root_form == []
    assert canonical.status == 200
    assert authorizer.asked[-1].verb == "get"
    assert (authorizer.asked[-1].resource, authorizer.asked[-1].name) == ("metrics", "m")


async def test_debug_explain_needs_the_grant_of_the_path_it_explains() -> None:
    """Was: a user allowed only ``/debug/explain`` read another namespace's PromQL and values."""
    seen: list[MetricRequest] = []

    async def explain(request: MetricRequest) -> dict[str, Any]:
        seen.append(request)
        return {"request": {"metric": request.target.metric}}

    authorizer = GrantAuthorizer(
        paths={"/debug/explain"},
        grants={("list", "external.metrics.k8s.io", "mine", "lag", "")},
    )
    async with serve(authorizer=authorizer, explain=explain) as h:  # type: ignore[arg-type]
        theirs = await h.client.get(
            "/debug/explain", params={"path": EXTERNAL + "/namespaces/theirs/lag"}, headers=ALICE
        )
        theirs_body = await theirs.json()
        mine = await h.client.get(
            "/debug/explain", params={"path": EXTERNAL + "/namespaces/mine/lag"}, headers=ALICE
        )
        sneaky = await h.client.get(
            "/debug/explain",
            params={"path": EXTERNAL + "/namespaces/mine%2Flag/other"},
            headers=ALICE,
        )
        not_a_metric = await h.client.get(
            "/debug/explain", params={"path": "/apis/metrics.k8s.io/v1beta1/pods"}, headers=ALICE
        )
    assert theirs.status == 403
    assert 'User "alice" cannot list resource "lag"' in theirs_body["message"]
    assert 'in the namespace "theirs"' in theirs_body["message"]
    assert mine.status == 200
    assert sneaky.status == 400
    assert not_a_metric.status == 400
    assert [r.target for r in seen] == [ExternalMetricTarget("v1beta1", "mine", "lag")]


async def test_debug_explain_without_its_own_grant_is_403_before_the_metric_is_asked() -> None:
    authorizer = GrantAuthorizer(grants={("list", "external.metrics.k8s.io", "mine", "lag", "")})
    async with serve(authorizer=authorizer, explain=lambda r: None) as h:  # type: ignore[arg-type]
        response = await h.client.get(
            "/debug/explain", params={"path": EXTERNAL + "/namespaces/mine/lag"}, headers=ALICE
        )
    assert response.status == 403
    assert [a.path for a in authorizer.asked] == ["/debug/explain"]


def test_the_explain_path_parse_is_the_server_parse() -> None:
    request = parse_metric_request(
        CUSTOM + "/namespaces/x/pods/*/m?labelSelector=app%3Dweb",
        query={"metricLabelSelector": "a"},
    )
    assert request.target == CustomMetricTarget("v1beta2", "x", "pods", "*", "m")
    assert request.info == parse_request(
        "GET", CUSTOM + "/namespaces/x/pods/*/m", query={"labelSelector": "app=web"}
    )
    assert (request.label_selector, request.metric_label_selector) == ("app=web", "a")
    with pytest.raises(ValueError, match=r"not a custom\.metrics"):
        parse_metric_request(CUSTOM + "/namespaces/x/m")


SEGMENT = st.lists(
    st.sampled_from(
        [
            "ns1",
            "x",
            "pods",
            "metrics",
            "namespaces",
            "status",
            "*",
            "m",
            "%2F",
            "%2f",
            "%25",
            "%2E",
            ".",
            "a%2Fb",
            "%41",
            "-",
            "",
        ]
    ),
    min_size=0,
    max_size=3,
).map("".join)


@given(
    group=st.sampled_from(
        ["custom.metrics.k8s.io", "external.metrics.k8s.io", "metrics.k8s.io", "x.io"]
    ),
    segments=st.lists(SEGMENT, min_size=0, max_size=6),
)
def test_routing_serves_exactly_the_authorized_attributes(group: str, segments: list[str]) -> None:
    """For every path: either it is refused (400/404), or the metric served is named by the very
    fields authorization saw, and no decoded segment holds a slash."""
    raw = f"/apis/{group}/v1beta1/" + "/".join(segments)
    try:
        info = parse_request("GET", raw, query={})
    except RequestPathError:
        assert any("%2f" in s.lower() or "%" in s or "." in s for s in segments)
        return
    assert all("/" not in s for s in info.segments)
    a = info.attributes
    target = route(info)
    if isinstance(target, ExternalMetricTarget):
        assert (target.namespace, target.metric, a.name) == (a.namespace, a.resource, "")
    elif isinstance(target, CustomMetricTarget):
        if target.name:
            assert (target.resource, target.name, target.metric) == (
                a.resource,
                a.name,
                a.subresource,
            )
            assert target.namespace in (a.namespace, None)
        else:
            assert (a.resource, a.name, a.subresource) == ("metrics", target.metric, "")
            assert target.namespace == a.namespace
