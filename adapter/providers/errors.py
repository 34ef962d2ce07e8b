"""Typed errors of the metric providers, each carrying the ``metav1.Status`` it maps to.

Upstream counterpart: custom-metrics-apiserver ``pkg/provider/errors.go``
(``NewMetricNotFoundError``: "the server could not find the metric %s for %s",
``NewMetricNotFoundForError``: "... for %s %s", ``NewMetricNotFoundForSelectorError``:
"... for %s %s with selector %s") and prometheus-adapter's ``apierr.NewInternalError(
"unable to fetch metrics")`` / ``"unable to list matching resources"``.

Every error is a ``ProviderError`` with ``code`` (HTTP status), ``reason`` (``metav1.Status``
reason) and ``message`` (the user-visible text, upstream's where upstream has one), so the server
maps all of them with one ``except``. Deliberate deviation: ``MetricNotFoundError.cause`` and
``detail`` say *why* (unknown metric, empty result, stale sample, NaN/Inf, no matching objects)
for logs and our own metrics; the message stays upstream's so clients see the familiar text.
"""

from __future__ import annotations

from enum import StrEnum

from adapter.rules import GroupResource


class ProviderError(Exception):
    """Base class: ``code``/``reason``/``message`` are what the server puts in ``metav1.Status``."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class MissingCause(StrEnum):
    """Why a value is missing (a closed label set for metrics and a field for logs)."""

    UNKNOWN_METRIC = "unknown_metric"  # not in the relisted index (or not for this resource)
    EMPTY_RESULT = "empty_result"  # Prometheus returned no sample for the object(s)
    STALE = "stale"  # the newest underlying sample is older than the staleness bound
    NOT_FINITE = "not_finite"  # NaN or +-Inf
    NO_OBJECTS = "no_objects"  # the label selector matched no object
    UNRENDERABLE = "unrenderable"  # the rule's templates cannot render this request


class MetricNotFoundError(ProviderError):
    """404 NotFound with upstream's message."""

    code = 404
    reason = "NotFound"

    def __init__(
        self,
        resource: GroupResource,
        metric: str,
        *,
        name: str | None = None,
        cause: MissingCause,
        detail: str = "",
    ) -> None:
        if name is None:
            message = f"the server could not find the metric {metric} for {resource}"
        else:
            message = f"the server could not find the metric {metric} for {resource} {name}"
        super().__init__(message, detail=detail or cause.value)
        self.resource = resource
        self.metric = metric
        self.name = name
        self.cause = cause


class InvalidRequestError(ProviderError):
    """400 BadRequest: the caller's selector, names or path cannot be answered safely."""

    code = 400
    reason = "BadRequest"


class MetricFetchError(ProviderError):
    """500 InternalError "unable to fetch metrics" (Prometheus or the rule failed).

    The cause is chained (``__cause__``) and summarized in ``detail`` for logs; the message does
    not leak it, as upstream ("don't leak implementation details to the user").
    """

    def __init__(self, message: str = "unable to fetch metrics", *, detail: str = "") -> None:
        super().__init__(message, detail=detail)


class MetricFetchTimeoutError(MetricFetchError):
    """504 Timeout: Prometheus did not answer within the request's deadline."""

    code = 504
    reason = "Timeout"


class ObjectListError(ProviderError):
    """500 InternalError "unable to list matching resources" (the pod cache failed)."""

    def __init__(self, *, detail: str = "") -> None:
        super().__init__("unable to list matching resources", detail=detail)
