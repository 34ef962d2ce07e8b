"""A fake ``hpa.controllers.ports.PodLister``: pods per namespace, matched by label selector.

Set ``raising`` to make every listing in a namespace raise (an unexpected failure the work queue
must contain). Every call is recorded as ``(namespace, selector string)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hpa.controllers.ports import ListedPod
from hpa.core.replicas import PodInfo
from hpa.core.selector import Selector


class FakePodLister:
    def __init__(self) -> None:
        self.pods: dict[str, list[ListedPod]] = {}
        self.raising: dict[str, Exception] = {}
        self.calls: list[tuple[str, str]] = []

    def add(self, namespace: str, info: PodInfo, *, labels: Mapping[str, str]) -> None:
        self.pods.setdefault(namespace, []).append(ListedPod(info=info, labels=dict(labels)))

    def list_pods(self, namespace: str, selector: Selector) -> Sequence[ListedPod]:
        self.calls.append((namespace, selector.to_string()))
        if namespace in self.raising:
            raise self.raising[namespace]
        return [pod for pod in self.pods.get(namespace, ()) if selector.matches(pod.labels)]
