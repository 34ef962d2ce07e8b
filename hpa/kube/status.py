"""The HPA status writer: PUT ``/status`` only when the status changed meaningfully.

Upstream counterpart: ``updateStatusIfNeeded`` / ``updateStatus`` in
``pkg/controller/podautoscaler/horizontal.go``: skip the write when
``apiequality.Semantic.DeepEqual(oldStatus, newStatus)``, else ``UpdateStatus`` (a PUT of the
whole object to ``/status``, guarded by the object's resourceVersion).

Equality rule (``StatusEquality``), documented field by field:
- ``observedGeneration``, ``currentReplicas``, ``desiredReplicas`` compare exactly;
  ``lastScaleTime`` compares as a time (``2026-01-01T00:00:00Z`` equals ``...00.000000Z``).
- ``conditions`` compare exactly, in order: ``type``, ``status``, ``reason``, ``message`` and
  ``lastTransitionTime`` (the controller keeps ``lastTransitionTime`` unless the status flips).
- ``currentMetrics`` must have the same shape (metric types, names, selectors, target kinds);
  quantities compare by value (``Semantic`` compares ``resource.Quantity`` with ``Cmp``: ``1000m``
  equals ``1``). With ``metric_value_tolerance_ratio`` 0 (the default, upstream's rule) values
  compare exactly; with a ratio ``r > 0`` a metric value (``value``, ``averageValue``,
  ``averageUtilization``) counts as unchanged while ``|new - old| <= r * |old|``, so the stored
  status may lag the live metric by less than that ratio. Pick ``r`` below the HPA tolerance
  (``--horizontal-pod-autoscaler-tolerance``, 0.1) so a change that can move a decision is always
  written.
- any other field compares exactly.

Deliberate deviation: the object sent back is the informer's raw dict with ``status`` replaced,
so fields this program does not model survive (upstream's typed client would drop them); status
keys outside the ``autoscaling/v2`` schema that the old status had are carried over too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

import orjson
import structlog

from hpa.core.quantity import QuantityError, parse_quantity
from hpa.kube.client import ConflictError, KubeClient
from hpa.kube.clock import parse_time
from hpa.kube.fence import Fence, Unfenced
from hpa.kube.records import HpaRecord

log = structlog.get_logger("hpa.kube.status")

KNOWN_STATUS_FIELDS = frozenset(
    {
        "observedGeneration",
        "lastScaleTime",
        "currentReplicas",
        "desiredReplicas",
        "currentMetrics",
        "conditions",
    }
)
METRIC_VALUE_FIELDS = frozenset({"value", "averageValue", "averageUtilization"})


@dataclass(frozen=True, slots=True)
class StatusEquality:
    """``metric_value_tolerance_ratio``: relative lag allowed on metric values (0 = exact)."""

    metric_value_tolerance_ratio: float = 0.0


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if isinstance(value, str):
        try:
            return parse_quantity(value).amount
        except (QuantityError, TypeError):
            return None
    return None


def _metric_value_equal(old: Any, new: Any, *, ratio: float) -> bool:
    old_number, new_number = _number(old), _number(new)
    if old_number is None or new_number is None:
        return bool(old == new)
    if ratio <= 0:
        return old_number == new_number
    return abs(new_number - old_number) <= Decimal(str(ratio)) * abs(old_number)


def _metrics_equal(old: Any, new: Any, *, ratio: float, key: str | None = None) -> bool:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        if set(old) != set(new):
            return False
        return all(_metrics_equal(old[k], new[k], ratio=ratio, key=k) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(
            _metrics_equal(o, n, ratio=ratio) for o, n in zip(old, new, strict=True)
        )
    if key in METRIC_VALUE_FIELDS:
        return _metric_value_equal(old, new, ratio=ratio)
    return bool(old == new)


def status_equal(
    old: Mapping[str, Any], new: Mapping[str, Any], *, equality: StatusEquality | None = None
) -> bool:
    """Whether writing ``new`` over ``old`` would change nothing meaningful (see module doc)."""
    rule = equality or StatusEquality()
    for name in set(old) | set(new):
        old_value, new_value = old.get(name), new.get(name)
        if name == "lastScaleTime":
            if parse_time(old_value) != parse_time(new_value):
                return False
        elif name == "currentMetrics":
            if not _metrics_equal(
                old_value or [], new_value or [], ratio=rule.metric_value_tolerance_ratio
            ):
                return False
        elif name == "conditions":
            if not _conditions_equal(old_value or [], new_value or []):
                return False
        elif old_value != new_value:
            return False
    return True


def _conditions_equal(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> bool:
    if len(old) != len(new):
        return False
    for old_condition, new_condition in zip(old, new, strict=True):
        for name in set(old_condition) | set(new_condition):
            old_value, new_value = old_condition.get(name), new_condition.get(name)
            if name == "lastTransitionTime":
                if parse_time(old_value) != parse_time(new_value):
                    return False
            elif old_value != new_value:
                return False
    return True


class StatusWriteOutcome(StrEnum):
    WRITTEN = "written"
    UNCHANGED = "unchanged"
    CONFLICT = "conflict"  # the HPA changed since it was read; the next sync will retry


@dataclass(frozen=True, slots=True)
class StatusWriteResult:
    outcome: StatusWriteOutcome


def hpa_status_path(namespace: str, name: str) -> str:
    return f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{name}/status"


class StatusWriter:
    """Writes an HPA's status through ``/status`` when ``status_equal`` says it changed."""

    def __init__(
        self,
        client: KubeClient,
        *,
        equality: StatusEquality | None = None,
        fence: Fence | None = None,
    ) -> None:
        self._client = client
        self._equality = equality or StatusEquality()
        self._fence = fence or Unfenced()

    async def write(self, hpa: HpaRecord, status: Mapping[str, Any]) -> StatusWriteResult:
        """PUT the HPA (as read, unknown fields included) with ``status``; skip if unchanged.

        Raises ``NotLeaderError`` without writing when the fence refuses; other API errors
        (``ApiError``, ``TransportError``) propagate."""
        raw = hpa.raw
        old_status = raw.get("status")
        if not isinstance(old_status, dict):
            old_status = {}
        new_status = {k: v for k, v in old_status.items() if k not in KNOWN_STATUS_FIELDS}
        new_status.update(status)
        if status_equal(old_status, new_status, equality=self._equality):
            return StatusWriteResult(StatusWriteOutcome.UNCHANGED)
        body = raw
        body.setdefault("apiVersion", "autoscaling/v2")
        body.setdefault("kind", "HorizontalPodAutoscaler")
        body["status"] = new_status
        self._fence.check()
        try:
            # the answer (the object as written) is not read: the informer's watch brings it
            await self._client.request_bytes(
                "PUT",
                hpa_status_path(hpa.namespace, hpa.name),
                body=orjson.dumps(body),
                content_type="application/json",
            )
        except ConflictError as error:
            log.info(
                "hpa_status_conflict",
                hpa=f"{hpa.namespace}/{hpa.name}",
                message=error.status.message,
            )
            return StatusWriteResult(StatusWriteOutcome.CONFLICT)
        return StatusWriteResult(StatusWriteOutcome.WRITTEN)
