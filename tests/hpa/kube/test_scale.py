"""The /scale subresource through discovery, with resourceVersion preconditions."""

from __future__ import annotations

import aiohttp
import pytest

from hpa.kube.client import KubeClient
from hpa.kube.fence import NotLeaderError
from hpa.kube.records import ScaleTargetRef
from hpa.kube.scale import (
    NoScaleSubresourceError,
    ResourceMapper,
    ScaleClient,
    ScaleConflict,
    ScaleUpdated,
)
from tests.fakes.apiserver import FakeApiServer, ResourceInfo
from tests.fakes.clock import FakeClock

WEB = ScaleTargetRef(api_version="apps/v1", kind="Deployment", name="web")


def deployment(replicas: int) -> dict[str, object]:
    return {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": replicas},
    }


class ClosedFence:
    def check(self) -> None:
        raise NotLeaderError("lost the lease")


async def test_get_reads_replicas_and_selector(apiserver: FakeApiServer, kube: KubeClient) -> None:
    apiserver.put_object("/apis/apps/v1", "deployments", deployment(3))
    scales = ScaleClient(kube, ResourceMapper(kube, clock=FakeClock()))
    scale = await scales.get("default", WEB)
    assert (scale.spec_replicas, scale.status_replicas, scale.selector) == (3, 3, "app=web")
    assert scale.resource_version == "101"


async def test_update_with_a_current_resource_version_scales(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.put_object("/apis/apps/v1", "deployments", deployment(3))
    scales = ScaleClient(kube, ResourceMapper(kube, clock=FakeClock()))
    scale = await scales.get("default", WEB)
    result = await scales.update("default", WEB, scale, replicas=5)
    assert isinstance(result, ScaleUpdated)
    assert result.scale.spec_replicas == 5
    stored = apiserver.get_object("/apis/apps/v1", "deployments", "default", "web")
    assert stored is not None
    assert stored["spec"]["replicas"] == 5
    put = apiserver.requests_to("PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale")
    assert put[0].body["metadata"]["resourceVersion"] == "101"


async def test_a_stale_scale_is_a_conflict_and_is_never_written_twice(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.put_object("/apis/apps/v1", "deployments", deployment(3))
    scales = ScaleClient(kube, ResourceMapper(kube, clock=FakeClock()))
    stale = await scales.get("default", WEB)
    apiserver.put_object("/apis/apps/v1", "deployments", deployment(4))  # someone else scaled
    result = await scales.update("default", WEB, stale, replicas=9)
    assert isinstance(result, ScaleConflict)
    assert result.current.spec_replicas == 4
    assert result.current.resource_version == "102"
    stored = apiserver.get_object("/apis/apps/v1", "deployments", "default", "web")
    assert stored is not None
    assert stored["spec"]["replicas"] == 4
    path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    assert len(apiserver.requests_to("PUT", path)) == 1


async def test_a_crd_with_a_scale_subresource_is_found_through_discovery() -> None:
    server = FakeApiServer(
        resources=(
            ResourceInfo(
                prefix="/apis/example.com/v1",
                plural="widgets",
                kind="Widget",
                subresources=("scale",),
            ),
            ResourceInfo(prefix="/apis/example.com/v1", plural="gadgets", kind="Gadget"),
        )
    )
    await server.start()
    client = KubeClient(aiohttp.ClientSession(), server.url, clock=FakeClock(auto_advance=True))
    try:
        server.put_object(
            "/apis/example.com/v1",
            "widgets",
            {"metadata": {"name": "w", "namespace": "ns"}, "spec": {"replicas": 2}},
        )
        mapper = ResourceMapper(client, clock=FakeClock())
        scales = ScaleClient(client, mapper)
        widget = ScaleTargetRef(api_version="example.com/v1", kind="Widget", name="w")
        scale = await scales.get("ns", widget)
        assert scale.spec_replicas == 2
        assert isinstance(await scales.update("ns", widget, scale, replicas=6), ScaleUpdated)
        await scales.get("ns", widget)
        assert mapper.discovery_count == 1, "discovery is cached"
        with pytest.raises(NoScaleSubresourceError):
            await scales.get(
                "ns", ScaleTargetRef(api_version="example.com/v1", kind="Gadget", name="g")
            )
        with pytest.raises(NoScaleSubresourceError):
            await scales.get(
                "ns", ScaleTargetRef(api_version="example.com/v1", kind="Missing", name="m")
            )
        with pytest.raises(NoScaleSubresourceError):
            await scales.get(
                "ns", ScaleTargetRef(api_version="nowhere.io/v1", kind="Thing", name="t")
            )
    finally:
        await client.close()
        await server.close()


async def test_a_kind_installed_later_is_found_after_a_refresh(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    clock = FakeClock()
    mapper = ResourceMapper(kube, clock=clock, min_refresh_seconds=30)
    with pytest.raises(NoScaleSubresourceError):
        await mapper.mapping_for("apps/v1", "Rollout")
    apiserver.resources[("/apis/apps/v1", "rollouts")] = ResourceInfo(
        prefix="/apis/apps/v1", plural="rollouts", kind="Rollout", subresources=("scale",)
    )
    with pytest.raises(NoScaleSubresourceError):
        await mapper.mapping_for("apps/v1", "Rollout")  # within the refresh interval: cached
    await clock.advance(30)
    mapping = await mapper.mapping_for("apps/v1", "Rollout")
    assert (mapping.plural, mapping.has_scale) == ("rollouts", True)


async def test_a_fenced_writer_does_not_scale(apiserver: FakeApiServer, kube: KubeClient) -> None:
    apiserver.put_object("/apis/apps/v1", "deployments", deployment(3))
    scales = ScaleClient(kube, ResourceMapper(kube, clock=FakeClock()), fence=ClosedFence())
    scale = await scales.get("default", WEB)
    with pytest.raises(NotLeaderError):
        await scales.update("default", WEB, scale, replicas=5)
    assert (
        apiserver.requests_to("PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale") == []
    )
