"""``coordination.k8s.io/v1`` Lease: leader election.

Upstream counterpart: ``k8s.io/api/coordination/v1/types.go`` (``Lease``, ``LeaseSpec``). The
times are ``metav1.MicroTime`` (six fractional digits on the wire).

Deliberate deviations: none.
"""

from __future__ import annotations

from pydantic import Field

from hpa.api.base import KubeModel
from hpa.api.meta import ListMeta, ObjectMeta, TypeMeta
from hpa.api.types import MicroTime

__all__ = ["Lease", "LeaseList", "LeaseSpec"]


class LeaseSpec(KubeModel):
    """``LeaseSpec``."""

    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: MicroTime | None = None
    renew_time: MicroTime | None = None
    lease_transitions: int | None = None
    strategy: str | None = None
    preferred_holder: str | None = None


class Lease(TypeMeta):
    """``coordination.k8s.io/v1`` ``Lease``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: LeaseSpec = Field(default_factory=LeaseSpec)


class LeaseList(TypeMeta):
    """``LeaseList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Lease] = Field(default_factory=list)
