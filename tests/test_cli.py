"""The ``hpa`` console script as a user meets it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hpa import __version__
from hpa.cli import main


def test_version_flag_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"hpa {__version__}"
    assert __version__ != "0.0.0+unknown", "the package is installed, so its version is known"


def test_help_describes_the_stack(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: hpa" in out
    assert "HorizontalPodAutoscaler" in out


def test_no_command_prints_usage_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: hpa" in capsys.readouterr().err


def test_unknown_command_is_a_clear_cli_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_console_script_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hpa", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("hpa ")


def listed_commands(help_text: str) -> list[str]:
    """The sub-commands a help text lists under its positional arguments."""
    block = help_text.split("positional arguments:", 1)[1].split("options:", 1)[0]
    return [line.split()[0] for line in block.splitlines() if re.match(r"^    [a-z]", line)]


def help_of(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0, argv
    return capsys.readouterr().out


def test_help_lists_only_commands_that_exist_and_are_documented(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every command `hpa --help` names answers its own --help with its usage, every `hpa vpa`
    part too, and each is in README's table of parts."""
    commands = listed_commands(help_of(capsys, []))
    assert commands == ["controller", "explain", "adapter", "vpa", "simulate", "demo", "test"]
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for command in commands:
        text = help_of(capsys, [command])
        assert text.startswith(f"usage: hpa {command}")
        assert f"hpa {command}" in readme, command
    parts = listed_commands(help_of(capsys, ["vpa"]))
    assert parts == ["admission", "recommender", "updater"]
    for part in parts:
        assert help_of(capsys, ["vpa", part]).startswith(f"usage: hpa vpa {part}")
