"""The generated staging `replace` block follows upstream's go.mod, and the committed one is it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab import gomod

UPSTREAM_EXCERPT = """\
require (
\tk8s.io/api v0.0.0
\tgo.etcd.io/etcd/client/v3 v3.7.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tgithub.com/example/fork => github.com/example/fork v1.0.0
)
"""


def test_staging_modules_are_the_local_replaces_only() -> None:
    assert gomod.staging_modules(UPSTREAM_EXCERPT) == ["k8s.io/api", "k8s.io/client-go"]


def test_staging_version_maps_the_release() -> None:
    assert gomod.staging_version("v1.37.1") == "v0.37.1"
    with pytest.raises(ValueError, match="unexpected"):
        gomod.staging_version("v2.0.0")


def test_rendered_block_pins_every_staging_module() -> None:
    block = gomod.render_replace_block(["k8s.io/api", "k8s.io/client-go"], "v0.37.1")
    assert "\tk8s.io/api => k8s.io/api v0.37.1\n" in block
    assert "\tk8s.io/client-go => k8s.io/client-go v0.37.1\n" in block
    assert gomod.generated_block(gomod.render_go_mod(block)) == block


def test_committed_go_mod_pins_the_release_and_has_the_generated_block() -> None:
    text = (gomod.KUBE_MODULE_DIR / "go.mod").read_text()
    block = gomod.generated_block(text)
    assert "k8s.io/kubernetes => k8s.io/kubernetes" not in block
    assert f"\tk8s.io/api => k8s.io/api {gomod.staging_version(gomod.KUBERNETES_VERSION)}" in block
    assert f"k8s.io/kubernetes {gomod.KUBERNETES_VERSION}" in text
    assert (Path(gomod.KUBE_MODULE_DIR) / "go.sum").stat().st_size > 0
