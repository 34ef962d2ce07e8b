"""The ``/scale`` subresource: discovery of the resource plural, read, and a precondition write.

Upstream counterparts: client-go ``scale`` (``ScalesGetter``, ``scaleClient.Get``/``Update``),
``restmapper.NewDeferredDiscoveryRESTMapper`` over a memory-cached discovery client (which the
HPA controller uses to map ``scaleTargetRef`` group/kind to a resource), and the HPA's
``scaleForResourceMappings`` and rescale in ``pkg/controller/podautoscaler/horizontal.go``.

Deliberate deviations:
- the mapping uses the exact ``apiVersion`` of ``scaleTargetRef`` (``/apis/<group>/<version>``
  discovery), not the group's preferred version; a kind missing from a cached discovery document
  triggers one re-discovery of that group/version (a CRD installed after start-up).
- ``update`` sends the Scale read earlier with its ``resourceVersion``: the server refuses it with
  409 if the target changed since. We then re-read and hand the caller a ``ScaleConflict`` with
  the fresh Scale; we never retry the write ourselves, so one decision never scales twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from hpa.kube.client import ApiStatus, ConflictError, KubeClient, NotFoundError
from hpa.kube.clock import Clock
from hpa.kube.fence import Fence, Unfenced
from hpa.kube.records import ScaleTargetRef

log = structlog.get_logger("hpa.kube.scale")


class NoScaleSubresourceError(NotFoundError):
    """The target's kind is unknown to discovery, or has no ``/scale`` subresource."""


@dataclass(frozen=True, slots=True)
class ResourceMapping:
    """``meta.RESTMapping``: where a kind lives and whether it has ``/scale``."""

    prefix: str  # "/api/v1" or "/apis/<group>/<version>"
    plural: str
    kind: str
    namespaced: bool
    has_scale: bool

    def object_path(self, namespace: str, name: str) -> str:
        if self.namespaced:
            return f"{self.prefix}/namespaces/{namespace}/{self.plural}/{name}"
        return f"{self.prefix}/{self.plural}/{name}"


def discovery_prefix(api_version: str) -> str:
    """``v1`` -> ``/api/v1``; ``apps/v1`` -> ``/apis/apps/v1``."""
    if "/" not in api_version:
        return f"/api/{api_version}"
    return f"/apis/{api_version}"


class ResourceMapper:
    """Kind -> resource via cached ``/apis/<group>/<version>`` discovery (a RESTMapper)."""

    def __init__(
        self, client: KubeClient, *, clock: Clock, min_refresh_seconds: float = 30.0
    ) -> None:
        self._client = client
        self._clock = clock
        self._min_refresh_seconds = min_refresh_seconds
        self._cache: dict[str, dict[str, ResourceMapping]] = {}
        self._fetched_at: dict[str, float] = {}
        self.discovery_count = 0

    async def _discover(self, prefix: str) -> dict[str, ResourceMapping]:
        self.discovery_count += 1
        document = await self._client.get(prefix)
        resources = document.get("resources") or []
        subresources = {str(r.get("name", "")) for r in resources if "/" in str(r.get("name", ""))}
        mappings: dict[str, ResourceMapping] = {}
        for resource in resources:
            name = str(resource.get("name", ""))
            if "/" in name:
                continue
            kind = str(resource.get("kind", ""))
            mappings[kind] = ResourceMapping(
                prefix=prefix,
                plural=name,
                kind=kind,
                namespaced=bool(resource.get("namespaced", True)),
                has_scale=f"{name}/scale" in subresources,
            )
        self._cache[prefix] = mappings
        self._fetched_at[prefix] = self._clock.monotonic()
        return mappings

    async def mapping_for(self, api_version: str, kind: str) -> ResourceMapping:
        """The mapping of ``kind`` in ``api_version``; raises ``NoScaleSubresourceError`` when
        discovery does not know it (after one refresh, at most every ``min_refresh_seconds``)."""
        prefix = discovery_prefix(api_version)
        mappings = self._cache.get(prefix)
        if mappings is None or (
            kind not in mappings
            and self._clock.monotonic() - self._fetched_at.get(prefix, 0.0)
            >= self._min_refresh_seconds
        ):
            try:
                mappings = await self._discover(prefix)
            except NotFoundError as error:
                raise NoScaleSubresourceError(
                    ApiStatus(
                        code=404, reason="NotFound", message=f"no API group version {api_version!r}"
                    )
                ) from error
        mapping = mappings.get(kind)
        if mapping is None:
            raise NoScaleSubresourceError(
                ApiStatus(
                    code=404,
                    reason="NotFound",
                    message=f"no matches for kind {kind!r} in version {api_version!r}",
                )
            )
        return mapping


@dataclass(frozen=True, slots=True)
class Scale:
    """``autoscaling/v1`` Scale: what the HPA reads and writes."""

    namespace: str
    name: str
    resource_version: str
    spec_replicas: int
    status_replicas: int
    selector: str  # status.selector, the string form; "" when the target has none
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The object as read (sent back on update); empty for scales kept in memory."""


def parse_scale(data: Mapping[str, Any]) -> Scale:
    metadata = data.get("metadata") or {}
    return Scale(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        resource_version=str(metadata.get("resourceVersion", "")),
        spec_replicas=int((data.get("spec") or {}).get("replicas") or 0),
        status_replicas=int((data.get("status") or {}).get("replicas") or 0),
        selector=str((data.get("status") or {}).get("selector") or ""),
        raw=dict(data),
    )


@dataclass(frozen=True, slots=True)
class ScaleUpdated:
    """The write went through; ``scale`` is the server's answer."""

    scale: Scale


@dataclass(frozen=True, slots=True)
class ScaleConflict:
    """The target changed since it was read (409); ``current`` is a fresh read. Not written."""

    current: Scale
    message: str


ScaleUpdateResult = ScaleUpdated | ScaleConflict


class ScaleClient:
    """Get and update ``/scale`` of any kind that has it (apps kinds, CRDs with ``/scale``)."""

    def __init__(
        self, client: KubeClient, mapper: ResourceMapper, *, fence: Fence | None = None
    ) -> None:
        self._client = client
        self._mapper = mapper
        self._fence = fence or Unfenced()

    async def _path(self, namespace: str, target: ScaleTargetRef) -> str:
        mapping = await self._mapper.mapping_for(target.api_version, target.kind)
        if not mapping.has_scale:
            raise NoScaleSubresourceError(
                ApiStatus(
                    code=404,
                    reason="NotFound",
                    message=f"{mapping.plural} has no scale subresource",
                )
            )
        return mapping.object_path(namespace, target.name) + "/scale"

    async def get(self, namespace: str, target: ScaleTargetRef) -> Scale:
        return parse_scale(await self._client.get(await self._path(namespace, target)))

    async def update(
        self, namespace: str, target: ScaleTargetRef, scale: Scale, *, replicas: int
    ) -> ScaleUpdateResult:
        """Set ``spec.replicas`` on the Scale read as ``scale`` (resourceVersion precondition).

        Raises ``NotLeaderError`` without writing when the fence refuses."""
        path = await self._path(namespace, target)
        body = dict(scale.raw)
        body.setdefault("apiVersion", "autoscaling/v1")
        body.setdefault("kind", "Scale")
        metadata = dict(body.get("metadata") or {})
        metadata["resourceVersion"] = scale.resource_version
        body["metadata"] = metadata
        body["spec"] = {**(body.get("spec") or {}), "replicas": replicas}
        self._fence.check()
        try:
            answer = await self._client.put(path, body)
        except ConflictError as error:
            current = parse_scale(await self._client.get(path))
            log.info(
                "scale_conflict",
                target=f"{namespace}/{target.name}",
                sent_resource_version=scale.resource_version,
                current_resource_version=current.resource_version,
            )
            return ScaleConflict(current=current, message=error.status.message)
        return ScaleUpdated(scale=parse_scale(answer))
