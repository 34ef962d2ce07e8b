"""Fakes behind the VPA recommender's ports: live container metrics, a history provider (that
answers, raises or hangs), and the recommender's API writes (recording every call, keeping
checkpoints as the API server would, in their ``v3`` JSON form).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hpa.api.vpa import (
    VerticalPodAutoscalerCheckpoint,
    VerticalPodAutoscalerCheckpointSpec,
    checkpoint_status_from_core,
)
from hpa.controllers.vertical.ports import (
    ContainerMetricsSnapshot,
    MetricsSourceError,
    PodHistory,
)
from hpa.core.vpa.aggregation import CheckpointStatus
from hpa.core.vpa.cluster import PodId
from hpa.kube.client import ApiStatus, TokenBucket, error_for_status


class FakeContainerMetrics:
    """``ContainerMetricsSource``: answers ``snapshots`` (or raises ``error``); counts calls."""

    def __init__(self) -> None:
        self.snapshots: list[ContainerMetricsSnapshot] = []
        self.error: str = ""
        self.calls = 0

    def set(
        self, pod: PodId, container: str, *, time_ns: int, cpu: int | None, memory: int | None
    ) -> None:
        usage = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
        self.snapshots = [s for s in self.snapshots if (s.pod_id, s.container) != (pod, container)]
        self.snapshots.append(
            ContainerMetricsSnapshot(pod, container, time_ns, 60_000_000_000, usage)
        )

    async def containers_metrics(self) -> Sequence[ContainerMetricsSnapshot]:
        self.calls += 1
        if self.error:
            raise MetricsSourceError(self.error)
        return list(self.snapshots)


class FakeHistoryProvider:
    """``HistoryProvider``: answers ``history``, raises ``error``, or (``hang``) waits until
    ``release`` is set."""

    def __init__(
        self,
        history: Mapping[PodId, PodHistory] | None = None,
        *,
        error: Exception | None = None,
        hang: bool = False,
    ) -> None:
        self.history = dict(history or {})
        self.error = error
        self.release = asyncio.Event()
        if not hang:
            self.release.set()
        self.calls = 0

    async def get_cluster_history(self) -> Mapping[PodId, PodHistory]:
        self.calls += 1
        await self.release.wait()
        if self.error is not None:
            raise self.error
        return self.history


@dataclass(frozen=True)
class StatusPatch:
    namespace: str
    name: str
    status: Mapping[str, Any]


class FakeRecommenderApi:
    """``RecommenderApi``: status patches recorded; checkpoints kept by (namespace, name) as
    the JSON objects the API server would hold. ``fail_status`` names VPAs whose status write is
    refused (500). With a ``limiter`` (the real client's ``TokenBucket``, on the test's clock)
    every call first waits for its token, as :class:`hpa.kube.client.KubeClient` does."""

    def __init__(self, *, limiter: TokenBucket | None = None) -> None:
        self.limiter = limiter
        self.patches: list[StatusPatch] = []
        self.checkpoints: dict[tuple[str, str], dict[str, Any]] = {}
        self.saves: list[tuple[str, str]] = []
        self.deletes: list[tuple[str, str]] = []
        self.fail_status: set[str] = set()

    async def _request(self) -> None:
        if self.limiter is not None:
            await self.limiter.acquire()

    async def patch_vpa_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        await self._request()
        if f"{namespace}/{name}" in self.fail_status:
            raise error_for_status(ApiStatus(code=500, reason="InternalError", message="boom"))
        self.patches.append(StatusPatch(namespace, name, status))

    async def list_checkpoints(self) -> list[Mapping[str, Any]]:
        await self._request()
        return [dict(c) for c in self.checkpoints.values()]

    async def save_checkpoint(
        self,
        namespace: str,
        name: str,
        *,
        vpa_name: str,
        container_name: str,
        status: CheckpointStatus,
    ) -> None:
        await self._request()
        body = VerticalPodAutoscalerCheckpoint(
            spec=VerticalPodAutoscalerCheckpointSpec(
                vpa_object_name=vpa_name, container_name=container_name
            ),
            status=checkpoint_status_from_core(status),
        ).to_dict()
        body["metadata"] = {"namespace": namespace, "name": name}
        self.checkpoints[(namespace, name)] = body
        self.saves.append((namespace, name))

    async def delete_checkpoint(self, namespace: str, name: str) -> None:
        await self._request()
        self.checkpoints.pop((namespace, name), None)
        self.deletes.append((namespace, name))

    def last_status(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        for patch in reversed(self.patches):
            if (patch.namespace, patch.name) == (namespace, name):
                return patch.status
        return None
