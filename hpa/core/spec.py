"""Core types for one HorizontalPodAutoscaler spec, as the decision needs it, plus its defaulting.

Upstream counterparts:

* ``k8s.io/api/autoscaling/v2`` types (``HorizontalPodAutoscalerSpec``, ``MetricSpec`` and its five
  sources, ``MetricTarget``, ``HorizontalPodAutoscalerBehavior``, ``HPAScalingRules``,
  ``HPAScalingPolicy``);
* ``pkg/apis/autoscaling/v2/defaults.go`` (``SetDefaults_HorizontalPodAutoscaler``,
  ``SetDefaults_HorizontalPodAutoscalerBehavior``, ``GenerateHPAScaleUpRules``,
  ``GenerateHPAScaleDownRules``, ``copyHPAScalingRules``);
* ``pkg/controller/podautoscaler/config/v1alpha1/defaults.go`` and the ``scaleUpLimitFactor`` /
  ``scaleUpLimitMinimum`` package variables of ``horizontal.go`` (:class:`HorizontalSettings`).

Quantities are exact: targets are integer milli-units (``MilliValue()`` upstream) and utilization
targets are integer percentages. ``tolerance`` is a float because upstream reads it with
``AsApproximateFloat64`` before comparing it with a float ratio.

Deliberate deviations: none. ``MetricSpec.type`` is a plain string so that an unknown source type
can reach the decision and fail with ``InvalidMetricSourceType`` exactly as upstream does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum


class MetricSourceType(StrEnum):
    """``autoscalingv2.MetricSourceType``."""

    OBJECT = "Object"
    PODS = "Pods"
    RESOURCE = "Resource"
    CONTAINER_RESOURCE = "ContainerResource"
    EXTERNAL = "External"


class MetricTargetType(StrEnum):
    """``autoscalingv2.MetricTargetType``."""

    UTILIZATION = "Utilization"
    VALUE = "Value"
    AVERAGE_VALUE = "AverageValue"


class ScalingPolicyType(StrEnum):
    """``autoscalingv2.HPAScalingPolicyType``."""

    PODS = "Pods"
    PERCENT = "Percent"


class ScalingPolicySelect(StrEnum):
    """``autoscalingv2.ScalingPolicySelect``."""

    MAX = "Max"
    MIN = "Min"
    DISABLED = "Disabled"


DEFAULT_CPU_UTILIZATION = 80
"""``autoscaling.DefaultCPUUtilization``: the target of the metric defaulted into an empty list."""


@dataclass(frozen=True, slots=True)
class CrossVersionObjectReference:
    """``autoscalingv2.CrossVersionObjectReference``."""

    kind: str
    name: str
    api_version: str = ""


@dataclass(frozen=True, slots=True)
class LabelSelectorRequirement:
    """``metav1.LabelSelectorRequirement``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``metav1.LabelSelector`` (match labels as sorted key/value pairs)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


def format_label_selector(selector: LabelSelector | None) -> str:
    """Render a selector the way Go's ``%+v`` renders a ``*metav1.LabelSelector``.

    The generated protobuf ``String()`` method is what ``fmt`` calls; upstream embeds the result in
    metric names such as ``external metric qps(&LabelSelector{...})``.
    """
    if selector is None:
        return "nil"
    labels = "".join(f"{key}: {value}," for key, value in sorted(selector.match_labels))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{req.key},Operator:{req.operator},"
        f"Values:[{' '.join(req.values)}],}},"
        for req in selector.match_expressions
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )


@dataclass(frozen=True, slots=True)
class MetricIdentifier:
    """``autoscalingv2.MetricIdentifier``."""

    name: str
    selector: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class MetricTarget:
    """``autoscalingv2.MetricTarget`` with exact values.

    ``value_milli`` and ``average_value_milli`` are ``Quantity.MilliValue()``;
    ``average_utilization`` is a percentage of the request.
    """

    type: MetricTargetType
    value_milli: int | None = None
    average_value_milli: int | None = None
    average_utilization: int | None = None


@dataclass(frozen=True, slots=True)
class ResourceMetricSource:
    """``autoscalingv2.ResourceMetricSource``: ``name`` is a resource name such as ``cpu``."""

    name: str
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class ContainerResourceMetricSource:
    """``autoscalingv2.ContainerResourceMetricSource``."""

    name: str
    container: str
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class PodsMetricSource:
    """``autoscalingv2.PodsMetricSource``."""

    metric: MetricIdentifier
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class ObjectMetricSource:
    """``autoscalingv2.ObjectMetricSource``."""

    described_object: CrossVersionObjectReference
    metric: MetricIdentifier
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class ExternalMetricSource:
    """``autoscalingv2.ExternalMetricSource``."""

    metric: MetricIdentifier
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """``autoscalingv2.MetricSpec``: a source type and the one matching source.

    ``type`` is kept as a string: API validation rejects unknown types, but the controller still
    handles them (``InvalidMetricSourceType``), and so does the decision.
    """

    type: str
    resource: ResourceMetricSource | None = None
    container_resource: ContainerResourceMetricSource | None = None
    pods: PodsMetricSource | None = None
    object: ObjectMetricSource | None = None
    external: ExternalMetricSource | None = None

    @classmethod
    def for_resource(cls, source: ResourceMetricSource) -> MetricSpec:
        return cls(type=MetricSourceType.RESOURCE, resource=source)

    @classmethod
    def for_container_resource(cls, source: ContainerResourceMetricSource) -> MetricSpec:
        return cls(type=MetricSourceType.CONTAINER_RESOURCE, container_resource=source)

    @classmethod
    def for_pods(cls, source: PodsMetricSource) -> MetricSpec:
        return cls(type=MetricSourceType.PODS, pods=source)

    @classmethod
    def for_object(cls, source: ObjectMetricSource) -> MetricSpec:
        return cls(type=MetricSourceType.OBJECT, object=source)

    @classmethod
    def for_external(cls, source: ExternalMetricSource) -> MetricSpec:
        return cls(type=MetricSourceType.EXTERNAL, external=source)


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    """``autoscalingv2.HPAScalingPolicy``."""

    type: ScalingPolicyType
    value: int
    period_seconds: int


@dataclass(frozen=True, slots=True)
class ScalingRules:
    """``autoscalingv2.HPAScalingRules``; ``None`` fields are "not set" and get defaulted.

    After :func:`generate_scale_up_rules` / :func:`generate_scale_down_rules` every field is set,
    except the scale-down ``stabilization_window_seconds`` (the controller substitutes its
    ``--horizontal-pod-autoscaler-downscale-stabilization`` flag) and ``tolerance``.
    """

    stabilization_window_seconds: int | None = None
    select_policy: ScalingPolicySelect | None = None
    policies: tuple[ScalingPolicy, ...] | None = None
    tolerance: float | None = None


@dataclass(frozen=True, slots=True)
class HorizontalPodAutoscalerBehavior:
    """``autoscalingv2.HorizontalPodAutoscalerBehavior``."""

    scale_up: ScalingRules | None = None
    scale_down: ScalingRules | None = None


DEFAULT_SCALE_UP_RULES = ScalingRules(
    stabilization_window_seconds=0,
    select_policy=ScalingPolicySelect.MAX,
    policies=(
        ScalingPolicy(ScalingPolicyType.PODS, 4, 15),
        ScalingPolicy(ScalingPolicyType.PERCENT, 100, 15),
    ),
)
"""``defaultHPAScaleUpRules``: 4 pods or 100 % per 15 s, whichever is larger, no stabilization."""

DEFAULT_SCALE_DOWN_RULES = ScalingRules(
    stabilization_window_seconds=None,
    select_policy=ScalingPolicySelect.MAX,
    policies=(ScalingPolicy(ScalingPolicyType.PERCENT, 100, 15),),
)
"""``defaultHPAScaleDownRules``: 100 % per 15 s; the window stays unset (controller flag)."""


def _copy_scaling_rules(source: ScalingRules | None, defaults: ScalingRules) -> ScalingRules:
    """``copyHPAScalingRules``: every non-nil field of ``source`` overrides the default (a source
    that sets every field the defaults set is already the result)."""
    if source is None:
        return defaults
    if (
        (
            source.stabilization_window_seconds is not None
            or defaults.stabilization_window_seconds is None
        )
        and (source.select_policy is not None or defaults.select_policy is None)
        and (source.policies is not None or defaults.policies is None)
        and (source.tolerance is not None or defaults.tolerance is None)
    ):
        return source
    return ScalingRules(
        stabilization_window_seconds=(
            source.stabilization_window_seconds
            if source.stabilization_window_seconds is not None
            else defaults.stabilization_window_seconds
        ),
        select_policy=(
            source.select_policy if source.select_policy is not None else defaults.select_policy
        ),
        policies=source.policies if source.policies is not None else defaults.policies,
        tolerance=source.tolerance if source.tolerance is not None else defaults.tolerance,
    )


def generate_scale_up_rules(rules: ScalingRules | None) -> ScalingRules:
    """``GenerateHPAScaleUpRules``: a fully-initialized scale-up rule set."""
    return _copy_scaling_rules(rules, DEFAULT_SCALE_UP_RULES)


def generate_scale_down_rules(rules: ScalingRules | None) -> ScalingRules:
    """``GenerateHPAScaleDownRules``: fully initialized except the stabilization window."""
    return _copy_scaling_rules(rules, DEFAULT_SCALE_DOWN_RULES)


def default_behavior(
    behavior: HorizontalPodAutoscalerBehavior | None,
) -> HorizontalPodAutoscalerBehavior | None:
    """``SetDefaults_HorizontalPodAutoscalerBehavior``: only a non-nil behavior is defaulted."""
    if behavior is None:
        return None
    return HorizontalPodAutoscalerBehavior(
        scale_up=generate_scale_up_rules(behavior.scale_up),
        scale_down=generate_scale_down_rules(behavior.scale_down),
    )


@dataclass(frozen=True, slots=True)
class HorizontalPodAutoscalerSpec:
    """``autoscalingv2.HorizontalPodAutoscalerSpec`` (what the decision reads)."""

    scale_target_ref: CrossVersionObjectReference
    max_replicas: int
    min_replicas: int | None = None
    metrics: tuple[MetricSpec, ...] = ()
    behavior: HorizontalPodAutoscalerBehavior | None = None


def default_spec(spec: HorizontalPodAutoscalerSpec) -> HorizontalPodAutoscalerSpec:
    """``SetDefaults_HorizontalPodAutoscaler``: minReplicas 1, cpu 80 % if no metrics, behavior."""
    metrics = spec.metrics or (
        MetricSpec.for_resource(
            ResourceMetricSource(
                name="cpu",
                target=MetricTarget(
                    type=MetricTargetType.UTILIZATION,
                    average_utilization=DEFAULT_CPU_UTILIZATION,
                ),
            )
        ),
    )
    return replace(
        spec,
        min_replicas=1 if spec.min_replicas is None else spec.min_replicas,
        metrics=metrics,
        behavior=default_behavior(spec.behavior),
    )


@dataclass(frozen=True, slots=True)
class HorizontalSettings:
    """Controller flags the algorithm reads (``HPAControllerConfiguration`` + package variables).

    Every field keeps the upstream default. The feature gates default to the newest upstream
    behaviour this project follows (see ``docs/hpa-core.md``).
    """

    tolerance: float = 0.1
    """``--horizontal-pod-autoscaler-tolerance`` (ratio, both directions)."""
    cpu_initialization_period_seconds: float = 300.0
    """``--horizontal-pod-autoscaler-cpu-initialization-period`` in seconds (5 min)."""
    initial_readiness_delay_seconds: float = 30.0
    """``--horizontal-pod-autoscaler-initial-readiness-delay`` in seconds."""
    downscale_stabilization_seconds: int = 300
    """``--horizontal-pod-autoscaler-downscale-stabilization`` in seconds (5 min)."""
    scale_up_limit_factor: float = 2.0
    """``scaleUpLimitFactor``: legacy (no behavior) scale-up cap as a multiple of current."""
    scale_up_limit_minimum: float = 4.0
    """``scaleUpLimitMinimum``: legacy scale-up cap floor, in replicas."""
    scale_to_zero_enabled: bool = True
    """Feature gate ``HPAScaleToZero`` (beta, on by default in 1.37; KEP-2021)."""
    configurable_tolerance_enabled: bool = True
    """Feature gate ``HPAConfigurableTolerance`` (per-direction ``tolerance`` in behavior)."""
    resize_aware_utilization: bool = True
    """Ours (on by default): during an in-place resize, utilization is measured against the
    requests the kubelet applied, not the new spec's (off is upstream; see ``docs/hpa-core.md``)."""


@dataclass(frozen=True, slots=True)
class ResolvedRules:
    """Both directions of a behavior, fully defaulted, scale-down window filled from the flag."""

    scale_up: ScalingRules
    scale_down: ScalingRules
    scale_up_stabilization_window_seconds: int = field(init=False)
    scale_down_stabilization_window_seconds: int = field(init=False)

    def __post_init__(self) -> None:
        up = self.scale_up.stabilization_window_seconds
        down = self.scale_down.stabilization_window_seconds
        object.__setattr__(self, "scale_up_stabilization_window_seconds", up or 0)
        object.__setattr__(self, "scale_down_stabilization_window_seconds", down or 0)


def resolve_behavior(
    behavior: HorizontalPodAutoscalerBehavior, settings: HorizontalSettings
) -> ResolvedRules:
    """Default both directions, then ``maybeInitScaleDownStabilizationWindow``."""
    scale_up = generate_scale_up_rules(behavior.scale_up)
    scale_down = generate_scale_down_rules(behavior.scale_down)
    if scale_down.stabilization_window_seconds is None:
        scale_down = ScalingRules(
            stabilization_window_seconds=settings.downscale_stabilization_seconds,
            select_policy=scale_down.select_policy,
            policies=scale_down.policies,
            tolerance=scale_down.tolerance,
        )
    return ResolvedRules(scale_up=scale_up, scale_down=scale_down)
