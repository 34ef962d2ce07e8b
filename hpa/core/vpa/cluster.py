"""The recommender's model of the cluster: pods, their containers, VPAs, and the aggregate
container states that hold the usage samples.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/model/cluster.go`` (``clusterState``: ``AddOrUpdatePod``, ``SetInitContainers``,
``DeletePod``, ``AddOrUpdateContainer``, ``AddSample``, ``RecordOOM``, ``AddOrUpdateVpa``,
``DeleteVpa``, ``MakeAggregateStateKey``, ``findOrCreateAggregateContainerState``, the garbage
collection of aggregate states and its rate limit, ``RecordRecommendation``,
``GetMatchingPods``, ``GetControllingVPA``) and ``vpa.go`` (``Vpa``: ``UseAggregationIfMatching``,
``UpdateRecommendation``, ``DeleteAggregation``, ``MergeCheckpointedState``,
``AggregateStateByContainerName``, ``SetResourcePolicy``, ``SetUpdateMode``,
``UpdateConditions``, ``AsStatus``, ``HasMatchedPods``, the conditions map).

Samples are aggregated per (namespace, container name, pod label set): all pods with the same
labels share an aggregate, and a VPA uses every aggregate of its namespace whose labels its
selector matches. Time is integer nanoseconds since the Unix epoch, passed in.

Deliberate deviations: a container resolves its aggregate again on every sample (upstream's
``ContainerStateAggregatorProxy`` does the same through an interface); iteration is in insertion
order where upstream ranges over Go maps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from hpa.core.selector import Selector
from hpa.core.vpa.aggregation import (
    DEFAULT_AGGREGATIONS_CONFIG,
    AggregateContainerState,
    AggregationsConfig,
    ContainerState,
    aggregate_state_by_container_name,
)
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.policy import PodResourcePolicy, get_container_resource_policy
from hpa.core.vpa.recommender import RecommendedContainerResources

__all__ = [
    "RECOMMENDATION_MISSING_MAX_DURATION_NS",
    "AggregateStateKey",
    "ClusterState",
    "ClusterStateKeyError",
    "ContainerId",
    "PodId",
    "PodState",
    "VpaCondition",
    "VpaId",
    "VpaState",
]

RECOMMENDATION_MISSING_MAX_DURATION_NS = 30 * 60 * NANOSECONDS_PER_SECOND
"""``RecommendationMissingMaxDuration``: after this long without a recommendation it is reported."""

RECOMMENDATION_PROVIDED = "RecommendationProvided"
NO_PODS_MATCHED = "NoPodsMatched"
FETCHING_HISTORY = "FetchingHistory"
POD_SUCCEEDED, POD_FAILED = "Succeeded", "Failed"


class ClusterStateKeyError(KeyError):
    """``NewKeyError``: the pod, container or VPA is not in the model."""

    def __str__(self) -> str:
        return f"KeyError: {self.args[0]}"


class PodId(NamedTuple):
    """A pod's namespace and name. The model's ids are named tuples: they key its dicts on every
    sample, and a tuple's hash and comparison run in C (a dataclass's are Python functions)."""

    namespace: str
    pod_name: str


class ContainerId(NamedTuple):
    pod_id: PodId
    container_name: str


class VpaId(NamedTuple):
    namespace: str
    vpa_name: str


class AggregateStateKey(NamedTuple):
    """``aggregateStateKey``: equal keys share one aggregate."""

    namespace: str
    container_name: str
    label_set_key: str


def label_set_key(labels: Mapping[str, str]) -> str:
    """``labels.Set.String()``: ``k=v`` pairs sorted by key, comma-separated."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


@dataclass(slots=True)
class PodState:
    """``PodState``; ``requests`` holds each container's requests (``ContainerState.Request``)."""

    id: PodId
    label_set_key: str = ""
    containers: dict[str, ContainerState] = field(default_factory=dict)
    requests: dict[str, Resources] = field(default_factory=dict)
    init_containers: tuple[str, ...] = ()
    phase: str = ""


@dataclass(frozen=True, slots=True)
class VpaCondition:
    """``VerticalPodAutoscalerCondition`` with its transition time in nanoseconds."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time_ns: int = 0


@dataclass(slots=True)
class VpaState:
    """``Vpa``: one VPA object as the recommender tracks it."""

    id: VpaId
    pod_selector: Selector | None
    created_ns: int
    annotations: dict[str, str] = field(default_factory=dict)
    conditions: dict[str, VpaCondition] = field(default_factory=dict)
    recommendation: tuple[RecommendedContainerResources, ...] | None = None
    aggregate_container_states: dict[AggregateStateKey, AggregateContainerState] = field(
        default_factory=dict
    )
    resource_policy: PodResourcePolicy | None = None
    containers_initial_aggregate_state: dict[str, AggregateContainerState] = field(
        default_factory=dict
    )
    update_mode: str | None = None
    checkpoint_written_ns: int = 0
    api_version: str = "v1"
    target_ref: tuple[str, str, str] | None = None
    """(apiVersion, kind, name)."""
    pod_count: int = 0
    generation: int = 0
    per_vpa_config: bool = False

    # -- conditions --------------------------------------------------------------------------

    def set_condition(
        self, condition_type: str, status: bool, reason: str, message: str, *, now_ns: int
    ) -> None:
        """``vpaConditionsMap.Set``: the transition time moves only when the status changes."""
        text = "True" if status else "False"
        old = self.conditions.get(condition_type)
        since = old.last_transition_time_ns if old is not None and old.status == text else now_ns
        self.conditions[condition_type] = VpaCondition(condition_type, text, reason, message, since)

    def condition_active(self, condition_type: str) -> bool:
        condition = self.conditions.get(condition_type)
        return condition is not None and condition.status == "True"

    def conditions_list(self) -> list[VpaCondition]:
        """``AsList``: sorted by type."""
        return [self.conditions[t] for t in sorted(self.conditions)]

    def has_recommendation(self) -> bool:
        return bool(self.recommendation)

    def update_conditions(self, pods_matched: bool, *, now_ns: int) -> None:
        """``updateConditionsLocked``."""
        reason = message = ""
        if pods_matched:
            self.conditions.pop(NO_PODS_MATCHED, None)
        else:
            reason, message = "NoPodsMatched", "No pods match this VPA object"
            self.set_condition(NO_PODS_MATCHED, True, reason, message, now_ns=now_ns)
        if self.has_recommendation():
            self.set_condition(RECOMMENDATION_PROVIDED, True, "", "", now_ns=now_ns)
        else:
            self.set_condition(RECOMMENDATION_PROVIDED, False, reason, message, now_ns=now_ns)

    def has_matched_pods(self) -> bool:
        return not self.condition_active(NO_PODS_MATCHED)

    # -- recommendation ----------------------------------------------------------------------

    def update_recommendation(
        self, recommendation: tuple[RecommendedContainerResources, ...]
    ) -> None:
        """``updateRecommendationLocked``: each aggregate remembers its container's uncapped
        target."""
        uncapped = {c.container_name: c.uncapped_target for c in recommendation}
        for key, state in self.aggregate_container_states.items():
            target = uncapped.get(key.container_name)
            if target is not None:
                state.last_recommendation = target
        self.recommendation = recommendation

    # -- aggregations ------------------------------------------------------------------------

    def matches_aggregation(self, key: AggregateStateKey, labels: Mapping[str, str]) -> bool:
        if self.id.namespace != key.namespace:
            return False
        return self.pod_selector is not None and self.pod_selector.matches(labels)

    def use_aggregation_if_matching(
        self, key: AggregateStateKey, state: AggregateContainerState, labels: Mapping[str, str]
    ) -> None:
        if key in self.aggregate_container_states or not self.matches_aggregation(key, labels):
            return
        self.aggregate_container_states[key] = state
        state.is_under_vpa = True
        state.update_from_policy(
            get_container_resource_policy(key.container_name, self.resource_policy),
            per_vpa_config=self.per_vpa_config,
        )

    def delete_aggregation(self, key: AggregateStateKey) -> None:
        state = self.aggregate_container_states.pop(key, None)
        if state is not None:
            state.mark_not_autoscaled()

    def merge_checkpointed_state(self, states: dict[str, AggregateContainerState]) -> None:
        """``MergeCheckpointedState``: fold the states loaded from checkpoints into ``states``."""
        for name, initial in self.containers_initial_aggregate_state.items():
            merged = states.get(name)
            if merged is None:
                merged = states[name] = AggregateContainerState()
            merged.merge_container_state(initial)

    def aggregate_state_by_container_name(
        self, config: AggregationsConfig = DEFAULT_AGGREGATIONS_CONFIG, *, read_only: bool = False
    ) -> dict[str, AggregateContainerState]:
        """``AggregateStateByContainerName`` with the checkpointed states merged in. With
        ``read_only`` (the caller only reads the histograms) a container name with one aggregate
        and no checkpointed state reads that aggregate's histograms instead of a copy."""
        names = (key.container_name for key in self.aggregate_container_states)
        initial = self.containers_initial_aggregate_state
        states = aggregate_state_by_container_name(
            ((key.container_name, state) for key, state in self.aggregate_container_states.items()),
            config,
            read_only=frozenset(n for n in names if n not in initial) if read_only else (),
        )
        self.merge_checkpointed_state(states)
        return states

    def set_resource_policy(self, policy: PodResourcePolicy | None) -> None:
        if policy == self.resource_policy:
            return
        self.resource_policy = policy
        for key, state in self.aggregate_container_states.items():
            state.update_from_policy(
                get_container_resource_policy(key.container_name, policy),
                per_vpa_config=self.per_vpa_config,
            )

    def set_update_mode(self, update_mode: str | None) -> None:
        self.update_mode = update_mode


class _VpaIndex:
    """The VPAs that may select a label set of a namespace: each VPA is filed under one
    ``key=value`` term of its selector (a selector without one, under its namespace), so a label
    set looks up only the VPAs filed under its own pairs. Answers in the order the VPAs were
    added (upstream ranges over a map)."""

    def __init__(self) -> None:
        self._by_term: dict[tuple[str, str, str], dict[VpaId, VpaState]] = {}
        self._by_namespace: dict[str, dict[VpaId, VpaState]] = {}
        self._order: dict[VpaId, int] = {}
        self._next = 0

    def _slot(self, vpa: VpaState) -> dict[VpaId, VpaState] | None:
        selector = vpa.pod_selector
        if selector is None or selector.matches_nothing:
            return None
        terms = selector.equality_terms()
        if not terms:
            return self._by_namespace.setdefault(vpa.id.namespace, {})
        key = min(terms)
        return self._by_term.setdefault((vpa.id.namespace, key, terms[key]), {})

    def add(self, vpa: VpaState) -> None:
        self._order[vpa.id] = self._next
        self._next += 1
        slot = self._slot(vpa)
        if slot is not None:
            slot[vpa.id] = vpa

    def remove(self, vpa: VpaState) -> None:
        self._order.pop(vpa.id, None)
        slot = self._slot(vpa)
        if slot is not None:
            slot.pop(vpa.id, None)

    def candidates(self, namespace: str, labels: Mapping[str, str]) -> list[VpaState]:
        found = list(self._by_namespace.get(namespace, {}).values())
        for pair in labels.items():
            filed = self._by_term.get((namespace, *pair))
            if filed:
                found.extend(filed.values())
        if len(found) > 1:
            found.sort(key=lambda v: self._order[v.id])
        return found


class ClusterState:
    """``clusterState``.

    Indexed (a deviation in structure only): VPAs by the label pairs their selectors require,
    pods by namespace and label set, aggregates by namespace, so adding a pod, a container or a
    VPA looks only at what it can match."""

    def __init__(
        self,
        *,
        gc_interval_ns: int,
        config: AggregationsConfig = DEFAULT_AGGREGATIONS_CONFIG,
        per_vpa_config: bool = False,
    ) -> None:
        self.pods: dict[PodId, PodState] = {}
        self.vpas: dict[VpaId, VpaState] = {}
        self.empty_vpas: dict[VpaId, int] = {}
        self.aggregate_state_map: dict[AggregateStateKey, AggregateContainerState] = {}
        self.label_set_map: dict[str, Mapping[str, str]] = {}
        self.last_aggregate_container_state_gc_ns = 0
        self.gc_interval_ns = gc_interval_ns
        self.config = config
        self.per_vpa_config = per_vpa_config
        self._vpa_index = _VpaIndex()
        self._pods_by_label_set: dict[tuple[str, str], dict[PodId, PodState]] = {}
        self._aggregates_by_namespace: dict[
            str, dict[AggregateStateKey, AggregateContainerState]
        ] = {}

    def state_map_size(self) -> int:
        return len(self.aggregate_state_map)

    def labels_of(self, key: AggregateStateKey) -> Mapping[str, str]:
        return self.label_set_map.get(key.label_set_key, {})

    def _pod_matches(self, pod: PodState, vpa: VpaState) -> bool:
        """``PodLabelsMatchVPA``."""
        labels = self.label_set_map.get(pod.label_set_key, {})
        return (
            pod.id.namespace == vpa.id.namespace
            and vpa.pod_selector is not None
            and vpa.pod_selector.matches(labels)
        )

    # -- pods and containers -----------------------------------------------------------------

    def add_or_update_pod(
        self, pod_id: PodId, labels: Mapping[str, str], phase: str, *, now_ns: int
    ) -> None:
        pod = self.pods.get(pod_id)
        exists = pod is not None
        if pod is None:
            pod = self.pods[pod_id] = PodState(pod_id)
        key = label_set_key(labels)
        if key not in self.label_set_map:
            self.label_set_map[key] = dict(labels)
        if exists and pod.label_set_key != key:
            self._count_pod(pod, -1)
            self._unfile_pod(pod)
        if not exists or pod.label_set_key != key:
            pod.label_set_key = key
            self._pods_by_label_set.setdefault((pod_id.namespace, key), {})[pod_id] = pod
            for name, container in pod.containers.items():
                container.aggregator = self._find_or_create(pod, name, now_ns=now_ns)
            self._count_pod(pod, +1)
        pod.phase = phase

    def _count_pod(self, pod: PodState, delta: int) -> None:
        """``addPodToItsVpa``/``removePodFromItsVpa``."""
        labels = self.label_set_map.get(pod.label_set_key, {})
        for vpa in self._vpa_index.candidates(pod.id.namespace, labels):
            if self._pod_matches(pod, vpa):
                vpa.pod_count += delta

    def _unfile_pod(self, pod: PodState) -> None:
        filed = self._pods_by_label_set.get((pod.id.namespace, pod.label_set_key))
        if filed is not None:
            filed.pop(pod.id, None)
            if not filed:
                del self._pods_by_label_set[(pod.id.namespace, pod.label_set_key)]

    def pods_with_label_set(self, namespace: str, key: str) -> Iterable[PodState]:
        """The pods of ``namespace`` whose labels are the label set ``key``."""
        return self._pods_by_label_set.get((namespace, key), {}).values()

    def set_init_containers(self, pod_id: PodId, names: Iterable[str]) -> None:
        pod = self.pods.get(pod_id)
        if pod is None:
            raise ClusterStateKeyError(pod_id)
        pod.init_containers = tuple(names)

    def get_container(self, container_id: ContainerId) -> ContainerState | None:
        pod = self.pods.get(container_id.pod_id)
        return None if pod is None else pod.containers.get(container_id.container_name)

    def delete_pod(self, pod_id: PodId) -> None:
        pod = self.pods.pop(pod_id, None)
        if pod is not None:
            self._count_pod(pod, -1)
            self._unfile_pod(pod)

    def add_or_update_container(
        self, container_id: ContainerId, request: Resources, *, now_ns: int
    ) -> None:
        pod = self.pods.get(container_id.pod_id)
        if pod is None:
            raise ClusterStateKeyError(container_id.pod_id)
        name = container_id.container_name
        if name not in pod.containers:
            pod.containers[name] = ContainerState(self._find_or_create(pod, name, now_ns=now_ns))
        pod.requests[name] = request

    def _container(self, container_id: ContainerId, *, now_ns: int) -> ContainerState:
        pod = self.pods.get(container_id.pod_id)
        if pod is None:
            raise ClusterStateKeyError(container_id.pod_id)
        container = pod.containers.get(container_id.container_name)
        if container is None:
            raise ClusterStateKeyError(container_id)
        container.aggregator = self._find_or_create(pod, container_id.container_name, now_ns=now_ns)
        return container

    def add_cpu_sample(
        self, container_id: ContainerId, measure_start_ns: int, millicores: int, *, now_ns: int
    ) -> bool:
        """``AddSample`` of a CPU sample; False when it is discarded (invalid or out of order)."""
        container = self._container(container_id, now_ns=now_ns)
        return container.add_cpu_sample(measure_start_ns, millicores)

    def add_memory_sample(
        self, container_id: ContainerId, measure_start_ns: int, usage_bytes: int, *, now_ns: int
    ) -> bool:
        """``AddSample`` of a memory sample; False when it is discarded."""
        container = self._container(container_id, now_ns=now_ns)
        return container.add_memory_sample(measure_start_ns, usage_bytes)

    def record_oom(
        self,
        container_id: ContainerId,
        timestamp_ns: int,
        requested_memory_bytes: int,
        *,
        now_ns: int,
    ) -> int:
        """``RecordOOM``; raises ``OomSampleDiscardedError`` for an OOM the model discards."""
        container = self._container(container_id, now_ns=now_ns)
        return container.record_oom(timestamp_ns, requested_memory_bytes)

    # -- VPAs ---------------------------------------------------------------------------------

    def add_or_update_vpa(
        self,
        vpa_id: VpaId,
        *,
        selector: Selector | None,
        created_ns: int,
        conditions: Iterable[VpaCondition] = (),
        recommendation: tuple[RecommendedContainerResources, ...] | None = None,
        annotations: Mapping[str, str] | None = None,
        target_ref: tuple[str, str, str] | None = None,
        update_mode: str | None = None,
        resource_policy: PodResourcePolicy | None = None,
        api_version: str = "",
        generation: int = 0,
    ) -> VpaState:
        """``AddOrUpdateVpa``: a changed selector recreates the VPA's links; the status's
        recommendation is kept only while ``RecommendationProvided`` is true."""
        conditions_map = {c.type: c for c in conditions}
        provided = conditions_map.get(RECOMMENDATION_PROVIDED)
        current = recommendation if provided is not None and provided.status == "True" else None
        vpa = self.vpas.get(vpa_id)
        if vpa is not None and _selector_text(vpa.pod_selector) != _selector_text(selector):
            self.delete_vpa(vpa_id)
            vpa = None
        if vpa is None:
            vpa = VpaState(vpa_id, selector, created_ns, per_vpa_config=self.per_vpa_config)
            self.vpas[vpa_id] = vpa
            self._vpa_index.add(vpa)
            aggregates = self._aggregates_by_namespace.get(vpa_id.namespace, {})
            for key, state in aggregates.items():
                vpa.use_aggregation_if_matching(key, state, self.labels_of(key))
            vpa.pod_count = len(self.get_matching_pods(vpa))
        vpa.target_ref = target_ref
        vpa.annotations = dict(annotations or {})
        vpa.conditions = conditions_map
        vpa.recommendation = current
        vpa.set_update_mode(update_mode)
        vpa.set_resource_policy(resource_policy)
        if api_version:
            vpa.api_version = api_version
        vpa.generation = generation
        return vpa

    def delete_vpa(self, vpa_id: VpaId) -> None:
        vpa = self.vpas.pop(vpa_id, None)
        if vpa is None:
            raise ClusterStateKeyError(vpa_id)
        self._vpa_index.remove(vpa)
        for state in vpa.aggregate_container_states.values():
            state.mark_not_autoscaled()
        self.empty_vpas.pop(vpa_id, None)

    # -- aggregations -------------------------------------------------------------------------

    def make_aggregate_state_key(self, pod: PodState, container_name: str) -> AggregateStateKey:
        return AggregateStateKey(pod.id.namespace, container_name, pod.label_set_key)

    def _find_or_create(
        self, pod: PodState, container_name: str, *, now_ns: int
    ) -> AggregateContainerState:
        """``findOrCreateAggregateContainerState`` (a new aggregate is created at ``now_ns``)."""
        key = self.make_aggregate_state_key(pod, container_name)
        state = self.aggregate_state_map.get(key)
        if state is None:
            state = AggregateContainerState(self.config, creation_time_ns=now_ns)
            self.aggregate_state_map[key] = state
            self._aggregates_by_namespace.setdefault(key.namespace, {})[key] = state
            labels = self.labels_of(key)
            for vpa in self._vpa_index.candidates(key.namespace, labels):
                vpa.use_aggregation_if_matching(key, state, labels)
        return state

    def garbage_collect(
        self, now_ns: int, *, controller_exists: Callable[[PodState], bool]
    ) -> list[AggregateStateKey]:
        """``garbageCollectAggregateCollectionStates``: drop aggregates that are empty and no
        longer fed (no active pod, no controller left), and expired ones; answers the keys."""
        contributive: set[AggregateStateKey] = set()
        for pod in self.pods.values():
            active = pod.phase not in (POD_SUCCEEDED, POD_FAILED)
            if active or controller_exists(pod):
                contributive.update(self.make_aggregate_state_key(pod, c) for c in pod.containers)
        deleted = [
            key
            for key, state in self.aggregate_state_map.items()
            if (key not in contributive and state.is_empty()) or state.is_expired(now_ns)
        ]
        for key in deleted:
            del self.aggregate_state_map[key]
            self._aggregates_by_namespace.get(key.namespace, {}).pop(key, None)
            for vpa in self._vpa_index.candidates(key.namespace, self.labels_of(key)):
                vpa.delete_aggregation(key)
        return deleted

    def rate_limited_garbage_collect(
        self, now_ns: int, *, controller_exists: Callable[[PodState], bool]
    ) -> list[AggregateStateKey]:
        """``RateLimitedGarbageCollectAggregateCollectionStates``: at most once per interval."""
        if now_ns - self.last_aggregate_container_state_gc_ns < self.gc_interval_ns:
            return []
        deleted = self.garbage_collect(now_ns, controller_exists=controller_exists)
        self.last_aggregate_container_state_gc_ns = now_ns
        return deleted

    # -- queries ------------------------------------------------------------------------------

    def record_recommendation(self, vpa: VpaState, now_ns: int) -> str | None:
        """``RecordRecommendation``: a message when the VPA has had no recommendation for more
        than 30 minutes since it was first (or last) reported."""
        if vpa.has_recommendation():
            self.empty_vpas.pop(vpa.id, None)
            return None
        last = self.empty_vpas.get(vpa.id)
        if last is None:
            self.empty_vpas[vpa.id] = now_ns
        elif last + RECOMMENDATION_MISSING_MAX_DURATION_NS < now_ns:
            self.empty_vpas[vpa.id] = now_ns
            return (
                f"VPA {vpa.id.namespace}/{vpa.id.vpa_name} is missing recommendation for more "
                "than 30m0s"
            )
        return None

    def get_matching_pods(self, vpa: VpaState) -> list[PodId]:
        return [
            pod_id
            for (namespace, key), pods in self._pods_by_label_set.items()
            if namespace == vpa.id.namespace
            and vpa.pod_selector is not None
            and vpa.pod_selector.matches(self.label_set_map.get(key, {}))
            for pod_id in pods
        ]

    def get_controlling_vpa(self, pod: PodState) -> VpaState | None:
        labels = self.label_set_map.get(pod.label_set_key, {})
        for vpa in self._vpa_index.candidates(pod.id.namespace, labels):
            if self._pod_matches(pod, vpa):
                return vpa
        return None


def _selector_text(selector: Selector | None) -> str | None:
    return None if selector is None else selector.to_string()
