"""Declarative HPA test cases in YAML (``*.hpatest.yaml``), for ``hpa test`` and the pytest
plugin.

Upstream counterpart: none (``helm unittest`` and ``conftest`` are the models). A file names the
HPA manifest (a path relative to the file, or the manifest inline), optional controller flags,
and a list of tests. A test either gives fake metrics for one sync and expects replicas,
conditions and an event, or gives a load trace and expects the replica timeline to go through
steps, pass through points, stay within bounds or have summary figures. The format is in
``docs/testing.md``; every check is an :mod:`hpa.testing.assertions` helper and every sync a
:func:`hpa.testing.decide` or :func:`hpa.testing.run`, so a YAML test and a Python test fail
with the same message.

A malformed file is one :class:`CaseFileError` naming the file and the field
(``web.hpatest.yaml: tests[0].expect.replicas: Input should be a valid integer``); nothing of
that file runs.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from hpa.api.base import error_location
from hpa.controllers.settings import HorizontalControllerSettings
from hpa.sim.trace import TraceError
from hpa.sim.workload import WorkloadModel
from hpa.testing import CASE_FILE_SUFFIXES
from hpa.testing.assertions import (
    HPAAssertionError,
    assert_condition,
    assert_event,
    assert_replicas,
    assert_replicas_at,
    assert_replicas_within,
    assert_steps,
    assert_summary,
)
from hpa.testing.manifests import HPA, ManifestError, load_hpas
from hpa.testing.metrics import FakeMetrics, container, milli, seconds
from hpa.testing.sync import decide
from hpa.testing.timeline import TraceInput, load_trace, run

__all__ = [
    "CASE_FILE_SUFFIXES",
    "CaseFileError",
    "CaseResult",
    "YamlCase",
    "discover",
    "load_case_file",
    "run_case",
]


Number = int | float
Duration = int | float | str
QuantityValue = int | float | str


class CaseFileError(ValueError):
    """A test file that cannot be used; the message names the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,  # for the type checker; documents are read by wire name only
        validate_by_alias=True,
        frozen=True,
    )

    @classmethod
    def read(cls, data: Any) -> Any:
        """Validate ``data`` by its camelCase names only."""
        return cls.model_validate(data, by_alias=True, by_name=False)


class _Container(_Model):
    name: str
    cpu: QuantityValue | None = None
    memory: QuantityValue | None = None
    cpu_request: QuantityValue | None = None
    memory_request: QuantityValue | None = None


class _Pod(_Model):
    name: str | None = None
    count: Annotated[int, Field(ge=1)] = 1
    cpu: QuantityValue | None = None
    memory: QuantityValue | None = None
    cpu_request: QuantityValue | None = None
    memory_request: QuantityValue | None = None
    containers: list[_Container] | None = None
    ready: bool | None = True
    started_ago: Duration = 3600
    ready_since_ago: Duration | None = None
    phase: Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"] = "Running"
    deleting: bool = False
    missing: bool = False
    listed: bool = True
    metrics: dict[str, QuantityValue] = Field(default_factory=dict)


class _Recommendation(_Model):
    replicas: Annotated[int, Field(ge=0)]
    ago: Duration


class _ScaleEvent(_Model):
    change: Annotated[int, Field(ge=0)]
    ago: Duration


class _History(_Model):
    recommendations: list[_Recommendation] | None = None
    scale_up_events: list[_ScaleEvent] = Field(default_factory=list)
    scale_down_events: list[_ScaleEvent] = Field(default_factory=list)


class _Given(_Model):
    replicas: Annotated[int, Field(ge=0)] | None = None
    pods: list[_Pod] = Field(default_factory=list)
    object_metrics: dict[str, QuantityValue] = Field(default_factory=dict)
    external_metrics: dict[str, QuantityValue | list[QuantityValue]] = Field(default_factory=dict)
    metric_errors: dict[str, str] = Field(default_factory=dict)
    selector: str | None = None
    history: _History | None = None
    scaled_to_zero: bool = False
    sample_window: Duration | None = None


class _Condition(_Model):
    type: str
    status: Literal["True", "False", "Unknown"] | bool | None = None
    reason: str | None = None
    message: str | None = None


class _Event(_Model):
    reason: str
    message: str | None = None


class _ExpectSync(_Model):
    replicas: Annotated[int, Field(ge=0)] | None = None
    conditions: list[_Condition] = Field(default_factory=list)
    event: _Event | None = None


class _Workload(_Model):
    cpu_request: QuantityValue | None = None
    cpu_per_request: QuantityValue | None = None
    idle_cpu: QuantityValue | None = None
    cpu_limit: QuantityValue | None = None
    startup: Duration | None = None
    readiness: Duration | None = None


class _Trace(_Model):
    points: list[tuple[Number, Number]] | None = None
    shape: str | None = None
    csv: str | None = None
    duration: Duration | None = None
    initial_replicas: Annotated[int, Field(ge=0)] | None = None
    workload: _Workload | None = None


class _At(_Model):
    time: Duration
    replicas: Annotated[int, Field(ge=0)]


class _Within(_Model):
    min: Annotated[int, Field(ge=0)] | None = None
    max: Annotated[int, Field(ge=0)] | None = None
    from_: Duration = Field(default=0, alias="from")
    to: Duration | None = None


class _ExpectRun(_Model):
    steps: list[Annotated[int, Field(ge=0)]] | None = None
    at: list[_At] = Field(default_factory=list)
    within: _Within | None = None
    summary: dict[str, Number | None] = Field(default_factory=dict)


class _Test(_Model):
    name: str
    given: _Given | None = None
    trace: _Trace | None = None
    expect: dict[str, Any]


class _Settings(_Model):
    sync_period: Duration | None = None
    tolerance: Number | None = None
    downscale_stabilization: Duration | None = None
    cpu_initialization_period: Duration | None = None
    initial_readiness_delay: Duration | None = None
    scale_to_zero: bool | None = None
    configurable_tolerance: bool | None = None


class _File(_Model):
    hpa: str | dict[str, Any]
    settings: _Settings | None = None
    tests: list[_Test]


@dataclass(frozen=True, slots=True)
class YamlCase:
    """One test of a file: ``id`` is ``file::name``; ``run`` raises :class:`HPAAssertionError`
    when an expectation fails."""

    file: str
    name: str
    run: Callable[[], None]

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one :class:`YamlCase`: ``passed``, ``failed`` (an expectation did not
    hold: ``message`` says which) or ``error`` (the test could not run: ``message`` says why)."""

    case: YamlCase
    outcome: Literal["passed", "failed", "error"]
    message: str
    seconds: float


def _first_error(error: ValidationError, *, prefix: str) -> str:
    first = error.errors()[0]
    where = error_location(first)
    if prefix:
        where = prefix if where == "(root)" else f"{prefix}.{where}"
    return f"{where}: {first['msg']}"


def _settings(model: _Settings | None) -> HorizontalControllerSettings | None:
    if model is None:
        return None
    given: dict[str, Any] = {}
    durations = {
        "sync_period": "sync_period_seconds",
        "downscale_stabilization": "downscale_stabilization_seconds",
        "cpu_initialization_period": "cpu_initialization_period_seconds",
        "initial_readiness_delay": "initial_readiness_delay_seconds",
    }
    for name, field_name in durations.items():
        value = getattr(model, name)
        if value is not None:
            given[field_name] = seconds(value, what=f"settings.{to_camel(name)}")
    if model.tolerance is not None:
        given["tolerance"] = float(model.tolerance)
    if model.scale_to_zero is not None:
        given["scale_to_zero_enabled"] = model.scale_to_zero
    if model.configurable_tolerance is not None:
        given["configurable_tolerance_enabled"] = model.configurable_tolerance
    return HorizontalControllerSettings(**given)


def _metrics(given: _Given) -> FakeMetrics:
    metrics = FakeMetrics()
    for index, pod in enumerate(given.pods):
        where = f"pods[{index}]"
        containers = None
        if pod.containers is not None:
            containers = [
                container(
                    c.name,
                    cpu=c.cpu,
                    memory=c.memory,
                    cpu_request=c.cpu_request,
                    memory_request=c.memory_request,
                )
                for c in pod.containers
            ]
        if pod.name is not None and pod.count != 1:
            raise ValueError(f"{where}: give a name or a count, not both")
        for _ in range(pod.count):
            try:
                metrics = metrics.pod(
                    pod.name,
                    cpu=pod.cpu,
                    memory=pod.memory,
                    cpu_request=pod.cpu_request,
                    memory_request=pod.memory_request,
                    containers=containers,
                    ready=pod.ready,
                    started_ago=seconds(pod.started_ago, what="startedAgo"),
                    ready_since_ago=None
                    if pod.ready_since_ago is None
                    else seconds(pod.ready_since_ago, what="readySinceAgo"),
                    phase=pod.phase,
                    deleting=pod.deleting,
                    missing=pod.missing,
                    metrics=pod.metrics,
                    listed=pod.listed,
                )
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from error
            # quantities are checked now, not when the test runs
            for c in metrics.pod_list[-1].containers:
                for resource, value in (*c.usage.items(), *c.requests.items()):
                    milli(value, what=f"{where}: {resource}")
            for name, value in pod.metrics.items():
                milli(value, what=f"{where}.metrics.{name}")
    for name, value in given.object_metrics.items():
        metrics = metrics.object_metric(name, value)
    for name, values in given.external_metrics.items():
        metrics = metrics.external_metric(name, *(values if isinstance(values, list) else [values]))
    for name, message in given.metric_errors.items():
        metrics = metrics.metric_error(name, message)
    if given.replicas is not None:
        metrics = metrics.replicas(given.replicas)
    if given.selector is not None:
        metrics = metrics.selector(given.selector)
    if given.history is not None:
        history = given.history
        if history.recommendations is not None:
            metrics = metrics.no_recommendations()
            for r in history.recommendations:
                metrics = metrics.recommendation(r.replicas, seconds(r.ago, what="ago"))
        for e in history.scale_up_events:
            metrics = metrics.scale_up_event(e.change, seconds(e.ago, what="ago"))
        for e in history.scale_down_events:
            metrics = metrics.scale_down_event(e.change, seconds(e.ago, what="ago"))
    if given.scaled_to_zero:
        metrics = metrics.was_scaled_to_zero()
    if given.sample_window is not None:
        metrics = metrics.sample_window(given.sample_window)
    return metrics


def _workload(model: _Workload | None) -> WorkloadModel | None:
    if model is None:
        return None
    given: dict[str, Any] = {}
    if model.cpu_request is not None:
        given["cpu_request_milli"] = milli(model.cpu_request, what="workload.cpuRequest")
    if model.cpu_per_request is not None:
        given["cpu_per_request_milli"] = float(
            milli(model.cpu_per_request, what="workload.cpuPerRequest")
        )
    if model.idle_cpu is not None:
        given["idle_cpu_milli"] = float(milli(model.idle_cpu, what="workload.idleCpu"))
    if model.cpu_limit is not None:
        given["cpu_limit_milli"] = milli(model.cpu_limit, what="workload.cpuLimit")
    if model.startup is not None:
        given["startup_seconds"] = seconds(model.startup, what="workload.startup")
    if model.readiness is not None:
        given["readiness_seconds"] = seconds(model.readiness, what="workload.readiness")
    return WorkloadModel(**given)


def _sync_case(
    hpa: HPA, given: _Given, expect: _ExpectSync, settings: HorizontalControllerSettings | None
) -> Callable[[], None]:
    metrics = _metrics(given)

    def check() -> None:
        result = decide(hpa, metrics, settings=settings)
        if expect.replicas is not None:
            assert_replicas(result, expect.replicas)
        for condition in expect.conditions:
            assert_condition(
                result,
                condition.type,
                status=condition.status,
                reason=condition.reason,
                message=condition.message,
            )
        if expect.event is not None:
            assert_event(result, expect.event.reason, message=expect.event.message)

    return check


def _trace_input(trace: _Trace, base: Path) -> TraceInput:
    given = [x for x in (trace.points, trace.shape, trace.csv) if x is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of points, shape or csv")
    if trace.points is not None:
        if not trace.points:
            raise ValueError("points: give at least one [seconds, load] point")
        return [(float(t), float(load)) for t, load in trace.points]
    if trace.shape is not None:
        return trace.shape
    return base / str(trace.csv)


_SUMMARY_NAMES = {
    "podHours": "pod_hours",
    "meanReplicas": "mean_replicas",
    "maxReplicas": "max_replicas",
    "aboveTargetSeconds": "above_target_seconds",
    "aboveTargetShare": "above_target_share",
    "peakUtilizationPercent": "peak_utilization_percent",
    "scaleEvents": "scale_events",
    "scaleUps": "scale_ups",
    "scaleDowns": "scale_downs",
    "reversals": "reversals",
    "loadSteps": "load_steps",
    "longestReactionSeconds": "longest_reaction_seconds",
    "unreactedSteps": "unreacted_steps",
    "droppedShare": "dropped_share",
}


def _run_case(
    hpa: HPA,
    trace: _Trace,
    expect: _ExpectRun,
    settings: HorizontalControllerSettings | None,
    *,
    base: Path,
) -> Callable[[], None]:
    trace_input = _trace_input(trace, base)
    duration = None if trace.duration is None else seconds(trace.duration, what="duration")
    load = load_trace(trace_input, duration=duration)
    workload = _workload(trace.workload)
    unknown = sorted(set(expect.summary) - set(_SUMMARY_NAMES))
    if unknown:
        known = ", ".join(sorted(_SUMMARY_NAMES))
        raise ValueError(f"summary: unknown figure {unknown[0]!r} (one of {known})")
    times = [seconds(point.time, what="at.time") for point in expect.at]
    within = expect.within
    bounds: tuple[float, float | None] = (0.0, None)
    if within is not None:
        start = seconds(within.from_, what="within.from")
        end = None if within.to is None else seconds(within.to, what="within.to")
        bounds = (start, end)

    def check() -> None:
        result = run(
            hpa,
            load,
            initial_replicas=trace.initial_replicas,
            workload=workload,
            settings=settings,
        )
        if expect.steps is not None:
            assert_steps(result, expect.steps)
        for t_seconds, point in zip(times, expect.at, strict=True):
            assert_replicas_at(result, t_seconds, point.replicas)
        if within is not None:
            assert_replicas_within(
                result,
                min_replicas=within.min,
                max_replicas=within.max,
                start=bounds[0],
                end=bounds[1],
            )
        if expect.summary:
            assert_summary(
                result, **{_SUMMARY_NAMES[key]: value for key, value in expect.summary.items()}
            )

    return check


def _hpa(document: _File, path: Path) -> HPA:
    if isinstance(document.hpa, dict):
        found = load_hpas(document.hpa)
    else:
        found = load_hpas(path.parent / document.hpa)
    if len(found) != 1:
        raise ManifestError(
            f"hpa: the manifest holds {len(found)} HorizontalPodAutoscalers; a test file tests one"
        )
    return found[0]


def _case(
    test: _Test, index: int, *, hpa: HPA, settings: HorizontalControllerSettings | None, path: Path
) -> Callable[[], None]:
    where = f"tests[{index}]"
    if (test.given is None) == (test.trace is None):
        raise ValueError(f"{where}: give either `given` (one sync) or `trace` (a run), not both")
    try:
        if test.given is not None:
            sync_expect: _ExpectSync = _ExpectSync.read(test.expect)
        else:
            run_expect: _ExpectRun = _ExpectRun.read(test.expect)
    except ValidationError as error:
        raise ValueError(_first_error(error, prefix=f"{where}.expect")) from error
    try:
        if test.given is not None:
            return _sync_case(hpa, test.given, sync_expect, settings)
        if test.trace is not None:
            return _run_case(hpa, test.trace, run_expect, settings, base=path.parent)
    except (ValueError, TraceError) as error:
        part = "given" if test.given is not None else "trace"
        raise ValueError(f"{where}.{part}: {error}") from error
    raise AssertionError("unreachable: given or trace is set")  # pragma: no cover


def load_case_file(path: str | Path) -> list[YamlCase]:
    """Every test of one file, checked; :class:`CaseFileError` names the file and the field."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CaseFileError(f"{path}: cannot read: {error.strerror or error}") from error
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CaseFileError(f"{path}: not valid YAML: {error}".replace("\n", " ")) from error
    try:
        document: _File = _File.read(raw)
    except ValidationError as error:
        raise CaseFileError(f"{path}: {_first_error(error, prefix='')}") from error
    try:
        hpa = _hpa(document, path)
    except ManifestError as error:
        raise CaseFileError(f"{path}: hpa: {error}") from error
    try:
        settings = _settings(document.settings)
    except ValueError as error:
        raise CaseFileError(f"{path}: {error}") from error
    cases: list[YamlCase] = []
    names: set[str] = set()
    for index, test in enumerate(document.tests):
        if test.name in names:
            raise CaseFileError(f"{path}: tests[{index}].name: {test.name!r} is used twice")
        names.add(test.name)
        try:
            check = _case(test, index, hpa=hpa, settings=settings, path=path)
        except ValueError as error:
            raise CaseFileError(f"{path}: {error}") from error
        cases.append(YamlCase(file=str(path), name=test.name, run=check))
    if not cases:
        raise CaseFileError(f"{path}: tests: no test in the file")
    return cases


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """The test files: each file given, and every ``*.hpatest.yaml`` below each directory."""
    found: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file() and p.name.endswith(CASE_FILE_SUFFIXES)
                )
            )
        elif path.exists():
            found.append(path)
        else:
            raise CaseFileError(f"{path}: no such file or directory")
    return found


def run_case(case: YamlCase) -> CaseResult:
    """Run one case and say how it went (never raises for a failing or broken test)."""
    started = time.perf_counter()
    try:
        case.run()
    except HPAAssertionError as failure:
        return CaseResult(case, "failed", str(failure), time.perf_counter() - started)
    except (ValueError, TraceError) as error:
        return CaseResult(case, "error", str(error), time.perf_counter() - started)
    return CaseResult(case, "passed", "", time.perf_counter() - started)
