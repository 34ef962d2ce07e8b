"""What the VPA updater does to pods through the API server: evict, resize in place, patch
annotations; and its check that the admission controller is alive.

Upstream counterparts (kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1):
``pkg/updater/restriction/pods_eviction_restriction.go`` (``Evict``: ``EvictV1``, a
``policy/v1`` ``Eviction`` POSTed to ``pods/{name}/eviction``, so PodDisruptionBudgets hold; a
budget that forbids it answers 429), ``pods_inplace_restriction.go`` (``InPlaceUpdate``: a JSON
Patch on the ``resize`` subresource, then one on the pod for annotations),
``pkg/updater/logic/updater.go`` (``isInfeasibleError``: a ``Forbidden`` whose causes include
``NodeCapacity``) and ``pkg/utils/status/status_object.go`` (``IsStatusValid``: the Lease was
created or renewed less than the timeout ago).

Deliberate deviations: no client-side retry of an eviction or a resize (a 429 from a budget is a
normal outcome: the next loop tries again); the Lease is read once per loop, without upstream's
exponential back-off on retryable errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from hpa.kube.client import ApiError, KubeClient, NotFoundError, RetryPolicy, TransportError
from hpa.kube.clock import Clock, parse_time

__all__ = [
    "INFEASIBLE_CAUSE_NODE_CAPACITY",
    "KubeAdmissionStatus",
    "KubePodActions",
    "PodActionError",
]

INFEASIBLE_CAUSE_NODE_CAPACITY = "NodeCapacity"
"""``InfeasibleCauseNodeCapacity``."""


class PodActionError(Exception):
    """An eviction, resize or read the API server refused. ``code`` is the HTTP status (0: no
    answer); ``infeasible`` marks a resize refused for node capacity."""

    def __init__(self, code: int, message: str, *, infeasible: bool = False) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.infeasible = infeasible

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code else self.message


def _infeasible(error: ApiError) -> bool:
    if error.reason != "Forbidden":
        return False
    causes = error.status.details.get("causes") or ()
    return any(
        isinstance(c, dict) and c.get("type") == INFEASIBLE_CAUSE_NODE_CAPACITY for c in causes
    )


def _failure(error: ApiError | TransportError) -> PodActionError:
    if isinstance(error, ApiError):
        return PodActionError(error.code, str(error), infeasible=_infeasible(error))
    return PodActionError(0, str(error))


class KubePodActions:
    """``PodActions`` through the API server."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client.with_retry(RetryPolicy(max_attempts=1))

    @staticmethod
    def _pod(namespace: str, name: str) -> str:
        return f"/api/v1/namespaces/{namespace}/pods/{name}"

    async def evict(self, namespace: str, name: str) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        try:
            await self._client.post(f"{self._pod(namespace, name)}/eviction", body)
        except (ApiError, TransportError) as error:
            raise _failure(error) from None

    async def resize(self, namespace: str, name: str, patch: Sequence[dict[str, Any]]) -> None:
        try:
            await self._client.patch(
                f"{self._pod(namespace, name)}/resize", list(patch), patch_type="json"
            )
        except (ApiError, TransportError) as error:
            raise _failure(error) from None

    async def patch(self, namespace: str, name: str, patch: Sequence[dict[str, Any]]) -> None:
        try:
            await self._client.patch(self._pod(namespace, name), list(patch), patch_type="json")
        except (ApiError, TransportError) as error:
            raise _failure(error) from None


class KubeAdmissionStatus:
    """``statusValidator`` over the admission controller's status Lease."""

    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        name: str,
        timeout: timedelta,
        clock: Clock,
    ) -> None:
        self._client = client
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        self._timeout = timeout
        self._clock = clock

    async def is_valid(self) -> bool:
        """A missing Lease is invalid; an unreadable one raises ``PodActionError``."""
        try:
            lease = await self._client.get(self._path)
        except NotFoundError:
            return False
        except (ApiError, TransportError) as error:
            raise _failure(error) from None
        now = self._clock.now()
        created = parse_time((lease.get("metadata") or {}).get("creationTimestamp"))
        renewed = parse_time((lease.get("spec") or {}).get("renewTime"))
        return any(t is not None and t + self._timeout > now for t in (created, renewed))
