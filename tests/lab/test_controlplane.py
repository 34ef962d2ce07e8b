"""The control plane's command lines: aggregation flags, identities and the HPA switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab.controlplane import KCM_HPA_CONTROLLER, ControlPlane, ControlPlaneConfig
from tests.lab.pki import Pki, create_pki
from tests.lab.process import ProcessGroup


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return create_pki(
        tmp_path_factory.mktemp("pki"), apiserver_ips=("127.0.0.1",), service_ip="198.19.0.1"
    )


def control_plane(pki: Pki, tmp_path: Path, config: ControlPlaneConfig) -> ControlPlane:
    return ControlPlane(
        bin_dir=tmp_path / "bin",
        work_dir=tmp_path,
        pki=pki,
        advertise_address="127.0.0.1",
        config=config,
        group=ProcessGroup(tmp_path / "logs"),
    )


def flags(argv: list[str]) -> dict[str, str]:
    return dict(arg.removeprefix("--").split("=", 1) for arg in argv[1:])


def test_kcm_hpa_controller_is_off_unless_switched_on(pki: Pki, tmp_path: Path) -> None:
    off = flags(control_plane(pki, tmp_path, ControlPlaneConfig()).controller_manager_argv())
    assert off["controllers"] == f"*,-{KCM_HPA_CONTROLLER}"
    on_config = ControlPlaneConfig(hpa_controller_enabled=True, hpa_sync_period_seconds=5)
    on = flags(control_plane(pki, tmp_path, on_config).controller_manager_argv())
    assert on["controllers"] == "*"
    assert on["horizontal-pod-autoscaler-sync-period"] == "5s"


def test_apiserver_has_the_aggregation_layer_flags(pki: Pki, tmp_path: Path) -> None:
    apiserver = flags(control_plane(pki, tmp_path, ControlPlaneConfig()).apiserver_argv())
    assert apiserver["enable-aggregator-routing"] == "true"
    assert apiserver["requestheader-allowed-names"] == "front-proxy-client"
    assert apiserver["requestheader-client-ca-file"] == str(pki.front_proxy_ca.pair.cert_path)
    assert apiserver["proxy-client-cert-file"] == str(pki.front_proxy_client.cert_path)
    assert apiserver["authorization-mode"] == "Node,RBAC"
    assert apiserver["requestheader-username-headers"] == "X-Remote-User"
    assert apiserver["requestheader-group-headers"] == "X-Remote-Group"


def test_kwok_manages_only_labelled_nodes_with_benchmark_range_addresses(
    pki: Pki, tmp_path: Path
) -> None:
    kwok = flags(control_plane(pki, tmp_path, ControlPlaneConfig()).kwok_argv(tmp_path / "s.yaml"))
    assert kwok["manage-all-nodes"] == "false"
    assert kwok["manage-nodes-with-label-selector"] == "type=kwok"
    assert kwok["cidr"].startswith("198.19.")
    assert kwok["node-ip"].startswith("198.19.")
