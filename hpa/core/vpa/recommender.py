"""One VPA's recommendation from its aggregate container states, with its explanation.

Upstream counterpart: kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/recommender/logic/recommender.go`` (``RecommendationConfig``,
``CreatePodResourceRecommender``, ``GetRecommendedPodResources``, ``FilterControlledResources``,
``MapToListOfRecommendedContainerResources``), ``pkg/recommender/routines/recommender.go``
(``GetContainerNameToAggregateStateMap``: containers in mode Off are dropped before estimation,
so they do not count in the per-container minimum), ``routines/cpu_integer_post_processor.go``
and ``routines/capping_post_processor.go`` with ``pkg/utils/vpa/capping.go``'s
``ApplyVPAPolicy`` (minAllowed/maxAllowed; the global maximum fills in resources the policy's
maxAllowed leaves out). ``uncapped_target`` is the target before capping, as upstream copies it.

The chains, per resource (upstream's defaults):

* target = percentile 0.9 → + 15 % margin → ≥ per-container minimum
* lower bound = percentile 0.5 → + margin → x (1 + 0.001/confidence)^-2 → ≥ minimum
* upper bound = percentile 0.95 → + margin → x (1 + 1/confidence)^1 → ≥ minimum

The per-container minimum is 25 m CPU and 250 MiB per pod, split evenly among the VPA's
containers. Every recommendation carries an :class:`~hpa.core.explain.Explanation` built from the
estimators' steps (deferred: formatted only when read), unless the caller asks for none (the
recommender service, which never reads it).

Deliberate deviations: none in the arithmetic. The integer-CPU post-processor takes the set of
opted-in container names (read from the VPA's annotations
``vpa-post-processor.kubernetes.io/<container>_integerCPU`` by :func:`integer_cpu_containers`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from hpa.core.explain import Explanation, Stage, TraceEntry, TracePart
from hpa.core.vpa.aggregation import HOUR_NS, AggregateContainerState
from hpa.core.vpa.amount import (
    NO_RESOURCES,
    ResourceName,
    Resources,
    cpu_amount_from_cores,
    memory_amount_from_bytes,
    round_up_to_scale,
    scale_resource,
)
from hpa.core.vpa.estimator import (
    ConfidenceMultiplier,
    EstimationInput,
    Estimator,
    MarginEstimator,
    MinResourceEstimator,
    PercentileEstimator,
)
from hpa.core.vpa.policy import (
    ContainerScalingMode,
    PodResourcePolicy,
    get_container_resource_policy,
)

__all__ = [
    "INTEGER_CPU_ANNOTATION_PREFIX",
    "INTEGER_CPU_ANNOTATION_SUFFIX",
    "PodResourceRecommender",
    "RecommendationConfig",
    "RecommendationFormat",
    "RecommendedContainerResources",
    "RecommendedPodResources",
    "apply_integer_cpu",
    "apply_vpa_policy",
    "create_pod_resource_recommender",
    "format_amount",
    "get_container_name_to_aggregate_state_map",
    "integer_cpu_containers",
    "map_to_list_of_recommended_container_resources",
    "recommend",
]

INTEGER_CPU_ANNOTATION_PREFIX = "vpa-post-processor.kubernetes.io/"
INTEGER_CPU_ANNOTATION_SUFFIX = "_integerCPU"
_BOUNDS = ("target", "lower_bound", "upper_bound")
_NO_EXPLANATION = Explanation()
_RESOURCES = (ResourceName.CPU, ResourceName.MEMORY)


@dataclass(frozen=True, slots=True)
class RecommendationConfig:
    """The recommender's flags (``RecommendationConfig``), upstream's defaults:
    ``--recommendation-margin-fraction``, ``--pod-recommendation-min-cpu-millicores``,
    ``--pod-recommendation-min-memory-mb`` (MiB), ``--target-cpu-percentile``,
    ``--recommendation-lower-bound-cpu-percentile``,
    ``--recommendation-upper-bound-cpu-percentile``,
    ``--confidence-interval-cpu`` and the memory forms."""

    safety_margin_fraction: float = 0.15
    pod_min_cpu_millicores: float = 25.0
    pod_min_memory_mb: float = 250.0
    target_cpu_percentile: float = 0.9
    lower_bound_cpu_percentile: float = 0.5
    upper_bound_cpu_percentile: float = 0.95
    confidence_interval_cpu_ns: int = 24 * HOUR_NS
    target_memory_percentile: float = 0.9
    lower_bound_memory_percentile: float = 0.5
    upper_bound_memory_percentile: float = 0.95
    confidence_interval_memory_ns: int = 24 * HOUR_NS

    def __post_init__(self) -> None:
        for name in (
            "target_cpu_percentile",
            "lower_bound_cpu_percentile",
            "upper_bound_cpu_percentile",
            "target_memory_percentile",
            "lower_bound_memory_percentile",
            "upper_bound_memory_percentile",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        for name in ("safety_margin_fraction", "pod_min_cpu_millicores", "pod_min_memory_mb"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        for name in ("confidence_interval_cpu_ns", "confidence_interval_memory_ns"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


@dataclass(frozen=True, slots=True)
class RecommendationFormat:
    """How amounts are written (``--round-cpu-millicores``, ``--round-memory-bytes``): rounded up
    to a multiple (1 = unchanged)."""

    round_cpu_millicores: int = 1
    round_memory_bytes: int = 1


@dataclass(frozen=True, slots=True)
class RecommendedContainerResources:
    """One container's recommendation; ``uncapped_target`` is the target before policy capping."""

    container_name: str
    target: Resources
    lower_bound: Resources
    upper_bound: Resources
    uncapped_target: Resources


@dataclass(frozen=True, slots=True)
class RecommendedPodResources:
    """Every container's recommendation, sorted by name, and how it was reached."""

    container_recommendations: tuple[RecommendedContainerResources, ...] = ()
    explanation: Explanation = _NO_EXPLANATION

    def get(self, container_name: str) -> RecommendedContainerResources | None:
        for recommendation in self.container_recommendations:
            if recommendation.container_name == container_name:
                return recommendation
        return None


def format_amount(resource: ResourceName, amount: int) -> str:
    """``525m`` for CPU, ``268435456 (256.00Mi)`` for memory."""
    if resource is ResourceName.CPU:
        return f"{amount}m"
    return f"{amount} ({amount / 1048576:.2f}Mi)"


@dataclass(frozen=True, slots=True)
class PodResourceRecommender:
    """Six estimator chains and the per-pod minimum (``podResourceRecommender``).

    The chains with the per-container minimum are built once per minimum; a container's six
    chains read one :class:`~hpa.core.vpa.estimator.EstimationInput` (its confidence computed
    once, and shared with the previous container when their sample histories are the same)."""

    target_cpu: Estimator
    target_memory: Estimator
    lower_bound_cpu: Estimator
    lower_bound_memory: Estimator
    upper_bound_cpu: Estimator
    upper_bound_memory: Estimator
    min_cpu_millicores: float = 0.0
    min_memory_mb: float = 0.0
    confidence_interval_cpu_ns: int = 24 * HOUR_NS
    confidence_interval_memory_ns: int = 24 * HOUR_NS
    _chains: dict[tuple[int, int], tuple[tuple[Estimator, ResourceName, str], ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def chains(
        self, min_cpu: int, min_memory: int
    ) -> tuple[tuple[Estimator, ResourceName, str], ...]:
        """The six chains with the per-container minimum applied, in upstream's order (built
        once per minimum)."""
        built = self._chains.get((min_cpu, min_memory))
        if built is None:
            built = self._chains[(min_cpu, min_memory)] = self._build_chains(min_cpu, min_memory)
        return built

    def _build_chains(
        self, min_cpu: int, min_memory: int
    ) -> tuple[tuple[Estimator, ResourceName, str], ...]:
        cpu, memory = ResourceName.CPU, ResourceName.MEMORY
        return (
            (MinResourceEstimator(min_cpu, self.target_cpu), cpu, "target"),
            (MinResourceEstimator(min_memory, self.target_memory), memory, "target"),
            (MinResourceEstimator(min_cpu, self.lower_bound_cpu), cpu, "lower_bound"),
            (MinResourceEstimator(min_memory, self.lower_bound_memory), memory, "lower_bound"),
            (MinResourceEstimator(min_cpu, self.upper_bound_cpu), cpu, "upper_bound"),
            (MinResourceEstimator(min_memory, self.upper_bound_memory), memory, "upper_bound"),
        )

    def get_recommended_pod_resources(
        self,
        container_name_to_aggregate_state_map: Mapping[str, AggregateContainerState],
        *,
        explain: bool = True,
    ) -> tuple[dict[str, tuple[Resources, Resources, Resources]], tuple[TracePart, ...]]:
        """Target, lower and upper bound per container (``GetRecommendedPodResources``) and, with
        ``explain``, the trace parts that explain them (without, the estimators record nothing)."""
        recommendation: dict[str, tuple[Resources, Resources, Resources]] = {}
        parts: list[TracePart] = []
        if not container_name_to_aggregate_state_map:
            return recommendation, ()
        fraction = 1.0 / float(len(container_name_to_aggregate_state_map))
        min_cpu = scale_resource(cpu_amount_from_cores(self.min_cpu_millicores * 0.001), fraction)
        min_memory = scale_resource(
            memory_amount_from_bytes(self.min_memory_mb * 1024 * 1024), fraction
        )
        chains = self.chains(min_cpu, min_memory)
        names = list(container_name_to_aggregate_state_map)
        inputs: list[EstimationInput] = []
        like: EstimationInput | None = None
        for state in container_name_to_aggregate_state_map.values():
            like = EstimationInput(state, like=like)
            inputs.append(like)
        records: list[list[float]] | None = [[] for _ in names] if explain else None
        target_cpu, target_memory, lower_cpu, lower_memory, upper_cpu, upper_memory = (
            estimator.estimate_all(inputs, records) for estimator, _, _ in chains
        )
        for i, container_name in enumerate(names):
            state = inputs[i].state
            controlled = state.get_controlled_resources()
            target = Resources(cpu=target_cpu[i], memory=target_memory[i])
            lower = Resources(cpu=lower_cpu[i], memory=lower_memory[i])
            upper = Resources(cpu=upper_cpu[i], memory=upper_memory[i])
            if len(controlled) < len(_RESOURCES):
                target = target.filtered(controlled)
                lower = lower.filtered(controlled)
                upper = upper.filtered(controlled)
            recommendation[container_name] = (target, lower, upper)
            if records is None:
                continue
            parts.append(
                (
                    _estimation_entries,
                    (
                        container_name,
                        state.total_samples_count,
                        state.first_sample_start_ns,
                        state.last_sample_start_ns,
                        state.aggregate_cpu_usage.total_weight,
                        state.aggregate_memory_peaks.total_weight,
                        min_cpu,
                        min_memory,
                        self,
                        controlled,
                        tuple(records[i]),
                    ),
                )
            )
        return recommendation, tuple(parts)


def _estimation_entries(
    container_name: str,
    total_samples_count: int,
    first_sample_start_ns: int,
    last_sample_start_ns: int,
    cpu_total_weight: float,
    memory_total_weight: float,
    min_cpu: int,
    min_memory: int,
    recommender: PodResourceRecommender,
    controlled: frozenset[ResourceName],
    recorded: tuple[float, ...],
) -> list[TraceEntry]:
    entries = [
        TraceEntry(
            Stage.SAMPLES,
            f"container {container_name}: {total_samples_count} CPU samples",
            (
                ("first_sample_start_ns", first_sample_start_ns),
                ("last_sample_start_ns", last_sample_start_ns),
                ("cpu_histogram_total_weight", cpu_total_weight),
                ("memory_peaks_total_weight", memory_total_weight),
                ("per_container_minimum_cpu", format_amount(ResourceName.CPU, min_cpu)),
                ("per_container_minimum_memory", format_amount(ResourceName.MEMORY, min_memory)),
            ),
        )
    ]
    numbers = iter(recorded)
    for estimator, resource, bound in recommender.chains(min_cpu, min_memory):
        steps = estimator.describe(numbers)
        if resource not in controlled:
            continue
        final = int(steps[-1][1]) if steps else 0
        entries.append(
            TraceEntry(
                Stage.ESTIMATION,
                f"container {container_name} {resource} {bound}: {format_amount(resource, final)}",
                tuple((label, format_amount(resource, int(amount))) for label, amount in steps),
            )
        )
    return entries


def create_pod_resource_recommender(
    config: RecommendationConfig = RecommendationConfig(),
) -> PodResourceRecommender:
    """Upstream's estimator chains from the flags (``CreatePodResourceRecommender``). The target
    percentiles honour a container's ``targetCPUPercentile``/``targetMemoryPercentile``."""
    cpu, memory = ResourceName.CPU, ResourceName.MEMORY
    margin = config.safety_margin_fraction
    target_cpu = MarginEstimator(
        margin, PercentileEstimator(cpu, config.target_cpu_percentile, per_container_override=True)
    )
    target_memory = MarginEstimator(
        margin,
        PercentileEstimator(memory, config.target_memory_percentile, per_container_override=True),
    )
    lower_cpu = MarginEstimator(margin, PercentileEstimator(cpu, config.lower_bound_cpu_percentile))
    lower_memory = MarginEstimator(
        margin, PercentileEstimator(memory, config.lower_bound_memory_percentile)
    )
    upper_cpu = MarginEstimator(margin, PercentileEstimator(cpu, config.upper_bound_cpu_percentile))
    upper_memory = MarginEstimator(
        margin, PercentileEstimator(memory, config.upper_bound_memory_percentile)
    )
    return PodResourceRecommender(
        target_cpu=target_cpu,
        target_memory=target_memory,
        lower_bound_cpu=ConfidenceMultiplier(
            0.001, -2.0, lower_cpu, config.confidence_interval_cpu_ns
        ),
        lower_bound_memory=ConfidenceMultiplier(
            0.001, -2.0, lower_memory, config.confidence_interval_memory_ns
        ),
        upper_bound_cpu=ConfidenceMultiplier(
            1.0, 1.0, upper_cpu, config.confidence_interval_cpu_ns
        ),
        upper_bound_memory=ConfidenceMultiplier(
            1.0, 1.0, upper_memory, config.confidence_interval_memory_ns
        ),
        min_cpu_millicores=config.pod_min_cpu_millicores,
        min_memory_mb=config.pod_min_memory_mb,
        confidence_interval_cpu_ns=config.confidence_interval_cpu_ns,
        confidence_interval_memory_ns=config.confidence_interval_memory_ns,
    )


def get_container_name_to_aggregate_state_map(
    states: Mapping[str, AggregateContainerState],
    policy: PodResourcePolicy | None,
    *,
    per_vpa_config: bool,
) -> dict[str, AggregateContainerState]:
    """Drop containers whose policy mode is Off; update the others from their policy
    (``GetContainerNameToAggregateStateMap``)."""
    result: dict[str, AggregateContainerState] = {}
    for container_name, state in states.items():
        container_policy = get_container_resource_policy(container_name, policy)
        if container_policy is not None and container_policy.mode is ContainerScalingMode.OFF:
            continue
        state.update_from_policy(container_policy, per_vpa_config=per_vpa_config)
        result[container_name] = state
    return result


_UNROUNDED = RecommendationFormat()


def _rounded(resources: Resources, recommendation_format: RecommendationFormat) -> Resources:
    cpu, memory = resources.cpu, resources.memory
    if cpu is not None and cpu != 0 and recommendation_format.round_cpu_millicores != 1:
        cpu = round_up_to_scale(cpu, recommendation_format.round_cpu_millicores)
    if memory is not None and memory != 0 and recommendation_format.round_memory_bytes != 1:
        memory = round_up_to_scale(memory, recommendation_format.round_memory_bytes)
    return Resources(cpu=cpu, memory=memory)


def map_to_list_of_recommended_container_resources(
    resources: Mapping[str, tuple[Resources, Resources, Resources]],
    recommendation_format: RecommendationFormat = RecommendationFormat(),
) -> tuple[RecommendedContainerResources, ...]:
    """Sorted by container name, rounded, ``uncapped_target`` = target
    (``MapToListOfRecommendedContainerResources``)."""
    result: list[RecommendedContainerResources] = []
    unrounded = recommendation_format == _UNROUNDED
    for name in sorted(resources):
        target, lower, upper = resources[name]
        if not unrounded:
            target = _rounded(target, recommendation_format)
            lower = _rounded(lower, recommendation_format)
            upper = _rounded(upper, recommendation_format)
        result.append(RecommendedContainerResources(name, target, lower, upper, target))
    return tuple(result)


def integer_cpu_containers(annotations: Mapping[str, str]) -> frozenset[str]:
    """Containers opted in to whole-core CPU by the annotation
    ``vpa-post-processor.kubernetes.io/<name>_integerCPU: "true"`` (``extractContainerName``)."""
    names: set[str] = set()
    for key, value in annotations.items():
        if (
            value == "true"
            and key.startswith(INTEGER_CPU_ANNOTATION_PREFIX)
            and key.endswith(INTEGER_CPU_ANNOTATION_SUFFIX)
            and len(key) >= len(INTEGER_CPU_ANNOTATION_PREFIX) + len(INTEGER_CPU_ANNOTATION_SUFFIX)
        ):
            name = key[
                len(INTEGER_CPU_ANNOTATION_PREFIX) : len(key) - len(INTEGER_CPU_ANNOTATION_SUFFIX)
            ]
            if name:
                names.add(name)
    return frozenset(names)


def _whole_cores(resources: Resources) -> Resources:
    if resources.cpu is None:
        return resources
    return replace(resources, cpu=-(-resources.cpu // 1000) * 1000)


def apply_integer_cpu(
    recommendations: Sequence[RecommendedContainerResources], containers: frozenset[str]
) -> tuple[tuple[RecommendedContainerResources, ...], tuple[TraceEntry, ...]]:
    """Round CPU up to whole cores in every field of the opted-in containers
    (``IntegerCPUPostProcessor``)."""
    if not containers:
        return tuple(recommendations), ()
    result: list[RecommendedContainerResources] = []
    entries: list[TraceEntry] = []
    for r in recommendations:
        if r.container_name not in containers:
            result.append(r)
            continue
        rounded = RecommendedContainerResources(
            container_name=r.container_name,
            target=_whole_cores(r.target),
            lower_bound=_whole_cores(r.lower_bound),
            upper_bound=_whole_cores(r.upper_bound),
            uncapped_target=_whole_cores(r.uncapped_target),
        )
        result.append(rounded)
        entries.append(
            TraceEntry(
                Stage.POST_PROCESSING,
                f"container {r.container_name}: cpu rounded up to whole cores",
                (("target", f"{r.target.cpu}m -> {rounded.target.cpu}m"),),
            )
        )
    return tuple(result), tuple(entries)


def _cap(
    value: int, minimum: int | None, maximum: int | None
) -> tuple[int, str | None, int | None]:
    """``maybeCapToMin`` then ``maybeCapToMax`` (zero bounds ignored): the value, which bound
    applied, and that bound."""
    applied: str | None = None
    bound: int | None = None
    if minimum is not None and minimum != 0 and value < minimum:
        value, applied, bound = minimum, "minAllowed", minimum
    if maximum is not None and maximum != 0 and value > maximum:
        value, applied, bound = maximum, "maxAllowed", maximum
    return value, applied, bound


def apply_vpa_policy(
    recommendations: Sequence[RecommendedContainerResources],
    policy: PodResourcePolicy | None,
    global_max_allowed: Resources = NO_RESOURCES,
) -> tuple[tuple[RecommendedContainerResources, ...], tuple[TraceEntry, ...]]:
    """Cap target and bounds to the container policy's ``minAllowed``/``maxAllowed`` (the global
    maximum, ``--container-recommendation-max-allowed-cpu/-memory``, for resources the policy's
    ``maxAllowed`` does not name); ``uncapped_target`` stays (``ApplyVPAPolicy``)."""
    no_global_max = global_max_allowed == NO_RESOURCES
    if policy is None and no_global_max:
        return tuple(recommendations), ()
    result: list[RecommendedContainerResources] = []
    entries: list[TraceEntry] = []
    for r in recommendations:
        container_policy = get_container_resource_policy(r.container_name, policy)
        if container_policy is None and no_global_max:
            result.append(r)
            continue
        min_allowed = container_policy.min_allowed if container_policy is not None else NO_RESOURCES
        max_allowed = container_policy.max_allowed if container_policy is not None else NO_RESOURCES
        maximum = Resources(
            cpu=max_allowed.cpu if max_allowed.cpu is not None else global_max_allowed.cpu,
            memory=(
                max_allowed.memory if max_allowed.memory is not None else global_max_allowed.memory
            ),
        )
        capped: dict[str, Resources] = {}
        for field_name in _BOUNDS:
            resources: Resources = getattr(r, field_name)
            new: dict[str, int | None] = {"cpu": resources.cpu, "memory": resources.memory}
            for resource, value in resources.items():
                new_value, applied, bound = _cap(
                    value, min_allowed.get(resource), maximum.get(resource)
                )
                new[resource.value] = new_value
                if applied is not None and bound is not None:
                    entries.append(
                        TraceEntry(
                            Stage.CAPPING,
                            f"container {r.container_name} {resource} {field_name} capped to "
                            f"{applied}",
                            (
                                ("uncapped", format_amount(resource, value)),
                                (applied, format_amount(resource, bound)),
                            ),
                        )
                    )
            capped[field_name] = Resources(cpu=new["cpu"], memory=new["memory"])
        result.append(
            RecommendedContainerResources(
                container_name=r.container_name,
                target=capped["target"],
                lower_bound=capped["lower_bound"],
                upper_bound=capped["upper_bound"],
                uncapped_target=r.uncapped_target,
            )
        )
    return tuple(result), tuple(entries)


def recommend(
    states: Mapping[str, AggregateContainerState],
    *,
    recommender: PodResourceRecommender,
    policy: PodResourcePolicy | None = None,
    per_vpa_config: bool = False,
    recommendation_format: RecommendationFormat = RecommendationFormat(),
    integer_cpu: frozenset[str] = frozenset(),
    global_max_allowed: Resources = NO_RESOURCES,
    explain: bool = True,
) -> RecommendedPodResources:
    """The recommender's pass for one VPA (``processVPAUpdate`` up to the status): drop containers
    in mode Off, estimate, sort and round, the integer-CPU post-processor (for ``integer_cpu``;
    empty unless ``--cpu-integer-post-processor-enabled``), then policy capping. Without
    ``explain`` the estimation steps are not traced (the post-processors' and capping's
    entries still are)."""
    filtered = get_container_name_to_aggregate_state_map(
        states, policy, per_vpa_config=per_vpa_config
    )
    resources, parts = recommender.get_recommended_pod_resources(filtered, explain=explain)
    listed = map_to_list_of_recommended_container_resources(resources, recommendation_format)
    listed, integer_entries = apply_integer_cpu(listed, integer_cpu)
    capped, capping_entries = apply_vpa_policy(listed, policy, global_max_allowed)
    return RecommendedPodResources(
        container_recommendations=capped,
        explanation=Explanation((*parts, *integer_entries, *capping_entries)),
    )
