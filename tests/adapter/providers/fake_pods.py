"""A data-driven ``PodLister`` for provider tests: pods by namespace with labels, calls recorded.

Matching uses ``hpa.core.selector`` (the same selector semantics the real watch-cache lister over
``hpa.kube``'s informer will use).
"""

from __future__ import annotations

from collections.abc import Mapping

from adapter.rules import GroupResource
from hpa.core.selector import parse_selector


class FakePodLister:
    def __init__(self, pods: Mapping[str, Mapping[str, Mapping[str, str]]]) -> None:
        """``pods``: namespace -> pod name -> labels."""
        self.pods = {namespace: dict(found) for namespace, found in pods.items()}
        self.calls: list[tuple[str, str]] = []
        self.error: Exception | None = None

    async def pods_for_selector(self, namespace: str, selector: str) -> list[str]:
        self.calls.append((namespace, selector))
        if self.error is not None:
            raise self.error
        parsed = parse_selector(selector)
        return [
            name
            for name, labels in sorted(self.pods.get(namespace, {}).items())
            if parsed.matches(labels)
        ]


class FakeObjectNameLister:
    """A data-driven ``ObjectNameLister``: (group-resource text, namespace or "") -> name ->
    labels; calls recorded as (resource, namespace, selector)."""

    def __init__(self, objects: Mapping[tuple[str, str], Mapping[str, Mapping[str, str]]]) -> None:
        self.objects = {key: dict(found) for key, found in objects.items()}
        self.calls: list[tuple[str, str | None, str]] = []

    async def names_for_selector(
        self, resource: GroupResource, namespace: str | None, selector: str
    ) -> list[str]:
        self.calls.append((str(resource), namespace, selector))
        parsed = parse_selector(selector)
        found = self.objects.get((str(resource), namespace or ""), {})
        return [name for name, labels in sorted(found.items()) if parsed.matches(labels)]
