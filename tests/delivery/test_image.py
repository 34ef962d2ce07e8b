"""The image as a user pulls it: built into an ``oci-archive`` (``tests.delivery.image``, the
cached Debian base reused), read back by ``skopeo`` (which checks every digest), its layer
unpacked, and the commands run from its own root filesystem with ``chroot`` as the image's user,
with the image's entrypoint and environment.

Needs root (chroot), ``skopeo`` and the Debian base (built once and cached). ``make image`` runs
it after building the archive; ``make test`` leaves it out (marker ``image``): a cold base is
minutes of package downloads."""

from __future__ import annotations

import gzip
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hpa import __version__
from tests.delivery.image import ENTRYPOINT, IMAGE_USER, BuiltImage, build_image

SIZE_GOAL_BYTES = 150 * 1000 * 1000
# builds the image once per run (about a minute with the cached base); run by `make image`
pytestmark = [pytest.mark.slow, pytest.mark.image]


@dataclass(frozen=True, slots=True)
class Unpacked:
    built: BuiltImage
    manifest: dict[str, Any]
    config: dict[str, Any]
    rootfs: Path
    layer_bytes: int


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Unpacked:
    work = tmp_path_factory.mktemp("image")
    built = build_image(work / "hpa.oci.tar", log=lambda _line: None)
    copied = work / "copied"
    # skopeo reads the archive as a registry client would, verifying each blob's digest
    subprocess.run(
        ["skopeo", "copy", "--quiet", f"oci-archive:{built.archive}:{built.tag}", f"dir:{copied}"],
        check=True,
    )
    manifest = json.loads((copied / "manifest.json").read_text())
    config = json.loads((copied / manifest["config"]["digest"].removeprefix("sha256:")).read_text())
    (layer,) = manifest["layers"]
    rootfs = work / "rootfs"
    rootfs.mkdir()
    blob = copied / layer["digest"].removeprefix("sha256:")
    subprocess.run(["tar", "-xzf", str(blob), "--numeric-owner"], check=True, cwd=rootfs)
    size = 0
    with gzip.open(blob) as layer_tar:
        while chunk := layer_tar.read(1 << 20):
            size += len(chunk)
    return Unpacked(built, manifest, config, rootfs, size)


def run_in_image(image: Unpacked, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """``args`` after the image's entrypoint, as the image's user, in its root filesystem."""
    settings = image.config["config"]
    env = dict(item.split("=", 1) for item in settings["Env"])
    return subprocess.run(
        [
            "chroot",
            f"--userspec={settings['User']}",
            str(image.rootfs),
            *settings["Entrypoint"],
            *args,
        ],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=image.rootfs,
        timeout=120,
    )


def test_the_archive_names_the_version_entrypoint_and_a_non_root_user(image: Unpacked) -> None:
    settings = image.config["config"]
    assert image.built.tag == __version__
    assert settings["Entrypoint"] == list(ENTRYPOINT) == ["/opt/hpa/bin/hpa"]
    assert settings["Cmd"] == ["--help"]
    assert settings["User"] == IMAGE_USER == "65532:65532"  # the chart's runAsUser/runAsGroup
    assert settings["Labels"]["org.opencontainers.image.version"] == __version__
    assert image.config["os"] == "linux"
    assert image.config["architecture"] == "amd64"
    passwd = (image.rootfs / "etc" / "passwd").read_text()
    assert "hpa:x:65532:65532:" in passwd


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--version"], __version__),
        (["controller", "--help"], "--kubeconfig"),
        (["adapter", "--help"], "--config"),
        (["vpa", "recommender", "--help"], "usage:"),
    ],
    ids=["version", "controller", "adapter", "vpa-recommender"],
)
def test_commands_run_from_the_images_root_filesystem(
    image: Unpacked, args: list[str], expected: str
) -> None:
    result = run_in_image(image, args)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
    assert "Traceback" not in result.stderr


def test_the_process_runs_as_the_images_user_and_cannot_write_the_venv(image: Unpacked) -> None:
    probe = (
        "import os, sys; print(os.getuid(), os.getgid()); "
        "print(os.access('/opt/hpa/lib', os.W_OK), os.access('/tmp', os.W_OK))"
    )
    settings = image.config["config"]
    result = subprocess.run(
        [
            "chroot",
            f"--userspec={settings['User']}",
            str(image.rootfs),
            "/opt/hpa/bin/python",
            "-c",
            probe,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    assert result.stdout.split() == ["65532", "65532", "False", "True"]


def test_no_package_manager_compiler_or_set_user_id_program(image: Unpacked) -> None:
    root = image.rootfs
    programs = {
        path.name
        for directory in ("usr/bin", "usr/sbin", "usr/local/bin", "opt/hpa/bin")
        for path in (root / directory).iterdir()
    }
    for forbidden in ("dpkg", "apt", "apt-get", "pip", "pip3", "gcc", "cc", "c++", "ld", "make"):
        assert forbidden not in programs
    assert not list(root.glob("usr/lib/gcc*"))
    assert (root / "var/lib/dpkg/status").exists()  # what is installed, for image scanners
    set_id = [
        path
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o6000
    ]
    assert set_id == []


def test_the_image_is_at_most_150_mb_uncompressed(image: Unpacked) -> None:
    assert image.layer_bytes == image.built.uncompressed_bytes
    assert image.layer_bytes <= SIZE_GOAL_BYTES, f"{image.layer_bytes / 1e6:.1f} MB"
