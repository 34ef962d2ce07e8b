"""The providers' ports: what they need from Prometheus, the cluster and time.

Upstream counterparts: prometheus-adapter ``pkg/client.Client`` (``Query``, ``QueryRange``,
``Series``), the dynamic client list in custom-metrics-apiserver ``helpers.ListObjectNames``, and
``k8s.io/utils/clock``.

Deliberate deviation: pod names for a label selector in a namespace come from a ``PodLister``
over a watch cache (implemented on ``hpa.kube``'s informer; tests use a fake), never from a LIST
per request; other resources (and pods in every namespace) are LISTed through an
``ObjectNameLister``, as upstream lists everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from adapter.prometheus.results import InstantResult, RangeSeries
from adapter.rules import GroupResource, Series


class PodLister(Protocol):
    async def pods_for_selector(self, namespace: str, selector: str) -> Sequence[str]:
        """Names of the pods in ``namespace`` whose labels match ``selector``.

        ``selector`` is a Kubernetes label selector in its canonical text form (``labels.Parse``
        then ``String()``; ``""`` selects every pod). Implementations answer from a cache; an
        error they raise becomes ``ObjectListError`` (500 "unable to list matching resources").
        """
        ...


class ObjectNameLister(Protocol):
    async def names_for_selector(
        self, resource: GroupResource, namespace: str | None, selector: str
    ) -> Sequence[str]:
        """Names of the ``resource`` objects in ``namespace`` (None: cluster-scoped, or every
        namespace) whose labels match ``selector`` (canonical text; ``""`` selects all):
        ``helpers.ListObjectNames``. An error it raises becomes ``ObjectListError``."""
        ...


class PrometheusQuerier(Protocol):
    """The subset of ``adapter.prometheus.PrometheusClient`` the providers call."""

    async def query(
        self,
        query: str,
        *,
        time_seconds: float | None = None,
        timeout_seconds: float | None = None,
        in_parts: bool = False,
    ) -> InstantResult: ...

    async def query_range(
        self,
        query: str,
        *,
        start_seconds: float,
        end_seconds: float,
        step_seconds: float,
        timeout_seconds: float | None = None,
    ) -> list[RangeSeries]: ...

    async def series(
        self,
        matches: Sequence[str],
        *,
        start_seconds: float | None = None,
        end_seconds: float | None = None,
        timeout_seconds: float | None = None,
    ) -> Sequence[Series]: ...


class Clock(Protocol):
    """Time for the relist loop (same shape as ``hpa.kube.clock.Clock``, which we must not
    import: the adapter sits below ``hpa.kube``)."""

    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...
