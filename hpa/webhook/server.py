"""The admission webhook's HTTP applications: the TLS endpoint kube-apiserver calls, and the
operations endpoint (``/healthz``, ``/readyz``, ``/metrics``).

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/admission-controller/logic/server.go`` (``Serve``: ``Content-Type: application/json``, a
5 MiB body limit, one AdmissionReview in, one out) and ``pkg/utils/metrics/admission`` (metric
names ``vpa_admission_controller_admission_pods_total{applied}`` and
``vpa_admission_controller_admission_latency_seconds{status, resource}``, upstream's buckets); the
operations endpoint is upstream's ``--address`` listener.

Deliberate deviations: a request that is not JSON, or not an ``admission.k8s.io/v1``
AdmissionReview, is answered 400 (or 413, 415) with a ``metav1.Status`` body naming the problem,
where upstream answers 200 with an empty body or an ``allowed`` review without a uid. Either way
the API server's ``failurePolicy: Ignore`` creates the pod unchanged. The latency metric's
``status`` label has one more value, ``denied``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson
import structlog
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

from hpa.api.meta import Status
from hpa.webhook.handler import AdmissionHandler, Kind, Outcome
from hpa.webhook.review import ReviewError, parse_review

log = structlog.get_logger("hpa.webhook")

MAX_BODY_BYTES = 5 * 1024 * 1024
LATENCY_BUCKETS = (
    0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0, 5.0, 10.0, 20.0,
    30.0, 60.0, 120.0, 300.0,
)  # fmt: skip


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.pods = Counter(
            "vpa_admission_controller_admission_pods_total",
            "Number of Pods processed by VPA Admission Controller.",
            ["applied"],
            registry=registry,
        )
        self.latency = Histogram(
            "vpa_admission_controller_admission_latency_seconds",
            "Time spent in VPA Admission Controller.",
            ["status", "resource"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )


def _status(code: int, reason: str, message: str) -> web.Response:
    body = Status(
        kind="Status", api_version="v1", status="Failure", message=message, reason=reason, code=code
    )
    return web.Response(body=body.to_json(), status=code, content_type="application/json")


def build_webhook_app(handler: AdmissionHandler, *, metrics: WebhookMetrics) -> web.Application:
    """The endpoint kube-apiserver calls (``/`` as upstream, and ``/mutate``)."""

    async def serve(request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        if request.content_type != "application/json":
            metrics.latency.labels(Outcome.ERROR.value, Kind.UNKNOWN.value).observe(0.0)
            return _status(
                415,
                "UnsupportedMediaType",
                f"Content-Type must be application/json, got {request.content_type!r}",
            )
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            metrics.latency.labels(Outcome.ERROR.value, Kind.UNKNOWN.value).observe(0.0)
            return _status(413, "RequestEntityTooLarge", "request payload too large (5 MiB)")
        try:
            review = parse_review(body)
        except ReviewError as error:
            log.info("admission_review_refused", error=str(error))
            metrics.latency.labels(Outcome.ERROR.value, Kind.UNKNOWN.value).observe(
                time.perf_counter() - started
            )
            return _status(400, "BadRequest", f"not a valid AdmissionReview: {error}")
        answer = await handler.review(review)
        if answer.kind is Kind.POD and answer.outcome in (Outcome.APPLIED, Outcome.SKIPPED):
            metrics.pods.labels(str(answer.outcome is Outcome.APPLIED).lower()).inc()
        metrics.latency.labels(answer.outcome.value, answer.kind.value).observe(
            time.perf_counter() - started
        )
        return web.Response(body=orjson.dumps(answer.body), content_type="application/json")

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post("/", serve)
    app.router.add_post("/mutate", serve)
    return app


def build_operations_app(
    *,
    registry: CollectorRegistry,
    ready: Callable[[], bool],
    healthy: Callable[[], bool] = lambda: True,
) -> web.Application:
    """``/healthz`` (500 once ``healthy`` says the process is stuck), ``/readyz`` (ready once the
    informers have synced) and ``/metrics``."""

    async def healthz(request: web.Request) -> web.Response:
        if not healthy():
            return web.Response(text="[-]stalled\n", status=500)
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        if not ready():
            return web.Response(text="[-]informers not synced\n", status=500)
        return web.Response(text="ok")

    async def prometheus_metrics(request: web.Request) -> web.Response:
        response = web.Response(body=generate_latest(registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", prometheus_metrics)
    return app
