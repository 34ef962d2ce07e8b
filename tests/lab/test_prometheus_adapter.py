"""prometheus-adapter's build cache key and command line, and the lab's build-once helper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lab import prometheus_adapter
from tests.lab.build import MANIFEST, build_once


def _tree(root: Path) -> Path:
    (root / "cmd" / "adapter").mkdir(parents=True)
    (root / "go.mod").write_text("module sigs.k8s.io/prometheus-adapter\n")
    (root / "go.sum").write_text("")
    (root / "cmd" / "adapter" / "adapter.go").write_text("package main\n")
    (root / "README.md").write_text("docs\n")
    return root


def test_content_key_follows_go_files_and_pins_only(tmp_path: Path) -> None:
    source = _tree(tmp_path)
    key = prometheus_adapter.content_key(source)
    (source / "README.md").write_text("other docs\n")
    assert prometheus_adapter.content_key(source) == key
    (source / "cmd" / "adapter" / "adapter.go").write_text("package main // changed\n")
    changed = prometheus_adapter.content_key(source)
    assert changed != key
    (source / "go.sum").write_text("x v1 h1:abc\n")
    assert prometheus_adapter.content_key(source) not in (key, changed)


def test_bin_dir_names_the_key_and_the_go_version() -> None:
    directory = prometheus_adapter.bin_dir_for("0123456789ab", "go1.26.8")
    assert directory.name == "prometheus-adapter-0123456789ab-go1.26.8"


def test_argv_serves_the_rule_file_with_the_labs_authn_and_requestheader_ca() -> None:
    config = prometheus_adapter.AdapterConfig(
        rules=Path("/w/config.yaml"),
        prometheus_url="http://127.0.0.1:9090",
        kubeconfig=Path("/lab/admin.kubeconfig"),
        requestheader_ca=Path("/lab/pki/front-proxy-ca.crt"),
        tls_cert_file=Path("/w/serving.crt"),
        tls_private_key=Path("/w/serving.key"),
        port=18443,
    )
    argv = prometheus_adapter.argv(Path("/cache/pa"), config)
    assert argv[0] == "/cache/pa/prometheus-adapter"
    assert {
        "--config=/w/config.yaml",
        "--prometheus-url=http://127.0.0.1:9090",
        "--lister-kubeconfig=/lab/admin.kubeconfig",
        "--authentication-kubeconfig=/lab/admin.kubeconfig",
        "--authorization-kubeconfig=/lab/admin.kubeconfig",
        "--requestheader-client-ca-file=/lab/pki/front-proxy-ca.crt",
        "--bind-address=127.0.0.1",
        "--secure-port=18443",
        "--tls-cert-file=/w/serving.crt",
        "--tls-private-key-file=/w/serving.key",
    } <= set(argv[1:])


def test_build_once_renames_a_finished_build_into_place_and_then_does_nothing(
    tmp_path: Path,
) -> None:
    built: list[Path] = []

    def run(partial: Path) -> None:
        built.append(partial)
        (partial / "tool").write_text("binary\n")

    directory = tmp_path / "bin" / "tool-key"
    assert build_once(directory, "tool", run, {"go": "go1.26.8"}) == directory
    assert build_once(directory, "tool", run, {"go": "go1.26.8"}) == directory
    assert built == [tmp_path / "bin" / ".tool-key.partial"]
    assert (directory / "tool").read_text() == "binary\n"
    manifest = json.loads((directory / MANIFEST).read_text())
    assert manifest["go"] == "go1.26.8"
    assert isinstance(manifest["build_seconds"], float)
    assert not built[0].exists()


def test_an_interrupted_build_leaves_no_directory_that_looks_complete(tmp_path: Path) -> None:
    def run(partial: Path) -> None:
        (partial / "tool").write_text("half\n")
        raise KeyboardInterrupt

    directory = tmp_path / "tool-key"
    with pytest.raises(KeyboardInterrupt):
        build_once(directory, "tool", run, {})
    assert not directory.exists()
