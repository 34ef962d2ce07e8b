"""Authorization through SubjectAccessReview, cached at most 10 s, failing closed.

Upstream counterparts: k8s.io/apiserver ``plugin/pkg/authorizer/webhook`` (the SAR body:
``spec{user, uid, groups, extra, resourceAttributes{namespace, verb, group, version, resource,
subresource, name} | nonResourceAttributes{path, verb}}``; allowed and denied answers cached,
``--authorization-webhook-cache-authorized-ttl``/``-unauthorized-ttl``, both 10 s for delegated
servers) and ``server/options/authorization.go`` (``--authorization-always-allow-paths``, default
``/healthz``, ``/readyz``, ``/livez``).

The answer is decoded strictly: a ``status.allowed`` that is not a JSON boolean (``"false"``, ``1``)
is a failed review, as Go's decoder would fail it, never an allow.

Deliberate deviations: a SAR that fails (API server unreachable, error status, malformed answer) is
an ``AuthorizationError`` that the server answers with 500 and never caches; upstream retries
with backoff first. The cache TTL is capped at 10 s. Concurrent requests whose decision is not
cached share one SAR (``SingleFlight``) instead of sending one each: at 1,000 requests/s over
100 namespaces, each expiry of a namespace's decision otherwise sent a SAR per request until the
first answer came back, which the client's QPS limit turned into seconds of waiting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import structlog

from adapter.prometheus.singleflight import SingleFlight
from adapter.server import status
from adapter.server.authn import UserInfo
from adapter.server.ports import Clock, KubeApi
from adapter.server.requestinfo import RequestAttributes, forbidden_message

log = structlog.get_logger(__name__)

SUBJECT_ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
MAX_CACHE_TTL_SECONDS = 10.0

_T = TypeVar("_T")


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class AuthorizationError(Exception):
    """The decision could not be made; the request is refused."""


class Authorizer(Protocol):
    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> Decision:
        """Raises ``AuthorizationError`` when no decision could be made."""
        ...


async def require_authorized(
    authorizer: Authorizer,
    user: UserInfo,
    attributes: RequestAttributes,
    *,
    always_allow_groups: tuple[str, ...],
) -> None:
    """``WithAuthorization``: members of an always-allowed group pass; everyone else needs a
    review that allows ``attributes``. Raises the 403 (or 500) ``StatusError``."""
    if any(group in always_allow_groups for group in user.groups):
        return
    try:
        decision = await authorizer.authorize(user, attributes)
    except AuthorizationError as error:
        raise status.internal_error(f"authorization failed: {error}") from error
    if not decision.allowed:
        raise status.forbidden(
            forbidden_message(user.name, attributes),
            resource=attributes.resource,
            group=attributes.api_group,
            name=attributes.name,
            reason=decision.reason,
        )


def subject_access_review(user: UserInfo, attributes: RequestAttributes) -> dict[str, Any]:
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}
    if attributes.is_resource_request:
        spec["resourceAttributes"] = {
            "namespace": attributes.namespace,
            "verb": attributes.verb,
            "group": attributes.api_group,
            "version": attributes.api_version,
            "resource": attributes.resource,
            "subresource": attributes.subresource,
            "name": attributes.name,
        }
    else:
        spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": spec,
    }


def _cache_key(user: UserInfo, attributes: RequestAttributes) -> tuple[Any, ...]:
    extra = tuple(sorted((k, tuple(v)) for k, v in user.extra.items()))
    return (user.name, user.uid, tuple(user.groups), extra, attributes)


class SubjectAccessReviewAuthorizer:
    def __init__(self, api: KubeApi, *, clock: Clock, ttl_seconds: float = 10.0) -> None:
        if not 0 < ttl_seconds <= MAX_CACHE_TTL_SECONDS:
            raise ValueError("the SubjectAccessReview cache TTL must be in (0, 10] seconds")
        self._api = api
        self._clock = clock
        self._ttl_seconds = ttl_seconds
        self._cache: dict[tuple[Any, ...], tuple[float, Decision]] = {}
        self._flight: SingleFlight[tuple[Any, ...], Decision] = SingleFlight()
        self.reviews = 0

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> Decision:
        key = _cache_key(user, attributes)
        cached = self._cache.get(key)
        if cached is not None and cached[0] > self._clock.monotonic():
            return cached[1]
        decision, _ = await self._flight.do(
            key, lambda: self._review(key, user, attributes), name="subject access review"
        )
        return decision

    async def _review(
        self, key: tuple[Any, ...], user: UserInfo, attributes: RequestAttributes
    ) -> Decision:
        now = self._clock.monotonic()
        self.reviews += 1
        try:
            answer = await self._api.post(
                SUBJECT_ACCESS_REVIEW_PATH, subject_access_review(user, attributes)
            )
        except Exception as error:
            log.warning("subject_access_review_failed", user=user.name, error=str(error))
            raise AuthorizationError(str(error)) from error
        decision = _decision(answer)
        if len(self._cache) > 4096:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
        self._cache[key] = (now + self._ttl_seconds, decision)
        return decision


def _decision(answer: Mapping[str, Any]) -> Decision:
    """The answer's ``status``, decoded as strictly as Go's ``json.Unmarshal`` into
    ``SubjectAccessReviewStatus``: ``allowed``/``denied`` are booleans (or absent/null, false),
    ``reason``/``evaluationError`` strings. Anything else is a failed review (fail closed)."""
    status = answer.get("status")
    if not isinstance(status, Mapping):
        raise AuthorizationError("SubjectAccessReview answer has no status")
    allowed = _field(status, "allowed", bool, False)
    denied = _field(status, "denied", bool, False)
    reason = _field(status, "reason", str, "")
    evaluation_error = _field(status, "evaluationError", str, "")
    if evaluation_error and not allowed:
        log.info("subject_access_review_evaluation_error", error=evaluation_error)
    return Decision(allowed and not denied, reason)


def _field(status: Mapping[str, Any], key: str, kind: type[_T], default: _T) -> _T:
    value = status.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise AuthorizationError(
            f"SubjectAccessReview answer: status.{key} is a {type(value).__name__}, "
            f"not a {kind.__name__}"
        )
    return value
