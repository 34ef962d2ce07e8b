"""The pytest plugin of :mod:`hpa.testing` (entry point ``pytest11``: ``hpa.testing.plugin``).

Installed with the package, it is loaded by pytest automatically (``-p no:hpa.testing.plugin``
turns it off). It gives:

* the fixture ``hpa_kit`` (:class:`HPATestKit`): ``load`` manifests relative to the test file,
  ``decide`` one sync and ``run`` a trace with the controller flags of ``hpa_settings``;
* the fixture ``hpa_settings``: the controller flags (``hpa controller``'s defaults; override it
  in a ``conftest.py`` to test with other flags);
* the fixture ``hpa_metrics``: an empty :class:`~hpa.testing.FakeMetrics` to build on;
* collection of ``*.hpatest.yaml`` files (the ``hpa test`` format): each test of such a file is
  a pytest item, so ``pytest`` runs the YAML tests next to the Python ones.

Example (``tests/test_web_hpa.py``, next to ``deploy/web-hpa.yaml``)::

    from hpa.testing import assert_replicas
    from hpa.testing.plugin import HPATestKit

    def test_busy_pods_scale_up(hpa_kit: HPATestKit) -> None:
        hpa = hpa_kit.load("../deploy/web-hpa.yaml")
        metrics = hpa_kit.metrics().pods(3, cpu="900m", cpu_request="500m")
        assert_replicas(hpa_kit.decide(hpa, metrics), 6)

Upstream counterpart: none. Deliberate deviations: none.

PYTEST_DONT_REWRITE: the plugin asserts nothing itself; a session that loads it both through the
entry point and with ``-p`` (or a nested pytester run) then does not warn that it was imported
before it could be rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hpa.testing import CASE_FILE_SUFFIXES

if TYPE_CHECKING:  # loaded when used: a session that does not use the kit does not pay for it
    from hpa.controllers.settings import HorizontalControllerSettings
    from hpa.sim.workload import MetricPipeline, WorkloadModel
    from hpa.testing.cases import YamlCase
    from hpa.testing.manifests import HPA
    from hpa.testing.metrics import Ago, FakeMetrics
    from hpa.testing.sync import SyncResult
    from hpa.testing.timeline import RunResult, TraceInput

__all__ = ["HPATestKit", "hpa_kit", "hpa_metrics", "hpa_settings"]


class HPATestKit:
    """:mod:`hpa.testing` bound to one test: paths relative to the test file, one set of flags."""

    def __init__(self, *, base: Path, settings: HorizontalControllerSettings) -> None:
        self.base = base
        """The directory of the test file (relative manifest paths start there)."""
        self.settings = settings
        """The controller flags every ``decide`` and ``run`` uses (the ``hpa_settings``
        fixture)."""

    def path(self, relative: str | Path) -> Path:
        """``relative`` resolved against the test file's directory."""
        return self.base / relative

    def load(self, source: str | Path | Mapping[str, Any]) -> HPA:
        """The one HPA of a manifest file (relative to the test file) or mapping."""
        from hpa.testing.manifests import load_hpa

        return load_hpa(source if isinstance(source, Mapping) else self.path(source))

    def load_all(self, source: str | Path | Mapping[str, Any]) -> list[HPA]:
        """Every HPA of a manifest file (relative to the test file) or mapping."""
        from hpa.testing.manifests import load_hpas

        return load_hpas(source if isinstance(source, Mapping) else self.path(source))

    def metrics(self) -> FakeMetrics:
        """An empty fake-metrics builder."""
        from hpa.testing.metrics import FakeMetrics

        return FakeMetrics()

    def decide(
        self,
        hpa: HPA,
        metrics: FakeMetrics | None = None,
        *,
        now: datetime | None = None,
        after: SyncResult | None = None,
    ) -> SyncResult:
        """:func:`hpa.testing.decide` with this kit's flags."""
        from hpa.testing.sync import decide

        return decide(hpa, metrics, now=now, after=after, settings=self.settings)

    def run(
        self,
        hpa: HPA,
        trace: TraceInput,
        *,
        duration: Ago | None = None,
        initial_replicas: int | None = None,
        workload: WorkloadModel | None = None,
        pipeline: MetricPipeline | None = None,
    ) -> RunResult:
        """:func:`hpa.testing.run` with this kit's flags (a CSV path is relative to the test
        file)."""
        from hpa.testing.timeline import run

        if isinstance(trace, str | Path) and str(trace).endswith(".csv"):
            trace = self.path(trace)
        return run(
            hpa,
            trace,
            duration=duration,
            initial_replicas=initial_replicas,
            workload=workload,
            pipeline=pipeline,
            settings=self.settings,
        )


@pytest.fixture
def hpa_settings() -> HorizontalControllerSettings:
    """The controller flags of ``hpa_kit`` (``hpa controller``'s defaults)."""
    from hpa.controllers.settings import HorizontalControllerSettings

    return HorizontalControllerSettings()


@pytest.fixture
def hpa_kit(
    request: pytest.FixtureRequest, hpa_settings: HorizontalControllerSettings
) -> HPATestKit:
    """:class:`HPATestKit` for this test."""
    return HPATestKit(base=Path(request.path).parent, settings=hpa_settings)


@pytest.fixture
def hpa_metrics() -> FakeMetrics:
    """An empty :class:`~hpa.testing.FakeMetrics`."""
    from hpa.testing.metrics import FakeMetrics

    return FakeMetrics()


# ------------------------------------------------------------------- *.hpatest.yaml collection


class HPACaseFile(pytest.File):
    """A ``*.hpatest.yaml`` file: one item per test."""

    def collect(self) -> Iterator[HPACaseItem]:
        from hpa.testing.cases import CaseFileError, load_case_file

        try:
            cases = load_case_file(self.path)
        except CaseFileError as error:
            raise self.CollectError(str(error)) from error
        for case in cases:
            yield HPACaseItem.from_parent(self, name=case.name, case=case)


class HPACaseItem(pytest.Item):
    """One test of a ``*.hpatest.yaml`` file."""

    def __init__(self, *, case: YamlCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        self.case.run()

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        if isinstance(excinfo.value, AssertionError | ValueError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.path.name}::{self.name}"


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> HPACaseFile | None:
    """Collect ``*.hpatest.yaml`` files."""
    if file_path.name.endswith(CASE_FILE_SUFFIXES):
        found: HPACaseFile = HPACaseFile.from_parent(parent, path=file_path)
        return found
    return None
