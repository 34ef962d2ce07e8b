"""``policy/v1`` Eviction and PodDisruptionBudget.

Upstream counterpart: ``k8s.io/api/policy/v1/types.go``. The VPA updater evicts through the
``pods/eviction`` subresource and reads disruption budgets.

Deliberate deviations: ``Eviction.deleteOptions`` is kept as an opaque dict.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hpa.api.base import KubeModel
from hpa.api.meta import Condition, LabelSelector, ListMeta, ObjectMeta, TypeMeta
from hpa.api.types import IntOrString, Time

__all__ = [
    "Eviction",
    "PodDisruptionBudget",
    "PodDisruptionBudgetList",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
]


class Eviction(TypeMeta):
    """``policy/v1`` ``Eviction``: POSTed to ``pods/<name>/eviction``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    delete_options: dict[str, Any] | None = None


class PodDisruptionBudgetSpec(KubeModel):
    """``PodDisruptionBudgetSpec``."""

    min_available: IntOrString | None = None
    selector: LabelSelector | None = None
    max_unavailable: IntOrString | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(KubeModel):
    """``PodDisruptionBudgetStatus``."""

    observed_generation: int = 0
    disrupted_pods: dict[str, Time] = Field(default_factory=dict)
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    conditions: list[Condition] = Field(default_factory=list)


class PodDisruptionBudget(TypeMeta):
    """``policy/v1`` ``PodDisruptionBudget``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)


class PodDisruptionBudgetList(TypeMeta):
    """``PodDisruptionBudgetList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[PodDisruptionBudget] = Field(default_factory=list)
