"""One VPA's pass of the recommender loop: recommend, update its recommendation and conditions.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/routines/recommender.go`` (``processVPAUpdate``: the pod resource recommender
over the VPA's aggregates by container name, checkpointed states merged in, the post-processors,
``UpdateRecommendation``, ``UpdateConditions(PodCount > 0)``, ``RecordRecommendation``).

Additions (documented in ``docs/vpa.md``):

- ``LowConfidence``, which upstream defines but never sets, is true while some container's
  history is shorter than ``low_confidence_below_ns`` (one day by default: the confidence of
  ``getConfidence`` below 1.0), false once every container has that much;
- ``process_crane_vpa_update`` is the same pass for a VPA served by the ``crane`` recommender
  (:mod:`hpa.core.vpa.crane`);
- ``HorizontalScalingConflictAvoided`` reports the resources an HPA scales the workload on
  (``hpa.core.vpa.awareness``); it is removed when there is none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hpa.core.explain import Explanation, TraceEntry
from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.amount import NO_RESOURCES, Resources
from hpa.core.vpa.awareness import (
    CONDITION_TYPE as CONFLICT_CONDITION,
)
from hpa.core.vpa.awareness import (
    HorizontalConflict,
    HpaAwareness,
    conflict_condition,
)
from hpa.core.vpa.cluster import ClusterState, VpaState
from hpa.core.vpa.crane import CraneConfig, CraneContainerState, crane_recommend
from hpa.core.vpa.estimator import get_confidence, sample_history
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.policy import (
    DEFAULT_CONTROLLED_RESOURCES,
    ContainerScalingMode,
    get_container_resource_policy,
)
from hpa.core.vpa.recommender import (
    PodResourceRecommender,
    RecommendationFormat,
    RecommendedContainerResources,
    apply_vpa_policy,
    recommend,
)

__all__ = ["LOW_CONFIDENCE", "VpaUpdate", "process_crane_vpa_update", "process_vpa_update"]

LOW_CONFIDENCE = "LowConfidence"
DAY_NS = 86_400 * NANOSECONDS_PER_SECOND


@dataclass(frozen=True, slots=True)
class VpaUpdate:
    """What the pass did: ``first_recommendation`` when the VPA has one for the first time (for
    the recommendation-latency metric), ``missing`` upstream's "missing recommendation" message
    when it is due, and the trace of the recommendation."""

    first_recommendation: bool
    missing: str | None
    explanation: Explanation


def _low_confidence(
    states: dict[str, AggregateContainerState], interval_ns: int
) -> tuple[bool, str]:
    short_by_history: dict[tuple[int, int, int], bool] = {}  # one pod's containers share one
    short: list[str] = []
    for name, state in states.items():
        history = sample_history(state)
        is_short = short_by_history.get(history)
        if is_short is None:
            is_short = short_by_history[history] = get_confidence(state, interval_ns) < 1.0
        if is_short:
            short.append(name)
    short.sort()
    if not short:
        return False, ""
    return True, "less than a day of usage history for container(s): " + ", ".join(short)


def process_vpa_update(
    cluster: ClusterState,
    vpa: VpaState,
    *,
    recommender: PodResourceRecommender,
    now_ns: int,
    recommendation_format: RecommendationFormat | None = None,
    integer_cpu: frozenset[str] = frozenset(),
    global_max_allowed: Resources = NO_RESOURCES,
    conflicts: Sequence[HorizontalConflict] = (),
    awareness: HpaAwareness = HpaAwareness.EXCLUDE,
    low_confidence_below_ns: int = DAY_NS,
    explain: bool = True,
) -> VpaUpdate:
    """``processVPAUpdate`` up to the status write (the caller writes ``vpa``'s status when it
    differs from the observed one). Without ``explain`` the estimation is not traced."""
    states = vpa.aggregate_state_by_container_name(cluster.config, read_only=True)
    had = vpa.has_recommendation()
    result = recommend(
        states,
        recommender=recommender,
        policy=vpa.resource_policy,
        per_vpa_config=vpa.per_vpa_config,
        recommendation_format=recommendation_format or RecommendationFormat(),
        integer_cpu=integer_cpu,
        global_max_allowed=global_max_allowed,
        explain=explain,
    )
    vpa.update_recommendation(result.container_recommendations)
    return _finish(
        cluster,
        vpa,
        had=had,
        explanation=result.explanation,
        low_confidence=_low_confidence(states, low_confidence_below_ns) if states else None,
        conflicts=conflicts,
        awareness=awareness,
        now_ns=now_ns,
    )


def _finish(
    cluster: ClusterState,
    vpa: VpaState,
    *,
    had: bool,
    explanation: Explanation,
    low_confidence: tuple[bool, str] | None,
    conflicts: Sequence[HorizontalConflict],
    awareness: HpaAwareness,
    now_ns: int,
) -> VpaUpdate:
    """The conditions and the missing-recommendation report, after the recommendation."""
    vpa.update_conditions(vpa.pod_count > 0, now_ns=now_ns)
    if low_confidence is not None:
        low, message = low_confidence
        vpa.set_condition(
            LOW_CONFIDENCE, low, "ShortHistory" if low else "", message, now_ns=now_ns
        )
    condition = conflict_condition(conflicts, awareness=awareness)
    if condition is None:
        vpa.conditions.pop(CONFLICT_CONDITION, None)
    else:
        vpa.set_condition(
            condition.type,
            condition.status == "True",
            condition.reason,
            condition.message,
            now_ns=now_ns,
        )
    return VpaUpdate(
        first_recommendation=vpa.has_recommendation() and not had,
        missing=cluster.record_recommendation(vpa, now_ns),
        explanation=explanation,
    )


def process_crane_vpa_update(
    cluster: ClusterState,
    vpa: VpaState,
    states: Mapping[str, CraneContainerState],
    *,
    config: CraneConfig,
    now_ns: int,
    global_max_allowed: Resources = NO_RESOURCES,
    conflicts: Sequence[HorizontalConflict] = (),
    awareness: HpaAwareness = HpaAwareness.EXCLUDE,
) -> VpaUpdate:
    """The same pass for a VPA served by the ``crane`` recommender: each container's Crane
    request is its target, lower and upper bound (Crane computes one amount), filtered by the
    container's controlled resources, skipped for containers in mode Off, then capped by the
    policy like upstream's. ``LowConfidence`` is not set (Crane has no confidence)."""
    had = vpa.has_recommendation()
    listed: list[RecommendedContainerResources] = []
    parts: list[TraceEntry] = []
    for name in sorted(states):
        container_policy = get_container_resource_policy(name, vpa.resource_policy)
        if container_policy is not None and container_policy.mode is ContainerScalingMode.OFF:
            continue
        result = crane_recommend(states[name], config, now_ns=now_ns, container_name=name)
        parts.extend(result.explanation.entries)
        if result.target is None:
            continue
        controlled = (
            DEFAULT_CONTROLLED_RESOURCES
            if container_policy is None or container_policy.controlled_resources is None
            else container_policy.controlled_resources
        )
        target = result.target.filtered(controlled)
        listed.append(RecommendedContainerResources(name, target, target, target, target))
    capped, entries = apply_vpa_policy(tuple(listed), vpa.resource_policy, global_max_allowed)
    vpa.update_recommendation(capped)
    return _finish(
        cluster,
        vpa,
        had=had,
        explanation=Explanation((*parts, *entries)),
        low_confidence=None,
        conflicts=conflicts,
        awareness=awareness,
        now_ns=now_ns,
    )
