"""The one thing the API-backed metrics clients need from the I/O shell: GET a JSON document.

Upstream counterpart: the ``rest.Interface`` the metrics clients of ``k8s.io/metrics`` are built
on (``client.Get().AbsPath(...).VersionedParams(...).Do()``), and ``errors.IsNotFound`` /
``StatusError.Error()`` for reading failures.

``hpa.metrics`` sits beside ``hpa.kube`` in the layers and may not import it, so it declares the
small :class:`JsonGetter` protocol it needs; the app wires ``hpa.kube.client.KubeClient.get``
into it. Errors are read by duck typing: an error with an integer ``code`` attribute (``hpa.kube``'s
``ApiError``) is an API answer; its ``status.message`` (``metav1.Status.message``) is what upstream
prints with ``err.Error()``.

Deliberate deviations: none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["JsonGetter", "error_code", "error_text"]


class JsonGetter(Protocol):
    """GET ``path`` (absolute, e.g. ``/apis/metrics.k8s.io/v1beta1/...``) with query ``params``."""

    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> Mapping[str, Any]:
        """The decoded JSON object; raises on a failed request (an error with ``code`` when
        the API server answered)."""
        ...


def error_code(error: BaseException) -> int | None:
    """The HTTP status code of an API error, ``None`` for any other failure."""
    code = getattr(error, "code", None)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def error_text(error: BaseException) -> str:
    """``err.Error()`` as upstream prints it: the Status message when there is one."""
    status = getattr(error, "status", None)
    message = getattr(status, "message", None)
    if isinstance(message, str) and message:
        return message
    text = str(error)
    return text or type(error).__name__
