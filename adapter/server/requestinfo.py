"""A request parsed once: the authorization attributes (verb, API group/version, namespace,
resource, name) and the decoded path segments that routing reads.

Upstream counterpart: k8s.io/apiserver ``endpoints/request/requestinfo.go``
(``RequestInfoFactory.NewRequestInfo``): ``/apis/<group>/<version>/...`` with at least a resource
is a resource request; ``namespaces/<ns>/...`` sets the namespace (and ``namespaces/<ns>`` alone,
or followed by ``status``/``finalize``, is the namespace object); the parts after the resource are
name and subresource (upstream's ``Parts`` are kept for routing); GET with a name is ``get``,
without one ``list`` (``watch`` with ``?watch=true``). Everything else (discovery,
``/openapi/...``, ``/metrics``) is a non-resource request whose verb is the lower-cased method.

The parse reads the raw (still percent-encoded) path, splits it on ``/`` and decodes each segment
once. Authentication, authorization, routing and the handlers all read the one ``RequestInfo``,
so no two of them can see different segments.

Deliberate deviations: only GET/HEAD matter here (the metrics APIs are read-only); ``/api`` (the
legacy core group) is never served, so it is not parsed. A segment whose decoding holds ``/``
(``%2F``), a ``.``/``..`` segment that only appears after decoding, an invalid percent escape or
bytes that are not UTF-8 are refused with 400 (Go's ``net/http`` would decode ``%2F`` into a
separator; refusing it keeps one reading of the path).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from urllib.parse import unquote

_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Upstream's namespaceSubresources: after ``namespaces/<ns>`` these name the namespace object.
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


class RequestPathError(ValueError):
    """The path cannot be read one way only; the server answers 400."""


@dataclass(frozen=True, slots=True)
class RequestAttributes:
    """What authorization sees (a SubjectAccessReview's resource or non-resource attributes)."""

    path: str
    verb: str
    _: KW_ONLY
    is_resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """The one parse of a request: ``attributes`` for authorization; ``segments`` (the decoded
    path, split) and ``parts`` (upstream's ``Parts``: resource, name, subresource, and anything
    after them) for routing."""

    attributes: RequestAttributes
    segments: tuple[str, ...]
    parts: tuple[str, ...] = ()


def decode_path(raw_path: str) -> tuple[str, tuple[str, ...]]:
    """The decoded path and its segments (leading and trailing ``/`` trimmed, as upstream)."""
    segments = []
    for raw in raw_path.strip("/").split("/"):
        if "%" not in raw:  # nothing to decode (``unquote`` would return it as it is)
            segments.append(raw)
            continue
        if _ESCAPE.search(raw):
            raise RequestPathError(f"invalid URL escape in path segment {raw!r}")
        try:
            segment = unquote(raw, errors="strict")
        except UnicodeDecodeError as error:
            raise RequestPathError(f"path segment {raw!r} is not UTF-8") from error
        if "/" in segment:
            raise RequestPathError(f"path segment {raw!r} encodes a slash")
        if segment in (".", "..") and segment != raw:
            raise RequestPathError(f"path segment {raw!r} encodes a dot segment")
        segments.append(segment)
    path = "/" + "/".join(segments)
    if raw_path.endswith("/") and path != "/":
        path += "/"
    return path, tuple(segments)


def parse_request(method: str, raw_path: str, *, query: Mapping[str, str]) -> RequestInfo:
    """``RequestInfoFactory.NewRequestInfo`` over the raw path; raises ``RequestPathError``."""
    verb = method.lower()
    path, segments = decode_path(raw_path)
    if len(segments) < 4 or segments[0] != "apis":
        return RequestInfo(RequestAttributes(path=path, verb=verb), segments)
    group, version, rest = segments[1], segments[2], segments[3:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if verb in ("get", "head"):
        if query.get("watch", "").lower() in ("1", "true"):
            verb = "watch"
        elif not name:
            verb = "list"
        else:
            verb = "get"
    attributes = RequestAttributes(
        path=path,
        verb=verb,
        is_resource_request=True,
        api_group=group,
        api_version=version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
    )
    return RequestInfo(attributes, segments, rest)


def request_attributes(method: str, path: str, *, query: Mapping[str, str]) -> RequestAttributes:
    """The authorization attributes of ``parse_request``."""
    return parse_request(method, path, query=query).attributes


def forbidden_message(user: str, attributes: RequestAttributes) -> str:
    """``responsewriters.forbiddenMessage``."""
    if not attributes.is_resource_request:
        return f"User {_go_quote(user)} cannot {attributes.verb} path {_go_quote(attributes.path)}"
    resource = attributes.resource
    if attributes.subresource:
        resource += "/" + attributes.subresource
    where = (
        f"in the namespace {_go_quote(attributes.namespace)}"
        if attributes.namespace
        else "at the cluster scope"
    )
    return (
        f"User {_go_quote(user)} cannot {attributes.verb} resource {_go_quote(resource)} "
        f"in API group {_go_quote(attributes.api_group)} {where}"
    )


def _go_quote(text: str) -> str:
    """``%q`` for the plain strings that appear here."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
