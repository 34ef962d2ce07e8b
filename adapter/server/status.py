"""``metav1.Status`` error bodies and the errors the routes raise to produce them.

Upstream counterparts: k8s.io/apimachinery ``pkg/api/errors`` (``NewNotFound``,
``NewBadRequest``, ``NewForbidden``, ``NewUnauthorized``, ``NewInternalError``,
``NewServiceUnavailable``), k8s.io/apiserver ``endpoints/handlers/responsewriters/errors.go``
(``forbiddenMessage``) and custom-metrics-apiserver ``pkg/provider/errors.go`` (whose messages
the providers' typed errors already carry).

Bodies are written with keys in Go's field order (``kind``, ``apiVersion``, ``metadata``,
``status``, ``message``, ``reason``, ``details``, ``code``), ``details`` only when upstream sets it.

Deliberate deviations: a failed SubjectAccessReview answers a ``metav1.Status`` 500
(upstream writes a ``text/plain`` "Internal Server Error" line).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from adapter.providers import ProviderError

JSON_CONTENT_TYPE = "application/json"


class StatusError(Exception):
    """An API error: the handler (or a filter) raises it, the error middleware writes it."""

    def __init__(
        self,
        code: int,
        reason: str,
        *,
        message: str,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = dict(headers or {})


def status_body(
    code: int, reason: str, *, message: str, details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        body["details"] = dict(details)
    body["code"] = code
    return body


def status_response(error: StatusError) -> web.Response:
    body = orjson.dumps(
        status_body(error.code, error.reason, message=error.message, details=error.details)
    )
    return web.Response(
        body=body, status=error.code, content_type=JSON_CONTENT_TYPE, headers=error.headers
    )


def from_provider_error(error: ProviderError) -> StatusError:
    """The providers' typed errors carry their status already."""
    return StatusError(error.code, error.reason, message=error.message)


def not_found_path() -> StatusError:
    """``NewNotFound(schema.GroupResource{}, "")`` as served for unknown paths."""
    return StatusError(
        404, "NotFound", message="the server could not find the requested resource", details={}
    )


def not_found(resource: str, group: str, *, name: str) -> StatusError:
    """``NewNotFound(qualifiedResource, name)``: ``podmetrics.metrics.k8s.io "ns/x" not found``."""
    qualified = f"{resource}.{group}" if group else resource
    details = (
        {"name": name, "group": group, "kind": resource}
        if group
        else {
            "name": name,
            "kind": resource,
        }
    )  # StatusDetails.group is omitempty
    return StatusError(404, "NotFound", message=f'{qualified} "{name}" not found', details=details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message=message)


def method_not_allowed(method: str) -> StatusError:
    """``NewMethodNotSupported``-like answer for verbs other than GET."""
    return StatusError(
        405,
        "MethodNotAllowed",
        message=f"the server does not allow this method on the requested resource ({method})",
    )


def unauthorized() -> StatusError:
    """What ``WithAuthentication`` answers when no authenticator accepted the request."""
    return StatusError(401, "Unauthorized", message="Unauthorized")


def forbidden(
    message: str, *, resource: str, group: str, name: str, reason: str = ""
) -> StatusError:
    """``responsewriters.Forbidden`` + ``NewForbidden``."""
    text = message if not reason else f"{message}: {reason}"
    if not resource:
        full = f"forbidden: {text}"
    elif name:
        qualified = f"{resource}.{group}" if group else resource
        full = f'{qualified} "{name}" is forbidden: {text}'
    else:
        qualified = f"{resource}.{group}" if group else resource
        full = f"{qualified} is forbidden: {text}"
    return StatusError(
        403, "Forbidden", message=full, details={"name": name, "group": group, "kind": resource}
    )


def internal_error(message: str) -> StatusError:
    """``NewInternalError``: ``Internal error occurred: <message>``."""
    return StatusError(
        500,
        "InternalError",
        message=f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )


def service_unavailable(message: str) -> StatusError:
    return StatusError(503, "ServiceUnavailable", message=message)
