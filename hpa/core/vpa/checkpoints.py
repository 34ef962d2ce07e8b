"""What the recommender writes to and reads from ``VerticalPodAutoscalerCheckpoint`` objects.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/checkpoint/checkpoint_writer.go`` (``getVpasToCheckpoint``: VPAs that are not
fetching history, the least recently checkpointed first; ``buildAggregateContainerStateMap``: the
VPA's aggregates by container name with the checkpointed states merged in, less the memory peak of
each container's ongoing interval, so a restore does not count that interval twice; one checkpoint
``<vpa>-<container>`` per container) and ``pkg/recommender/input/cluster_feeder.go``
(``setVpaCheckpoint``: a checkpoint becomes the VPA's initial aggregate state for its container;
``GarbageCollectCheckpoints``: the checkpoints of deleted VPAs are deleted).

Extension: a checkpoint of a container that no aggregate of its VPA holds any more and whose last
sample is older than the memory aggregation window (8 days) is deleted too: it can no longer
contribute to a recommendation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hpa.core.vpa.aggregation import AggregateContainerState, CheckpointStatus
from hpa.core.vpa.cluster import FETCHING_HISTORY, ClusterState, VpaId, VpaState
from hpa.core.vpa.gomath import sub_ns

__all__ = [
    "CheckpointRef",
    "checkpoint_name",
    "checkpoint_states",
    "load_checkpoint",
    "orphaned_checkpoints",
    "vpas_to_checkpoint",
]


def checkpoint_name(vpa_name: str, container_name: str) -> str:
    return f"{vpa_name}-{container_name}"


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """A checkpoint object as garbage collection sees it."""

    namespace: str
    name: str
    vpa_name: str
    container_name: str
    last_sample_start_ns: int


def vpas_to_checkpoint(cluster: ClusterState) -> list[VpaState]:
    """``getVpasToCheckpoint``."""
    vpas = [v for v in cluster.vpas.values() if not v.condition_active(FETCHING_HISTORY)]
    return sorted(vpas, key=lambda v: v.checkpoint_written_ns)


def checkpoint_states(
    cluster: ClusterState, vpa: VpaState, *, now_ns: int
) -> dict[str, CheckpointStatus]:
    """``buildAggregateContainerStateMap`` and ``SaveToCheckpoint`` for each container."""
    states = vpa.aggregate_state_by_container_name(cluster.config)
    label_sets = {(key.namespace, key.label_set_key) for key in vpa.aggregate_container_states}
    pods = [pod for ls in sorted(label_sets) for pod in cluster.pods_with_label_set(*ls)]
    for pod in pods:
        for container_name, container in pod.containers.items():
            key = cluster.make_aggregate_state_key(pod, container_name)
            state = states.get(container_name)
            if (
                key in vpa.aggregate_container_states
                and state is not None
                and now_ns < container.window_end_ns
            ):
                state.aggregate_memory_peaks.subtract_sample(
                    float(container.get_max_memory_peak()), 1.0, container.window_end_ns
                )
    return {name: state.save_to_checkpoint(now_ns) for name, state in states.items()}


def load_checkpoint(
    cluster: ClusterState, vpa_id: VpaId, container_name: str, status: CheckpointStatus
) -> None:
    """``setVpaCheckpoint``; raises ``ValueError`` naming the VPA when it cannot be loaded."""
    vpa = cluster.vpas.get(vpa_id)
    if vpa is None:
        raise ValueError(
            f"cannot load checkpoint to missing VPA object {vpa_id.namespace}/{vpa_id.vpa_name}"
        )
    state = AggregateContainerState(cluster.config)
    try:
        state.load_from_checkpoint(status)
    except ValueError as error:
        raise ValueError(
            f"cannot load checkpoint for VPA {vpa_id.namespace}/{vpa_id.vpa_name}. Reason: {error}"
        ) from None
    vpa.containers_initial_aggregate_state[container_name] = state


def orphaned_checkpoints(
    checkpoints: Iterable[CheckpointRef],
    cluster: ClusterState,
    *,
    existing_vpas: Iterable[VpaId],
    now_ns: int,
) -> list[CheckpointRef]:
    """``GarbageCollectCheckpoints``: the checkpoints to delete."""
    alive = set(existing_vpas)
    window_ns = cluster.config.memory_aggregation_window_length_ns
    out = []
    for checkpoint in checkpoints:
        vpa_id = VpaId(checkpoint.namespace, checkpoint.vpa_name)
        if vpa_id not in alive:
            out.append(checkpoint)
            continue
        vpa = cluster.vpas.get(vpa_id)
        if vpa is None:
            continue
        in_use = any(
            key.container_name == checkpoint.container_name
            for key in vpa.aggregate_container_states
        )
        stale = sub_ns(now_ns, checkpoint.last_sample_start_ns) >= window_ns
        if not in_use and stale:
            out.append(checkpoint)
    return out
