"""The VPA recommender's checkpoint writes against the protocol-level fake API server, which,
like kube-apiserver, refuses a PUT of a custom resource without ``metadata.resourceVersion``."""

from __future__ import annotations

import pytest

from hpa.core.vpa.aggregation import SUPPORTED_CHECKPOINT_VERSION, CheckpointStatus
from hpa.core.vpa.histogram import HistogramCheckpoint
from hpa.kube.client import ApiError
from hpa.kube.vpa_client import GROUP_PREFIX, VpaClient, parse_checkpoint
from tests.fakes.apiserver import DEFAULT_RESOURCES, ResourceInfo, running

CHECKPOINTS = ResourceInfo(
    prefix=GROUP_PREFIX,
    plural="verticalpodautoscalercheckpoints",
    kind="VerticalPodAutoscalerCheckpoint",
    unconditional_update=False,
)
NS_PER_SECOND = 10**9


def status(samples: int) -> CheckpointStatus:
    return CheckpointStatus(
        version=SUPPORTED_CHECKPOINT_VERSION,
        last_update_time_ns=1_700_000_000 * NS_PER_SECOND,
        first_sample_start_ns=1_699_999_000 * NS_PER_SECOND,
        last_sample_start_ns=1_700_000_000 * NS_PER_SECOND,
        total_samples_count=samples,
        cpu_histogram=HistogramCheckpoint(total_weight=1.0, bucket_weights={3: 10000}),
        memory_histogram=HistogramCheckpoint(),
    )


async def test_a_checkpoint_is_created_then_its_status_replaced_without_a_resource_version() -> (
    None
):
    async with running((*DEFAULT_RESOURCES, CHECKPOINTS)) as (server, kube):
        client = VpaClient(kube)
        for samples in (1, 2):
            await client.save_checkpoint(
                "ns", "web-app", vpa_name="web", container_name="app", status=status(samples)
            )
        listed = await client.list_checkpoints()
        methods = [r.method for r in server.requests if "checkpoints" in r.path]
    assert methods == ["PATCH", "POST", "PATCH", "GET"]
    assert len(listed) == 1
    got = parse_checkpoint(listed[0])
    assert (got.namespace, got.name, got.vpa_name, got.container_name) == (
        "ns",
        "web-app",
        "web",
        "app",
    )
    assert got.status == status(2)


async def test_the_fake_refuses_an_unconditional_put_of_a_custom_resource() -> None:
    async with running((*DEFAULT_RESOURCES, CHECKPOINTS)) as (_, kube):
        client = VpaClient(kube)
        await client.save_checkpoint(
            "ns", "web-app", vpa_name="web", container_name="app", status=status(1)
        )
        path = f"{GROUP_PREFIX}/namespaces/ns/verticalpodautoscalercheckpoints/web-app"
        current = await kube.get(path)
        current["metadata"].pop("resourceVersion")
        with pytest.raises(ApiError, match=r"422 Invalid: .*resourceVersion.*must be specified"):
            await kube.put(path, current)
