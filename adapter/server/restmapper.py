"""The REST mapper behind the rules and the described objects: API discovery, CRDs included.

Upstream counterparts: custom-metrics-apiserver ``pkg/dynamicmapper``
(``RegeneratingDiscoveryRESTMapper``: ``restmapper.GetAPIGroupResources`` then
``NewDiscoveryRESTMapper``, swapped in whole; no refresh on a miss, since every Prometheus label
is looked up and most name no resource), used by prometheus-adapter for ``NamersFromConfig``,
the series registry, ``ReferenceFor`` (the ``describedObject``) and ``ListObjectNames`` (the
LIST behind ``*`` with a ``labelSelector``).

Deliberate deviations (docs/adapter-rules.md, "Custom resources"):
- prometheus-adapter v0.12.0 populates the mapper once at start: its ``--discovery-interval``
  flag is declared but ``RunUntil`` is never called, so a CRD installed later is unknown until a
  restart. Here discovery is regenerated every ``--discovery-interval`` (default 10m) and before
  every rule-file (re)load, so a rule file that names a CRD loads once the CRD exists, and
  metrics of a CRD installed later appear at the first relist after the next regeneration.
- a group-version whose discovery fails (an aggregated API that is down) is left out and logged,
  as ``GetAPIGroupResources`` does with partial results; when the whole discovery fails the
  previous mapping stays (the first one is empty).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from adapter.providers import MetricFetchError
from adapter.rules import DiscoveryRESTMapper, GroupResource, UnknownResourceError
from adapter.server.ports import Clock, KubeApi

log = structlog.get_logger(__name__)

DEFAULT_DISCOVERY_INTERVAL_SECONDS = 600.0
"""``--discovery-interval`` (custom-metrics-apiserver's default, 10m)."""


def group_versions(core: Mapping[str, Any], groups: Mapping[str, Any]) -> list[str]:
    """The group-versions to read, in ``NewDiscoveryRESTMapper``'s priority order: the core
    versions (``v1`` first), then each group of ``/apis`` in order, its preferred version first."""
    out = [str(version) for version in core.get("versions") or ()]
    if "v1" in out:
        out.remove("v1")
        out.insert(0, "v1")
    for group in groups.get("groups") or ():
        name = str(group.get("name") or "")
        preferred = str((group.get("preferredVersion") or {}).get("groupVersion") or "")
        versions = [str(v.get("groupVersion") or "") for v in group.get("versions") or ()]
        if preferred in versions:
            versions.remove(preferred)
            versions.insert(0, preferred)
        out.extend(v for v in versions if v and v.startswith(f"{name}/"))
    return out


def discovery_path(group_version: str) -> str:
    """``v1`` -> ``/api/v1``; ``apps/v1`` -> ``/apis/apps/v1``."""
    return f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"


class RegeneratingRESTMapper:
    """``RegeneratingDiscoveryRESTMapper``: the rules' ``RESTMapper`` and the providers'
    ``KindMapper`` over the current discovery snapshot, which ``regenerate`` replaces whole."""

    def __init__(
        self,
        api: KubeApi,
        *,
        clock: Clock,
        interval_seconds: float = DEFAULT_DISCOVERY_INTERVAL_SECONDS,
    ) -> None:
        self._api = api
        self._clock = clock
        self.interval_seconds = interval_seconds
        self._delegate = DiscoveryRESTMapper(())
        self.generations = 0

    @property
    def snapshot(self) -> DiscoveryRESTMapper:
        return self._delegate

    async def _resources(self, group_version: str) -> Sequence[Mapping[str, Any]] | None:
        try:
            document = await self._api.get(discovery_path(group_version))
        except Exception as error:  # noqa: BLE001 - one failing group-version is left out
            log.warning("discovery_failed", group_version=group_version, error=str(error))
            return None
        return list(document.get("resources") or ())

    async def regenerate(self) -> None:
        """Read discovery and swap in a new mapping; a failure keeps the current one (and is
        raised)."""
        core, groups = await asyncio.gather(self._api.get("/api"), self._api.get("/apis"))
        versions = group_versions(core, groups)
        found = await asyncio.gather(*(self._resources(gv) for gv in versions))
        self._delegate = DiscoveryRESTMapper.from_resource_lists(
            (gv, resources)
            for gv, resources in zip(versions, found, strict=True)
            if resources is not None
        )
        self.generations += 1
        log.debug("discovery_regenerated", resources=len(self._delegate.entries))

    async def run(self) -> None:
        """Regenerate every ``interval_seconds`` until cancelled (``wait.Until``)."""
        while True:
            await self._clock.sleep(self.interval_seconds)
            try:
                await self.regenerate()
            except Exception as error:  # noqa: BLE001 - logged, retried at the next tick
                log.error("discovery_regenerate_failed", error=str(error))

    def resource_for(self, resource: GroupResource) -> GroupResource:
        return self._delegate.resource_for(resource)

    def resource_singularizer(self, resource: str) -> str:
        return self._delegate.resource_singularizer(resource)

    def kind_for(self, resource: GroupResource) -> tuple[str, str]:
        """``KindFor``; a resource discovery does not know is a ``MetricFetchError`` (500, as
        upstream's ``ReferenceFor`` error)."""
        try:
            return self._delegate.kind_for(resource)
        except UnknownResourceError as error:
            raise MetricFetchError(detail=str(error)) from None
