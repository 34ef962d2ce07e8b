"""hpa.core stays pure: stdlib imports only, and no clock reads.

import-linter forbids the known offenders; this test closes the gap for any third-party package
and for wall-clock calls that an import contract cannot see.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[3] / "hpa" / "core"
CLOCK_CALLS = {
    ("time", "time"),
    ("time", "monotonic"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("date", "today"),
    ("time", "perf_counter"),
}


def _core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(CORE)))
def test_core_imports_only_stdlib(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    outside = {
        root
        for root in _imported_roots(tree)
        if root not in sys.stdlib_module_names and root not in {"hpa", "__future__"}
    }
    assert not outside, f"{path} imports non-stdlib modules {sorted(outside)}"
    own = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hpa")
    }
    assert all(m.startswith("hpa.core") for m in own), f"{path} imports outside hpa.core: {own}"


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(CORE)))
def test_core_never_reads_the_clock(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert (node.value.id, node.attr) not in CLOCK_CALLS, (
                f"{path}:{node.lineno} reads the clock ({node.value.id}.{node.attr}); "
                "pass `now` in instead"
            )
