"""The demo's scenarios: HPA manifests (the YAML users apply), load traces and what to expect.

Upstream counterpart: the ``behavior`` examples of the Kubernetes documentation ("Configurable
scaling behavior" of the HorizontalPodAutoscaler page) and of KEP-853 (configurable scale
velocity: fast scale-up ``Percent 900 / 60s`` going 1 -> 10 -> 100 -> 1000, gradual scale-up and
slow scale-down ``Pods 1 / 600s``, scale-down ``selectPolicy: Disabled``).

Every scenario uses the same workload: 500m CPU requested per pod, 10m CPU per request per second
(50 requests/s per pod at 100 % of the request, 25 at the 50 % target), pods Ready 15 s after
creation, metrics scraped every 15 s over a 15 s window, and the controller's default flags.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from hpa.sim.engine import SimulationConfig
from hpa.sim.manifest import HPAManifest, parse_manifests
from hpa.sim.trace import LoadTrace, points_trace
from hpa.sim.vertical import MI, ResourceModel
from hpa.sim.vpa_manifest import VPA, parse_vpas

__all__ = ["SCENARIOS", "Scenario", "hpa_manifest"]


def hpa_manifest(
    name: str, *, behavior: str = "", min_replicas: int = 1, max_replicas: int = 100
) -> str:
    """An ``autoscaling/v2`` HPA on cpu at 50 % of request, with an optional behavior block
    (YAML indented to sit under ``spec:``)."""
    text = f"""\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}
  namespace: demo
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: {min_replicas}
  maxReplicas: {max_replicas}
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 50
"""
    if behavior:
        text += "  behavior:\n" + "".join(f"    {line}\n" for line in behavior.strip().splitlines())
    return text


def _steps(levels: list[tuple[float, float]], *, duration: float, name: str) -> LoadTrace:
    """A piecewise-constant trace: ``(from_seconds, load)`` levels."""
    return points_trace(levels, duration_seconds=duration, description=name)


def _diurnal_with_ripple(duration: float) -> LoadTrace:
    """A day: 40 req/s at night, 600 at 14:00, with a 20-minute ripple of +-25 % (bursts)."""
    step = 60.0
    points = []
    for index in range(math.ceil(duration / step)):
        t = index * step
        day = 40 + 560 * (1 + math.cos(2 * math.pi * (t - 14 * 3600) / 86400)) / 2
        ripple = 1 + 0.25 * math.sin(2 * math.pi * t / 1200)
        points.append((t, round(day * ripple, 1)))
    return points_trace(
        points,
        duration_seconds=duration,
        description="diurnal: 40 -> 600 req/s (peak 14:00) with a 20-minute +-25% ripple",
    )


@dataclass(frozen=True, slots=True)
class Scenario:
    """One stop of the demo tour."""

    slug: str
    title: str
    explanation: str
    manifests: tuple[str, ...]
    trace: Callable[[bool], LoadTrace]
    """The trace; the argument is ``quick`` (a shorter run for tests)."""
    initial_replicas: int | None = None
    vpas: tuple[str, ...] = ()
    """VerticalPodAutoscaler manifests acting on the HPAs' Deployment."""
    resources: ResourceModel = field(default_factory=ResourceModel)
    """The memory model, when there are VPAs."""
    row_interval_seconds: float = 0.0
    """Live-table rows at most this often (0: every replica change)."""

    def hpas(self) -> list[HPAManifest]:
        found: list[HPAManifest] = []
        for index, text in enumerate(self.manifests, start=1):
            found.extend(parse_manifests(text, source=f"{self.slug} manifest {index}"))
        return found

    def config(self) -> SimulationConfig:
        vpas: list[VPA] = []
        for index, text in enumerate(self.vpas, start=1):
            vpas.extend(parse_vpas(text, source=f"{self.slug} vpa manifest {index}"))
        return SimulationConfig(
            initial_replicas=self.initial_replicas, vpas=tuple(vpas), resources=self.resources
        )


FAST_UP = """
scaleUp:
  policies:
  - type: Percent
    value: 900
    periodSeconds: 60
"""
SLOW_DOWN = """
scaleDown:
  policies:
  - type: Pods
    value: 1
    periodSeconds: 600
"""
GRADUAL_UP = """
scaleUp:
  policies:
  - type: Pods
    value: 1
    periodSeconds: 600
"""
NO_SCALE_DOWN = """
scaleDown:
  selectPolicy: Disabled
"""
MEMORY_VPA = """\
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: web
  namespace: demo
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  updatePolicy:
    updateMode: Recreate
  resourcePolicy:
    containerPolicies:
    - containerName: '*'
      controlledResources: [memory]
"""
CALM = """
scaleDown:
  stabilizationWindowSeconds: 1200
"""

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        slug="default-step",
        title="Default behavior under a load step",
        explanation=(
            "No behavior block: the load jumps 100 -> 1000 req/s at 2m and falls back at 12m. "
            "Scale-up is immediate (at most max(2x, 4) per sync); scale-down waits for the "
            "5-minute stabilization window."
        ),
        manifests=(hpa_manifest("defaults"),),
        trace=lambda quick: _steps(
            [(0, 100), (120, 1000), (720, 100)], duration=1500, name="step 100 -> 1000 -> 100"
        ),
        initial_replicas=4,
    ),
    Scenario(
        slug="fast-scale-up",
        title="Fast scale-up: Percent 900 / 60s",
        explanation=(
            "scaleUp: Percent 900 per 60s lets the HPA add 9x the current pods per minute: "
            "1 -> 10 -> 100 -> 1000 under sustained high load."
        ),
        manifests=(hpa_manifest("fast-up", behavior=FAST_UP, max_replicas=1000),),
        trace=lambda quick: _steps(
            [(0, 10), (60, 25000)], duration=420, name="step 10 -> 25000 req/s at 1m"
        ),
    ),
    Scenario(
        slug="slow-scale-down",
        title="Slow scale-down: Pods 1 / 600s",
        explanation=(
            "scaleDown: Pods 1 per 600s removes one pod every 10 minutes after the load drops "
            "(the 5-minute stabilization window comes first): 5 -> 4 -> 3 -> 2 -> 1."
        ),
        manifests=(hpa_manifest("slow-down", behavior=SLOW_DOWN),),
        trace=lambda quick: _steps(
            [(0, 125), (60, 10)], duration=3000, name="step 125 -> 10 req/s at 1m"
        ),
        initial_replicas=5,
    ),
    Scenario(
        slug="gradual-scale-up",
        title="Gradual scale-up: Pods 1 / 600s",
        explanation=(
            "scaleUp: Pods 1 per 600s adds one pod every 10 minutes however high the load: "
            "1 -> 2 -> 3 -> 4."
        ),
        manifests=(hpa_manifest("gradual-up", behavior=GRADUAL_UP),),
        trace=lambda quick: _steps(
            [(0, 10), (60, 100)], duration=2100, name="step 10 -> 100 req/s at 1m"
        ),
    ),
    Scenario(
        slug="no-scale-down",
        title="Scale-down disabled: selectPolicy Disabled",
        explanation=(
            "scaleDown: selectPolicy Disabled: the HPA scales up with the load and never "
            "scales down; the cost stays at the peak."
        ),
        manifests=(hpa_manifest("no-down", behavior=NO_SCALE_DOWN),),
        trace=lambda quick: _steps(
            [(0, 100), (120, 800), (600, 100)], duration=1800, name="step 100 -> 800 -> 100"
        ),
        initial_replicas=4,
    ),
    Scenario(
        slug="diurnal-day",
        title="A diurnal day: default vs calm behavior",
        explanation=(
            "The same day of bursty traffic for two HPAs: with the default 5-minute scale-down "
            "window the HPA follows every 20-minute ripple down and back up (flapping, and "
            "under-provisioned on each rise); 'calm' (scaleDown stabilizationWindowSeconds: "
            "1200) holds through the ripple and pays for it in pod-hours."
        ),
        manifests=(hpa_manifest("defaults"), hpa_manifest("calm", behavior=CALM)),
        trace=lambda quick: _diurnal_with_ripple(6 * 3600 if quick else 86400),
        initial_replicas=2,
        row_interval_seconds=3600,
    ),
    Scenario(
        slug="horizontal-and-vertical",
        title="HPA on cpu, VPA on memory: a CPU-bound web service through a day",
        explanation=(
            "The VPA design proposal's case: the HPA scales replicas on cpu, the VPA (Recreate, "
            "memory only) sizes each pod's memory. Memory grows with per-pod load (200Mi + 4Mi "
            "per req/s); the template's 256Mi request and limit are too small at the HPA's "
            "target, so pods are OOM-killed until the recommender's OOM bump and the updater's "
            "evictions give them more; the HPA keeps scaling through it."
        ),
        manifests=(hpa_manifest("web", min_replicas=2, max_replicas=30),),
        vpas=(MEMORY_VPA,),
        resources=ResourceModel(memory_request_bytes=256 * MI, memory_limit_bytes=256 * MI),
        trace=lambda quick: _diurnal_with_ripple(6 * 3600 if quick else 86400),
        initial_replicas=2,
        row_interval_seconds=3600,
    ),
)
"""The demo's tour, in order."""
