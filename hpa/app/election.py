"""The Lease election a role runs when ``--leader-elect`` is on, from its settings.

Upstream counterpart: the ``--leader-elect*`` flags of kube-controller-manager and of the VPA's
``pkg/updater/main.go`` (``componentbaseoptions.BindLeaderElectionFlags``; identity
``hostname_<uuid>``).
"""

from __future__ import annotations

import socket
import uuid
from typing import Protocol

from hpa.kube.client import KubeClient
from hpa.kube.clock import Clock
from hpa.kube.leader import KubeLeaseStore, LeaderElectionSettings, LeaderElector

__all__ = ["LeaderElectFlags", "leader_elector"]


class LeaderElectFlags(Protocol):
    """The ``--leader-elect*`` fields of a role's settings."""

    @property
    def leader_elect(self) -> bool: ...

    @property
    def leader_elect_resource_namespace(self) -> str: ...

    @property
    def leader_elect_resource_name(self) -> str: ...

    @property
    def leader_elect_lease_duration_seconds(self) -> int: ...

    @property
    def leader_elect_renew_deadline_seconds(self) -> float: ...

    @property
    def leader_elect_retry_period_seconds(self) -> float: ...


def leader_elector(
    settings: LeaderElectFlags, client: KubeClient, *, identity: str | None, clock: Clock
) -> LeaderElector | None:
    """The elector, or None when ``--leader-elect`` is off."""
    if not settings.leader_elect:
        return None
    return LeaderElector(
        KubeLeaseStore(
            client, settings.leader_elect_resource_namespace, settings.leader_elect_resource_name
        ),
        LeaderElectionSettings(
            identity=identity or f"{socket.gethostname()}_{uuid.uuid4()}",
            lease_duration_seconds=settings.leader_elect_lease_duration_seconds,
            renew_deadline_seconds=settings.leader_elect_renew_deadline_seconds,
            retry_period_seconds=settings.leader_elect_retry_period_seconds,
        ),
        clock=clock,
    )
