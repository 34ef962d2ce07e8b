"""The test kit as users get it: the wheel, installed (not editable) into a fresh venv, runs a
user's test file through the pytest plugin, and ``mypy --strict`` accepts a typed user test.

The fresh venv reaches the runtime and test dependencies through a ``.pth`` line naming this
environment's site-packages (offline, nothing is downloaded for them); ``hpa`` itself comes from
the wheel, which is installed in the venv's own site-packages and so comes first on
``sys.path`` (a ``.pth`` line only appends a directory: this environment's editable install of
``hpa`` is not activated there).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

USER_TEST = '''\
"""A platform team's test of its HPA manifest."""

from hpa.testing import FakeMetrics, SyncResult, assert_replicas, assert_steps
from hpa.testing.plugin import HPATestKit


def test_busy_pods_scale_up(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("manifests/web-hpa.yaml")
    metrics: FakeMetrics = hpa_kit.metrics().pods(1, cpu="5", cpu_request="500m")
    result: SyncResult = hpa_kit.decide(hpa, metrics)
    assert_replicas(result, 10)


def test_a_load_step(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("manifests/web-hpa.yaml")
    assert_steps(hpa_kit.run(hpa, [(0, 10), (60, 25000)], duration="7m"), [1, 10, 100, 1000])
'''

USER_CASES = """\
hpa: manifests/web-hpa.yaml
tests:
- name: one busy pod becomes ten
  given:
    pods: [{count: 1, cpu: "5", cpuRequest: 500m}]
  expect: {replicas: 10}
"""


def _run(args: list[str], *, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_the_wheel_runs_a_user_test_with_the_plugin_and_type_checks(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "MYPY"))}
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        cwd=tmp_path,
        env=env,
    )
    (wheel,) = dist.glob("hpa-*.whl")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path, env=env)
    python = venv / "bin" / "python"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        cwd=tmp_path,
        env=env,
    )
    purelib = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=tmp_path,
            env=env,
        ).strip()
    )
    (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    user = tmp_path / "user"
    (user / "manifests").mkdir(parents=True)
    shutil.copy(
        ROOT / "docs" / "examples" / "fast-scale-up.yaml", user / "manifests" / "web-hpa.yaml"
    )
    (user / "test_web_hpa.py").write_text(USER_TEST)
    (user / "web.hpatest.yaml").write_text(USER_CASES)

    where = _run(
        [str(python), "-c", "import hpa.testing; print(hpa.testing.__file__)"], cwd=user, env=env
    )
    assert where.startswith(str(purelib)), where
    output = _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=user, env=env)
    assert "3 passed" in output, output
    # naming the plugin as well as having its entry point is harmless (the name is the same)
    output = _run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "hpa.testing.plugin"],
        cwd=user,
        env=env,
    )
    assert "3 passed" in output, output
    assert "warning" not in output, output
    _run(
        [str(python), "-m", "mypy", "--strict", "--no-incremental", "test_web_hpa.py"],
        cwd=user,
        env=env,
    )
    cli = _run([str(venv / "bin" / "hpa"), "test", "."], cwd=user, env=env)
    assert "1 passed" in cli
