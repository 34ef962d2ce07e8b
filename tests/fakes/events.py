"""A fake ``hpa.controllers.ports.EventRecorder``: keeps every event, by HPA key, in order."""

from __future__ import annotations

from dataclasses import dataclass

from hpa.controllers.ports import HorizontalPodAutoscalerObject
from hpa.core.conditions import Event


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    key: str
    event: Event


class FakeEventRecorder:
    def __init__(self) -> None:
        self.recorded: list[RecordedEvent] = []

    def record(self, hpa: HorizontalPodAutoscalerObject, event: Event) -> None:
        self.recorded.append(RecordedEvent(hpa.key, event))

    def events(self, key: str) -> list[Event]:
        return [item.event for item in self.recorded if item.key == key]

    def reasons(self, key: str) -> list[str]:
        return [event.reason for event in self.events(key)]

    def clear(self) -> None:
        self.recorded.clear()
