"""Group-resources and the REST mapping the rules need (pluralize, singularize, normalize).

Upstream counterparts: ``k8s.io/apimachinery/pkg/runtime/schema.GroupResource``,
``k8s.io/apimachinery/pkg/api/meta`` ``DefaultRESTMapper`` (``Add`` with
``UnsafeGuessKindToResource``, ``ResourceFor``, ``ResourceSingularizer``) and
custom-metrics-apiserver ``CustomMetricInfo.Normalized``.

prometheus-adapter normalizes every group-resource through a discovery-backed RESTMapper. The rules
only need two questions answered, so ``RESTMapper`` is a two-method protocol; ``StaticRESTMapper``
answers them from a fixed table (built from kinds like ``DefaultRESTMapper.Add``, or from discovery
``APIResource`` entries by the server). ``StaticRESTMapper.builtin()`` knows the common built-in
kinds and is what tests and the offline tools use. ``DiscoveryRESTMapper`` is client-go's
``restmapper.NewDiscoveryRESTMapper`` over the server's discovery documents (CRDs included): a
partial group-resource found in several groups resolves by discovery priority (the core group
first, then the groups in discovery order) instead of being ambiguous, and it also answers
``kind_for`` (``KindFor``) for the described object and the LIST of a label-selector request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, order=True)
class GroupResource:
    """``schema.GroupResource``; ``str()`` is ``resource.group`` (or ``resource`` for core)."""

    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


NAMESPACES = GroupResource("", "namespaces")
NODES = GroupResource("", "nodes")
PERSISTENT_VOLUMES = GroupResource("", "persistentvolumes")
PODS = GroupResource("", "pods")


class UnknownResourceError(LookupError):
    """``NoResourceMatchError`` / ``AmbiguousResourceError`` / no singular defined."""


class RESTMapper(Protocol):
    def resource_for(self, resource: GroupResource) -> GroupResource:
        """``ResourceFor(gr.WithVersion(""))``: the plural, fully qualified group-resource."""
        ...

    def resource_singularizer(self, resource: str) -> str:
        """``ResourceSingularizer``: ``pods`` → ``pod``."""
        ...


def guess_plural(kind: str) -> tuple[str, str]:
    """``UnsafeGuessKindToResource``: (plural, singular) resource names for a kind."""
    singular = kind.lower()
    if not singular:
        return "", ""
    if singular.endswith("endpoints"):
        return singular, singular
    if singular.endswith("s"):
        return singular + "es", singular
    if singular.endswith("y"):
        return singular[:-1] + "ies", singular
    return singular + "s", singular


@dataclass(frozen=True)
class ResourceEntry:
    group: str
    plural: str
    singular: str
    namespaced: bool
    version: str = ""
    kind: str = ""


class StaticRESTMapper:
    """A fixed ``DefaultRESTMapper``: partial group-resources resolve across groups."""

    def __init__(self, entries: Iterable[ResourceEntry]) -> None:
        self.entries = tuple(entries)

    @classmethod
    def from_kinds(cls, kinds: Iterable[tuple[str, str, bool]]) -> StaticRESTMapper:
        """Entries from (group, Kind, namespaced) as ``DefaultRESTMapper.Add`` would guess them."""
        entries = []
        for group, kind, namespaced in kinds:
            plural, singular = guess_plural(kind)
            entries.append(ResourceEntry(group, plural, singular, namespaced))
        return cls(entries)

    @classmethod
    def builtin(cls) -> StaticRESTMapper:
        """The common built-in kinds of a Kubernetes cluster."""
        return cls.from_kinds(BUILTIN_KINDS)

    def _matches(self, resource: GroupResource) -> list[ResourceEntry]:
        name = resource.resource.lower()
        found: list[ResourceEntry] = []
        for entry in self.entries:
            if resource.group and entry.group != resource.group:
                continue
            if name in (entry.plural, entry.singular) and entry not in found:
                found.append(entry)
        return found

    def resource_for(self, resource: GroupResource) -> GroupResource:
        found = self._matches(resource)
        if not found:
            raise UnknownResourceError(f"no matches for {resource}")
        if len(found) > 1:
            choices = ", ".join(str(GroupResource(e.group, e.plural)) for e in found)
            raise UnknownResourceError(f"{resource} matches multiple resources ({choices})")
        return GroupResource(found[0].group, found[0].plural)

    def resource_singularizer(self, resource: str) -> str:
        singulars = {e.singular for e in self._matches(GroupResource("", resource))}
        if not singulars:
            raise UnknownResourceError(f"no singular of resource {resource} has been defined")
        if len(singulars) > 1:
            raise UnknownResourceError(f"multiple possible singular resources found for {resource}")
        return singulars.pop()

    def is_namespaced(self, resource: GroupResource) -> bool:
        found = self._matches(resource)
        if len(found) != 1:
            raise UnknownResourceError(f"no unique match for {resource}")
        return found[0].namespaced


class DiscoveryRESTMapper(StaticRESTMapper):
    """``restmapper.NewDiscoveryRESTMapper``: entries from discovery ``APIResourceList``s, in
    priority order (``PriorityRESTMapper``: core ``v1`` first, then each group's preferred
    version, in discovery order).

    Build it with :meth:`from_resource_lists`; an empty one knows nothing (every lookup misses).
    """

    @classmethod
    def from_resource_lists(
        cls, resource_lists: Iterable[tuple[str, Iterable[Mapping[str, object]]]]
    ) -> DiscoveryRESTMapper:
        """Entries from ``(groupVersion, APIResourceList.resources)`` pairs, highest priority
        first. Subresources (names with ``/``) are left out; a missing ``singularName`` is
        guessed from the kind (``UnsafeGuessKindToResource``), as client-go does."""
        entries: list[ResourceEntry] = []
        seen: set[tuple[str, str]] = set()
        for group_version, resources in resource_lists:
            group, _, version = group_version.rpartition("/")
            for resource in resources:
                name = str(resource.get("name") or "")
                kind = str(resource.get("kind") or "")
                if not name or "/" in name or (group, name) in seen:
                    continue
                seen.add((group, name))
                singular = str(resource.get("singularName") or "") or guess_plural(kind)[1]
                entries.append(
                    ResourceEntry(
                        group,
                        name,
                        singular,
                        bool(resource.get("namespaced")),
                        version=version,
                        kind=kind,
                    )
                )
        return cls(entries)

    def resource_for(self, resource: GroupResource) -> GroupResource:
        """``PriorityRESTMapper.ResourceFor``: the highest-priority match."""
        found = self._matches(resource)
        if not found:
            raise UnknownResourceError(f"no matches for {resource}")
        return GroupResource(found[0].group, found[0].plural)

    def resource_singularizer(self, resource: str) -> str:
        """``MultiRESTMapper.ResourceSingularizer``: the first mapper that knows the plural."""
        for entry in self.entries:
            if entry.plural == resource.lower():
                return entry.singular
        raise UnknownResourceError(f"no singular of resource {resource} has been defined")

    def kind_for(self, resource: GroupResource) -> tuple[str, str]:
        """``KindFor``: (``group/version``, ``Kind``) of a group-resource (core reads ``/v1``,
        as custom-metrics-apiserver's ``ReferenceFor`` writes it)."""
        found = self._matches(resource)
        if not found:
            raise UnknownResourceError(f"no matches for {resource}")
        return f"{found[0].group}/{found[0].version}", found[0].kind


BUILTIN_KINDS: tuple[tuple[str, str, bool], ...] = (
    ("", "Pod", True),
    ("", "Service", True),
    ("", "Endpoints", True),
    ("", "ConfigMap", True),
    ("", "Secret", True),
    ("", "ServiceAccount", True),
    ("", "PersistentVolumeClaim", True),
    ("", "ReplicationController", True),
    ("", "Node", False),
    ("", "Namespace", False),
    ("", "PersistentVolume", False),
    ("apps", "Deployment", True),
    ("apps", "StatefulSet", True),
    ("apps", "DaemonSet", True),
    ("apps", "ReplicaSet", True),
    ("batch", "Job", True),
    ("batch", "CronJob", True),
    ("networking.k8s.io", "Ingress", True),
    ("autoscaling", "HorizontalPodAutoscaler", True),
    ("policy", "PodDisruptionBudget", True),
)
