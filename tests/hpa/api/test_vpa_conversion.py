"""The VPA models converted to and from the model's core types (``hpa.api.vpa``'s functions)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hpa.api.vpa import (
    VerticalPodAutoscaler,
    VerticalPodAutoscalerCheckpoint,
    checkpoint_status_from_core,
    checkpoint_status_to_core,
    histogram_checkpoint_to_core,
    pod_resource_policy_to_core,
    recommendation_from_core,
    time_from_ns,
    time_to_ns,
)
from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.amount import ResourceName, Resources
from hpa.core.vpa.gomath import ZERO_TIME_NS
from hpa.core.vpa.policy import ContainerControlledValues, ContainerScalingMode
from hpa.core.vpa.recommender import RecommendedContainerResources, RecommendedPodResources

CHECKPOINT: dict[str, Any] = {
    "apiVersion": "autoscaling.k8s.io/v1",
    "kind": "VerticalPodAutoscalerCheckpoint",
    "metadata": {"name": "hamster-vpa-hamster", "namespace": "default"},
    "spec": {"vpaObjectName": "hamster-vpa", "containerName": "hamster"},
    "status": {
        "lastUpdateTime": "2026-01-09T00:00:00Z",
        "version": "v3",
        "cpuHistogram": {
            "referenceTimestamp": "2026-01-09T00:00:00Z",
            "bucketWeights": {"25": 10000, "26": 5000},
            "totalWeight": 57.6,
        },
        "memoryHistogram": {
            "referenceTimestamp": "2026-01-10T00:00:00Z",
            "bucketWeights": {"19": 10000},
            "totalWeight": 7.2,
        },
        "firstSampleStart": "2026-01-01T00:00:00Z",
        "lastSampleStart": "2026-01-08T23:59:00Z",
        "totalSamplesCount": 11520,
    },
}


def test_a_checkpoint_loads_into_a_state_and_writes_back_the_same() -> None:
    checkpoint = VerticalPodAutoscalerCheckpoint.from_dict(CHECKPOINT)
    state = AggregateContainerState()
    state.load_from_checkpoint(checkpoint_status_to_core(checkpoint.status))
    assert state.total_samples_count == 11520
    assert state.aggregate_cpu_usage.min_bucket == 25
    assert state.aggregate_cpu_usage.max_bucket == 26
    assert state.aggregate_cpu_usage.bucket_weight(25) == pytest.approx(57.6 * 10000 / 15000)
    saved = state.save_to_checkpoint(time_to_ns(datetime(2026, 1, 9, tzinfo=UTC)))
    assert checkpoint_status_from_core(saved).to_dict() == CHECKPOINT["status"]


def test_go_zero_time_is_null() -> None:
    assert time_to_ns(None) == ZERO_TIME_NS
    assert time_from_ns(ZERO_TIME_NS) is None
    empty = AggregateContainerState().save_to_checkpoint(0)
    status = checkpoint_status_from_core(empty).to_dict()
    assert status["firstSampleStart"] is None
    assert status["cpuHistogram"] == {
        "referenceTimestamp": None,
        "bucketWeights": {},
        "totalWeight": 0.0,
    }


def test_a_bucket_index_that_is_not_a_number_is_a_clear_error() -> None:
    doc = CHECKPOINT["status"]["cpuHistogram"] | {"bucketWeights": {"x1": 3}}
    histogram = VerticalPodAutoscalerCheckpoint.from_dict(
        CHECKPOINT | {"status": CHECKPOINT["status"] | {"cpuHistogram": doc}}
    ).status.cpu_histogram
    with pytest.raises(ValueError, match="checkpoint bucket index 'x1' is not an integer"):
        histogram_checkpoint_to_core(histogram)


def test_resource_policy_converts_quantities_and_enumerations() -> None:
    vpa = VerticalPodAutoscaler.from_dict(
        {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": {"name": "v", "namespace": "default"},
            "spec": {
                "resourcePolicy": {
                    "containerPolicies": [
                        {
                            "containerName": "app",
                            "mode": "Auto",
                            "minAllowed": {"cpu": "100m", "memory": "50Mi"},
                            "maxAllowed": {"cpu": 2, "memory": "1.5Gi"},
                            "controlledResources": ["memory"],
                            "controlledValues": "RequestsOnly",
                            "oomBumpUpRatio": "1.5",
                            "oomMinBumpUp": "200Mi",
                            "memoryAggregationIntervalSeconds": 3600,
                            "memoryAggregationIntervalCount": 4,
                            "targetCPUPercentile": "0.95",
                            "targetMemoryPercentile": "0.99",
                        },
                        {"containerName": "sidecar", "mode": "Off"},
                    ]
                }
            },
        }
    )
    policy = pod_resource_policy_to_core(vpa.spec.resource_policy)
    assert policy is not None
    app, sidecar = policy.container_policies
    assert app.min_allowed == Resources(cpu=100, memory=50 * 2**20)
    assert app.max_allowed == Resources(cpu=2000, memory=1536 * 2**20)
    assert app.controlled_resources == frozenset({ResourceName.MEMORY})
    assert app.controlled_values is ContainerControlledValues.REQUESTS_ONLY
    assert app.oom_bump_up_ratio == 1.5
    assert app.oom_min_bump_up_bytes == 200 * 2**20
    assert (app.memory_aggregation_interval_seconds, app.memory_aggregation_interval_count) == (
        3600,
        4,
    )
    assert (app.target_cpu_percentile, app.target_memory_percentile) == (0.95, 0.99)
    assert sidecar.mode is ContainerScalingMode.OFF
    assert sidecar.controlled_resources is None
    assert pod_resource_policy_to_core(None) is None


def test_recommendation_is_written_with_upstream_canonical_quantities() -> None:
    recommendation = RecommendedPodResources(
        (
            RecommendedContainerResources(
                "app",
                target=Resources(cpu=587, memory=380258472),
                lower_bound=Resources(cpu=1000, memory=256 * 2**20),
                upper_bound=Resources(cpu=1500, memory=2**30),
                uncapped_target=Resources(cpu=587),
            ),
        )
    )
    assert recommendation_from_core(recommendation).to_dict() == {
        "containerRecommendations": [
            {
                "containerName": "app",
                "target": {"cpu": "587m", "memory": "380258472"},
                "lowerBound": {"cpu": "1", "memory": "256Mi"},
                "upperBound": {"cpu": "1500m", "memory": "1Gi"},
                "uncappedTarget": {"cpu": "587m"},
            }
        ]
    }


def test_status_from_core_is_the_status_models_json() -> None:
    from hpa.api.vpa import VerticalPodAutoscalerStatus, status_from_core
    from hpa.core.vpa.amount import Resources
    from hpa.core.vpa.cluster import VpaCondition
    from hpa.core.vpa.recommender import RecommendedContainerResources

    rec = RecommendedContainerResources(
        "app",
        Resources(cpu=1500, memory=256 * 1024 * 1024),
        Resources(cpu=25, memory=None),
        Resources(cpu=2000, memory=1_000_001),
        Resources(cpu=1500, memory=256 * 1024 * 1024),
    )
    conditions = [
        VpaCondition("LowConfidence", "True", "ShortHistory", "short", 1_767_225_600_500_000_000),
        VpaCondition("RecommendationProvided", "True"),
    ]
    for recommendation in ((rec,), (), None):
        written = status_from_core(recommendation, conditions, observed_generation=3)
        model = VerticalPodAutoscalerStatus.from_dict(written)
        assert model.to_dict() == written
        assert written["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert status_from_core((rec,), [], observed_generation=None)["recommendation"][
        "containerRecommendations"
    ][0]["target"] == {"cpu": "1500m", "memory": "256Mi"}
