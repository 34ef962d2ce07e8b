"""The webhook's ``VpaMatcher`` over the informers: the pod's top-most controller, the VPAs that
target it, their selectors, the namespace's LimitRanges and the HPAs of the same workload.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/admission-controller/resource/vpa/matcher.go`` (``GetMatchingVPA``) with the
``limitrange.LimitRangeCalculator`` the recommendation provider reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import structlog

from hpa.core.spec import CrossVersionObjectReference
from hpa.core.vpa.awareness import HorizontalScaler, horizontal_conflicts
from hpa.core.vpa.limitrange import merge_limit_range_items
from hpa.core.vpa.matching import UpdateMode, VpaTarget, get_update_mode, matching_vpa
from hpa.kube.targets import TargetError, TargetResolver
from hpa.kube.vpa_records import LimitRangeRecord, VpaRecord
from hpa.webhook.handler import MatchedVpa
from hpa.webhook.review import AdmissionPod

log = structlog.get_logger("hpa.webhook")


class InformerVpaMatcher:
    def __init__(
        self,
        *,
        vpas: Callable[[str], Iterable[VpaRecord]],
        limit_ranges: Callable[[str], Iterable[LimitRangeRecord]],
        hpas: Callable[[str], Sequence[HorizontalScaler]],
        resolver: TargetResolver,
    ) -> None:
        self._vpas = vpas
        self._limit_ranges = limit_ranges
        self._hpas = hpas
        self._resolver = resolver

    async def _targets(self, records: Iterable[VpaRecord]) -> list[tuple[VpaTarget, VpaRecord]]:
        out = []
        for record in records:
            if record.target is None:
                continue
            try:
                selector = await self._resolver.selector(record.target)
            except TargetError as error:
                log.info(
                    "vpa_selector_unavailable",
                    vpa=f"{record.namespace}/{record.name}",
                    error=str(error),
                )
                selector = None
            target = record.matching_target(record.target, selector)
            out.append((target, record))
        return out

    async def match(self, pod: AdmissionPod) -> MatchedVpa | None:
        parent = await self._resolver.parent_controller_for_pod(
            pod.namespace, list(pod.owner_references)
        )
        if parent is None:
            return None
        candidates = [
            r
            for r in self._vpas(pod.namespace)
            if r.target is not None and r.target.index_key() == parent.index_key()
        ]
        pairs = await self._targets(candidates)
        chosen = matching_vpa(pod.namespace, pod.labels, parent, [t for t, _ in pairs])
        if chosen is None:
            return None
        record = next(r for t, r in pairs if t is chosen)
        entries = sorted(self._limit_ranges(pod.namespace), key=lambda r: r.name)
        all_entries = [e for r in entries for e in r.entries]
        ref = chosen.target
        conflicts = horizontal_conflicts(
            pod.namespace,
            CrossVersionObjectReference(kind=ref.kind, name=ref.name, api_version=ref.api_version),
            self._hpas(pod.namespace),
        )
        return MatchedVpa(
            name=record.name,
            update_mode_off=get_update_mode(record.update_mode) == UpdateMode.OFF,
            recommendation=record.recommendation,
            policy=record.policy,
            container_limit_range=merge_limit_range_items(all_entries, "Container"),
            pod_limit_range=merge_limit_range_items(all_entries, "Pod"),
            conflicts=conflicts,
        )
