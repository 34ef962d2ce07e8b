"""The ``group-aware`` recommender: per-pod usage as a function of per-pod load, recommended at
the per-pod load an HPA holds the workload at.

Upstream counterpart: none. The VPA design proposal ("Combining vertical and horizontal
scaling") names the problem: when an HPA changes the number of replicas, the usage of the
resources the VPA controls changes with it, so a percentile of usage over a history of different
group sizes mixes loads the workload will not see again. This model takes the group size into
account, for a resource the VPA controls while an HPA scales the workload on another one.

Each usage sample carries the replica count of the target's scale when it was taken and, when
known, the per-pod load: the per-pod value of the metric the HPA scales on (:func:`hpa_load`,
from the HPA's ``status.currentMetrics``), or ``1 / replicas`` when no HPA metric is known (the
total load, taken as constant, shared by the pods). Under an HPA the total load moves with the
replica count (the HPA adds pods because the total load rose), so ``1 / replicas`` says little
about a pod's load there; the metric's per-pod value is what the HPA holds near its target.
For a ``Resource`` or ``ContainerResource`` metric the load of a sample is the pod's own usage of
that resource in the same metrics sample as the recorded usage (``usage`` of :func:`hpa_load`):
the load of the same instant, where the HPA's status is up to one sync period older.
The model is the weighted least-squares line through the samples::

    usage = a + b * load

and the estimate at the target load ``L*`` (the per-pod value of the HPA's ``spec.metrics`` target
for that metric, or ``1 / current replicas`` for the ``1 / replicas`` load) times the headroom
``h`` is::

    h        = max(1, q_0.95(load_i / L*_i))          (1 for the 1 / replicas load)
    estimate = clamp(a + b * clamp(h * L*, load_min, load_max) + q_p(residuals),
                     usage_min, usage_max)

where ``L*_i`` is the target when sample ``i`` was taken, ``q_0.95`` the weighted 95th percentile
(:attr:`GroupAwareConfig.load_percentile`): how far above its target the HPA let the per-pod load
go before it scaled up; ``q_p(residuals)`` is the weighted ``p``-percentile of
``usage - (a + b * load)`` over the samples (the spread at a given load), and both clamps keep the
estimate inside what was observed: the model never extrapolates beyond the loads seen, and never
recommends outside the range of observed per-pod usage.

Assumptions: usage is linear in per-pod load over the observed range (a fixed part per pod plus a
part per unit of load); the HPA keeps per-pod load near its target and overshoots it as it did in
the samples, so ``h * L*`` is the load to provision for; load is shared evenly by the pods.

It falls back to the plain model (the estimate passed in as ``plain``, unchanged) when:

* the target load is not known (no HPA scales the workload);
* fewer than ``min_samples`` samples, or fewer than ``min_distinct_replicas`` distinct replica
  counts (a workload whose replicas never change always falls back, so then the model *is* the
  plain one);
* the load does not vary, or usage falls as per-pod load rises (the slope is negative);
* the fit is poor: its coefficient of determination is below ``min_r_squared``.

Pure: the caller keeps the samples (bounded), and reads the target load from the HPA.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from hpa.core.decision import HorizontalPodAutoscalerStatus, MetricStatus
from hpa.core.explain import Stage, TraceEntry, TraceValue
from hpa.core.spec import (
    HorizontalPodAutoscalerSpec,
    MetricIdentifier,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    default_spec,
    format_label_selector,
)
from hpa.core.vpa.amount import NO_RESOURCES, ResourceName, Resources
from hpa.core.vpa.recommender import RecommendedContainerResources

__all__ = [
    "GROUP_AWARE_RECOMMENDER_NAME",
    "GroupAwareConfig",
    "GroupAwareEstimate",
    "GroupSample",
    "HpaLoad",
    "LinearFit",
    "LoadKind",
    "apply_group_size_model",
    "group_aware_estimate",
    "hpa_load",
    "load_headroom",
    "metric_loads",
    "weighted_percentile",
]

GROUP_AWARE_RECOMMENDER_NAME = "group-aware"
"""``spec.recommenders[].name`` that selects this model for a VPA (opt-in)."""


_FLAT = 1e-20
"""Relative variance of usage below which usage counts as constant (float rounding)."""


class LoadKind(StrEnum):
    """What the per-pod load of the samples is."""

    METRIC = "metric"
    """The per-pod value of the HPA's bottleneck metric."""
    INVERSE_REPLICAS = "1/replicas"
    """``1 / replicas``: the total load, taken as constant, shared by the pods."""


@dataclass(frozen=True, slots=True)
class GroupSample:
    """One usage sample of a container (cores or bytes per pod), the replica count of the
    target's scale when it was taken, and the per-pod load (None when not known)."""

    usage: float
    replicas: int
    load: float | None = None
    weight: float = 1.0
    target: float | None = None
    """The per-pod target load when the sample was taken (None: the target now)."""


@dataclass(frozen=True, slots=True)
class GroupAwareConfig:
    """When the model is trusted, and the percentile of the residuals it adds."""

    percentile: float = 0.9
    """Percentile of the residuals (the plain model's target percentile)."""
    load_percentile: float = 0.95
    """Percentile of the observed load over target that sets the headroom (``h``)."""
    min_samples: int = 10
    min_distinct_replicas: int = 3
    min_r_squared: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.percentile <= 1:
            raise ValueError(f"percentile: {self.percentile} is not in [0, 1]")
        if not 0 <= self.load_percentile <= 1:
            raise ValueError(f"load_percentile: {self.load_percentile} is not in [0, 1]")
        if self.min_samples < 2 or self.min_distinct_replicas < 2:
            raise ValueError("min_samples and min_distinct_replicas must be at least 2")
        if not 0 <= self.min_r_squared <= 1:
            raise ValueError(f"min_r_squared: {self.min_r_squared} is not in [0, 1]")


@dataclass(frozen=True, slots=True)
class LinearFit:
    """``usage = intercept + slope * load`` over the samples, with the observed ranges."""

    intercept: float
    slope: float
    r_squared: float
    samples: int
    distinct_replicas: int
    load_min: float
    load_max: float
    usage_min: float
    usage_max: float

    def at(self, load: float) -> float:
        return self.intercept + self.slope * load


@dataclass(frozen=True, slots=True)
class GroupAwareEstimate:
    """The estimate, and how it was reached: ``used_model`` False means ``value`` is the plain
    model's, for ``reason``."""

    value: float
    used_model: bool
    reason: str
    load_kind: LoadKind
    target_load: float | None
    fit: LinearFit | None = None
    residual: float | None = None
    provision_load: float | None = None
    """The load provisioned for: the target load times the headroom (``x_h``)."""

    def trace(self, subject: str) -> TraceEntry:
        """The ``group-size model`` entry of an explanation (``subject``: container and
        resource)."""
        details: list[tuple[str, TraceValue]] = [
            ("per-pod load", self.load_kind.value),
            ("target load", "unknown" if self.target_load is None else f"{self.target_load:.6g}"),
        ]
        fit = self.fit
        if fit is not None:
            details += [
                ("fit", f"usage = {fit.intercept:.6g} + {fit.slope:.6g} x load"),
                ("r squared", f"{fit.r_squared:.4f}"),
                ("samples", fit.samples),
                ("distinct replica counts", fit.distinct_replicas),
                ("observed load", f"[{fit.load_min:.6g}, {fit.load_max:.6g}]"),
                ("observed usage", f"[{fit.usage_min:.6g}, {fit.usage_max:.6g}]"),
            ]
        if self.provision_load is not None:
            details.append(("provisioned load", f"{self.provision_load:.6g}"))
        if self.residual is not None:
            details.append(("residual percentile", f"{self.residual:.6g}"))
        details.append(("estimate", f"{self.value:.6g}"))
        outcome = "group-size model" if self.used_model else f"plain model ({self.reason})"
        return TraceEntry(Stage.ESTIMATION, f"{subject}: {outcome}", tuple(details))


@dataclass(frozen=True, slots=True)
class HpaLoad:
    """The per-pod load of one of an HPA's metrics: its value now (``load``) and the value the
    HPA holds the workload at (``target``), in the metric's unit (cores or bytes for a resource,
    the metric's own unit otherwise); ``metric`` names the metric (samples are fitted only against
    samples of the same metric)."""

    metric: str
    load: float
    target: float

    @property
    def ratio(self) -> float:
        """``load / target``: the HPA's usage ratio, which its replica proposal follows."""
        return self.load / self.target


RequestOf = Callable[[str, str | None], float | None]
"""A pod's request of a resource (cores or bytes), of one container or, with None, summed over its
containers; None when a container has no request for it (the HPA cannot compute utilization)."""


def _milli(value: int | None) -> float | None:
    return None if value is None else value / 1000


def _resource_load(
    target: MetricTarget, observed: MetricStatus, request: float | None
) -> tuple[float | None, float | None]:
    current = observed.current
    if target.type == MetricTargetType.UTILIZATION:
        if target.average_utilization is None or request is None or request <= 0:
            return None, None
        load = _milli(current.average_value_milli)
        if load is None and current.average_utilization is not None:
            load = current.average_utilization / 100 * request
        return load, target.average_utilization / 100 * request
    return _milli(current.average_value_milli), _milli(target.average_value_milli)


def _value_load(target: MetricTarget, observed: MetricStatus) -> tuple[float | None, float | None]:
    current = observed.current
    if target.type == MetricTargetType.VALUE:
        return _milli(current.value_milli), _milli(target.value_milli)
    return _milli(current.average_value_milli), _milli(target.average_value_milli)


def _identity(metric: MetricIdentifier) -> str:
    if metric.selector is None:
        return metric.name
    return f"{metric.name}{{{format_label_selector(metric.selector)}}}"


def _metric_load(metric: MetricSpec, observed: MetricStatus, request: RequestOf) -> HpaLoad | None:
    """The per-pod load of ``metric`` as the HPA computed it (``observed``, its status entry)."""
    if observed.type != metric.type:
        return None  # a failed metric (type "") or a status written for another spec
    load: float | None
    target: float | None
    if metric.resource is not None and metric.type == MetricSourceType.RESOURCE:
        source = metric.resource
        if observed.name != source.name:
            return None
        name = f"Resource {source.name}"
        load, target = _resource_load(source.target, observed, request(source.name, None))
    elif metric.container_resource is not None and metric.type == (
        MetricSourceType.CONTAINER_RESOURCE
    ):
        c = metric.container_resource
        if observed.name != c.name or observed.container != c.container:
            return None
        name = f"ContainerResource {c.name} of {c.container}"
        load, target = _resource_load(c.target, observed, request(c.name, c.container))
    elif metric.pods is not None and metric.type == MetricSourceType.PODS:
        identity = metric.pods.metric
        name = f"Pods {_identity(identity)}"
        load, target = _value_load(metric.pods.target, observed)
    elif metric.object is not None and metric.type == MetricSourceType.OBJECT:
        o = metric.object
        described = f"{o.described_object.kind}/{o.described_object.name}"
        name = f"Object {described} {o.metric.name} {o.target.type}"
        load, target = _value_load(o.target, observed)
    elif metric.external is not None and metric.type == MetricSourceType.EXTERNAL:
        e = metric.external
        name = f"External {_identity(e.metric)} {e.target.type}"
        load, target = _value_load(e.target, observed)
    else:
        return None
    if load is None or target is None or not (math.isfinite(load) and math.isfinite(target)):
        return None
    if target <= 0 or load < 0:
        return None
    return HpaLoad(name, load, target)


def _spec_loads(
    spec: HorizontalPodAutoscalerSpec,
    status: HorizontalPodAutoscalerStatus | None,
    request: RequestOf,
) -> list[tuple[MetricSpec, HpaLoad]]:
    current = status.current_metrics if status is not None else None
    if not current:
        return []
    out = []
    for metric, observed in zip(default_spec(spec).metrics, current, strict=False):
        load = _metric_load(metric, observed, request)
        if load is not None:
            out.append((metric, load))
    return out


def metric_loads(
    spec: HorizontalPodAutoscalerSpec,
    status: HorizontalPodAutoscalerStatus | None,
    *,
    request: RequestOf,
) -> tuple[HpaLoad, ...]:
    """The per-pod load of each of the HPA's metrics that has a current value, in the spec's
    order. The HPA writes one ``status.currentMetrics`` entry per ``spec.metrics`` entry, in
    order (a failed one as the zero value); an entry that does not match its spec is skipped.

    Per metric, the load now and the target per pod:

    * ``Resource`` / ``ContainerResource``: ``averageValue`` (the pods' average usage); with a
      ``Utilization`` target and no ``averageValue``, ``averageUtilization`` x the pod's request
      (the container's, or the pod's sum). The target is ``averageValue``, or
      ``averageUtilization`` x the request.
    * ``Pods``: ``averageValue`` (the per-pod average), against the target's ``averageValue``.
    * ``Object`` / ``External``: with an ``AverageValue`` target, ``averageValue`` (the HPA divides
      the metric by the replicas); with a ``Value`` target, ``value`` against the target's
      ``value`` (the HPA proposes ``value / target`` x the ready pods, so it treats the value as
      proportional to the per-pod load).
    """
    return tuple(load for _, load in _spec_loads(spec, status, request))


def _own_usage(metric: MetricSpec, usage: RequestOf) -> float | None:
    """The sampled pod's own usage of a ``Resource`` / ``ContainerResource`` metric's resource."""
    if metric.resource is not None and metric.type == MetricSourceType.RESOURCE:
        return usage(metric.resource.name, None)
    c = metric.container_resource
    if c is not None and metric.type == MetricSourceType.CONTAINER_RESOURCE:
        return usage(c.name, c.container)
    return None


def hpa_load(
    spec: HorizontalPodAutoscalerSpec,
    status: HorizontalPodAutoscalerStatus | None,
    *,
    request: RequestOf,
    usage: RequestOf | None = None,
) -> HpaLoad | None:
    """The per-pod load of the metric the HPA is scaling on: of :func:`metric_loads`, the one
    with the highest usage ratio ``load / target`` (the HPA scales to the largest of its metrics'
    proposals, each ``ratio`` x the pods, so the highest ratio is the one that decided; the first
    of equal ones). None when no metric has a current value (no status yet, every metric
    failing).

    ``usage`` is the sampled pod's own usage of a resource (cores or bytes, of one container or,
    with None, summed over its containers) from the same metrics sample as the usage being
    recorded, None where that sample lacks it. For a ``Resource`` / ``ContainerResource`` metric
    it replaces the HPA's ``averageValue`` as the load now: the load of the same instant as the
    recorded usage, where the HPA's status is up to one sync period older."""
    best: tuple[MetricSpec, HpaLoad] | None = None
    for metric, load in _spec_loads(spec, status, request):
        if best is None or load.ratio > best[1].ratio:
            best = (metric, load)
    if best is None:
        return None
    metric, load = best
    own = None if usage is None else _own_usage(metric, usage)
    if own is None or not math.isfinite(own) or own < 0:
        return load
    return replace(load, load=own)


def weighted_percentile(values: Sequence[float], weights: Sequence[float], p: float) -> float:
    """The smallest value whose cumulative weight reaches ``p`` of the total (sorted ascending),
    as the VPA histogram's ``Percentile`` reads its buckets."""
    pairs = sorted(zip(values, weights, strict=True))
    total = sum(w for _, w in pairs)
    threshold = p * total
    running = 0.0
    for value, weight in pairs:
        running += weight
        if running >= threshold:
            return value
    return pairs[-1][0]


def load_headroom(
    loads: Sequence[tuple[float, float]], weights: Sequence[float], p: float
) -> float:
    """``h = max(1, q_p(load_i / target_i))``: how far above its target the HPA lets the per-pod
    load go (``loads``: each sample's load and the per-pod target when it was taken), the weighted
    ``p``-percentile of the ratio, never below 1 (the model never provisions below the target).
    1 when there is no sample."""
    if not loads:
        return 1.0
    ratios = [load / target for load, target in loads]
    return max(1.0, weighted_percentile(ratios, weights, p))


def _fallback(
    plain: float, reason: str, kind: LoadKind, target: float | None, fit: LinearFit | None = None
) -> GroupAwareEstimate:
    return GroupAwareEstimate(plain, False, reason, kind, target, fit)


def _fit(
    xs: Sequence[float], ys: Sequence[float], ws: Sequence[float], *, distinct_replicas: int
) -> LinearFit | None:
    total = sum(ws)
    mean_x = sum(w * x for x, w in zip(xs, ws, strict=True)) / total
    mean_y = sum(w * y for y, w in zip(ys, ws, strict=True)) / total
    sxx = sum(w * (x - mean_x) ** 2 for x, w in zip(xs, ws, strict=True))
    if sxx <= 0 or not math.isfinite(sxx):
        return None
    sxy = sum(w * (x - mean_x) * (y - mean_y) for x, y, w in zip(xs, ys, ws, strict=True))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    total_ss = sum(w * (y - mean_y) ** 2 for y, w in zip(ys, ws, strict=True))
    residual_ss = sum(
        w * (y - intercept - slope * x) ** 2 for x, y, w in zip(xs, ys, ws, strict=True)
    )
    # usage that does not vary (beyond rounding) is fitted exactly by the flat line
    flat = total_ss <= _FLAT * total * max(mean_y * mean_y, 1.0)
    if flat:
        slope, intercept = 0.0, mean_y
    r_squared = 1.0 if flat else max(0.0, 1.0 - residual_ss / total_ss)
    return LinearFit(
        intercept=intercept,
        slope=slope,
        r_squared=r_squared,
        samples=len(xs),
        distinct_replicas=distinct_replicas,
        load_min=min(xs),
        load_max=max(xs),
        usage_min=min(ys),
        usage_max=max(ys),
    )


def group_aware_estimate(
    samples: Sequence[GroupSample],
    *,
    target_load: float | None,
    plain: float,
    config: GroupAwareConfig | None = None,
) -> GroupAwareEstimate:
    """The per-pod usage to provision at ``target_load`` (see the module's formula), or
    ``plain`` (the plain model's estimate for the same resource) when the model falls back.

    ``target_load`` is in the samples' load unit: the HPA's per-pod target when every sample has
    a load, else ``1 / desired replicas``. Samples with a non-positive weight or replica count,
    or a non-finite value, are ignored."""
    config = config or GroupAwareConfig()
    usable = [
        s
        for s in samples
        if s.weight > 0
        and s.replicas > 0
        and math.isfinite(s.usage)
        and (s.load is None or math.isfinite(s.load))
    ]
    kind = (
        LoadKind.METRIC
        if usable and all(s.load is not None for s in usable)
        else LoadKind.INVERSE_REPLICAS
    )
    if target_load is None or not math.isfinite(target_load):
        return _fallback(plain, "no target load: no HPA scales the workload", kind, None)
    if len(usable) < config.min_samples:
        return _fallback(
            plain, f"too few samples ({len(usable)} < {config.min_samples})", kind, target_load
        )
    distinct = len({s.replicas for s in usable})
    if distinct < config.min_distinct_replicas:
        return _fallback(
            plain,
            f"too few distinct replica counts ({distinct} < {config.min_distinct_replicas})",
            kind,
            target_load,
        )
    xs = [
        float(s.load) if kind is LoadKind.METRIC and s.load is not None else 1.0 / s.replicas
        for s in usable
    ]
    ys = [s.usage for s in usable]
    ws = [s.weight for s in usable]
    fit = _fit(xs, ys, ws, distinct_replicas=distinct)
    if fit is None:
        return _fallback(plain, "the per-pod load does not vary", kind, target_load)
    if fit.slope < 0:
        return _fallback(plain, "usage falls as per-pod load rises", kind, target_load, fit)
    if fit.r_squared < config.min_r_squared:
        return _fallback(
            plain,
            f"poor fit (r squared {fit.r_squared:.3f} < {config.min_r_squared})",
            kind,
            target_load,
            fit,
        )
    provision = target_load
    if kind is LoadKind.METRIC:
        targets = [target_load if s.target is None else s.target for s in usable]
        provision = target_load * load_headroom(
            list(zip(xs, targets, strict=True)), ws, config.load_percentile
        )
    load = min(max(provision, fit.load_min), fit.load_max)
    residuals = [y - fit.at(x) for x, y in zip(xs, ys, strict=True)]
    residual = weighted_percentile(residuals, ws, config.percentile)
    value = min(max(fit.at(load) + residual, fit.usage_min), fit.usage_max)
    return GroupAwareEstimate(value, True, "fit", kind, target_load, fit, residual, provision)


def _with(resources: Resources, resource: ResourceName, amount: int) -> Resources:
    return replace(resources, **{resource.value: amount})


def apply_group_size_model(
    recommendations: Sequence[RecommendedContainerResources],
    samples: Mapping[tuple[str, ResourceName], Sequence[GroupSample]],
    *,
    target_load: float | None,
    excluded: Callable[[str, ResourceName], bool],
    safety_margin_fraction: float = 0.15,
    minimum: Resources = NO_RESOURCES,
    config: GroupAwareConfig | None = None,
) -> tuple[tuple[RecommendedContainerResources, ...], tuple[TraceEntry, ...]]:
    """The plain model's recommendations (before policy capping: ``uncapped_target``) with each
    resource's target replaced by the group-size estimate plus the safety margin, where the model
    answers, at least ``minimum`` (the per-container share of the per-pod minimum, as the plain
    model applies it); the plain model's bounds are scaled by the same factor as its target (at
    least holding the new target), so the band in which the updater leaves pods alone keeps its
    relative width. Resources ``excluded`` (an HPA
    scales the workload on them) and resources the plain model did not recommend are left alone.
    The caller caps the result with the VPA's policy. ``samples`` are in the recommendation's
    units (cpu millicores, memory bytes)."""
    out: list[RecommendedContainerResources] = []
    entries: list[TraceEntry] = []
    for recommendation in recommendations:
        name = recommendation.container_name
        target = recommendation.uncapped_target
        lower, upper = recommendation.lower_bound, recommendation.upper_bound
        for resource in (ResourceName.CPU, ResourceName.MEMORY):
            plain_target = target.get(resource)
            if plain_target is None or excluded(name, resource):
                continue
            estimate = group_aware_estimate(
                samples.get((name, resource), ()),
                target_load=target_load,
                plain=plain_target / (1 + safety_margin_fraction),
                config=config,
            )
            entries.append(estimate.trace(f"container {name} {resource.value}"))
            if not estimate.used_model:
                continue
            amount = max(
                math.ceil(estimate.value * (1 + safety_margin_fraction)),
                minimum.get(resource) or 0,
            )
            # the plain model's bounds, scaled as its target was: the band the updater leaves
            # pods alone in keeps its relative width around the new target
            scale = amount / plain_target if plain_target > 0 else 1.0
            plain_lower, plain_upper = lower.get(resource), upper.get(resource)
            target = _with(target, resource, amount)
            lower = _with(
                lower,
                resource,
                amount if plain_lower is None else min(math.floor(plain_lower * scale), amount),
            )
            upper = _with(
                upper,
                resource,
                amount if plain_upper is None else max(math.ceil(plain_upper * scale), amount),
            )
        out.append(
            replace(
                recommendation,
                target=target,
                lower_bound=lower,
                upper_bound=upper,
                uncapped_target=target,
            )
        )
    return tuple(out), tuple(entries)
