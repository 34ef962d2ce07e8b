"""Fakes of the write side of an HPA reconcile: ``/scale`` and the HPA objects with ``/status``.

``FakeScaleClient`` keeps one Scale per target with a resourceVersion, answers a stale update with
a ``ScaleConflict`` carrying a fresh read (as ``hpa.kube.scale`` does), can be told to fail reads
or writes, and can simulate a concurrent writer that changes the Scale right after the controller
read it. ``FakeHorizontalPodAutoscalers`` is the HPA cache (lister) and the status writer in one,
like the API server: a written status lands in the cached object with a new resourceVersion.
Both record every call.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from hpa.controllers.ports import (
    HorizontalPodAutoscalerObject,
)
from hpa.core.decision import HorizontalPodAutoscalerStatus
from hpa.core.spec import CrossVersionObjectReference
from hpa.kube.scale import Scale, ScaleConflict, ScaleUpdated, ScaleUpdateResult
from hpa.kube.status import StatusWriteOutcome

TargetKey = tuple[str, str, str]  # namespace, kind, name

CONFLICT_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleWrite:
    """One ``update_scale`` call: what was sent and whether it went through."""

    target: TargetKey
    replicas: int
    resource_version: str
    accepted: bool


class FakeScaleClient:
    """Scales by (namespace, kind, name)."""

    def __init__(self) -> None:
        self.scales: dict[TargetKey, Scale] = {}
        self.get_errors: dict[TargetKey, Exception] = {}
        self.update_errors: dict[TargetKey, Exception] = {}
        self.concurrent_writes: dict[TargetKey, list[int]] = {}
        """Replica counts another writer sets, one right after each of our next reads."""
        self.gets: list[TargetKey] = []
        self.writes: list[ScaleWrite] = []
        self._versions = itertools.count(100)

    @staticmethod
    def key(namespace: str, target: CrossVersionObjectReference) -> TargetKey:
        return (namespace, target.kind, target.name)

    def set_scale(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        *,
        replicas: int,
        selector: str,
        status_replicas: int | None = None,
    ) -> None:
        self.scales[self.key(namespace, target)] = Scale(
            namespace=namespace,
            name=target.name,
            spec_replicas=replicas,
            status_replicas=replicas if status_replicas is None else status_replicas,
            selector=selector,
            resource_version=str(next(self._versions)),
        )

    def replicas(self, namespace: str, target: CrossVersionObjectReference) -> int:
        return self.scales[self.key(namespace, target)].spec_replicas

    def accepted_writes(self) -> list[ScaleWrite]:
        return [write for write in self.writes if write.accepted]

    def _bump(self, key: TargetKey, replicas: int) -> Scale:
        updated = replace(
            self.scales[key], spec_replicas=replicas, resource_version=str(next(self._versions))
        )
        self.scales[key] = updated
        return updated

    async def get_scale(self, namespace: str, target: CrossVersionObjectReference) -> Scale:
        key = self.key(namespace, target)
        self.gets.append(key)
        if key in self.get_errors:
            raise self.get_errors[key]
        if key not in self.scales:
            raise LookupError(f'{target.kind.lower()}s "{target.name}" not found')
        snapshot = self.scales[key]
        pending = self.concurrent_writes.get(key)
        if pending:
            self._bump(key, pending.pop(0))
        return snapshot

    async def update_scale(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        *,
        scale: Scale,
        replicas: int,
    ) -> ScaleUpdateResult:
        key = self.key(namespace, target)
        if key in self.update_errors:
            self.writes.append(
                ScaleWrite(
                    target=key,
                    replicas=replicas,
                    resource_version=scale.resource_version,
                    accepted=False,
                )
            )
            raise self.update_errors[key]
        current = self.scales[key]
        if current.resource_version != scale.resource_version:
            self.writes.append(
                ScaleWrite(
                    target=key,
                    replicas=replicas,
                    resource_version=scale.resource_version,
                    accepted=False,
                )
            )
            fresh = current
            pending = self.concurrent_writes.get(key)
            if pending:  # the other writer strikes again between our re-read and re-write
                self._bump(key, pending.pop(0))
            return ScaleConflict(current=fresh, message=CONFLICT_MESSAGE)
        self.writes.append(
            ScaleWrite(
                target=key,
                replicas=replicas,
                resource_version=scale.resource_version,
                accepted=True,
            )
        )
        return ScaleUpdated(self._bump(key, replicas))


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusWrite:
    key: str
    status: HorizontalPodAutoscalerStatus
    observed_generation: int | None
    outcome: StatusWriteOutcome | None  # None: the write raised


class FakeHorizontalPodAutoscalers:
    """The HPA informer cache and ``UpdateStatus`` in one."""

    def __init__(self) -> None:
        self.objects: dict[str, HorizontalPodAutoscalerObject] = {}
        self.status_errors: dict[str, Exception] = {}
        self.status_writes: list[StatusWrite] = []
        self._versions = itertools.count(1)

    def put(self, hpa: HorizontalPodAutoscalerObject) -> HorizontalPodAutoscalerObject:
        stored = replace(hpa, resource_version=str(next(self._versions)))
        self.objects[hpa.key] = stored
        return stored

    def delete(self, key: str) -> None:
        self.objects.pop(key, None)

    def get(self, namespace: str, name: str) -> HorizontalPodAutoscalerObject | None:
        return self.objects.get(f"{namespace}/{name}")

    def writes_for(self, key: str) -> list[StatusWrite]:
        return [write for write in self.status_writes if write.key == key]

    async def update_status(
        self,
        hpa: HorizontalPodAutoscalerObject,
        status: HorizontalPodAutoscalerStatus,
        *,
        observed_generation: int | None = None,
    ) -> StatusWriteOutcome:
        if hpa.key in self.status_errors:
            self.status_writes.append(
                StatusWrite(
                    key=hpa.key,
                    status=status,
                    observed_generation=observed_generation,
                    outcome=None,
                )
            )
            raise self.status_errors[hpa.key]
        stored = self.objects.get(hpa.key)
        if stored is None or stored.resource_version != hpa.resource_version:
            outcome = StatusWriteOutcome.CONFLICT
        else:
            self.objects[hpa.key] = replace(
                stored,
                status=status,
                observed_generation=observed_generation,
                resource_version=str(next(self._versions)),
            )
            outcome = StatusWriteOutcome.WRITTEN
        self.status_writes.append(
            StatusWrite(
                key=hpa.key,
                status=status,
                observed_generation=observed_generation,
                outcome=outcome,
            )
        )
        return outcome
