"""``hpa test``: the YAML format's checks, the report, JUnit XML and exit codes."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from hpa.cli import main
from hpa.testing.cases import CaseFileError, discover, load_case_file
from hpa.testing.command import run_files

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
GOOD = (EXAMPLES / "fast-scale-up.hpatest.yaml").read_text()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLES / "fast-scale-up.yaml", tmp_path)
    return tmp_path


MALFORMED = [
    (
        ("replicas: 10\n", "replicas: ten\n"),
        "tests[0].expect.replicas: Input should be a valid integer, unable to parse string as "
        "an integer",
    ),
    (
        ('{count: 1, cpu: "5", cpuRequest: 500m}', '{count: 1, cpu: "5", cpuRequst: 500m}'),
        "tests[0].given.pods[0].cpuRequst: Extra inputs are not permitted",
    ),
    (("hpa: fast-scale-up.yaml", "hpa: nope.yaml"), "hpa: cannot read "),
    (
        ('cpu: "5"', 'cpu: "5OO"'),
        "tests[0].given: pods[0]: cpu: invalid quantity '5OO'",
    ),
    (
        ("duration: 7m", "duration: 7 minutes"),
        "tests[2].trace: duration: invalid duration '7 minutes'",
    ),
    (("steps:", "stepz:"), "tests[2].expect.stepz: Extra inputs are not permitted"),
    (("- name: ten pods", "- nme: ten pods"), "tests[1].name: Field required"),
    (
        ("  trace:\n", "  given: {}\n  trace:\n"),
        "tests[2]: give either `given` (one sync) or `trace` (a run), not both",
    ),
    (("summary: {scaleUps: 3}", "summary: {scaleUpz: 3}"), "summary: unknown figure 'scaleUpz'"),
    (("tests:", "tests: 3\nx:"), "tests: Input should be a valid list"),
]


@pytest.mark.parametrize(("change", "message"), MALFORMED, ids=lambda v: str(v)[:40])
def test_a_malformed_file_is_one_line_naming_file_and_field(
    workdir: Path,
    change: tuple[str, str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, new = change
    assert old in GOOD
    path = workdir / "bad.hpatest.yaml"
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(CaseFileError) as error:
        load_case_file(path)
    assert str(error.value).startswith(f"{path}: ")
    assert message in str(error.value)
    assert main(["test", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"hpa test: error: {error.value}\n"


def test_an_invalid_manifest_names_the_manifest_field(workdir: Path) -> None:
    manifest = workdir / "fast-scale-up.yaml"
    manifest.write_text(manifest.read_text().replace("periodSeconds: 60", "periodSecond: 60"))
    (workdir / "t.hpatest.yaml").write_text(GOOD)
    with pytest.raises(CaseFileError, match=r'unknown field "spec\.behavior\.scaleUp'):
        load_case_file(workdir / "t.hpatest.yaml")


def test_an_inline_manifest(workdir: Path) -> None:
    inline = (workdir / "fast-scale-up.yaml").read_text()
    indented = "".join(f"  {line}\n" for line in inline.splitlines() if not line.startswith("#"))
    text = GOOD.replace("hpa: fast-scale-up.yaml\n", "hpa:\n" + indented)
    (workdir / "inline.hpatest.yaml").write_text(text)
    cases = load_case_file(workdir / "inline.hpatest.yaml")
    assert cases[0].name == "one busy pod becomes ten"
    for case in cases:
        case.run()


def test_report_exit_code_and_junit(workdir: Path) -> None:
    (workdir / "ok.hpatest.yaml").write_text(GOOD)
    (workdir / "bad.hpatest.yaml").write_text(GOOD.replace("replicas: 10\n", "replicas: 9\n", 1))
    out = io.StringIO()
    junit = workdir / "report.xml"
    assert run_files([str(workdir)], out=out, junit=junit) == 1
    text = out.getvalue()
    assert "collected 6 tests from 2 files" in text
    assert f"{workdir / 'bad.hpatest.yaml'} F..\n" in text
    assert f"{workdir / 'ok.hpatest.yaml'} ...\n" in text
    assert (
        f"FAILED {workdir / 'bad.hpatest.yaml'}::one busy pod becomes ten - demo/fast-up: "
        "desired replicas: expected 9, got 10\n"
    ) in text
    assert text.rstrip().endswith("=")
    assert " 1 failed, 5 passed in " in text.splitlines()[-1]
    suite = ET.parse(junit).getroot().find("testsuite")  # noqa: S314 - our own file
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "1", "0")
    failures = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert [case.get("name") for case in failures] == ["one busy pod becomes ten"]


def test_a_test_that_cannot_run_is_an_error(workdir: Path) -> None:
    manifest = EXAMPLES / "multi-metric.yaml"
    shutil.copy(manifest, workdir)
    (workdir / "m.hpatest.yaml").write_text(
        "hpa: multi-metric.yaml\ntests:\n- name: no queue value\n  given:\n"
        "    pods: [{count: 2, cpu: 100m, cpuRequest: 500m}]\n  expect: {replicas: 2}\n"
    )
    out = io.StringIO()
    assert run_files([str(workdir / "m.hpatest.yaml")], out=out) == 1
    assert "m.hpatest.yaml E\n" in out.getvalue()
    assert "no value for the External metric 'queue_messages_ready'" in out.getvalue()


def test_no_files_and_missing_paths_exit_2(tmp_path: Path) -> None:
    assert main(["test", str(tmp_path)]) == 2
    assert main(["test", str(tmp_path / "missing.hpatest.yaml")]) == 2
    with pytest.raises(CaseFileError, match="no such file"):
        discover([tmp_path / "missing"])


def test_the_documented_format_runs(tmp_path: Path) -> None:
    """The YAML example of docs/testing.md is a passing test file."""
    docs = (EXAMPLES.parent / "testing.md").read_text()
    match = re.search(r"```yaml\n(# web\.hpatest\.yaml\n.*?)```", docs, re.S)
    assert match is not None
    shutil.copy(EXAMPLES / "fast-scale-up.yaml", tmp_path / "web-hpa.yaml")
    (tmp_path / "web.hpatest.yaml").write_text(match.group(1))
    out = io.StringIO()
    assert run_files([str(tmp_path)], out=out) == 0, out.getvalue()
