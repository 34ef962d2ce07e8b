"""``hpa explain vpa NAMESPACE/NAME``: one VPA's recommendation, explained.

Reads the VerticalPodAutoscaler, its VerticalPodAutoscalerCheckpoints (the recommender's
aggregated usage histograms, one per container) and the HPAs of its namespace from the live
cluster, runs the recommender's model offline over the checkpoints (upstream's defaults, or the
recommender's flags given here) and prints the trace: the samples each histogram holds, the
percentile and each estimator of every chain, the post-processing and the policy capping, the
resources an HPA scales the workload on (HPA exclusions), and for a ``group-aware`` VPA what the
group-size model needs. Nothing is written.

The checkpoints are what the recommender last wrote (every ``--checkpoints-gc-interval`` pass it
writes them, as upstream), so the trace may lag the live recommender by up to a pass; the
VPA's current ``status.recommendation`` is printed next to it. The group-size model's samples
(with their replica counts and per-pod loads) live only in the recommender's memory: the trace
says so, and the recommender logs each verdict as ``group_size_model`` (at
``--log-level=debug``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from hpa.controllers.conversion import hpa_from_dict
from hpa.core.explain import Explanation, Stage, TraceEntry, TraceValue
from hpa.core.spec import CrossVersionObjectReference
from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.amount import quantity_text
from hpa.core.vpa.awareness import HorizontalScaler, horizontal_conflicts
from hpa.core.vpa.group_aware import GROUP_AWARE_RECOMMENDER_NAME
from hpa.core.vpa.recommender import (
    RecommendationConfig,
    RecommendedContainerResources,
    create_pod_resource_recommender,
    recommend,
)
from hpa.kube.client import KubeClient
from hpa.kube.vpa_client import parse_checkpoint
from hpa.kube.vpa_records import parse_vpa

__all__ = ["VpaReport", "explain_vpa", "recommendation_config_from_args"]

VPA_API = "/apis/autoscaling.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class VpaReport:
    """What ``hpa explain vpa`` prints."""

    key: str
    trace: Explanation
    current: tuple[RecommendedContainerResources, ...] | None

    def render(self) -> str:
        lines = [f"VerticalPodAutoscaler {self.key}", ""]
        lines.append("current status.recommendation:")
        if not self.current:
            lines.append("    (none)")
        for rec in self.current or ():
            lines.append(f"    container {rec.container_name}: target {_amounts(rec.target)}")
        lines += ["", "trace (the model over the recommender's checkpoints):", self.trace.render()]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "vpa": self.key,
            "trace": [
                {
                    "stage": e.stage.value,
                    "summary": e.summary,
                    "details": {k: str(v) for k, v in e.details},
                }
                for e in self.trace.entries
            ],
        }


def _amounts(resources: Any) -> str:
    return ", ".join(
        f"{name.value} {quantity_text(name, amount)}" for name, amount in resources.items()
    )


def recommendation_config_from_args(args: argparse.Namespace) -> RecommendationConfig:
    """The recommender's model flags (upstream's defaults)."""
    return RecommendationConfig(
        safety_margin_fraction=args.recommendation_margin_fraction,
        target_cpu_percentile=args.target_cpu_percentile,
        target_memory_percentile=args.target_memory_percentile,
    )


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The model flags ``hpa explain vpa`` reads (the recommender's names and defaults)."""
    d = RecommendationConfig()
    group = parser.add_argument_group("explain vpa (the recommender's model flags)")
    group.add_argument(
        "--recommendation-margin-fraction", type=float, default=d.safety_margin_fraction
    )
    group.add_argument("--target-cpu-percentile", type=float, default=d.target_cpu_percentile)
    group.add_argument("--target-memory-percentile", type=float, default=d.target_memory_percentile)


def _entry(summary: str, details: list[tuple[str, TraceValue]]) -> TraceEntry:
    return TraceEntry(Stage.CAPPING, summary, tuple(details))


async def explain_vpa(
    kube: KubeClient, namespace: str, name: str, *, config: RecommendationConfig
) -> VpaReport:
    """Read the VPA, its checkpoints and the namespace's HPAs; recommend over the checkpoints;
    return the trace. Raises ``LookupError`` when the VPA does not exist."""
    base = f"{VPA_API}/namespaces/{namespace}"
    record = parse_vpa(await kube.get(f"{base}/verticalpodautoscalers/{name}"))
    listed = await kube.list(f"{base}/verticalpodautoscalercheckpoints")
    states: dict[str, AggregateContainerState] = {}
    entries: list[TraceEntry] = []
    for item in listed.get("items") or ():
        checkpoint = parse_checkpoint(item)
        if checkpoint.vpa_name != name:
            continue
        if checkpoint.status is None:
            entries.append(
                TraceEntry(
                    Stage.SAMPLES,
                    f"container {checkpoint.container_name}: checkpoint unreadable",
                    (("error", checkpoint.error),),
                )
            )
            continue
        state = AggregateContainerState()
        state.load_from_checkpoint(checkpoint.status)
        states[checkpoint.container_name] = state
    if not states:
        entries.append(
            TraceEntry(
                Stage.SAMPLES,
                "no checkpoint: the recommender has not written this VPA's histograms yet",
            )
        )
    result = recommend(
        states, recommender=create_pod_resource_recommender(config), policy=record.policy
    )
    entries.extend(result.explanation.entries)
    entries.extend(await _hpa_exclusions(kube, namespace, record.target))
    if GROUP_AWARE_RECOMMENDER_NAME in record.recommenders:
        entries.append(
            TraceEntry(
                Stage.ESTIMATION,
                "group-size model (spec.recommenders: group-aware)",
                (
                    (
                        "samples",
                        "kept with their replica counts and per-pod loads (the HPA's metric per "
                        "pod) in the recommender's memory, not in checkpoints; the recommender "
                        "logs each verdict as group_size_model (--log-level=debug)",
                    ),
                    ("applies to", "the resources no HPA scales the workload on"),
                ),
            )
        )
    return VpaReport(f"{namespace}/{name}", Explanation(tuple(entries)), record.recommendation)


async def _hpa_exclusions(kube: KubeClient, namespace: str, target: Any) -> list[TraceEntry]:
    if target is None:
        return []
    listed = await kube.list(
        f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers"
    )
    scalers = []
    for item in listed.get("items") or ():
        try:
            scalers.append(
                HorizontalScaler(namespace, str(item["metadata"]["name"]), hpa_from_dict(item).spec)
            )
        except (ValueError, KeyError):
            continue
    reference = CrossVersionObjectReference(
        kind=target.kind, name=target.name, api_version=target.api_version
    )
    conflicts = horizontal_conflicts(namespace, reference, scalers)
    if not conflicts:
        return [_entry("HPA exclusions: no HPA scales the workload on cpu or memory", [])]
    return [
        _entry(
            f"HPA exclusions: {c.resource} "
            + ("in every container" if c.container is None else f"in container {c.container}"),
            [("HPA", c.hpa), ("effect", "the updater and the webhook leave it alone")],
        )
        for c in conflicts
    ]
