"""Paths of the upstream data files shared beside the repository (``<repo>/../shared/data``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml

SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
K8S_TESTDATA = SHARED_DATA / "k8s-testdata"
VPA_DATA = SHARED_DATA / "vpa"


def load_json(path: Path) -> Any:
    """The decoded JSON document at ``path``."""
    return orjson.loads(path.read_bytes())


def load_yaml_documents(path: Path) -> list[Any]:
    """Every non-empty document of a (multi-document) YAML file."""
    with path.open(encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc is not None]
