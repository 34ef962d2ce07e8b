"""Build (once) and run the upstream Vertical Pod Autoscaler v1.8.1 beside ours in the lab.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1, its
``pkg/{admission-controller,recommender,updater}/Makefile`` (``go build`` of each ``main``
package) and the admission controller's flags in ``pkg/admission-controller/config/config.go``
and ``common/flags.go``. The module is pinned in ``tests/lab/tools/vpa/go.mod`` and fetched from
the Go module proxy like the lab's control plane (``tests/lab/build.py``).

Deviations: the three binaries come from ONE ``go build`` (they share most packages, which are
compiled once), stripped (``-s -w``) and ``-trimpath`` like the control plane, so the packages they
share with it (client-go, apimachinery: the same versions) come from Go's build cache; ``gitCommit``
is not stamped (the version string is upstream's constant ``1.8.1``). Cold, after the control plane:
about 35 s on 2 cores; with an empty Go build cache, minutes. The admission controller runs
with ``--register-webhook=false``: a test registers it, or calls it directly over HTTPS.

The cache lives in ``$HPA_CACHE/bin/vpa-v1.8.1-<key>/`` (default ``~/.cache/hpa``); the key hashes
the tools module's go.mod/go.sum, the build flags and the Go version, so anything else is a no-op.

    python -m tests.lab.vpa_upstream     # build if missing, print the directory
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.lab.build import TOOLS_DIR, build_tools_module, cache_root, module_cache_key
from tests.lab.process import Component, ProcessGroup

VPA_VERSION = "v1.8.1"
MODULE = "k8s.io/autoscaler/vertical-pod-autoscaler"
MODULE_DIR = TOOLS_DIR / "vpa"
COMPONENTS = ("admission-controller", "recommender", "updater")
"""The ``main`` packages under ``pkg/``; ``go build -o DIR/`` names each binary after its last
path element."""
BUILD_FLAGS = ("-trimpath", "-ldflags=-s -w")
ADMISSION_CONTROLLER = "vpa-admission-controller"
"""The lab component name of the upstream admission controller (its log is in failure reports)."""
RECOMMENDER = "vpa-recommender"
"""The lab component name of the upstream recommender."""


def packages() -> list[str]:
    return [f"{MODULE}/pkg/{component}" for component in COMPONENTS]


def cache_key(go_version_text: str, module_dir: Path = MODULE_DIR) -> str:
    """Hash of the Go version, the pins (go.mod, go.sum), the packages and the build flags."""
    return module_cache_key(go_version_text, module_dir, (COMPONENTS, BUILD_FLAGS))


def bin_dir_for(key: str) -> Path:
    return cache_root() / "bin" / f"vpa-{VPA_VERSION}-{key}"


def build(*, parallel_jobs: int = 2) -> Path:
    """Build the three binaries unless the cache has them; returns the cache directory
    (``tests.lab.build.build_once``: an interrupted build never looks complete)."""
    return build_tools_module(
        MODULE_DIR,
        lambda go_version_text: bin_dir_for(cache_key(go_version_text)),
        packages(),
        output="",
        flags=BUILD_FLAGS,
        what=f"upstream VPA {VPA_VERSION} ({', '.join(COMPONENTS)})",
        manifest={"vpa": VPA_VERSION},
        parallel_jobs=parallel_jobs,
    )


@dataclass(frozen=True, kw_only=True)
class AdmissionControllerConfig:
    """What the upstream admission controller needs to serve in the lab."""

    kubeconfig: Path
    tls_cert_file: Path
    tls_private_key: Path
    client_ca_file: Path
    """Only read by self-registration (for the webhook's ``caBundle``), which is off here."""
    port: int
    """``--port``: the HTTPS webhook listener (upstream binds every address)."""
    address: str
    """``--address``: ``host:port`` of ``/metrics`` and ``/health-check``."""
    status_lease_namespace: str = "kube-system"
    status_lease_name: str = "vpa-admission-controller"
    verbosity: int = 2


def admission_controller_argv(bin_dir: Path, config: AdmissionControllerConfig) -> list[str]:
    return [
        str(bin_dir / "admission-controller"),
        f"--kubeconfig={config.kubeconfig}",
        "--register-webhook=false",
        f"--port={config.port}",
        f"--address={config.address}",
        f"--tls-cert-file={config.tls_cert_file}",
        f"--tls-private-key={config.tls_private_key}",
        f"--client-ca-file={config.client_ca_file}",
        f"--status-lease-name={config.status_lease_name}",
        f"--status-lease-namespace={config.status_lease_namespace}",
        f"--v={config.verbosity}",
    ]


def start_admission_controller(
    group: ProcessGroup,
    config: AdmissionControllerConfig,
    *,
    bin_dir: Path | None = None,
    name: str = ADMISSION_CONTROLLER,
) -> Component:
    """Start upstream's admission controller as a lab component (built first if needed). It
    serves once its informers (LimitRanges, the well-known controllers) have synced; poll a
    review to know when its VPA cache holds what the test created."""
    argv = admission_controller_argv(bin_dir or build(), config)
    return group.start(name, argv)


@dataclass(frozen=True, kw_only=True)
class RecommenderConfig:
    """The upstream recommender's flags in the lab (``pkg/recommender/config/config.go``); the
    rest keep upstream's defaults (``--storage=checkpoint``, metrics from ``metrics.k8s.io``)."""

    kubeconfig: Path
    address: str
    """``--address``: ``host:port`` of ``/metrics`` and ``/health-check``."""
    recommender_name: str = "default"
    """``--recommender-name``: ``default`` also serves VPAs without ``spec.recommenders``."""
    interval_seconds: int = 60
    """``--recommender-interval``."""
    pod_min_cpu_millicores: int = 25
    pod_min_memory_mb: int = 250
    vpa_object_namespace: str = ""
    verbosity: int = 3
    """``--v``: 3 logs every pass (``Recommender Run``)."""


def recommender_argv(bin_dir: Path, config: RecommenderConfig) -> list[str]:
    argv = [
        str(bin_dir / "recommender"),
        f"--kubeconfig={config.kubeconfig}",
        f"--address={config.address}",
        f"--recommender-name={config.recommender_name}",
        f"--recommender-interval={config.interval_seconds}s",
        f"--pod-recommendation-min-cpu-millicores={config.pod_min_cpu_millicores}",
        f"--pod-recommendation-min-memory-mb={config.pod_min_memory_mb}",
        f"--v={config.verbosity}",
    ]
    if config.vpa_object_namespace:
        argv.append(f"--vpa-object-namespace={config.vpa_object_namespace}")
    return argv


def start_recommender(
    group: ProcessGroup,
    config: RecommenderConfig,
    *,
    bin_dir: Path | None = None,
    name: str = RECOMMENDER,
) -> Component:
    """Start upstream's recommender as a lab component (built first if needed)."""
    return group.start(name, recommender_argv(bin_dir or build(), config))


def main() -> int:
    print(build())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
