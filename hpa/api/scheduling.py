"""``scheduling.k8s.io/v1`` PriorityClass.

Upstream counterpart: ``k8s.io/api/scheduling/v1/types.go``. The VPA updater orders evictions by
pod priority, which a pod carries itself (``spec.priority``); the class is read when a pod names
a ``priorityClassName`` but its priority is not yet resolved.

Deliberate deviations: none.
"""

from __future__ import annotations

from pydantic import Field

from hpa.api.meta import ListMeta, ObjectMeta, TypeMeta

__all__ = ["PriorityClass", "PriorityClassList"]


class PriorityClass(TypeMeta):
    """``scheduling.k8s.io/v1`` ``PriorityClass``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    description: str = ""
    preemption_policy: str | None = None


class PriorityClassList(TypeMeta):
    """``PriorityClassList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[PriorityClass] = Field(default_factory=list)
