"""The examples of ``docs/examples`` pass, as YAML (``hpa test``) and as Python (pytest with the
plugin), and flipping one expected number in each makes it fail with a message that names the
expected and the actual value and the deciding rule."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from hpa.testing.command import run_files

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
YAML_FILES = sorted(EXAMPLES.glob("*.hpatest.yaml"))
PYTHON_FILES = sorted(EXAMPLES.glob("test_*.py"))
SCENARIOS = (
    "fast-scale-up",
    "gradual-scale-up",
    "slow-scale-down",
    "no-scale-down",
    "multi-metric",
)


def test_every_scenario_has_both_forms() -> None:
    for scenario in SCENARIOS:
        assert (EXAMPLES / f"{scenario}.yaml").is_file()
        assert (EXAMPLES / f"{scenario}.hpatest.yaml").is_file()
        assert (EXAMPLES / f"test_{scenario.replace('-', '_')}.py").is_file()


def test_yaml_examples_pass(tmp_path: Path) -> None:
    out = io.StringIO()
    junit = tmp_path / "junit.xml"
    assert run_files([str(EXAMPLES)], out=out, junit=junit) == 0, out.getvalue()
    assert re.search(r"=+ 16 passed in [0-9.]+s =+", out.getvalue()), out.getvalue()
    assert 'tests="16" failures="0" errors="0"' in junit.read_text()


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def test_python_and_yaml_examples_pass_under_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    result = pytester.runpytest_inprocess(
        "-p", "hpa.testing.plugin", "-p", "no:cacheprovider", "-q", str(EXAMPLES)
    )
    result.assert_outcomes(passed=30)


def _flip_yaml(text: str) -> tuple[str, str, str]:
    """The first expected replica count of the file, plus one."""
    match = re.search(r"(expect:\n\s+replicas: )(\d+)", text)
    assert match is not None
    old = match.group(2)
    new = str(int(old) + 1)
    return text[: match.start(2)] + new + text[match.end(2) :], old, new


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.name)
def test_a_flipped_yaml_expectation_fails_naming_both_values_and_the_rule(
    path: Path, tmp_path: Path
) -> None:
    flipped, old, new = _flip_yaml(path.read_text())
    shutil.copy(EXAMPLES / path.name.replace(".hpatest", ""), tmp_path)
    (tmp_path / path.name).write_text(flipped)
    out = io.StringIO()
    junit = tmp_path / "junit.xml"
    assert run_files([str(tmp_path)], out=out, junit=junit) == 1
    text = out.getvalue()
    assert f"desired replicas: expected {new}, got {old}" in text
    assert "deciding rule: [" in text
    assert re.search(r"=+ 1 failed, \d+ passed in", text), text
    assert "<failure message=" in junit.read_text()


def test_a_flipped_python_expectation_fails_naming_both_values_and_the_rule(
    pytester: pytest.Pytester,
) -> None:
    """One pytest session over every Python example, each with its first expected replica count
    plus one: each fails once, naming both numbers and the deciding rule."""
    for manifest in EXAMPLES.glob("*.yaml"):
        if not manifest.name.endswith(".hpatest.yaml"):
            shutil.copy(manifest, pytester.path)
    pytester.makeini(INI)
    flips: dict[str, tuple[str, str]] = {}
    for path in PYTHON_FILES:
        text = path.read_text()
        match = re.search(r"(assert_replicas\([^,]+, )(\d+)\)", text)
        assert match is not None, path
        old = match.group(2)
        new = str(int(old) + 1)
        flips[path.stem] = (old, new)
        pytester.makepyfile(**{path.stem: text[: match.start(2)] + new + text[match.end(2) :]})
    result = pytester.runpytest_inprocess("-p", "hpa.testing.plugin", "-p", "no:cacheprovider")
    output = result.stdout.str()
    assert result.parseoutcomes().get("failed") == len(PYTHON_FILES), output
    for stem, (old, new) in flips.items():
        failure = output[output.index(f"{stem}.py:") :]
        assert f"desired replicas: expected {new}, got {old}" in failure, stem
    assert output.count("deciding rule: [") >= len(PYTHON_FILES)
