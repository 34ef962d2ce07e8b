"""The recommender pass for one VPA: defaults, mode Off, per-container percentiles, the trace."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from hpa.core.vpa.aggregation import AggregateContainerState, AggregationsConfig, ContainerState
from hpa.core.vpa.amount import ResourceName, Resources
from hpa.core.vpa.crane import CraneConfig
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.policy import ContainerResourcePolicy, ContainerScalingMode, PodResourcePolicy
from hpa.core.vpa.recommender import (
    RecommendationConfig,
    create_pod_resource_recommender,
    recommend,
)

MINUTE = 60 * NANOSECONDS_PER_SECOND
START = 1_700_000_000 * NANOSECONDS_PER_SECOND
MI = 1024 * 1024


def steady_state(
    cpu_millicores: int, memory_bytes: int, *, days: int = 2
) -> AggregateContainerState:
    """One sample a minute for ``days`` days at constant usage."""
    state = AggregateContainerState()
    container = ContainerState(state)
    for minute in range(days * 24 * 60):
        t = START + minute * MINUTE
        assert container.add_cpu_sample(t, cpu_millicores)
        assert container.add_memory_sample(t, memory_bytes)
    return state


def test_steady_usage_gives_the_bucket_end_plus_margin() -> None:
    state = steady_state(500, 300 * MI)
    result = recommend({"app": state}, recommender=create_pod_resource_recommender())
    (app,) = result.container_recommendations
    # 0.5 cores sits in CPU bucket 25, [0.4773, 0.5111) cores: its end plus 15 %, each
    # truncated to millicores: 511m + 76m = 587m.
    assert app.target.cpu == 587
    assert app.uncapped_target == app.target
    assert app.lower_bound.cpu is not None
    assert app.upper_bound.cpu is not None
    assert app.lower_bound.cpu <= app.target.cpu <= app.upper_bound.cpu
    # 300Mi sits in memory bucket 19, [305390039, 330659541) bytes: 330659541 + 49598931.
    assert app.target.memory == 380258472


def test_mode_off_container_is_dropped_and_does_not_share_the_minimum() -> None:
    states = {"app": AggregateContainerState(), "sidecar": AggregateContainerState()}
    policy = PodResourcePolicy((ContainerResourcePolicy("sidecar", mode=ContainerScalingMode.OFF),))
    result = recommend(states, recommender=create_pod_resource_recommender(), policy=policy)
    (app,) = result.container_recommendations
    assert app.container_name == "app"
    assert app.target == Resources(cpu=25, memory=250 * MI)


def test_per_container_target_percentile_needs_the_feature_gate() -> None:
    state = AggregateContainerState()
    container = ContainerState(state)
    for minute in range(100):
        container.add_cpu_sample(START + minute * MINUTE, 100 if minute < 50 else 1000)
    policy = PodResourcePolicy((ContainerResourcePolicy("*", target_cpu_percentile=0.3),))
    recommender = create_pod_resource_recommender(RecommendationConfig())
    without_gate = recommend({"app": state}, recommender=recommender, policy=policy)
    with_gate = recommend(
        {"app": state}, recommender=recommender, policy=policy, per_vpa_config=True
    )
    low, high = with_gate.container_recommendations[0], without_gate.container_recommendations[0]
    assert low.target.cpu is not None
    assert high.target.cpu is not None
    assert low.target.cpu < 200 < 1000 < high.target.cpu


def test_explanation_names_samples_each_estimator_and_the_cap() -> None:
    state = steady_state(500, 300 * MI, days=1)
    policy = PodResourcePolicy((ContainerResourcePolicy("app", max_allowed=Resources(cpu=400)),))
    result = recommend({"app": state}, recommender=create_pod_resource_recommender(), policy=policy)
    (app,) = result.container_recommendations
    assert app.target.cpu == 400
    assert app.uncapped_target.cpu == 587
    text = result.explanation.render()
    assert "[samples] container app: 1440 CPU samples" in text
    assert "[estimation] container app cpu target: 587m" in text
    assert "percentile 0.9 of the histogram: 511m" in text
    assert "safety margin 0.15: 587m" in text
    assert "at least the per-container minimum: 587m" in text
    assert "per_container_minimum_cpu: 25m" in text
    assert "[capping] container app cpu target capped to maxAllowed" in text
    assert "maxAllowed: 400m" in text
    assert "confidence 0.9993: x(1+1/confidence)^1 = x2.0007: 1174m" in text
    stages = {entry.stage.value for entry in result.explanation.entries}
    assert stages == {"samples", "estimation", "capping"}
    assert ResourceName.MEMORY in {r for r, _ in app.target.items()}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: RecommendationConfig(target_cpu_percentile=1.5),
            "target_cpu_percentile must be between 0 and 1, got 1.5",
        ),
        (
            lambda: RecommendationConfig(safety_margin_fraction=-0.1),
            "safety_margin_fraction must not be negative, got -0.1",
        ),
        (
            lambda: RecommendationConfig(confidence_interval_memory_ns=0),
            "confidence_interval_memory_ns must be positive, got 0",
        ),
        (
            lambda: AggregationsConfig(memory_aggregation_interval_count=0),
            "memory_aggregation_interval_count must be positive, got 0",
        ),
        (
            lambda: CraneConfig(mem_request_percentile=2.0),
            "mem_request_percentile must be between 0 and 1, got 2.0",
        ),
        (
            lambda: CraneConfig(cpu_target_utilization=0.0),
            "cpu_target_utilization must be positive, got 0.0",
        ),
    ],
)
def test_bad_settings_are_one_line_errors_naming_the_setting(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        build()


def test_shared_confidence_gives_each_containers_own_numbers() -> None:
    """Containers sampled together share their confidence and factors; the numbers are those of
    each chain run on each state alone, and without the trace they are the same."""

    def short(cpu: int, memory: int, minutes: int) -> AggregateContainerState:
        state = AggregateContainerState()
        container = ContainerState(state)
        for minute in range(minutes):
            container.add_cpu_sample(START + minute * MINUTE, cpu)
            container.add_memory_sample(START + minute * MINUTE, memory)
        return state

    states = {
        "a": short(100, 100 * MI, 30),
        "b": short(900, 700 * MI, 30),  # the same sample history as a
        "c": short(400, 300 * MI, 90),
        "d": short(50, 60 * MI, 30),
    }
    recommender = create_pod_resource_recommender()
    traced, parts = recommender.get_recommended_pod_resources(states)
    untraced, no_parts = recommender.get_recommended_pod_resources(states, explain=False)
    assert traced == untraced
    assert len(parts) == 4
    assert no_parts == ()
    min_cpu, min_memory = 25 // 4, 250 * MI // 4
    for name, state in states.items():
        alone = [
            estimator.estimate(state) for estimator, _, _ in recommender.chains(min_cpu, min_memory)
        ]
        target, lower, upper = traced[name]
        assert [target.cpu, target.memory, lower.cpu, lower.memory, upper.cpu, upper.memory] == (
            alone
        ), name
