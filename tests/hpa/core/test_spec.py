"""hpa.core.spec: defaulting, selector rendering, resolved behavior."""

from __future__ import annotations

from hpa.core.spec import (
    CrossVersionObjectReference,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    HorizontalSettings,
    LabelSelector,
    LabelSelectorRequirement,
    MetricSourceType,
    MetricTargetType,
    ScalingPolicySelect,
    ScalingRules,
    default_behavior,
    default_spec,
    format_label_selector,
    resolve_behavior,
)

REF = CrossVersionObjectReference("Deployment", "web", "apps/v1")


def test_default_spec_fills_min_replicas_and_the_cpu_80_metric() -> None:
    spec = default_spec(HorizontalPodAutoscalerSpec(scale_target_ref=REF, max_replicas=5))
    assert spec.min_replicas == 1
    assert len(spec.metrics) == 1
    metric = spec.metrics[0]
    assert metric.type == MetricSourceType.RESOURCE
    assert metric.resource is not None
    assert metric.resource.name == "cpu"
    assert metric.resource.target.type == MetricTargetType.UTILIZATION
    assert metric.resource.target.average_utilization == 80
    assert spec.behavior is None  # behavior defaults apply only when it is set


def test_behavior_defaults_only_fill_unset_fields() -> None:
    behavior = default_behavior(
        HorizontalPodAutoscalerBehavior(scale_down=ScalingRules(stabilization_window_seconds=60))
    )
    assert behavior is not None
    assert behavior.scale_up is not None
    assert behavior.scale_up.select_policy == ScalingPolicySelect.MAX
    assert behavior.scale_down is not None
    assert behavior.scale_down.stabilization_window_seconds == 60


def test_resolve_behavior_takes_the_downscale_window_from_the_flag() -> None:
    rules = resolve_behavior(
        HorizontalPodAutoscalerBehavior(), HorizontalSettings(downscale_stabilization_seconds=120)
    )
    assert rules.scale_down_stabilization_window_seconds == 120
    assert rules.scale_up_stabilization_window_seconds == 0


def test_label_selector_renders_like_gos_protobuf_string() -> None:
    assert format_label_selector(None) == "nil"
    assert format_label_selector(LabelSelector()) == (
        "&LabelSelector{MatchLabels:map[string]string{},"
        "MatchExpressions:[]LabelSelectorRequirement{},}"
    )
    selector = LabelSelector(
        match_labels=(("b", "2"), ("a", "1")),
        match_expressions=(LabelSelectorRequirement("tier", "In", ("web", "api")),),
    )
    assert format_label_selector(selector) == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
        "MatchExpressions:[]LabelSelectorRequirement{"
        "LabelSelectorRequirement{Key:tier,Operator:In,Values:[web api],},},}"
    )
