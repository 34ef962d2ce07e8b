"""A scripted ``external.metrics.k8s.io`` server for the simulator/lab parity test.

Upstream counterpart: the external metrics API that prometheus-adapter (or ``hpa adapter``)
serves behind kube-apiserver's aggregation layer (``ExternalMetricValueList`` from
``k8s.io/metrics/pkg/apis/external_metrics/v1beta1``). Deliberate deviations: it serves one
metric, answers every client (no front-proxy authentication: it listens only on the lab's private
veth address), and its values are not measured but scripted: the ``k``-th GET of the metric
answers ``values_milli[k]`` (the last value once the script is used up). So the value the
controller reads at its ``k``-th sync is known exactly, whatever the timing of the lab, and the
simulator can be fed the same values sync by sync. Every answered GET is recorded with its time.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

GROUP = "external.metrics.k8s.io"
VERSION = "v1beta1"
PREFIX = f"/apis/{GROUP}/{VERSION}"


@dataclass(frozen=True, slots=True)
class ServedValue:
    """One answered GET of the metric: ``time.time()`` on arrival (the controller's log lines use
    the same host clock) and the value served."""

    at_wall: float
    value_milli: int


class ScriptedExternalMetrics:
    """``GET /apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>`` answers the
    script's next value (as a ``<n>m`` quantity with ``labels``); discovery lists the metric."""

    def __init__(
        self,
        *,
        namespace: str,
        metric: str,
        labels: dict[str, str],
        values_milli: Sequence[int],
        host: str,
        port: int,
        cert: Path,
        key: Path,
    ) -> None:
        if not values_milli:
            raise ValueError("the script needs at least one value")
        self.namespace = namespace
        self.metric = metric
        self.labels = dict(labels)
        self.values_milli = tuple(values_milli)
        self._served: list[ServedValue] = []
        self._lock = threading.Lock()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scripted external metrics", daemon=True
        )

    def start(self) -> ScriptedExternalMetrics:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def served(self) -> list[ServedValue]:
        with self._lock:
            return list(self._served)

    def _next_value(self) -> int:
        with self._lock:
            index = min(len(self._served), len(self.values_milli) - 1)
            value = self.values_milli[index]
            self._served.append(ServedValue(time.time(), value))
            return value

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body) for a GET of ``path`` (query string removed)."""
        if path == PREFIX:
            return 200, {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{GROUP}/{VERSION}",
                "resources": [
                    {
                        "name": self.metric,
                        "singularName": "",
                        "namespaced": True,
                        "kind": "ExternalMetricValueList",
                        "verbs": ["get"],
                    }
                ],
            }
        if path == f"{PREFIX}/namespaces/{self.namespace}/{self.metric}":
            value = self._next_value()
            stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            return 200, {
                "kind": "ExternalMetricValueList",
                "apiVersion": f"{GROUP}/{VERSION}",
                "metadata": {},
                "items": [
                    {
                        "metricName": self.metric,
                        "metricLabels": self.labels,
                        "timestamp": stamp,
                        "value": f"{value}m",
                    }
                ],
            }
        return 404, {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "NotFound",
            "code": 404,
            "message": f"{path} not found",
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                status, body = scripted.answer(self.path.partition("?")[0])
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return  # the apiserver's availability probes would flood the test output

        return Handler
