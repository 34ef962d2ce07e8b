"""The upstream VPA's build cache key and the admission controller's and recommender's
command lines."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.lab import vpa_upstream


def test_packages_are_the_three_mains_of_the_pinned_module() -> None:
    assert vpa_upstream.packages() == [
        "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/admission-controller",
        "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender",
        "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/updater",
    ]
    go_mod = (vpa_upstream.MODULE_DIR / "go.mod").read_text()
    assert f"\t{vpa_upstream.MODULE} {vpa_upstream.VPA_VERSION} " in go_mod


def test_cache_key_follows_the_go_version_and_the_pins(tmp_path: Path) -> None:
    for name in ("go.mod", "go.sum"):
        shutil.copy(vpa_upstream.MODULE_DIR / name, tmp_path / name)
    key = vpa_upstream.cache_key("go1.26.8", tmp_path)
    assert key == vpa_upstream.cache_key("go1.26.8", tmp_path)
    assert key != vpa_upstream.cache_key("go1.26.9", tmp_path)
    (tmp_path / "go.sum").write_text("changed\n")
    assert key != vpa_upstream.cache_key("go1.26.8", tmp_path)
    assert vpa_upstream.bin_dir_for(key).name == f"vpa-v1.8.1-{key}"


def test_admission_controller_never_registers_itself_and_serves_the_given_certificate() -> None:
    config = vpa_upstream.AdmissionControllerConfig(
        kubeconfig=Path("/lab/admin.kubeconfig"),
        tls_cert_file=Path("/lab/pki/w.crt"),
        tls_private_key=Path("/lab/pki/w.key"),
        client_ca_file=Path("/lab/pki/ca.crt"),
        port=18443,
        address="127.0.0.1:18944",
    )
    argv = vpa_upstream.admission_controller_argv(Path("/cache/vpa"), config)
    assert argv[0] == "/cache/vpa/admission-controller"
    assert set(argv[1:]) == {
        "--kubeconfig=/lab/admin.kubeconfig",
        "--register-webhook=false",
        "--port=18443",
        "--address=127.0.0.1:18944",
        "--tls-cert-file=/lab/pki/w.crt",
        "--tls-private-key=/lab/pki/w.key",
        "--client-ca-file=/lab/pki/ca.crt",
        "--status-lease-name=vpa-admission-controller",
        "--status-lease-namespace=kube-system",
        "--v=2",
    }


def test_recommender_reads_metrics_k8s_io_with_the_given_interval_and_minimums() -> None:
    config = vpa_upstream.RecommenderConfig(
        kubeconfig=Path("/lab/admin.kubeconfig"),
        address="127.0.0.1:18942",
        interval_seconds=10,
        pod_min_cpu_millicores=10,
        pod_min_memory_mb=10,
        vpa_object_namespace="side",
    )
    argv = vpa_upstream.recommender_argv(Path("/cache/vpa"), config)
    assert argv[0] == "/cache/vpa/recommender"
    assert set(argv[1:]) == {
        "--kubeconfig=/lab/admin.kubeconfig",
        "--address=127.0.0.1:18942",
        "--recommender-name=default",
        "--recommender-interval=10s",
        "--pod-recommendation-min-cpu-millicores=10",
        "--pod-recommendation-min-memory-mb=10",
        "--vpa-object-namespace=side",
        "--v=3",
    }
