"""The recommender's input: VPAs, pods, live usage, OOM kills, checkpoints and history into the
model (:class:`hpa.core.vpa.cluster.ClusterState`).

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/input/cluster_feeder.go`` (``LoadVPAs`` with ``filterVPAs``, ``getSelector`` and
``validateTargetRef``; ``LoadPods``; ``DeleteRemovedPods``; ``LoadRealTimeMetrics`` with
``newContainerUsageSamplesWithKey``; ``InitFromHistoryProvider``; ``InitFromCheckpoints``;
``GarbageCollectCheckpoints``; ``matchesVPA`` for ``--memory-saver``),
``pkg/recommender/input/spec/spec_client.go`` (a pod's containers, init containers and requests)
and ``pkg/recommender/input/oom/observer.go`` (``OnUpdate``: an OOM kill is a container whose
current state became ``Terminated`` with reason ``OOMKilled``, or that restarted from ``Running``
with its last state ``OOMKilled``; the memory request is the new pod's for the first, the old
pod's for the second. ``OnEvent`` with ``parseEvictionEvent`` and
``WatchEvictionEventsWithRetries``: each new Event with reason ``Evicted`` about a Pod whose
annotations ``offending_containers``, ``offending_containers_usage`` and ``starved_resource``
(comma-separated, as many of each) name a container starved of memory is an OOM of that
container at the Event's creation, its memory the container's usage).

Deliberate deviations:

* the VPA, pod, HPA and controller listers are informer stores of records converted once on
  arrival (:mod:`hpa.kube.vpa_records`, :mod:`hpa.kube.records`);
* the OOM observer compares each pod with the record seen at the previous pass instead of
  handling every informer update (an OOM kill between two passes that a third status change
  overwrites before the next pass is missed; the pod's restart count still shows it only once);
* eviction Events come from an informer (list and watch, ``fieldSelector=reason=Evicted``)
  instead of a bare watch retried every 10 s; each Event (by uid) is read once, and one memory
  incident seen by both paths is recorded once: an OOM from one path is dropped when the other
  path recorded one for the same container within :data:`SAME_OOM_WINDOW_NS` of it (upstream
  records both);
* a pod whose record (resourceVersion) did not change since the previous pass is not re-added
  to the model (re-adding it changes nothing);
* the process serves the recommenders ``--recommender-name`` (upstream's model) and ``crane``
  (:mod:`hpa.core.vpa.crane`), a VPA naming neither is left alone; ``crane`` histories live
  beside the model's aggregates, fed by the same samples (live and from the history provider),
  and are not checkpointed: a restarted recommender rebuilds them from the history provider
  (``--storage=prometheus``), or from live samples only;
* a VPA whose resource policy cannot be used (``policy_error``) gets ``ConfigUnsupported`` with
  the reason, and no policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from hpa.api.vpa import time_to_ns
from hpa.controllers.vertical.group_aware import MODEL_GROUP_AWARE, GroupSizeHistory
from hpa.controllers.vertical.ports import (
    ContainerMetricsSource,
    MetricsSourceError,
    PodHistory,
)
from hpa.core.quantity import QuantityError, parse_quantity
from hpa.core.selector import NOTHING, Selector
from hpa.core.vpa.aggregation import OomSampleDiscardedError
from hpa.core.vpa.amount import NO_RESOURCES, Resources
from hpa.core.vpa.awareness import HorizontalScaler
from hpa.core.vpa.checkpoints import CheckpointRef, load_checkpoint
from hpa.core.vpa.cluster import (
    FETCHING_HISTORY,
    ClusterState,
    ClusterStateKeyError,
    ContainerId,
    PodId,
    PodState,
    VpaId,
    VpaState,
)
from hpa.core.vpa.crane import CRANE_RECOMMENDER_NAME, CraneConfig, CraneContainerState
from hpa.core.vpa.matching import ControllerKey
from hpa.kube.clock import parse_time
from hpa.kube.records import ContainerStatusInfo, PodRecord
from hpa.kube.targets import WELL_KNOWN_KINDS, ControllerLookup, TargetError, TargetResolver
from hpa.kube.vpa_client import CheckpointObject
from hpa.kube.vpa_records import VpaRecord

__all__ = [
    "CONFIG_DEPRECATED",
    "CONFIG_UNSUPPORTED",
    "DEFAULT_RECOMMENDER_NAME",
    "EVICTION_FIELD_SELECTOR",
    "SAME_OOM_WINDOW_NS",
    "ClusterFeeder",
    "EvictionEvent",
    "ObservedVpa",
    "OomInfo",
    "find_ooms",
    "parse_eviction_event",
    "parse_eviction_ooms",
    "selected_model",
]

log = structlog.get_logger("hpa.controllers.vertical.feeder")

DEFAULT_RECOMMENDER_NAME = "default"
CONFIG_UNSUPPORTED = "ConfigUnsupported"
CONFIG_DEPRECATED = "ConfigDeprecated"
OOM_KILLED = "OOMKilled"
MODEL_DEFAULT = "default"
MODEL_CRANE = CRANE_RECOMMENDER_NAME
EVICTION_FIELD_SELECTOR = "reason=Evicted"
"""The Events the OOM observer reads (``WatchEvictionEventsWithRetries``)."""
SAME_OOM_WINDOW_NS = 60 * 1_000_000_000
"""OOMs of one container from the two paths (pod status, eviction Event) at most this far apart
are one OOM."""
SEEN_EVENTS_KEPT_NS = 24 * 3600 * 1_000_000_000
"""How long an Event's uid is remembered (Events live 1 h by default)."""
MAX_PENDING_EVICTION_OOMS = 5000
"""OOMs from Events waiting for the next pass, at most (upstream's channel holds 5000): while
no pass runs (another replica leads) the oldest are dropped."""


def selected_model(recommenders: Sequence[str], recommender_name: str) -> str | None:
    """``filterVPAs`` for a process that runs ``recommender_name`` (upstream's model), ``crane``
    and ``group-aware``: which of them serves a VPA, None when the VPA is not ours. A VPA without
    ``spec.recommenders`` belongs to the ``default`` recommender; otherwise the first listed name
    this process runs wins."""
    if not recommenders:
        return MODEL_DEFAULT if recommender_name == DEFAULT_RECOMMENDER_NAME else None
    for name in recommenders:
        if name == recommender_name:
            return MODEL_DEFAULT
        if name == CRANE_RECOMMENDER_NAME:
            return MODEL_CRANE
        if name == MODEL_GROUP_AWARE:
            return MODEL_GROUP_AWARE
    return None


@dataclass(frozen=True, slots=True)
class ObservedVpa:
    """A VPA object this process serves, as read at the start of the pass, and the model that
    serves it (``default`` or ``crane``)."""

    record: VpaRecord
    model: str


@dataclass(frozen=True, slots=True)
class OomInfo:
    """``OomInfo``; ``source`` is the path that saw it: ``status`` (a pod's container status) or
    ``eviction`` (an Event)."""

    container_id: ContainerId
    timestamp_ns: int
    memory_bytes: int
    source: str = "status"


@dataclass(frozen=True, slots=True)
class EvictionEvent:
    """An Event as the eviction informer keeps it: what ``parseEvictionEvent`` reads."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    reason: str
    involved_kind: str
    involved_namespace: str
    involved_name: str
    created_ns: int
    annotations: Mapping[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)


_EVICTION_ANNOTATIONS = ("offending_containers", "offending_containers_usage", "starved_resource")


def parse_eviction_event(data: Mapping[str, Any]) -> EvictionEvent:
    """The informer's parse function for Events (``KeyError``/``ValueError`` for a malformed
    one, which the informer logs and skips)."""
    metadata = data["metadata"]
    involved = data.get("involvedObject") or {}
    annotations = metadata.get("annotations") or {}
    created = parse_time(metadata.get("creationTimestamp"))
    return EvictionEvent(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata["name"]),
        uid=str(metadata.get("uid", "")),
        resource_version=str(metadata.get("resourceVersion", "")),
        reason=str(data.get("reason", "")),
        involved_kind=str(involved.get("kind", "")),
        involved_namespace=str(involved.get("namespace", "")),
        involved_name=str(involved.get("name", "")),
        created_ns=time_to_ns(created),
        annotations={k: str(annotations[k]) for k in _EVICTION_ANNOTATIONS if k in annotations},
    )


def parse_eviction_ooms(event: EvictionEvent) -> list[OomInfo]:
    """``parseEvictionEvent``: the OOMs an eviction Event names (none unless its reason is
    ``Evicted``, it is about a Pod and its three annotations list as many entries each)."""
    if event.reason != "Evicted" or event.involved_kind != "Pod":
        return []

    def entries(key: str) -> list[str]:
        text = event.annotations.get(key)
        return [] if text is None else text.split(",")

    containers = entries("offending_containers")
    usages = entries("offending_containers_usage")
    starved = entries("starved_resource")
    if len(containers) != len(usages) or len(containers) != len(starved):
        return []
    pod_id = PodId(event.involved_namespace, event.involved_name)
    found: list[OomInfo] = []
    for container, usage, resource in zip(containers, usages, starved, strict=True):
        if resource != "memory":
            continue
        try:
            memory = parse_quantity(usage).value()
        except QuantityError as error:
            log.error(
                "eviction_usage_unreadable",
                eviction_event=f"{event.namespace}/{event.name}",
                usage=usage,
                error=str(error),
            )
            continue
        found.append(
            OomInfo(ContainerId(pod_id, container), event.created_ns, memory, source="eviction")
        )
    return found


def _memory_request_bytes(pod: PodRecord, container: str) -> int:
    for info in pod.info.containers:
        if info.name == container:
            milli = info.requests_milli.get("memory")
            return 0 if milli is None else -(-milli // 1000)
    return 0


def _status_of(name: str, statuses: tuple[ContainerStatusInfo, ...]) -> ContainerStatusInfo | None:
    for status in statuses:
        if status.name == name:
            return status
    return None


def find_ooms(old: PodRecord, new: PodRecord) -> list[OomInfo]:
    """``observer.OnUpdate``: the OOM kills that the change from ``old`` to ``new`` shows."""
    if old.container_statuses is new.container_statuses:
        return []
    found: list[OomInfo] = []
    pod_id = PodId(new.namespace, new.name)
    for status in new.container_statuses:
        before = _status_of(status.name, old.container_statuses)
        if before is None:
            continue
        restarted = status.restart_count > before.restart_count
        new_oom = (
            status.state == "terminated"
            and status.terminated_reason == OOM_KILLED
            and (before.state != "terminated" or restarted)
        )
        previous_oom = (
            status.state == "running"
            and before.state == "running"
            and restarted
            and status.last_terminated_reason == OOM_KILLED
        )
        if not new_oom and not previous_oom:
            continue
        finished = status.terminated_finished_at if new_oom else status.last_terminated_finished_at
        found.append(
            OomInfo(
                ContainerId(pod_id, status.name),
                time_to_ns(finished),
                _memory_request_bytes(new if new_oom else old, status.name),
            )
        )
    return found


def _requests(pod: PodRecord) -> dict[str, Resources]:
    out: dict[str, Resources] = {}
    for container in pod.info.containers:
        milli = container.requests_milli
        memory = milli.get("memory")
        out[container.name] = Resources(
            cpu=milli.get("cpu"), memory=None if memory is None else -(-memory // 1000)
        )
    return out


@dataclass(slots=True)
class _CraneVpa:
    """A ``crane`` VPA's container histories."""

    states: dict[str, CraneContainerState] = field(default_factory=dict)


class ClusterFeeder:
    """``clusterStateFeeder`` over informer stores (``vpas``, ``pods``: callables answering the
    current records), the target resolver and the live metrics source."""

    def __init__(
        self,
        cluster: ClusterState,
        *,
        vpas: Callable[[], Iterable[VpaRecord]],
        pods: Callable[[], Iterable[PodRecord]],
        resolver: TargetResolver,
        controllers: ControllerLookup,
        metrics: ContainerMetricsSource,
        recommender_name: str = DEFAULT_RECOMMENDER_NAME,
        vpa_object_namespace: str = "",
        ignored_vpa_object_namespaces: frozenset[str] = frozenset(),
        memory_saver: bool = False,
        crane_config: CraneConfig | None = None,
        hpas: Callable[[str], Sequence[HorizontalScaler]] | None = None,
    ) -> None:
        self.cluster = cluster
        self._vpas = vpas
        self._pods = pods
        self._resolver = resolver
        self._controllers = controllers
        self._metrics = metrics
        self.recommender_name = recommender_name
        self.vpa_object_namespace = vpa_object_namespace
        self.ignored_vpa_object_namespaces = ignored_vpa_object_namespaces
        self.memory_saver = memory_saver
        self.crane_config = crane_config or CraneConfig()
        self.observed: dict[VpaId, ObservedVpa] = {}
        self.crane: dict[VpaId, _CraneVpa] = {}
        self.group_sizes = GroupSizeHistory(controllers, hpas=hpas)
        self._seen: dict[PodId, PodRecord] = {}
        self._pods_to_delete: list[PodId] = []
        self._ooms: list[OomInfo] = []
        self._eviction_ooms: list[OomInfo] = []
        self._seen_events: dict[str, int] = {}
        """uid → creation of every eviction Event read (pruned after a day)."""
        self._recent_ooms: dict[ContainerId, list[tuple[int, str]]] = {}
        """Recorded OOMs (timestamp, source) per container, for the two paths' deduplication."""
        self.fetching_history = False
        self.samples_added = 0
        self.samples_dropped = 0

    def _ignored(self, namespace: str) -> bool:
        """Outside ``--vpa-object-namespace`` (upstream's informers watch only that one)."""
        return bool(self.vpa_object_namespace) and namespace != self.vpa_object_namespace

    def should_ignore_namespace(self, namespace: str) -> bool:
        """``shouldIgnoreNamespace``: outside ``--vpa-object-namespace`` or one of
        ``--ignored-vpa-object-namespaces``; its VPAs are not served and its checkpoints neither
        loaded nor garbage-collected (its pods and usage are still read)."""
        return self._ignored(namespace) or namespace in self.ignored_vpa_object_namespaces

    # -- VPAs ---------------------------------------------------------------------------------

    async def _selector(self, record: VpaRecord) -> tuple[Selector, str | None]:
        """``getSelector``: the target's selector and None, or ``NOTHING`` and the
        ``ConfigUnsupported`` message."""
        target = record.target
        if target is None:
            return NOTHING, (
                "Cannot read targetRef. Reason: targetRef not defined. If this is a v1beta1 "
                "object, switch to v1"
            )
        try:
            selector = await self._resolver.selector(target)
        except TargetError as error:
            return NOTHING, f"Cannot read targetRef. Reason: {error}"
        described = f"{target.api_version}.{target.kind}/{target.name}"
        try:
            top = await self._resolver.top_most_well_known_or_scalable(target)
        except TargetError as error:
            return NOTHING, (
                f"Error checking if target {described} is a topmost well-known or scalable "
                f"controller: {error}"
            )
        if top is None:
            return NOTHING, (
                f"Unknown error during checking if target {described} is a topmost well-known "
                "or scalable controller"
            )
        if top != target:
            return NOTHING, (
                f"The target {described} has a parent controller but it should point to a "
                "topmost well-known or scalable controller"
            )
        return selector, None

    async def load_vpas(self, *, now_ns: int) -> None:
        """``LoadVPAs``: add or update the VPAs this process serves, delete the others."""
        observed: dict[VpaId, ObservedVpa] = {}
        for record in self._vpas():
            model = selected_model(record.recommenders, self.recommender_name)
            if model is None or self.should_ignore_namespace(record.namespace):
                continue
            vpa_id = VpaId(record.namespace, record.name)
            selector, unsupported = await self._selector(record)
            target = record.target
            vpa = self.cluster.add_or_update_vpa(
                vpa_id,
                selector=selector,
                created_ns=time_to_ns(record.created),
                conditions=record.conditions,
                recommendation=record.recommendation,
                annotations=record.annotations,
                target_ref=None
                if target is None
                else (target.api_version, target.kind, target.name),
                update_mode=record.update_mode,
                resource_policy=record.policy,
                api_version=record.api_version,
                generation=record.generation,
            )
            if record.policy_error and unsupported is None:
                unsupported = f"Cannot use the resource policy. Reason: {record.policy_error}"
            if unsupported is None:
                vpa.conditions.pop(CONFIG_UNSUPPORTED, None)
            else:
                vpa.set_condition(CONFIG_UNSUPPORTED, True, "", unsupported, now_ns=now_ns)
            vpa.conditions.pop(CONFIG_DEPRECATED, None)
            if self.fetching_history:
                vpa.set_condition(
                    FETCHING_HISTORY,
                    True,
                    "FetchingHistory",
                    "usage history is being read; recommendations use live samples meanwhile",
                    now_ns=now_ns,
                )
            else:
                vpa.conditions.pop(FETCHING_HISTORY, None)
            observed[vpa_id] = ObservedVpa(record, model)
            if model == MODEL_CRANE and vpa_id not in self.crane:
                self.crane[vpa_id] = _CraneVpa()
        for vpa_id in list(self.cluster.vpas):
            if vpa_id not in observed:
                log.info("vpa_deleted", vpa=f"{vpa_id.namespace}/{vpa_id.vpa_name}")
                self.cluster.delete_vpa(vpa_id)
        for vpa_id in list(self.crane):
            if vpa_id not in observed or observed[vpa_id].model != MODEL_CRANE:
                del self.crane[vpa_id]
        self.observed = observed
        self.group_sizes.sync(
            {
                vpa_id: o.record.target
                for vpa_id, o in observed.items()
                if o.model == MODEL_GROUP_AWARE
            }
        )

    # -- pods ---------------------------------------------------------------------------------

    def _matches_vpa(self, pod: PodRecord) -> bool:
        """``matchesVPA`` (``--memory-saver``)."""
        return any(
            vpa_id.namespace == pod.namespace
            and vpa.pod_selector is not None
            and vpa.pod_selector.matches(pod.labels)
            for vpa_id, vpa in self.cluster.vpas.items()
        )

    def load_pods(self, *, now_ns: int) -> None:
        """``LoadPods``, with the OOM observer's comparison of each pod with its previous
        record."""
        current: dict[PodId, PodRecord] = {}
        for pod in self._pods():
            if self._ignored(pod.namespace):
                continue
            current[PodId(pod.namespace, pod.name)] = pod
        self._pods_to_delete = [pod_id for pod_id in self.cluster.pods if pod_id not in current]
        seen = self._seen
        for pod_id, pod in current.items():
            before = seen.get(pod_id)
            if before is not None:
                if before.resource_version == pod.resource_version and pod_id in self.cluster.pods:
                    continue
                self._ooms.extend(find_ooms(before, pod))
            if self.memory_saver and not self._matches_vpa(pod):
                continue
            self.cluster.add_or_update_pod(pod_id, pod.labels, pod.info.phase, now_ns=now_ns)
            for name, request in _requests(pod).items():
                self.cluster.add_or_update_container(
                    ContainerId(pod_id, name), request, now_ns=now_ns
                )
            self.cluster.set_init_containers(pod_id, (c.name for c in pod.info.init_containers))
        self._seen = current

    def delete_removed_pods(self) -> None:
        """``DeleteRemovedPods``."""
        for pod_id in self._pods_to_delete:
            self.cluster.delete_pod(pod_id)
        self._pods_to_delete = []

    # -- samples ------------------------------------------------------------------------------

    def _crane_states_for(self, pod: PodState) -> list[_CraneVpa]:
        if not self.crane:
            return []
        labels = self.cluster.label_set_map.get(pod.label_set_key, {})
        out = []
        for vpa_id, crane in self.crane.items():
            vpa = self.cluster.vpas.get(vpa_id)
            if (
                vpa is not None
                and vpa_id.namespace == pod.id.namespace
                and vpa.pod_selector is not None
                and vpa.pod_selector.matches(labels)
            ):
                out.append(crane)
        return out

    def _crane_state(self, crane: _CraneVpa, container: str) -> CraneContainerState:
        state = crane.states.get(container)
        if state is None:
            state = crane.states[container] = CraneContainerState(self.crane_config)
        return state

    async def load_real_time_metrics(self, *, now_ns: int) -> None:
        """``LoadRealTimeMetrics``: a CPU and a memory sample per container snapshot, then the
        OOM kills observed since the previous pass."""
        try:
            snapshots = await self._metrics.containers_metrics()
        except MetricsSourceError as error:
            log.error("container_metrics_failed", error=str(error))
            snapshots = ()
        added = dropped = 0
        pods = self.cluster.pods
        # each pod's containers' usage per sample time: a sample's load for the group-aware
        # model is the pod's own usage of the HPA's resource at the same instant
        same_sample: dict[tuple[PodId, int], dict[str, Mapping[str, float]]] = {}
        for snapshot in snapshots:
            key = (snapshot.pod_id, snapshot.snapshot_time_ns)
            same_sample.setdefault(key, {})[snapshot.container] = snapshot.usage
        for snapshot in snapshots:
            pod = pods.get(snapshot.pod_id)
            if pod is not None and snapshot.container in pod.init_containers:
                dropped += len(snapshot.usage)
                continue
            container_id = ContainerId(snapshot.pod_id, snapshot.container)
            cranes = [] if pod is None else self._crane_states_for(pod)
            for resource, amount in snapshot.usage.items():
                try:
                    if resource == "cpu":
                        ok = self.cluster.add_cpu_sample(
                            container_id, snapshot.snapshot_time_ns, amount, now_ns=now_ns
                        )
                    elif resource == "memory":
                        ok = self.cluster.add_memory_sample(
                            container_id, snapshot.snapshot_time_ns, amount, now_ns=now_ns
                        )
                    else:
                        continue
                except ClusterStateKeyError:
                    if not self.memory_saver:
                        dropped += 1
                    continue
                if not ok:
                    dropped += 1
                    continue
                added += 1
                if pod is not None:
                    self.group_sizes.record(
                        self.cluster,
                        pod,
                        snapshot.container,
                        resource,
                        amount,
                        usage=same_sample[(snapshot.pod_id, snapshot.snapshot_time_ns)],
                    )
                for crane in cranes:
                    state = self._crane_state(crane, snapshot.container)
                    if resource == "cpu":
                        state.add_cpu_sample(snapshot.snapshot_time_ns, amount)
                    else:
                        state.add_memory_sample(snapshot.snapshot_time_ns, amount)
        self.samples_added, self.samples_dropped = added, dropped
        log.debug(
            "samples_loaded", samples=added, containers=len(snapshots), dropped_samples=dropped
        )
        ooms, self._ooms = self._ooms, []
        evictions, self._eviction_ooms = self._eviction_ooms, []
        self._forget_old(now_ns)
        for oom in (*ooms, *evictions):
            if self._seen_by_the_other_path(oom):
                log.info(
                    "oom_already_recorded",
                    pod=f"{oom.container_id.pod_id.namespace}/{oom.container_id.pod_id.pod_name}",
                    container=oom.container_id.container_name,
                    source=oom.source,
                )
                continue
            if self.record_oom(oom.container_id, oom.timestamp_ns, oom.memory_bytes, now_ns=now_ns):
                self._recent_ooms.setdefault(oom.container_id, []).append(
                    (oom.timestamp_ns, oom.source)
                )

    def observe_eviction_event(self, event: EvictionEvent) -> None:
        """``OnEvent`` (the eviction informer's ``on_add``): the OOMs the Event names are recorded
        at the next pass; an Event already read (by uid) is ignored."""
        key = event.uid or f"{event.namespace}/{event.name}"
        if key in self._seen_events or self._ignored(event.involved_namespace):
            return
        self._seen_events[key] = event.created_ns
        self._eviction_ooms.extend(parse_eviction_ooms(event))
        if len(self._eviction_ooms) > MAX_PENDING_EVICTION_OOMS:
            del self._eviction_ooms[: len(self._eviction_ooms) - MAX_PENDING_EVICTION_OOMS]
        if len(self._seen_events) > 2 * MAX_PENDING_EVICTION_OOMS:
            self._forget_old(event.created_ns)

    def _seen_by_the_other_path(self, oom: OomInfo) -> bool:
        for timestamp_ns, source in self._recent_ooms.get(oom.container_id, ()):
            if source != oom.source and abs(timestamp_ns - oom.timestamp_ns) <= SAME_OOM_WINDOW_NS:
                return True
        return False

    def _forget_old(self, now_ns: int) -> None:
        """Drop the deduplication records no new OOM can match any more."""
        for key, created_ns in list(self._seen_events.items()):
            if now_ns - created_ns > SEEN_EVENTS_KEPT_NS:
                del self._seen_events[key]
        for container_id, recorded in list(self._recent_ooms.items()):
            kept = [r for r in recorded if now_ns - r[0] <= SEEN_EVENTS_KEPT_NS]
            if kept:
                self._recent_ooms[container_id] = kept
            else:
                del self._recent_ooms[container_id]

    def record_oom(
        self, container_id: ContainerId, timestamp_ns: int, memory_bytes: int, *, now_ns: int
    ) -> bool:
        """``RecordOOM`` into the model (and the ``crane`` histories of the pod's VPAs): whether
        the model recorded it."""
        where = f"{container_id.pod_id.namespace}/{container_id.pod_id.pod_name}"
        try:
            self.cluster.record_oom(container_id, timestamp_ns, memory_bytes, now_ns=now_ns)
        except (ClusterStateKeyError, OomSampleDiscardedError) as error:
            log.info(
                "oom_not_recorded",
                pod=where,
                container=container_id.container_name,
                error=str(error),
            )
            return False
        log.info("oom_recorded", pod=where, container=container_id.container_name)
        pod = self.cluster.pods.get(container_id.pod_id)
        for crane in [] if pod is None else self._crane_states_for(pod):
            self._crane_state(crane, container_id.container_name).record_oom(
                timestamp_ns, memory_bytes
            )
        return True

    # -- start-up -----------------------------------------------------------------------------

    def init_from_checkpoints(self, checkpoints: Iterable[CheckpointObject]) -> int:
        """``InitFromCheckpoints`` (after :meth:`load_vpas`): answers how many were loaded."""
        loaded = 0
        for checkpoint in checkpoints:
            if self.should_ignore_namespace(checkpoint.namespace):
                continue
            vpa_id = VpaId(checkpoint.namespace, checkpoint.vpa_name)
            if checkpoint.status is None:
                log.error(
                    "checkpoint_unreadable",
                    checkpoint=f"{checkpoint.namespace}/{checkpoint.name}",
                    error=checkpoint.error,
                )
                continue
            try:
                load_checkpoint(self.cluster, vpa_id, checkpoint.container_name, checkpoint.status)
            except ValueError as error:
                log.info(
                    "checkpoint_not_loaded",
                    checkpoint=f"{checkpoint.namespace}/{checkpoint.name}",
                    error=str(error),
                )
                continue
            loaded += 1
        return loaded

    def init_from_history(self, history: Mapping[PodId, PodHistory], *, now_ns: int) -> int:
        """``InitFromHistoryProvider`` (and the history's OOM kills): answers the samples
        added. The ``crane`` histories of the pods' VPAs get the same samples (they are not
        checkpointed: the history is how a restarted ``crane`` recovers)."""
        added = 0
        for pod_id, pod_history in history.items():
            if self._ignored(pod_id.namespace):
                continue
            self.cluster.add_or_update_pod(
                pod_id, pod_history.last_labels, "Unknown", now_ns=now_ns
            )
            cranes = self._crane_states_for(self.cluster.pods[pod_id])
            for container, samples in pod_history.samples.items():
                container_id = ContainerId(pod_id, container)
                self.cluster.add_or_update_container(container_id, NO_RESOURCES, now_ns=now_ns)
                for sample in samples:
                    if sample.resource == "cpu":
                        ok = self.cluster.add_cpu_sample(
                            container_id, sample.measure_start_ns, sample.usage, now_ns=now_ns
                        )
                    elif sample.resource == "memory":
                        ok = self.cluster.add_memory_sample(
                            container_id, sample.measure_start_ns, sample.usage, now_ns=now_ns
                        )
                    else:
                        continue
                    added += ok
                    for crane in cranes if ok else ():
                        state = self._crane_state(crane, container)
                        if sample.resource == "cpu":
                            state.add_cpu_sample(sample.measure_start_ns, sample.usage)
                        else:
                            state.add_memory_sample(sample.measure_start_ns, sample.usage)
            for oom in pod_history.ooms:
                if oom.container not in pod_history.samples:
                    self.cluster.add_or_update_container(
                        ContainerId(pod_id, oom.container), NO_RESOURCES, now_ns=now_ns
                    )
                self.record_oom(
                    ContainerId(pod_id, oom.container),
                    oom.timestamp_ns,
                    oom.memory_request_bytes,
                    now_ns=now_ns,
                )
        return added

    # -- garbage collection -------------------------------------------------------------------

    def controller_exists(self, pod: PodState) -> bool:
        """Whether the controller of a pod that ended still exists (the aggregate garbage
        collection's question; a pod no longer listed has none)."""
        record = self._seen.get(pod.id)
        if record is None:
            return False
        for ref in record.owner_references:
            if not ref.controller:
                continue
            if ref.kind not in WELL_KNOWN_KINDS:
                return True
            key = ControllerKey(record.namespace, ref.kind, ref.name, ref.api_version)
            return self._controllers.get(key.kind, key.namespace, key.name) is not None
        return False

    def checkpoint_refs(self, checkpoints: Iterable[CheckpointObject]) -> list[CheckpointRef]:
        return [
            CheckpointRef(
                namespace=c.namespace,
                name=c.name,
                vpa_name=c.vpa_name,
                container_name=c.container_name,
                last_sample_start_ns=c.status.last_sample_start_ns if c.status else 0,
            )
            for c in checkpoints
            if not self.should_ignore_namespace(c.namespace)
        ]

    def existing_vpas(self) -> list[VpaId]:
        """Every VPA object (whichever recommender serves it: upstream keeps their
        checkpoints too)."""
        return [VpaId(r.namespace, r.name) for r in self._vpas()]

    def vpa(self, vpa_id: VpaId) -> VpaState | None:
        return self.cluster.vpas.get(vpa_id)
