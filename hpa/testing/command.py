"""``hpa test PATH...``: run declarative HPA test cases (``*.hpatest.yaml``) and report like pytest.

Upstream counterpart: none. Each file is loaded and checked first (:mod:`hpa.testing.cases`); a
malformed file is one line naming the file and the field, and nothing runs (exit 2, as pytest
does for a collection error). Then every test runs: one character per test on the file's line
(``.`` passed, ``F`` failed, ``E`` could not run), the failures in full (expected vs actual, the
deciding rule, the explanation or the replica timeline), a short summary and a last line with the
counts and the time. ``--junit-xml FILE`` writes a JUnit report for CI.

Exit codes: 0 every test passed; 1 a test failed or could not run; 2 bad arguments, no test
found, or a malformed test file.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO
from xml.etree import ElementTree as ET

from hpa.sim.commands import quiet_controller_logs
from hpa.testing.cases import (
    CaseFileError,
    CaseResult,
    YamlCase,
    discover,
    load_case_file,
    run_case,
)

__all__ = ["add_test_parser", "main", "write_junit"]

_MARKS = {"passed": ".", "failed": "F", "error": "E"}


def _rule(title: str, *, char: str = "=", width: int) -> str:
    text = f" {title} " if title else ""
    side = max(3, (width - len(text)) // 2)
    line = f"{char * side}{text}{char * side}"
    return line + char * max(0, width - len(line))


def write_junit(results: Sequence[CaseResult], path: Path, *, seconds: float) -> None:
    """A JUnit XML report: one ``testsuite`` (``hpa test``), one ``testcase`` per test with the
    file as its class name; failures as ``failure``, tests that could not run as ``error``."""
    suite = ET.Element(
        "testsuite",
        name="hpa test",
        tests=str(len(results)),
        failures=str(sum(r.outcome == "failed" for r in results)),
        errors=str(sum(r.outcome == "error" for r in results)),
        skipped="0",
        time=f"{seconds:.3f}",
    )
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=result.case.file,
            name=result.case.name,
            time=f"{result.seconds:.3f}",
        )
        if result.outcome != "passed":
            tag = "failure" if result.outcome == "failed" else "error"
            node = ET.SubElement(case, tag, message=result.message.splitlines()[0])
            node.text = result.message
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    path.write_bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")


def _summary_line(results: Sequence[CaseResult], seconds: float) -> str:
    counts = []
    for outcome, word in (("failed", "failed"), ("passed", "passed"), ("error", "errors")):
        n = sum(r.outcome == outcome for r in results)
        if n:
            counts.append(f"{n} {word if outcome != 'error' or n > 1 else 'error'}")
    return f"{', '.join(counts) or 'no tests ran'} in {seconds:.2f}s"


def run_files(paths: Sequence[str], *, out: TextIO, junit: Path | None = None) -> int:
    """Load, run and report; the exit code."""
    width = min(shutil.get_terminal_size((100, 24)).columns, 100)
    started = time.perf_counter()
    try:
        files = discover(paths)
    except CaseFileError as error:
        print(f"hpa test: error: {error}", file=sys.stderr)
        return 2
    if not files:
        print(
            f"hpa test: error: no test files (*.hpatest.yaml) under {' '.join(paths)}",
            file=sys.stderr,
        )
        return 2
    loaded: list[tuple[Path, list[YamlCase]]] = []
    broken: list[str] = []
    for path in files:
        try:
            loaded.append((path, load_case_file(path)))
        except CaseFileError as error:
            broken.append(str(error))
    if broken:
        for line in broken:
            print(f"hpa test: error: {line}", file=sys.stderr)
        return 2
    total = sum(len(cases) for _, cases in loaded)
    print(_rule("hpa test session starts", width=width), file=out)
    files_word = "file" if len(loaded) == 1 else "files"
    tests_word = "test" if total == 1 else "tests"
    print(f"collected {total} {tests_word} from {len(loaded)} {files_word}\n", file=out)
    results: list[CaseResult] = []
    for path, cases in loaded:
        marks = []
        for case in cases:
            result = run_case(case)
            results.append(result)
            marks.append(_MARKS[result.outcome])
        print(f"{path} {''.join(marks)}", file=out)
    elapsed = time.perf_counter() - started
    bad = [r for r in results if r.outcome != "passed"]
    if bad:
        print("\n" + _rule("FAILURES", width=width), file=out)
        for result in bad:
            print(_rule(result.case.id, char="_", width=width), file=out)
            if result.outcome == "error":
                print(f"could not run: {result.message}", file=out)
            else:
                print(result.message, file=out)
            print(file=out)
        print(_rule("short test summary info", width=width), file=out)
        for result in bad:
            word = "FAILED" if result.outcome == "failed" else "ERROR"
            print(f"{word} {result.case.id} - {result.message.splitlines()[0]}", file=out)
    print(_rule(_summary_line(results, elapsed), width=width), file=out)
    if junit is not None:
        write_junit(results, junit, seconds=elapsed)
    return 1 if bad else 0


def add_test_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``hpa test``."""
    parser = subparsers.add_parser(
        "test",
        help="run declarative HPA test cases (*.hpatest.yaml) against fake metrics",
        description=(
            "Run the HPA test cases of each file (and of every *.hpatest.yaml below each "
            "directory): one sync against fake metrics, or a load trace in virtual time, "
            "checked against the expected replicas, conditions, events and timeline. "
            "The format is in docs/testing.md."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="test files or directories")
    parser.add_argument(
        "--junit-xml", type=Path, metavar="FILE", help="also write a JUnit XML report to FILE"
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """``hpa test``'s handler."""
    quiet_controller_logs()
    return run_files(args.paths, out=sys.stdout, junit=args.junit_xml)
