"""The HPA status writer: semantic equality, skipping unchanged writes, keeping unknown fields."""

from __future__ import annotations

from typing import Any

import pytest

from hpa.kube.client import KubeClient
from hpa.kube.records import parse_hpa
from hpa.kube.status import (
    StatusEquality,
    StatusWriteOutcome,
    StatusWriter,
    hpa_status_path,
    status_equal,
)
from tests.fakes.apiserver import FakeApiServer

HPAS = ("/apis/autoscaling/v2", "horizontalpodautoscalers")


def status(
    *,
    current: int = 3,
    desired: int = 3,
    average_value: str = "500m",
    utilization: int = 50,
    transition: str = "2026-01-01T00:00:00Z",
    reason: str = "ReadyForNewScale",
) -> dict[str, Any]:
    return {
        "observedGeneration": 1,
        "currentReplicas": current,
        "desiredReplicas": desired,
        "lastScaleTime": "2026-01-01T00:00:00Z",
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageValue": average_value, "averageUtilization": utilization},
                },
            }
        ],
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "reason": reason,
                "message": "recommended size matches current size",
                "lastTransitionTime": transition,
            }
        ],
    }


EXACT = StatusEquality()
LAGGING = StatusEquality(metric_value_tolerance_ratio=0.05)


@pytest.mark.parametrize(
    ("new", "equality", "equal"),
    [
        (status(), EXACT, True),
        (status(average_value="0.5"), EXACT, True),  # quantities compare by value
        (status(average_value="501m"), EXACT, False),
        (status(average_value="520m"), LAGGING, True),  # within 5 %
        (status(average_value="530m"), LAGGING, False),
        (status(utilization=52), LAGGING, True),
        (status(utilization=53), LAGGING, False),
        (status(utilization=51), EXACT, False),
        (status(current=4, average_value="501m"), LAGGING, False),  # replicas exact
        (status(desired=4), LAGGING, False),
        (status(reason="ScaleDownStabilized"), LAGGING, False),  # conditions exact
        (status(transition="2026-01-01T00:00:00.000000Z"), EXACT, True),  # same instant
        (status(transition="2026-01-01T00:00:01Z"), EXACT, False),
        ({**status(), "lastScaleTime": "2026-01-01T00:00:05Z"}, LAGGING, False),
    ],
)
def test_status_equality(new: dict[str, Any], equality: StatusEquality, equal: bool) -> None:
    assert status_equal(status(), new, equality=equality) is equal


def test_a_changed_metric_shape_is_never_equal() -> None:
    new = status()
    new["currentMetrics"][0]["resource"]["name"] = "memory"
    assert not status_equal(status(), new, equality=LAGGING)
    assert not status_equal(status(), {**status(), "currentMetrics": []}, equality=LAGGING)


def hpa_object() -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"keep": "me"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 10,
            "futureField": {"x": 1},
        },
        "status": {**status(), "futureStatusField": "kept"},
    }


async def test_an_unchanged_status_is_not_written(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    hpa = parse_hpa(apiserver.put_object(*HPAS, hpa_object()))
    result = await StatusWriter(kube).write(hpa, status(average_value="0.5"))
    assert result.outcome is StatusWriteOutcome.UNCHANGED
    assert apiserver.requests_to("PUT", hpa_status_path("default", "web")) == []


async def test_a_changed_status_is_written_keeping_unknown_fields(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    hpa = parse_hpa(apiserver.put_object(*HPAS, hpa_object()))
    result = await StatusWriter(kube).write(hpa, status(current=3, desired=5))
    assert result.outcome is StatusWriteOutcome.WRITTEN
    stored = apiserver.get_object(*HPAS, "default", "web")
    assert stored is not None
    assert stored["status"]["desiredReplicas"] == 5
    assert stored["status"]["futureStatusField"] == "kept"
    assert stored["spec"]["futureField"] == {"x": 1}
    assert stored["metadata"]["annotations"] == {"keep": "me"}
    sent = apiserver.requests_to("PUT", hpa_status_path("default", "web"))[0].body
    assert sent["metadata"]["resourceVersion"] == hpa.resource_version


async def test_a_stale_hpa_is_a_conflict(apiserver: FakeApiServer, kube: KubeClient) -> None:
    hpa = parse_hpa(apiserver.put_object(*HPAS, hpa_object()))
    apiserver.put_object(*HPAS, hpa_object())  # the user edited the HPA meanwhile
    result = await StatusWriter(kube).write(hpa, status(desired=7))
    assert result.outcome is StatusWriteOutcome.CONFLICT
    stored = apiserver.get_object(*HPAS, "default", "web")
    assert stored is not None
    assert stored["status"]["desiredReplicas"] == 3
