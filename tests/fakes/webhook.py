"""A data-driven fake of ``hpa.webhook.handler.VpaMatcher`` that records the pods it was asked
about: a VPA per pod label ``app`` value, or an error to raise."""

from __future__ import annotations

from dataclasses import dataclass, field

from hpa.webhook.handler import MatchedVpa
from hpa.webhook.review import AdmissionPod


@dataclass
class FakeVpaMatcher:
    by_app: dict[str, MatchedVpa] = field(default_factory=dict)
    error: Exception | None = None
    asked: list[AdmissionPod] = field(default_factory=list)

    async def match(self, pod: AdmissionPod) -> MatchedVpa | None:
        self.asked.append(pod)
        if self.error is not None:
            raise self.error
        return self.by_app.get(pod.labels.get("app", ""))
