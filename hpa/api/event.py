"""``events.k8s.io/v1`` Event.

Upstream counterpart: ``k8s.io/api/events/v1/types.go`` (``Event``, ``EventSeries``) and
``core/v1.EventSource``. ``eventTime`` and ``series.lastObservedTime`` are ``metav1.MicroTime``;
the ``deprecated*`` timestamps are ``metav1.Time``.

Deliberate deviations: none.
"""

from __future__ import annotations

from pydantic import Field

from hpa.api.base import KubeModel
from hpa.api.meta import ListMeta, ObjectMeta, ObjectReference, TypeMeta
from hpa.api.types import MicroTime, Time

__all__ = ["Event", "EventList", "EventSeries", "EventSource"]


class EventSeries(KubeModel):
    """``EventSeries``: a repeated event."""

    count: int = 0
    last_observed_time: MicroTime | None = None


class EventSource(KubeModel):
    """``core/v1.EventSource`` (``deprecatedSource``)."""

    component: str = ""
    host: str = ""


class Event(TypeMeta):
    """``events.k8s.io/v1`` ``Event``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    event_time: MicroTime | None = None
    series: EventSeries | None = None
    reporting_controller: str = ""
    reporting_instance: str = ""
    action: str = ""
    reason: str = ""
    regarding: ObjectReference = Field(default_factory=ObjectReference)
    related: ObjectReference | None = None
    note: str = ""
    type: str = ""
    deprecated_source: EventSource | None = None
    deprecated_first_timestamp: Time | None = None
    deprecated_last_timestamp: Time | None = None
    deprecated_count: int = 0


class EventList(TypeMeta):
    """``EventList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Event] = Field(default_factory=list)
