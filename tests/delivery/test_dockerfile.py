"""The Dockerfile's promises, read from the file (no container engine here to build it): several
stages, a slim Python base, a numeric non-root user matching the chart, `hpa` as an exec-form
entrypoint (no shell at run time), OCI labels, and a build context holding only the package."""

from __future__ import annotations

import json
import re

import yaml

from tests.delivery.chart import CHART_DIR, REPO

DOCKERFILE = (REPO / "Dockerfile").read_text()
INSTRUCTIONS = [
    line.strip()
    for line in DOCKERFILE.replace("\\\n", " ").splitlines()
    if line.strip() and not line.lstrip().startswith("#")
]


def instructions(name: str) -> list[str]:
    return [line.split(None, 1)[1] for line in INSTRUCTIONS if line.split(None, 1)[0] == name]


def runtime_stage() -> list[str]:
    starts = [i for i, line in enumerate(INSTRUCTIONS) if line.startswith("FROM ")]
    return INSTRUCTIONS[starts[-1] :]


def test_multi_stage_on_a_slim_python_base() -> None:
    bases = instructions("FROM")
    assert len(bases) >= 2
    assert all(re.match(r"python:\$\{PYTHON_VERSION\}-slim", base) for base in bases)
    assert "ARG PYTHON_VERSION=3.11" in INSTRUCTIONS


def test_runtime_runs_as_the_charts_numeric_non_root_user() -> None:
    users = [line.split()[1] for line in runtime_stage() if line.startswith("USER ")]
    assert len(users) == 1
    uid, gid = (int(part) for part in users[0].split(":"))
    assert uid != 0
    assert gid != 0
    chart_values = (CHART_DIR / "values.yaml").read_text()  # podSecurityContext, securityContext
    assert f"runAsUser: {uid}" in chart_values
    assert f"runAsGroup: {gid}" in chart_values


def test_entrypoint_is_hpa_in_exec_form_and_no_shell_runs_at_start() -> None:
    stage = runtime_stage()
    entrypoint = [line for line in stage if line.startswith("ENTRYPOINT ")]
    assert len(entrypoint) == 1
    argv = json.loads(entrypoint[0].split(None, 1)[1])
    assert argv == ["/opt/hpa/bin/hpa"]
    assert not [line for line in stage if line.startswith("RUN ")]  # nothing runs in the runtime
    cmd = [line for line in stage if line.startswith("CMD ")]
    assert all(line.split(None, 1)[1].startswith("[") for line in cmd)


def test_labels_name_the_source_version_and_license() -> None:
    labels = " ".join(instructions("LABEL"))
    for key in ("title", "source", "version", "revision", "licenses"):
        assert f"org.opencontainers.image.{key}=" in labels


def test_build_context_holds_only_the_package() -> None:
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    assert "*" in ignore  # everything is excluded, then the package is let back in
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert allowed == {"requirements.lock", "pyproject.toml", "README.md", "hpa", "adapter"}
    sources: set[str] = set()
    for line in instructions("COPY"):
        words = line.split()
        if not words[0].startswith("--from="):
            sources.update(word.rstrip("/") for word in words[:-1])
    assert sources == allowed


def test_chart_app_version_matches_the_package() -> None:
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{chart["appVersion"]}"' in pyproject
    assert f"ARG VERSION={chart['appVersion']}" in INSTRUCTIONS


def test_dependencies_come_from_the_lock_file_with_hashes() -> None:
    """The same pins `make image` installs: hash-checked, no resolution at build time."""
    runs = " ".join(instructions("RUN"))
    assert "--require-hashes" in runs
    assert "-r requirements.lock" in runs
    assert "pip install --no-deps /wheels/hpa-" in runs  # the project's wheel adds nothing
    lock = (REPO / "requirements.lock").read_text()
    pins = [line.split(" ")[0] for line in lock.splitlines() if "==" in line]
    assert pins
    for pin in pins:
        assert f"{pin} \\\n    --hash=sha256:" in lock


def test_the_lock_pins_every_runtime_dependency_of_pyproject() -> None:
    """`make lock` after changing [project.dependencies]; a dependency missing here fails."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    with (REPO / "pyproject.toml").open("rb") as file:
        wanted = tomllib.load(file)["project"]["dependencies"]
    lock = (REPO / "requirements.lock").read_text()
    pinned = {
        canonicalize_name(line.split("==")[0]): line.split("==")[1].split()[0]
        for line in lock.splitlines()
        if "==" in line and not line.startswith((" ", "#"))
    }
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not in requirements.lock: run make lock"
        assert requirement.specifier.contains(pinned[name]), f"{name}=={pinned[name]}"
