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
"""

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
from hpa.testing.manifests import HPA, ManifestError, hpa_from_spec, load_hpa, load_hpas, parse_hpas
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

__all__ = [
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
