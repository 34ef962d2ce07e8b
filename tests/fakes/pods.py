"""A fake ``hpa.controllers.ports.PodLister``: pods per namespace, matched by label selector.

Set ``raising`` to make every listing in a namespace raise (an unexpected failure the work queue
must contain). Every call is recorded as ``(namespace, selector string)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hpa.core.replicas import PodInfo
from hpa.core.selector import Selector
from hpa.kube.records import PodRecord


class FakePodLister:
    def __init__(self) -> None:
        self.pods: dict[str, list[PodRecord]] = {}
        self.raising: dict[str, Exception] = {}
        self.calls: list[tuple[str, str]] = []

    def add(self, namespace: str, info: PodInfo, *, labels: Mapping[str, str]) -> None:
        self.pods.setdefault(namespace, []).append(
            PodRecord(namespace=namespace, name=info.name, labels=dict(labels), info=info)
        )

    def list_pods(self, namespace: str, selector: Selector) -> Sequence[PodRecord]:
        self.calls.append((namespace, selector.to_string()))
        if namespace in self.raising:
            raise self.raising[namespace]
        return [pod for pod in self.pods.get(namespace, ()) if selector.matches(pod.labels)]
