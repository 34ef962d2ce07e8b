"""Slim, frozen records the informers keep: only the fields the controllers read.

Upstream counterparts: the typed objects client-go's informers hold (``v1.Pod``,
``autoscalingv2.HorizontalPodAutoscaler``, ``appsv1.Deployment`` ...) and
``cache.MetaNamespaceKeyFunc``. A Pod becomes the replica calculator's pod shape
(``hpa.core.replicas.PodInfo``: phase, Ready condition, start time, deletion time, container and
pod-level requests in milli-units, overhead) when it arrives, once; nothing downstream re-reads
its JSON.

Deliberate deviations: records are built from orjson dicts by plain functions, never through
kubernetes_asyncio's models (they are slow and drop unknown fields). The parts of a Pod that its
siblings share (labels, owner references, containers, Ready condition, namespace, node, times)
are interned by value in bounded tables, so 100,000 pods of a few thousand templates hold one
copy of each; records are frozen, so sharing is invisible to readers. Pod quantities are read
exactly with ``hpa.core.quantity``. An HPA record keeps
the whole object as zlib-compressed JSON (``raw`` decodes it) so the status writer can send back
fields we do not model.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, Protocol, TypeVar

import orjson

from hpa.core.conditions import ConditionStatus
from hpa.core.quantity import QuantityError, parse_quantity
from hpa.core.replicas import GO_ZERO_TIME, ContainerInfo, PodCondition, PodInfo, PodPhase
from hpa.core.selector import NOTHING, Selector, SelectorError, selector_from_label_selector
from hpa.kube.clock import parse_time

JsonObject = dict[str, Any]
T = TypeVar("T")
_EMPTY: Mapping[str, str] = MappingProxyType({})
_EMPTY_MILLI: Mapping[str, int] = MappingProxyType({})


class Record(Protocol):
    """What a store needs of a record: identity, labels and the version it was read at."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def resource_version(self) -> str: ...


def object_key(namespace: str, name: str) -> str:
    """``cache.MetaNamespaceKeyFunc``: ``namespace/name``, or ``name`` when cluster-scoped."""
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str, str]:
    """``cache.SplitMetaNamespaceKey``."""
    namespace, _, name = key.rpartition("/")
    return namespace, name


def record_key(record: Record) -> str:
    return object_key(record.namespace, record.name)


class Interner:
    """A bounded table of shared immutable values: ``intern(key, make)`` answers the value made
    for an equal ``key`` earlier, else ``make()`` (stored). When full, the table starts over;
    values already handed out stay valid, they are just no longer shared with new ones."""

    def __init__(self, max_entries: int = 65536) -> None:
        self.max_entries = max_entries
        self._table: dict[Any, Any] = {}

    def __len__(self) -> int:
        return len(self._table)

    def intern(self, key: Any, make: Callable[[], T]) -> T:
        found = self._table.get(key)
        if found is None:
            if len(self._table) >= self.max_entries:
                self._table.clear()
            found = self._table[key] = make()
        return found  # type: ignore[no-any-return,unused-ignore]


_SHARED = Interner()


def _text(value: Any) -> str:
    """A short, often repeated string (namespace, node, phase), shared."""
    text = str(value)
    return _SHARED.intern(("s", text), lambda: text)


def _shared_time(value: Any) -> datetime | None:
    if not value:
        return None
    return _SHARED.intern(("t", value), lambda: parse_time(value))


def _string_map(value: Any) -> Mapping[str, str]:
    if not value:
        return _EMPTY
    items = tuple((str(k), str(v)) for k, v in value.items())
    return _SHARED.intern(("m", items), lambda: MappingProxyType(dict(items)))


@dataclass(frozen=True, slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False


def _owner_references(metadata: Mapping[str, Any]) -> tuple[OwnerReference, ...]:
    refs = metadata.get("ownerReferences")
    if not refs:
        return ()
    fields = tuple(
        (
            str(ref.get("apiVersion", "")),
            str(ref.get("kind", "")),
            str(ref.get("name", "")),
            str(ref.get("uid", "")),
            bool(ref.get("controller", False)),
        )
        for ref in refs
    )
    return _SHARED.intern(
        ("o", fields),
        lambda: tuple(
            OwnerReference(api_version=a, kind=k, name=n, uid=u, controller=c)
            for a, k, n, u, c in fields
        ),
    )


# ---------------------------------------------------------------- Pod


def _requests_milli(resources: Any) -> Mapping[str, int]:
    """A ``ResourceList`` as ``Quantity.MilliValue()`` per resource name. The API server validates
    quantities; one that does not read counts as unset."""
    if not resources:
        return _EMPTY_MILLI
    requests: dict[str, int] = {}
    for name, text in resources.items():
        try:
            requests[str(name)] = parse_quantity(str(text)).milli_value()
        except QuantityError:
            continue
    return MappingProxyType(requests)


def _applied_requests(statuses: Any) -> dict[str, Any]:
    """``status.containerStatuses[].resources.requests`` by container name (what the kubelet
    applied), for the containers whose status reports resources."""
    applied: dict[str, Any] = {}
    for status in statuses or ():
        if isinstance(status, Mapping) and isinstance(status.get("resources"), Mapping):
            applied[str(status.get("name", ""))] = status["resources"].get("requests") or {}
    return applied


def _containers(value: Any, statuses: Any = None) -> tuple[ContainerInfo, ...]:
    """A pod spec's containers as the replica calculator reads them, with the requests the
    kubelet applied from the matching container statuses, shared by every pod with equal
    containers (looked up by value: name, requests, restart policy and applied requests)."""
    if not value:
        return ()
    applied = _applied_requests(statuses)
    key = (
        "c",
        tuple(
            (
                str(c.get("name", "")),
                tuple(((c.get("resources") or {}).get("requests") or {}).items()),
                c.get("restartPolicy"),
                None
                if str(c.get("name", "")) not in applied
                else tuple(applied[str(c.get("name", ""))].items()),
            )
            for c in value
        ),
    )
    return _SHARED.intern(
        key,
        lambda: tuple(
            ContainerInfo(
                name=name,
                requests_milli=_requests_milli(dict(requests)),
                restart_policy=restart_policy,
                applied_requests_milli=None
                if status_requests is None
                else _requests_milli(dict(status_requests)),
            )
            for name, requests, restart_policy, status_requests in key[1]
        ),
    )


def _ready_condition(status: Mapping[str, Any]) -> PodCondition | None:
    """The ``Ready`` condition (an unknown status reads as ``Unknown``; no transition time as
    Go's zero time), shared by every pod with an equal one."""
    ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
    if ready is None:
        return None
    text = str(ready.get("status", ""))
    since = ready.get("lastTransitionTime")

    def make() -> PodCondition:
        try:
            condition_status = ConditionStatus(text)
        except ValueError:
            condition_status = ConditionStatus.UNKNOWN
        return PodCondition(condition_status, parse_time(since) or GO_ZERO_TIME)

    return _SHARED.intern(("r", text, since), make)


def _phase(value: Any) -> PodPhase:
    try:
        return PodPhase(value)
    except ValueError:
        return PodPhase.UNKNOWN


@dataclass(frozen=True, slots=True)
class ContainerStatusInfo:
    """One ``status.containerStatuses[]`` entry as the VPA recommender's OOM observer reads it:
    the restart count, the current state (``running``, ``terminated``, ``waiting`` or ``""``) and
    the reason and end of the current and the last termination."""

    name: str
    restart_count: int
    state: str
    terminated_reason: str = ""
    terminated_finished_at: datetime | None = None
    last_terminated_reason: str = ""
    last_terminated_finished_at: datetime | None = None


def _state(value: Any) -> tuple[str, str, Any]:
    for kind in ("running", "terminated", "waiting"):
        if isinstance(value, Mapping) and isinstance(value.get(kind), Mapping):
            detail = value[kind]
            return kind, str(detail.get("reason", "")), detail.get("finishedAt")
    return "", "", None


def _container_statuses(value: Any) -> tuple[ContainerStatusInfo, ...]:
    """The pod's container statuses, shared by every pod with equal ones."""
    if not value:
        return ()
    fields = tuple(
        (
            str(s.get("name", "")),
            int(s.get("restartCount") or 0),
            _state(s.get("state")),
            _state(s.get("lastState")),
        )
        for s in value
        if isinstance(s, Mapping)
    )
    return _SHARED.intern(
        ("cs", fields),
        lambda: tuple(
            ContainerStatusInfo(
                name=name,
                restart_count=restarts,
                state=state[0],
                terminated_reason=state[1] if state[0] == "terminated" else "",
                terminated_finished_at=parse_time(state[2]) if state[0] == "terminated" else None,
                last_terminated_reason=last[1] if last[0] == "terminated" else "",
                last_terminated_finished_at=parse_time(last[2])
                if last[0] == "terminated"
                else None,
            )
            for name, restarts, state, last in fields
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PodRecord:
    """A Pod as the informer keeps it: identity, labels and owners for stores and selectors, and
    ``info``, the replica calculator's pod shape (``groupPods``, ``calculateRequests``), built
    once when the Pod arrives."""

    namespace: str
    name: str
    labels: Mapping[str, str]
    info: PodInfo
    uid: str = ""
    resource_version: str = ""
    owner_references: tuple[OwnerReference, ...] = ()
    node_name: str = ""
    container_statuses: tuple[ContainerStatusInfo, ...] = ()
    """Read by the VPA recommender's OOM observer only (shared by value, so small)."""

    @property
    def is_ready(self) -> bool:
        """``podutil.IsPodReady``: the Ready condition is ``True``."""
        condition = self.info.ready_condition
        return condition is not None and condition.status == ConditionStatus.TRUE


def parse_pod(data: Mapping[str, Any]) -> PodRecord:
    metadata = data["metadata"]
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    name = str(metadata["name"])
    pod_resources = spec.get("resources")
    overhead = spec.get("overhead")
    return PodRecord(
        namespace=_text(metadata.get("namespace", "")),
        name=name,
        uid=str(metadata.get("uid", "")),
        resource_version=str(metadata.get("resourceVersion", "")),
        labels=_string_map(metadata.get("labels")),
        owner_references=_owner_references(metadata),
        node_name=_text(spec.get("nodeName", "")),
        container_statuses=_container_statuses(status.get("containerStatuses")),
        info=PodInfo(
            name=name,
            phase=_phase(status.get("phase", "")),
            ready_condition=_ready_condition(status),
            start_time=_shared_time(status.get("startTime")),
            deletion_timestamp=parse_time(metadata.get("deletionTimestamp")),
            containers=_containers(spec.get("containers"), status.get("containerStatuses")),
            init_containers=_containers(
                spec.get("initContainers"), status.get("initContainerStatuses")
            ),
            pod_requests_milli=None
            if not pod_resources
            else _requests_milli(pod_resources.get("requests")),
            overhead_milli=_requests_milli(overhead) if overhead else None,
        ),
    )


# ---------------------------------------------------------------- HPA


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleTargetRef:
    """``CrossVersionObjectReference``."""

    api_version: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class HpaRecord:
    """An ``autoscaling/v2`` HPA: identity, target, and the raw object for status writes."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int
    labels: Mapping[str, str]
    scale_target_ref: ScaleTargetRef
    compressed: bytes = field(compare=False, repr=False)
    """The whole object as zlib-compressed JSON (a twentieth of its size as a dict, a quarter
    of the JSON's): decoded on demand by ``raw``."""
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)

    @property
    def encoded(self) -> bytes:
        """The whole object as JSON."""
        return zlib.decompress(self.compressed)

    @property
    def raw(self) -> dict[str, Any]:
        """The whole object, unknown fields included (a fresh dict on every access)."""
        decoded: dict[str, Any] = orjson.loads(self.encoded)
        return decoded

    @property
    def spec(self) -> Mapping[str, Any]:
        spec = self.raw.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def status(self) -> Mapping[str, Any]:
        status = self.raw.get("status")
        return status if isinstance(status, dict) else {}


def parse_hpa(data: Mapping[str, Any]) -> HpaRecord:
    metadata = data["metadata"]
    target = (data.get("spec") or {}).get("scaleTargetRef") or {}
    return HpaRecord(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata["name"]),
        uid=str(metadata.get("uid", "")),
        resource_version=str(metadata.get("resourceVersion", "")),
        generation=int(metadata.get("generation") or 0),
        labels=_string_map(metadata.get("labels")),
        scale_target_ref=ScaleTargetRef(
            api_version=str(target.get("apiVersion", "")),
            kind=str(target.get("kind", "")),
            name=str(target.get("name", "")),
        ),
        compressed=zlib.compress(orjson.dumps(data), 1),
        annotations=_string_map(metadata.get("annotations")),
    )


# ---------------------------------------------------------------- workloads


WorkloadKind = Literal["Deployment", "StatefulSet", "ReplicaSet"]


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    """A Deployment, StatefulSet or ReplicaSet: replicas and selector for scale reads."""

    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int
    observed_generation: int
    labels: Mapping[str, str]
    owner_references: tuple[OwnerReference, ...]
    spec_replicas: int  # the API defaults a missing spec.replicas to 1
    status_replicas: int
    ready_replicas: int
    selector: Selector  # NOTHING when missing or invalid


def parse_workload(data: Mapping[str, Any], *, kind: str = "") -> WorkloadRecord:
    """List items carry no ``kind``: bind it, ``functools.partial(parse_workload, kind=...)``."""
    metadata = data["metadata"]
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    try:
        selector = selector_from_label_selector(spec.get("selector"))
    except SelectorError:
        selector = NOTHING
    replicas = spec.get("replicas")
    return WorkloadRecord(
        kind=kind or str(data.get("kind", "")),
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata["name"]),
        uid=str(metadata.get("uid", "")),
        resource_version=str(metadata.get("resourceVersion", "")),
        generation=int(metadata.get("generation") or 0),
        observed_generation=int(status.get("observedGeneration") or 0),
        labels=_string_map(metadata.get("labels")),
        owner_references=_owner_references(metadata),
        spec_replicas=1 if replicas is None else int(replicas),
        status_replicas=int(status.get("replicas") or 0),
        ready_replicas=int(status.get("readyReplicas") or 0),
        selector=selector,
    )
