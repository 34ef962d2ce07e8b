"""The write fence: every writer asks it before writing, so a leader that lost its Lease stops.

Upstream counterpart: none as such; client-go's leader election only stops the controllers' loops
(``OnStoppedLeading``) and kube-controller-manager exits. Checking before each write closes the
window between losing the Lease and the loops stopping.
"""

from __future__ import annotations

from typing import Protocol


class NotLeaderError(Exception):
    """A write was refused because this process does not hold the Lease."""


class Fence(Protocol):
    def check(self) -> None:
        """Return if writes are allowed now; raise ``NotLeaderError`` otherwise."""
        ...


class Unfenced:
    """The fence of a process that runs without leader election (a single replica)."""

    def check(self) -> None:
        return None
