"""The VPA recommender's writes: VPA status and ``VerticalPodAutoscalerCheckpoint`` objects.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/utils/vpa/api.go`` (``UpdateVpaStatusIfNeeded``: one patch of ``/status`` when the status
differs; ``CreateOrUpdateVpaCheckpoint``: replace the checkpoint's status, create it when it does
not exist) and the checkpoint lister and client of ``pkg/recommender/input/cluster_feeder.go``
(``InitFromCheckpoints``, ``GarbageCollectCheckpoints``).

Deliberate deviations: the status is sent as a JSON merge patch of ``{"status": ...}`` to the
``/status`` subresource (upstream sends a JSON patch ``add /status``: the same result);
checkpoints are listed when needed (at start and for garbage collection) instead of being kept
in an informer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpa.api.vpa import (
    VerticalPodAutoscalerCheckpoint,
    VerticalPodAutoscalerCheckpointSpec,
    checkpoint_status_from_core,
    checkpoint_status_to_core,
)
from hpa.core.vpa.aggregation import CheckpointStatus
from hpa.kube.client import KubeClient, NotFoundError

__all__ = ["CHECKPOINT_PATH", "VPA_PATH", "CheckpointObject", "VpaClient", "parse_checkpoint"]

GROUP_PREFIX = "/apis/autoscaling.k8s.io/v1"
VPA_PATH = f"{GROUP_PREFIX}/verticalpodautoscalers"
CHECKPOINT_PATH = f"{GROUP_PREFIX}/verticalpodautoscalercheckpoints"


@dataclass(frozen=True, slots=True)
class CheckpointObject:
    """A checkpoint as the recommender reads it (``status`` None when it cannot be read: a
    checkpoint of an older format or a hand-edited one; ``error`` says why)."""

    namespace: str
    name: str
    vpa_name: str
    container_name: str
    status: CheckpointStatus | None
    error: str = ""


def parse_checkpoint(data: Mapping[str, Any]) -> CheckpointObject:
    checkpoint = VerticalPodAutoscalerCheckpoint.from_dict(data)
    status: CheckpointStatus | None = None
    error = ""
    try:
        status = checkpoint_status_to_core(checkpoint.status)
    except ValueError as failure:
        error = str(failure)
    return CheckpointObject(
        namespace=checkpoint.metadata.namespace or "",
        name=checkpoint.metadata.name or "",
        vpa_name=checkpoint.spec.vpa_object_name,
        container_name=checkpoint.spec.container_name,
        status=status,
        error=error,
    )


def _namespaced(path: str, namespace: str) -> str:
    prefix, _, plural = path.rpartition("/")
    return f"{prefix}/namespaces/{namespace}/{plural}"


class VpaClient:
    """VPA status patches and checkpoint reads and writes through ``client``; ``namespace``
    limits the checkpoint list (``--vpa-object-namespace``; empty: all)."""

    def __init__(self, client: KubeClient, *, namespace: str = "") -> None:
        self._client = client
        self._namespace = namespace

    async def patch_vpa_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        path = f"{_namespaced(VPA_PATH, namespace)}/{name}/status"
        await self._client.patch(path, {"status": status})

    async def list_checkpoints(self) -> list[Mapping[str, Any]]:
        path = _namespaced(CHECKPOINT_PATH, self._namespace) if self._namespace else CHECKPOINT_PATH
        items: list[Mapping[str, Any]] = []
        params: dict[str, str] = {"limit": "500"}
        while True:
            page = await self._client.list(path, params=params)
            items.extend(page.get("items") or ())
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            params = {"limit": "500", "continue": str(token)}

    async def save_checkpoint(
        self,
        namespace: str,
        name: str,
        *,
        vpa_name: str,
        container_name: str,
        status: CheckpointStatus,
    ) -> None:
        """``CreateOrUpdateVpaCheckpoint``: a JSON patch ``replace /status`` (no resourceVersion
        needed: kube-apiserver refuses an unconditional PUT of a custom resource), and a create
        when the checkpoint does not exist."""
        body = VerticalPodAutoscalerCheckpoint(
            api_version="autoscaling.k8s.io/v1",
            kind="VerticalPodAutoscalerCheckpoint",
            spec=VerticalPodAutoscalerCheckpointSpec(
                vpa_object_name=vpa_name, container_name=container_name
            ),
            status=checkpoint_status_from_core(status),
        ).to_dict()
        body["metadata"] = {"name": name, "namespace": namespace}
        path = _namespaced(CHECKPOINT_PATH, namespace)
        replace = [{"op": "replace", "path": "/status", "value": body["status"]}]
        try:
            await self._client.patch(f"{path}/{name}", replace, patch_type="json")
        except NotFoundError:
            await self._client.post(path, body)

    async def delete_checkpoint(self, namespace: str, name: str) -> None:
        await self._client.delete(f"{_namespaced(CHECKPOINT_PATH, namespace)}/{name}")
