"""Test your autoscalers like code: HPA manifests against fake metrics, one sync or a whole trace.

This is the public, typed test kit (its names are semver-covered; everything else in ``hpa`` is
internal). It is a thin layer: the decision is the controller's own
(:func:`hpa.core.decision.decide`), the runs are the simulator's (:mod:`hpa.sim`), the manifests
are validated as the API server validates them (:mod:`hpa.api`). See ``docs/testing.md``::

    from hpa.testing import FakeMetrics, assert_replicas, decide, load_hpa

    def test_cpu_scale_up() -> None:
        hpa = load_hpa("deploy/hpa.yaml")
        result = decide(hpa, FakeMetrics().pods(3, cpu="900m", cpu_request="500m"))
        assert_replicas(result, 6)

The pytest plugin (:mod:`hpa.testing.plugin`, registered as ``hpa``) adds fixtures; ``hpa test``
runs declarative YAML test cases (:mod:`hpa.testing.cases`). :mod:`hpa.testing.vpa` does the
same for VerticalPodAutoscalers: fake usage history in, the recommender's recommendation out.

The names are loaded on first use (PEP 562 ``__getattr__``), so that loading the pytest plugin,
which every pytest session of an environment with ``hpa`` installed does, costs nothing until a
test uses the kit. Type checkers see the imports below as they are.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

CASE_FILE_SUFFIXES = (".hpatest.yaml", ".hpatest.yml")
"""``hpa test`` and the pytest plugin take files with these endings as test files."""

if TYPE_CHECKING:
    from hpa.controllers.settings import HorizontalControllerSettings as ControllerSettings
    from hpa.core.conditions import Event, HorizontalPodAutoscalerCondition
    from hpa.core.explain import Explanation
    from hpa.sim.summary import Summary
    from hpa.sim.workload import MetricPipeline, TimelineRow, WorkloadModel
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
    from hpa.testing.manifests import (
        HPA,
        ManifestError,
        hpa_from_spec,
        load_hpa,
        load_hpas,
        parse_hpas,
    )
    from hpa.testing.metrics import Ago, FakeContainer, FakeMetrics, FakePod, Quantity, container
    from hpa.testing.sync import EPOCH, Settings, SyncResult, decide, deciding_rule
    from hpa.testing.timeline import RunResult, load_trace, run
    from hpa.testing.vpa import (
        VPA,
        FakeUsage,
        VpaResult,
        assert_vpa_condition,
        assert_vpa_target,
        load_vpa,
        load_vpas,
        parse_vpas,
        recommend,
    )

_HOMES: dict[str, tuple[str, ...]] = {
    "hpa.controllers.settings": ("ControllerSettings=HorizontalControllerSettings",),
    "hpa.core.conditions": ("Event", "HorizontalPodAutoscalerCondition"),
    "hpa.core.explain": ("Explanation",),
    "hpa.sim.summary": ("Summary",),
    "hpa.sim.workload": ("MetricPipeline", "TimelineRow", "WorkloadModel"),
    "hpa.testing.assertions": (
        "HPAAssertionError",
        "assert_condition",
        "assert_event",
        "assert_replicas",
        "assert_replicas_at",
        "assert_replicas_within",
        "assert_steps",
        "assert_summary",
    ),
    "hpa.testing.manifests": (
        "HPA",
        "ManifestError",
        "hpa_from_spec",
        "load_hpa",
        "load_hpas",
        "parse_hpas",
    ),
    "hpa.testing.metrics": (
        "Ago",
        "FakeContainer",
        "FakeMetrics",
        "FakePod",
        "Quantity",
        "container",
    ),
    "hpa.testing.sync": ("EPOCH", "Settings", "SyncResult", "decide", "deciding_rule"),
    "hpa.testing.timeline": ("RunResult", "load_trace", "run"),
    "hpa.testing.vpa": (
        "VPA",
        "FakeUsage",
        "VpaResult",
        "assert_vpa_condition",
        "assert_vpa_target",
        "load_vpa",
        "load_vpas",
        "parse_vpas",
        "recommend",
    ),
}
_WHERE: dict[str, tuple[str, str]] = {
    name.partition("=")[0]: (module, name.partition("=")[2] or name)
    for module, names in _HOMES.items()
    for name in names
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use."""
    found = _WHERE.get(name)
    if found is None:
        raise AttributeError(f"module 'hpa.testing' has no attribute {name!r}")
    module, attribute = found
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "CASE_FILE_SUFFIXES",
    "EPOCH",
    "HPA",
    "VPA",
    "Ago",
    "ControllerSettings",
    "Event",
    "Explanation",
    "FakeContainer",
    "FakeMetrics",
    "FakePod",
    "FakeUsage",
    "HPAAssertionError",
    "HorizontalPodAutoscalerCondition",
    "ManifestError",
    "MetricPipeline",
    "Quantity",
    "RunResult",
    "Settings",
    "Summary",
    "SyncResult",
    "TimelineRow",
    "VpaResult",
    "WorkloadModel",
    "assert_condition",
    "assert_event",
    "assert_replicas",
    "assert_replicas_at",
    "assert_replicas_within",
    "assert_steps",
    "assert_summary",
    "assert_vpa_condition",
    "assert_vpa_target",
    "container",
    "decide",
    "deciding_rule",
    "hpa_from_spec",
    "load_hpa",
    "load_hpas",
    "load_trace",
    "load_vpa",
    "load_vpas",
    "parse_hpas",
    "parse_vpas",
    "recommend",
    "run",
]
