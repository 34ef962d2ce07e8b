"""Build (once) and run the real prometheus-adapter beside ours in the lab.

Upstream counterpart: kubernetes-sigs/prometheus-adapter at commit
``01919d0ef11859bc214e0c8a8bd5368afd9d47f7`` (its ``Makefile`` target ``prometheus-adapter``: a
``go build`` of ``./cmd/adapter``), built from the read-only source tree in
``../shared/peers/prometheus-adapter`` beside the checkout (``$HPA_PROMETHEUS_ADAPTER_SRC``). Its
module is not on the Go module proxy but every dependency is, so ``GOFLAGS=-mod=mod`` builds it
without changing the tree. Flags follow ``cmd/adapter/adapter.go`` and the generic API server
options of ``k8s.io/apiserver`` (``--secure-port``, ``--tls-*``, ``--requestheader-*``,
``--authentication-kubeconfig``, ``--authorization-kubeconfig``).

Deviations: stripped (``-s -w``) and ``-trimpath`` like the control plane (62 MB); no version is
stamped. Cold (its dependencies downloaded from the module proxy, none of its packages in Go's
build cache): 206 s on 2 shared cores (``time python -m tests.lab.prometheus_adapter``: 3 min 27 s
wall; ``build_seconds`` in the cache directory's manifest); warm, a no-op of 0.2 s (hashing the
tree).

The cache lives in ``$HPA_CACHE/bin/prometheus-adapter-<key>-<go>/``: ``<key>`` hashes the source
tree's ``go.mod``, ``go.sum`` and every ``.go`` file (the tree carries no ``.git``) with the build
flags, ``<go>`` is the Go version; anything else is a no-op.

    python -m tests.lab.prometheus_adapter     # build if missing, print the directory
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.lab.build import build_once, cache_root, go_build, go_version
from tests.lab.process import Component, ProcessGroup, wait_until
from tests.lab.toolchain import find_go

UPSTREAM_COMMIT = "01919d0ef11859bc214e0c8a8bd5368afd9d47f7"
DEFAULT_SOURCE = (
    Path(__file__).resolve().parents[2].parent / "shared" / "peers" / "prometheus-adapter"
)
PACKAGE = "./cmd/adapter"
BINARY = "prometheus-adapter"
BUILD_FLAGS = ("-trimpath", "-ldflags=-s -w")


def source_dir() -> Path:
    return Path(os.environ.get("HPA_PROMETHEUS_ADAPTER_SRC") or DEFAULT_SOURCE)


def content_key(source: Path) -> str:
    """Hash of ``go.mod``, ``go.sum``, every ``.go`` file (by relative path) and the flags."""
    digest = hashlib.sha256(repr((PACKAGE, BUILD_FLAGS)).encode())
    files = [source / "go.mod", source / "go.sum"]
    files += sorted(p for p in source.rglob("*.go") if p.is_file())
    for path in files:
        digest.update(str(path.relative_to(source)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def go_key(go_version_text: str) -> str:
    return go_version_text.removeprefix("go").replace(" ", "_")


def bin_dir_for(key: str, go_version_text: str) -> Path:
    return cache_root() / "bin" / f"{BINARY}-{key}-go{go_key(go_version_text)}"


def build(*, parallel_jobs: int = 2) -> Path:
    """Build the binary unless the cache has it; returns the cache directory
    (``tests.lab.build.build_once``: an interrupted build never looks complete)."""
    source = source_dir()
    if not (source / "go.mod").exists():
        raise RuntimeError(f"prometheus-adapter source not found at {source}")
    go = find_go()
    version = go_version(go, source)

    def run(partial: Path) -> None:
        go_build(
            go,
            str(partial / BINARY),
            [PACKAGE],
            cwd=source,
            flags=BUILD_FLAGS,
            parallel_jobs=parallel_jobs,
            env={"GOFLAGS": "-mod=mod"},
        )

    return build_once(
        bin_dir_for(content_key(source), version),
        f"prometheus-adapter ({source}) with {version}",
        run,
        {"go": version, "upstream_commit": UPSTREAM_COMMIT},
    )


READY_TIMEOUT_SECONDS = 90.0
HTTP_TIMEOUT_SECONDS = 15.0
ADMIN_HEADERS: Mapping[str, str] = {
    "X-Remote-User": "hpa-lab-admin",
    "X-Remote-Group": "system:masters",
}
"""What kube-apiserver's aggregator sends for the lab's admin (``requestheader`` identity)."""


@dataclass(frozen=True, kw_only=True)
class AdapterConfig:
    """What prometheus-adapter needs to serve on a direct HTTPS port in the lab."""

    rules: Path
    """``--config``: the rule file (prometheus-adapter's ConfigMap ``config.yaml``)."""
    prometheus_url: str
    kubeconfig: Path
    """``--lister-kubeconfig``, ``--authentication-kubeconfig``, ``--authorization-kubeconfig``."""
    requestheader_ca: Path
    """``--requestheader-client-ca-file``: the lab's front-proxy CA."""
    tls_cert_file: Path
    tls_private_key: Path
    port: int
    bind_address: str = "127.0.0.1"
    relist_interval: str = "2s"
    extra_args: tuple[str, ...] = field(default=())


def argv(bin_dir: Path, config: AdapterConfig) -> list[str]:
    return [
        str(bin_dir / BINARY),
        f"--config={config.rules}",
        f"--prometheus-url={config.prometheus_url}",
        f"--metrics-relist-interval={config.relist_interval}",
        f"--lister-kubeconfig={config.kubeconfig}",
        f"--authentication-kubeconfig={config.kubeconfig}",
        f"--authorization-kubeconfig={config.kubeconfig}",
        f"--requestheader-client-ca-file={config.requestheader_ca}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--bind-address={config.bind_address}",
        f"--secure-port={config.port}",
        f"--tls-cert-file={config.tls_cert_file}",
        f"--tls-private-key-file={config.tls_private_key}",
        "--v=2",
        *config.extra_args,
    ]


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: status code and the decoded JSON body (``None`` when not JSON)."""

    status: int
    body: Any


def get(
    base_url: str,
    path: str,
    *,
    context: ssl.SSLContext,
    headers: Mapping[str, str] = ADMIN_HEADERS,
) -> Reply:
    """GET ``path`` as the front proxy would send it (``context`` holds its client certificate);
    error statuses are answers, not exceptions."""
    request = urllib.request.Request(f"{base_url}{path}", headers=dict(headers))  # noqa: S310
    try:
        with urllib.request.urlopen(  # noqa: S310
            request, context=context, timeout=HTTP_TIMEOUT_SECONDS
        ) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return Reply(status, json.loads(raw))
    except ValueError:
        return Reply(status, raw.decode(errors="replace"))


def wait_ready(
    base_url: str,
    *,
    context: ssl.SSLContext,
    group: ProcessGroup | None = None,
    discovery_path: str | None = "/apis/custom.metrics.k8s.io/v1beta1",
    timeout_seconds: float = READY_TIMEOUT_SECONDS,
) -> None:
    """Poll ``/readyz`` and then ``discovery_path`` (if any) until it answers 200 with at least
    one resource (the first relist of Prometheus' series is done)."""

    def ready() -> bool:
        if get(base_url, "/readyz", context=context).status != 200:
            return False
        if discovery_path is None:
            return True
        reply = get(base_url, discovery_path, context=context)
        return reply.status == 200 and bool(reply.body.get("resources"))

    wait_until(
        ready, what=f"{base_url}{discovery_path}", timeout_seconds=timeout_seconds, group=group
    )


def start(
    group: ProcessGroup,
    config: AdapterConfig,
    *,
    bin_dir: Path | None = None,
    name: str = BINARY,
) -> Component:
    """Start prometheus-adapter as a lab component (built first if needed); the caller polls
    ``wait_ready`` (which needs a client certificate the requestheader CA trusts)."""
    return group.start(name, argv(bin_dir or build(), config))


def main() -> int:
    print(build())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
