"""The ``recommendation.hpa.dev/v1alpha1`` aggregated API: ``RecommendationQuery``, create only.

Served by ``hpa vpa admission --recommendation-api-port=N`` on its own TLS listener, behind
kube-apiserver's aggregation layer (an ``APIService`` for ``v1alpha1.recommendation.hpa.dev``).
The server machinery is the metrics adapter's (``adapter.server``): the delegated authentication
(front-proxy request headers verified against ``extension-apiserver-authentication``, client
certificates, TokenReview), the per-request SubjectAccessReview, the request parse, the
``metav1.Status`` errors and the discovery documents. The answer is the admission webhook's
(:mod:`hpa.webhook.query`), over the informers the webhook already keeps.

Paths: ``/apis``, ``/apis/recommendation.hpa.dev``, ``/apis/recommendation.hpa.dev/v1alpha1``
(discovery; ``recommendationqueries`` with the one verb ``create``), ``/openapi/v2`` and
``/openapi/v3`` (empty documents: kube-apiserver aggregates them), health, and
``POST /apis/recommendation.hpa.dev/v1alpha1/namespaces/{namespace}/recommendationqueries``,
authorized as ``create`` of ``recommendationqueries`` in that namespace (upstream's request-info
reading of a POST). Every other verb on the resource is 405; anything else is 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import orjson
import structlog
from aiohttp import web

from adapter.server import discovery, status
from adapter.server.app import peer_certificate
from adapter.server.authn import Authenticator, Credentials
from adapter.server.authz import Authorizer, require_authorized
from adapter.server.requestinfo import (
    RequestAttributes,
    RequestInfo,
    RequestPathError,
    parse_request,
)
from adapter.server.settings import DEFAULT_ALWAYS_ALLOW_GROUPS, DEFAULT_ALWAYS_ALLOW_PATHS
from hpa.core.vpa.awareness import HpaAwareness
from hpa.webhook.handler import VpaMatcher
from hpa.webhook.query import GROUP, KIND, RESOURCE, VERSION, QueryError, answer_query, parse_query

__all__ = ["GROUP_INFO", "RecommendationApi", "build_recommendation_app"]

log = structlog.get_logger("hpa.app.recommendation_api")

GROUP_INFO = discovery.GroupInfo(GROUP, (VERSION,))
RESOURCES: dict[str, Any] = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": f"{GROUP}/{VERSION}",
    "resources": [
        {
            "name": RESOURCE,
            "singularName": "recommendationquery",
            "namespaced": True,
            "kind": KIND,
            "verbs": ["create"],
        }
    ],
}
OPENAPI_V2: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "hpa recommendation API", "version": VERSION},
    "paths": {},
    "definitions": {},
}
OPENAPI_V3: dict[str, Any] = {"paths": {}}
INFO = web.RequestKey("info", RequestInfo)


@dataclass(kw_only=True)
class RecommendationApi:
    """What the handlers use: the webhook's matcher, and the adapter's authentication and
    authorization."""

    matcher: VpaMatcher
    authenticator: Authenticator
    authorizer: Authorizer
    ready: Callable[[], bool]
    awareness: HpaAwareness = HpaAwareness.EXCLUDE
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS


def _json(body: Any, *, status_code: int = 200) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status_code, content_type="application/json"
    )


def _attributes(method: str, raw_path: str, query: Any) -> RequestInfo:
    """The request's parse, a POST read as ``create`` (upstream's ``NewRequestInfo``)."""
    info = parse_request(method, raw_path, query=query)
    attributes = info.attributes
    if attributes.is_resource_request and method == "POST":
        return replace(info, attributes=replace(attributes, verb="create"))
    return info


def build_recommendation_app(api: RecommendationApi) -> web.Application:
    """The application; serve it on a TLS listener whose client CAs follow the authenticator."""

    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            info = _attributes(request.method, request.rel_url.raw_path, request.query)
            request[INFO] = info
            if info.attributes.path not in api.always_allow_paths:
                credentials = Credentials(request.headers, peer_certificate(request))
                user = await api.authenticator.authenticate(credentials)
                if user is None:
                    raise status.unauthorized()
                await require_authorized(
                    api.authorizer,
                    user,
                    info.attributes,
                    always_allow_groups=api.always_allow_groups,
                )
            return await handler(request)
        except RequestPathError as error:
            return status.status_response(status.bad_request(str(error)))
        except status.StatusError as error:
            return status.status_response(error)
        except Exception as error:
            log.exception("request_failed", path=request.path, error=repr(error))
            return status.status_response(status.internal_error("unexpected server error"))

    async def dispatch(request: web.Request) -> web.Response:
        info = request[INFO]
        attributes = info.attributes
        if attributes.is_resource_request:
            return await _resource(api, request, attributes, info)
        if request.method not in ("GET", "HEAD"):
            raise status.method_not_allowed(request.method)
        segments = info.segments
        if segments in (("healthz",), ("livez",)):
            return web.Response(text="ok")
        if segments == ("readyz",):
            if not api.ready():
                return web.Response(text="[-]informers not synced\n", status=500)
            return web.Response(text="ok")
        documents: dict[tuple[str, ...], Any] = {
            ("apis",): orjson.loads(discovery.api_group_list((GROUP_INFO,))),
            ("apis", GROUP): GROUP_INFO.document(),
            ("apis", GROUP, VERSION): RESOURCES,
            ("openapi", "v2"): OPENAPI_V2,
            ("openapi", "v3"): OPENAPI_V3,
        }
        if segments in documents:
            return _json(documents[segments])
        raise status.not_found_path()

    app = web.Application(middlewares=[guard])
    app.router.add_route("*", "/{tail:.*}", dispatch)
    return app


async def _resource(
    api: RecommendationApi, request: web.Request, attributes: RequestAttributes, info: RequestInfo
) -> web.Response:
    if (
        attributes.api_group != GROUP
        or attributes.api_version != VERSION
        or attributes.resource != RESOURCE
        or not attributes.namespace
        or len(info.parts) != 1
    ):
        raise status.not_found_path()
    if attributes.verb != "create":
        raise status.method_not_allowed(request.method)
    body = await request.read()
    try:
        query = parse_query(body, namespace=attributes.namespace)
    except QueryError as error:
        if not error.invalid:
            raise status.bad_request(str(error)) from error
        raise status.StatusError(
            422,
            "Invalid",
            message=f"{KIND}.{GROUP} is invalid: {error}",
            details={"group": GROUP, "kind": KIND},
        ) from error
    answer = await answer_query(query, api.matcher, awareness=api.awareness)
    log.info(
        "recommendation_query",
        pod=f"{query.pod.namespace}/{query.pod.name}",
        vpa=answer["status"].get("verticalPodAutoscaler"),
        error=answer["status"].get("error"),
    )
    return _json(answer, status_code=201)
