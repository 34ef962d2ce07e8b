"""The hpa container image as an OCI archive, built from Debian packages without a container daemon.

Upstream counterpart: none (the project's image). ``python -m tests.delivery.image`` (``make
image``) writes ``dist/hpa-<version>.oci.tar``, an ``oci-archive`` that ``skopeo``, ``podman`` and
``crane`` read (``docs/install.md``, "The container image"):

1. **Base** (cached): ``mmdebstrap`` makes a minimal Debian bookworm root filesystem with
   ``python3.11`` and ``ca-certificates`` (variant ``essential``, merged ``/usr``, no manual pages,
   documentation or translations). Then ``dpkg`` purges what a Python service never runs
   (perl, debconf, login and PAM tools, util-linux, init helpers) and deletes the package
   manager's programs: no ``dpkg``, no ``apt``, no compiler, no set-user-ID file. The package
   database (``/var/lib/dpkg/status``) stays so image scanners can list what is installed. The
   root filesystem is kept as a tar under ``$HPA_CACHE/image/base-<key>.tar``; the key hashes the
   package lists, the hook and the Debian suite, so it is rebuilt only when those change.
2. **Wheels** (cached): every dependency pinned with its hash in ``requirements.lock`` (``make
   lock``), downloaded once with ``pip download --require-hashes`` into
   ``$HPA_CACHE/image/wheels-<hash of the lock>/``; plus the project's own wheel, built fresh.
3. **Virtualenv**: inside the unpacked base (``chroot``), ``python3.11 -m venv --without-pip
   /opt/hpa``, then pip (run from outside the image, not installed into it) installs the locked
   wheels with ``--require-hashes --no-index`` and the project's wheel. Byte code is compiled with
   ``SOURCE_DATE_EPOCH`` set, so it is hash-checked rather than time-stamped. C sources and type
   stubs shipped in wheels are dropped and extension modules stripped of their symbol tables.
4. **OCI layout**: one layer, the root filesystem as a tar with sorted names, numeric owners and
   every time clamped to ``SOURCE_DATE_EPOCH`` (the last commit's time), gzip'd without a time
   stamp; the config names user ``65532:65532`` (the chart's ``runAsUser``), the entrypoint
   ``/opt/hpa/bin/hpa``, ``CMD ["--help"]`` and the OCI labels of the ``Dockerfile``. The same
   commit, lock file and Debian packages give the same digest.

Building needs root (``mmdebstrap`` in root mode and ``chroot``) and the ``mmdebstrap``, ``skopeo``
and ``binutils`` Debian packages (``make image`` installs them when missing).

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.delivery.chart import REPO

__all__ = [
    "ENTRYPOINT",
    "IMAGE_USER",
    "LOCK_FILE",
    "BuiltImage",
    "base_tar",
    "build_image",
    "image_version",
]

LOCK_FILE = REPO / "requirements.lock"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3.11", "ca-certificates")
# Purged from the base after installation (in this order: dpkg needs diffutils until the end).
PURGED = (
    ("util-linux-extra",),
    (
        "login",
        "libpam-modules-bin",
        "libpam-modules",
        "libpam-runtime",
        "util-linux",
        "sysvinit-utils",
        "init-system-helpers",
        "usr-is-merged",
        "ncurses-bin",
        "hostname",
    ),
    ("debconf", "perl-base"),  # after the packages whose removal scripts use them
    # tools a Python service never runs and libraries only they (or unused stdlib modules:
    # sqlite3, dbm) load; dash stays as /bin/sh (`kubectl debug` brings tools when needed)
    (
        "openssl",
        "bash",
        "findutils",
        "grep",
        "gzip",
        "sed",
        "libsqlite3-0",
        "libdb5.3",
        "libsystemd0",
        "libudev1",
        "libgcrypt20",
    ),
    ("tar", "diffutils", "coreutils"),  # dpkg itself uses them (--force-bad-path)
)
DPKG_EXCLUDES = ("/usr/share/man/*", "/usr/share/doc/*", "/usr/share/locale/*", "/usr/share/info/*")
# The package manager's own programs and data, and files no service reads (glibc's iconv
# modules, the Python standard library's tests, 2to3 and pydoc data), deleted after the purges.
REMOVED_PATHS = (
    "/usr/lib/x86_64-linux-gnu/gconv",
    "/usr/lib/python3.11/test",
    "/usr/lib/python3.11/lib2to3",
    "/usr/lib/python3.11/pydoc_data",
    "/usr/lib/python3.11/ensurepip",
    "/usr/lib/python3.11/idlelib",
    "/usr/lib/python3.11/turtledemo",
    "/usr/bin/dpkg*",
    "/usr/sbin/dpkg*",
    "/usr/bin/update-alternatives",
    "/usr/share/dpkg",
    "/usr/lib/dpkg",
    "/etc/dpkg",
    "/etc/apt",
    "/var/lib/dpkg/info",
    "/var/lib/dpkg/alternatives",
    "/var/lib/dpkg/triggers",
    "/var/lib/dpkg/updates",
    "/var/lib/dpkg/*-old",
    "/var/cache/*",
    "/var/log/*",
    "/var/lib/apt",
    "/usr/share/lintian",
    "/usr/share/bash-completion",
)
BASE_RECIPE_VERSION = "1"  # bump when the hook below changes in a way its text does not show

IMAGE_USER = "65532:65532"
VENV = "/opt/hpa"
ENTRYPOINT = (f"{VENV}/bin/hpa",)
CMD = ("--help",)
ENV = (
    f"PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
    "LANG=C.UTF-8",
)
WORKDIR = "/tmp"
IMAGE_NAME = "ghcr.io/hpa-autoscaling/hpa"


def _cache_dir() -> Path:
    return Path(os.environ.get("HPA_CACHE", Path.home() / ".cache" / "hpa")) / "image"


def image_version() -> str:
    """The project's version (``pyproject.toml``), which is also the image's tag."""
    import tomllib

    with (REPO / "pyproject.toml").open("rb") as file:
        version: str = tomllib.load(file)["project"]["version"]
    return version


def source_date_epoch() -> int:
    """``SOURCE_DATE_EPOCH`` if set, else the last commit's time (0 outside a git checkout)."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        return int(os.environ["SOURCE_DATE_EPOCH"])
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "log", "-1", "--format=%ct"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 0
    return int(out or 0)


def _revision() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------- base


def strip_base(rootfs: Path) -> None:
    """Purge what a Python service never runs, then the package manager itself, from ``rootfs``
    (an mmdebstrap root filesystem); add the image's user."""
    for group in PURGED:
        purge = subprocess.run(
            [
                "chroot",
                str(rootfs),
                "dpkg",
                "--purge",
                "--force-remove-essential",
                "--force-depends",
                "--force-bad-path",
                *group,
            ],
            check=False,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive"},
            capture_output=True,  # dpkg warns about every essential package
            text=True,
        )
        if purge.returncode != 0:
            raise SystemExit(f"image: dpkg --purge {' '.join(group)} failed:\n{purge.stderr}")
    for pattern in REMOVED_PATHS:
        for path in rootfs.glob(pattern.lstrip("/")):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    for path in (rootfs / "etc/machine-id", rootfs / "etc/hostname", rootfs / "etc/resolv.conf"):
        path.unlink(missing_ok=True)
    for scratch in (rootfs / "tmp", rootfs / "run"):
        for path in scratch.iterdir():
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    # no set-user-ID or set-group-ID program is left (nothing in the image changes users)
    for path in rootfs.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o6000:
            path.chmod(path.stat().st_mode & ~0o6000)
    with (rootfs / "etc/passwd").open("a") as passwd:
        passwd.write("hpa:x:65532:65532:hpa:/nonexistent:/usr/sbin/nologin\n")
    with (rootfs / "etc/group").open("a") as group_file:
        group_file.write("hpa:x:65532:\n")


def _base_command(target: Path) -> list[str]:
    return [
        "mmdebstrap",
        "--quiet",
        "--mode=root",
        "--variant=essential",
        f"--include={','.join(PACKAGES)}",
        "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
        *(f"--dpkgopt=path-exclude={pattern}" for pattern in DPKG_EXCLUDES),
        SUITE,
        str(target),
        MIRROR,
    ]


def base_key() -> str:
    """What the cached base depends on: the mmdebstrap command, the purges, this recipe."""
    recipe = json.dumps([BASE_RECIPE_VERSION, _base_command(Path("TARGET")), PURGED, REMOVED_PATHS])
    return _sha256(recipe.encode())[:16]


def base_tar(*, log: Any = print) -> Path:
    """The cached base root filesystem (a tar), built with mmdebstrap when missing."""
    path = _cache_dir() / f"base-{base_key()}.tar"
    if path.exists():
        return path
    if shutil.which("mmdebstrap") is None:
        raise SystemExit("image: mmdebstrap is not installed (apt-get install mmdebstrap)")
    if os.geteuid() != 0:
        raise SystemExit("image: building the base needs root (mmdebstrap --mode=root)")
    path.parent.mkdir(parents=True, exist_ok=True)
    log(f"image: building the Debian {SUITE} base with mmdebstrap (once) into {path}")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hpa-base-", dir=path.parent) as scratch:
        rootfs = Path(scratch) / "rootfs"
        subprocess.run(
            _base_command(rootfs), check=True, env={**os.environ, "SOURCE_DATE_EPOCH": "0"}
        )
        strip_base(rootfs)
        partial = Path(scratch) / "base.tar"
        subprocess.run(
            ["tar", "--create", "--numeric-owner", "--sort=name", "-f", str(partial), "."],
            check=True,
            cwd=rootfs,
        )
        partial.rename(path)
    log(f"image: base built in {time.monotonic() - start:.0f}s")
    return path


# -------------------------------------------------------------------------------------- wheels


def _lock_digest() -> str:
    return _file_sha256(LOCK_FILE)[:16]


def locked_wheels(*, log: Any = print) -> Path:
    """Every wheel of ``requirements.lock``, downloaded once (hash-checked) into the cache."""
    directory = _cache_dir() / f"wheels-{_lock_digest()}"
    if (directory / ".complete").exists():
        return directory
    if sys.version_info[:2] != (3, 11) or sys.platform != "linux":
        raise SystemExit("image: download the image's wheels with Linux's Python 3.11 (its own)")
    directory.mkdir(parents=True, exist_ok=True)
    log(f"image: downloading the locked wheels into {directory}")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "--require-hashes",
            "--dest",
            str(directory),
            "-r",
            str(LOCK_FILE),
        ],
        check=True,
    )
    (directory / ".complete").touch()
    return directory


def project_wheel(directory: Path) -> Path:
    """The project's wheel, built from the checkout into ``directory``."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--wheel-dir",
            str(directory),
            str(REPO),
        ],
        check=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": str(source_date_epoch())},
    )
    (wheel,) = directory.glob("hpa-*.whl")
    return wheel


# ----------------------------------------------------------------------------------------- tar


def _tar_filter(epoch: int) -> Any:
    def reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime = min(int(info.mtime), epoch)
        info.uname = ""
        info.gname = ""
        return info

    return reset


def _walk_sorted(root: Path) -> Iterator[Path]:
    """Every path under ``root``, parents first, names sorted (a stable tar order)."""
    stack = [root]
    while stack:
        directory = stack.pop()
        entries = sorted(os.scandir(directory), key=lambda e: e.name, reverse=True)
        children = []
        for entry in reversed(entries):
            path = Path(entry.path)
            yield path
            if entry.is_dir(follow_symlinks=False):
                children.append(path)
        stack.extend(reversed(children))


def write_layer(rootfs: Path, out: Path, *, epoch: int) -> tuple[str, str, int]:
    """``rootfs`` as a gzip'd tar layer: ``(diff_id, digest, uncompressed size)``."""
    uncompressed = hashlib.sha256()
    size = 0

    class _Tee(io.RawIOBase):
        def __init__(self, sink: gzip.GzipFile) -> None:
            self.sink = sink

        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            nonlocal size
            view = memoryview(data)
            uncompressed.update(view)
            size += len(view)
            self.sink.write(view)
            return len(view)

    reset = _tar_filter(epoch)
    with (
        out.open("wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as compressed,
    ):
        tee = _Tee(compressed)
        with tarfile.open(fileobj=tee, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for path in _walk_sorted(rootfs):
                arcname = path.relative_to(rootfs).as_posix()
                tar.add(path, arcname=arcname, recursive=False, filter=reset)
    return f"sha256:{uncompressed.hexdigest()}", f"sha256:{_file_sha256(out)}", size


# ----------------------------------------------------------------------------------------- oci


@dataclass(frozen=True, slots=True)
class BuiltImage:
    """An ``oci-archive``: where it is, its manifest digest and root filesystem size."""

    archive: Path
    tag: str
    manifest_digest: str
    uncompressed_bytes: int
    compressed_bytes: int


def _blob(layout: Path, data: bytes) -> str:
    digest = _sha256(data)
    (layout / "blobs" / "sha256" / digest).write_bytes(data)
    return f"sha256:{digest}"


def _json(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def write_oci_archive(
    rootfs: Path, archive: Path, *, tag: str, epoch: int, labels: Mapping[str, str]
) -> BuiltImage:
    """The OCI image layout of ``rootfs`` (one layer), tar'd into ``archive``."""
    created = dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with tempfile.TemporaryDirectory(prefix="hpa-oci-") as scratch:
        layout = Path(scratch) / "layout"
        (layout / "blobs" / "sha256").mkdir(parents=True)
        layer_path = Path(scratch) / "layer.tar.gz"
        diff_id, layer_digest, size = write_layer(rootfs, layer_path, epoch=epoch)
        layer_path.rename(layout / "blobs" / "sha256" / layer_digest.removeprefix("sha256:"))
        config = {
            "created": created,
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "User": IMAGE_USER,
                "Entrypoint": list(ENTRYPOINT),
                "Cmd": list(CMD),
                "Env": list(ENV),
                "WorkingDir": WORKDIR,
                "Labels": dict(labels),
            },
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            "history": [
                {
                    "created": created,
                    "created_by": "mmdebstrap (Debian bookworm, python3.11) + /opt/hpa venv "
                    "from requirements.lock (tests/delivery/image.py)",
                }
            ],
        }
        config_bytes = _json(config)
        config_digest = _blob(layout, config_bytes)
        layer_bytes = (layout / "blobs" / "sha256" / layer_digest.removeprefix("sha256:")).stat()
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config_bytes),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": layer_digest,
                    "size": layer_bytes.st_size,
                }
            ],
            "annotations": dict(labels),
        }
        manifest_bytes = _json(manifest)
        manifest_digest = _blob(layout, manifest_bytes)
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": manifest_digest,
                    "size": len(manifest_bytes),
                    "annotations": {"org.opencontainers.image.ref.name": tag},
                    "platform": {"architecture": "amd64", "os": "linux"},
                }
            ],
        }
        (layout / "index.json").write_bytes(_json(index))
        (layout / "oci-layout").write_bytes(_json({"imageLayoutVersion": "1.0.0"}))
        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = archive.with_name(archive.name + ".partial")
        reset = _tar_filter(epoch)
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
            for path in _walk_sorted(layout):
                info_filter = reset
                tar.add(
                    path,
                    arcname=path.relative_to(layout).as_posix(),
                    recursive=False,
                    filter=info_filter,
                )
        partial.rename(archive)
        return BuiltImage(
            archive=archive,
            tag=tag,
            manifest_digest=manifest_digest,
            uncompressed_bytes=size,
            compressed_bytes=layer_bytes.st_size,
        )


# --------------------------------------------------------------------------------------- build


def _labels(version: str) -> dict[str, str]:
    return {
        "org.opencontainers.image.title": "hpa",
        "org.opencontainers.image.description": (
            "Kubernetes autoscaling stack: autoscaling/v2 HPA controller, Prometheus metrics "
            "adapter, vertical autoscaler"
        ),
        "org.opencontainers.image.source": "https://github.com/hpa-autoscaling/hpa",
        "org.opencontainers.image.documentation": (
            "https://github.com/hpa-autoscaling/hpa/tree/main/docs"
        ),
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": _revision(),
        "org.opencontainers.image.base.name": f"debian:{SUITE}",
    }


def _unpack(tar_path: Path, rootfs: Path) -> None:
    # GNU tar keeps owners, modes and hard links; /dev's nodes stay out (the runtime makes /dev)
    subprocess.run(
        ["tar", "--extract", "--numeric-owner", "--exclude=./dev/*", "-f", str(tar_path)],
        check=True,
        cwd=rootfs,
    )


def _install_venv(rootfs: Path, wheels: Path, own_wheel: Path, epoch: int) -> None:
    """The venv at /opt/hpa inside ``rootfs``: the locked wheels, then the project's."""
    import pip

    stage = rootfs / "tmp" / "hpa-build"
    pip_copy = stage / "pip-src"
    shutil.copytree(Path(pip.__file__).parent, pip_copy / "pip")
    shutil.copytree(wheels, stage / "wheels")
    shutil.copy2(own_wheel, stage / "wheels")
    shutil.copy2(LOCK_FILE, stage / "requirements.lock")
    inside = "/tmp/hpa-build"
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/nonexistent",
        "SOURCE_DATE_EPOCH": str(epoch),
        "PYTHONHASHSEED": "0",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "PYTHONPATH": f"{inside}/pip-src",
    }
    pip_install = [
        "chroot",
        str(rootfs),
        f"{VENV}/bin/python",
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        "--no-deps",
        "--find-links",
        f"{inside}/wheels",
    ]
    subprocess.run(
        ["chroot", str(rootfs), "python3.11", "-m", "venv", "--without-pip", VENV],
        check=True,
        env=env,
    )
    subprocess.run(
        [*pip_install, "--require-hashes", "-r", f"{inside}/requirements.lock"], check=True, env=env
    )
    subprocess.run([*pip_install, f"{inside}/wheels/{own_wheel.name}"], check=True, env=env)
    shutil.rmtree(stage)
    # C sources and type stubs that some wheels ship: nothing reads them at run time
    site_packages = rootfs / VENV.lstrip("/") / "lib" / "python3.11" / "site-packages"
    for pattern in ("*.c", "*.h", "*.pyx", "*.pxd", "*.pyi"):
        for path in site_packages.rglob(pattern):
            path.unlink()
    # extension modules without their symbol tables, as Debian ships its own (binutils' strip,
    # a build-time tool: 13 MB of the wheels' 96 MB)
    extensions = sorted(str(path) for path in site_packages.rglob("*.so"))
    subprocess.run(["strip", "--strip-unneeded", *extensions], check=True)
    for cache in (rootfs / "root").glob(".cache"):
        shutil.rmtree(cache)


def build_image(archive: Path, *, log: Any = print) -> BuiltImage:
    """Build the image into ``archive`` (an ``oci-archive`` tar), reusing the cached base."""
    if os.geteuid() != 0:
        raise SystemExit("image: building needs root (chroot into the image's root filesystem)")
    version = image_version()
    epoch = source_date_epoch()
    base = base_tar(log=log)
    wheels = locked_wheels(log=log)
    with tempfile.TemporaryDirectory(prefix="hpa-image-") as scratch:
        own = project_wheel(Path(scratch) / "own")
        rootfs = Path(scratch) / "rootfs"
        rootfs.mkdir()
        _unpack(base, rootfs)
        _install_venv(rootfs, wheels, own, epoch)
        return write_oci_archive(rootfs, archive, tag=version, epoch=epoch, labels=_labels(version))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.delivery.image", description=__doc__)
    parser.add_argument(
        "--output", type=Path, help="the archive (default dist/hpa-<version>.oci.tar)"
    )
    parser.add_argument("--base-only", action="store_true", help="build (once) the cached base")
    args = parser.parse_args(argv)
    if args.base_only:
        print(f"image: base {base_tar()}")
        print(f"image: wheels {locked_wheels()}")
        return 0
    output = args.output or REPO / "dist" / f"hpa-{image_version()}.oci.tar"
    start = time.monotonic()
    image = build_image(output)
    print(
        f"image: {image.archive} ({IMAGE_NAME}:{image.tag}, manifest {image.manifest_digest}): "
        f"{image.uncompressed_bytes / 1e6:.1f} MB uncompressed, "
        f"{image.compressed_bytes / 1e6:.1f} MB compressed, "
        f"built in {time.monotonic() - start:.0f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
