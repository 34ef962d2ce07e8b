"""Authorization attributes of a request: verb, API group/version, namespace, resource, name.

Upstream counterpart: k8s.io/apiserver ``endpoints/request/requestinfo.go``
(``RequestInfoFactory.NewRequestInfo``): ``/apis/<group>/<version>/...`` with at least a resource
is a resource request; ``namespaces/<ns>/...`` sets the namespace (and ``namespaces/<ns>`` alone
is the namespace object); the parts after the resource are name and subresource; GET with a name
is ``get``, without one ``list`` (``watch`` with ``?watch=true``). Everything else (discovery,
``/openapi/...``, ``/metrics``) is a non-resource request whose verb is the lower-cased method.

Deliberate deviations: only GET/HEAD matter here (the metrics APIs are read-only); ``/api`` (the
legacy core group) is never served, so it is not parsed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass


@dataclass(frozen=True)
class RequestAttributes:
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


def request_attributes(method: str, path: str, *, query: Mapping[str, str]) -> RequestAttributes:
    verb = method.lower()
    non_resource = RequestAttributes(path=path, verb=verb)
    parts = path.strip("/").split("/")
    if len(parts) < 3 or parts[0] != "apis":
        return non_resource
    group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return non_resource
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in ("status", "finalize"):
            rest = rest[2:]
    return _resource(
        verb, path, query=query, group=group, version=version, namespace=namespace, rest=rest
    )


def _resource(
    verb: str,
    path: str,
    *,
    query: Mapping[str, str],
    group: str,
    version: str,
    namespace: str,
    rest: list[str],
) -> RequestAttributes:
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
    return RequestAttributes(
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
