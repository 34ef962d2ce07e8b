"""Running the ``hpa`` command as a user does: a fresh interpreter on this checkout."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout under test (the subprocess imports it, not an installed copy)."""

UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
"""A valid kubeconfig whose API server never answers (port 1)."""


def command_env() -> dict[str, str]:
    """The environment for ``python -m hpa``: this checkout first on the path, and no cluster
    configuration inherited from the machine (no ``KUBECONFIG``, no in-cluster variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.pop("KUBECONFIG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env
