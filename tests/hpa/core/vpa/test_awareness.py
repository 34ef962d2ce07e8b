"""The HPA-awareness rule: which resources a VPA leaves to an HPA of the same workload."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpa.core.spec import (
    ContainerResourceMetricSource,
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerSpec,
    MetricIdentifier,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
)
from hpa.core.vpa.awareness import (
    CONDITION_TYPE,
    HorizontalConflict,
    HorizontalScaler,
    HpaAwareness,
    conflict_condition,
    effective_controlled_resources,
    horizontal_conflicts,
)

WEB = CrossVersionObjectReference(kind="Deployment", name="web", api_version="apps/v1")
UTIL = MetricTarget(type=MetricTargetType.UTILIZATION, average_utilization=60)
AVG = MetricTarget(type=MetricTargetType.AVERAGE_VALUE, average_value_milli=10_000)
BOTH = ("cpu", "memory")


def resource(name: str) -> MetricSpec:
    return MetricSpec.for_resource(ResourceMetricSource(name=name, target=UTIL))


def container_resource(name: str, container: str) -> MetricSpec:
    return MetricSpec.for_container_resource(
        ContainerResourceMetricSource(name=name, container=container, target=UTIL)
    )


def pods_metric() -> MetricSpec:
    return MetricSpec.for_pods(PodsMetricSource(metric=MetricIdentifier("rps"), target=AVG))


def object_metric() -> MetricSpec:
    return MetricSpec.for_object(
        ObjectMetricSource(
            described_object=CrossVersionObjectReference(kind="Ingress", name="web"),
            metric=MetricIdentifier("rps"),
            target=MetricTarget(type=MetricTargetType.VALUE, value_milli=1000),
        )
    )


def external_metric() -> MetricSpec:
    return MetricSpec.for_external(ExternalMetricSource(metric=MetricIdentifier("lag"), target=AVG))


def hpa(
    *metrics: MetricSpec,
    name: str = "web",
    namespace: str = "shop",
    target: CrossVersionObjectReference = WEB,
) -> HorizontalScaler:
    spec = HorizontalPodAutoscalerSpec(scale_target_ref=target, max_replicas=10, metrics=metrics)
    return HorizontalScaler(namespace, name, spec)


@dataclass(frozen=True)
class Row:
    hpas: tuple[HorizontalScaler, ...]
    awareness: HpaAwareness
    app: frozenset[str]  # effective controlled resources of container "app"
    sidecar: frozenset[str]  # ... of container "sidecar"
    condition: tuple[str, str] | None  # (status, reason)


E, W, OFF = HpaAwareness.EXCLUDE, HpaAwareness.WARN, HpaAwareness.OFF
ALL = frozenset(BOTH)
CPU, MEM, NONE = frozenset({"cpu"}), frozenset({"memory"}), frozenset[str]()

ROWS = {
    "no hpa": Row((), E, ALL, ALL, None),
    "hpa on cpu": Row((hpa(resource("cpu")),), E, MEM, MEM, ("True", "ResourcesExcluded")),
    "hpa on memory": Row((hpa(resource("memory")),), E, CPU, CPU, ("True", "ResourcesExcluded")),
    "hpa on cpu and memory": Row(
        (hpa(resource("cpu"), resource("memory")),), E, NONE, NONE, ("True", "ResourcesExcluded")
    ),
    "container resource of one container": Row(
        (hpa(container_resource("cpu", "app")),), E, MEM, ALL, ("True", "ResourcesExcluded")
    ),
    "pods metric excludes nothing": Row((hpa(pods_metric()),), E, ALL, ALL, None),
    "object metric excludes nothing": Row((hpa(object_metric()),), E, ALL, ALL, None),
    "external metric excludes nothing": Row((hpa(external_metric()),), E, ALL, ALL, None),
    "two hpas, one on cpu one on memory": Row(
        (hpa(resource("cpu")), hpa(resource("memory"), name="web-mem")),
        E,
        NONE,
        NONE,
        ("True", "ResourcesExcluded"),
    ),
    "hpa on another workload": Row(
        (hpa(resource("cpu"), target=CrossVersionObjectReference("Deployment", "api", "apps/v1")),),
        E,
        ALL,
        ALL,
        None,
    ),
    "hpa on another kind of the same name": Row(
        (
            hpa(
                resource("cpu"), target=CrossVersionObjectReference("StatefulSet", "web", "apps/v1")
            ),
        ),
        E,
        ALL,
        ALL,
        None,
    ),
    "hpa in another namespace": Row((hpa(resource("cpu"), namespace="other"),), E, ALL, ALL, None),
    "same group, other version": Row(
        (
            hpa(
                resource("cpu"),
                target=CrossVersionObjectReference("Deployment", "web", "apps/v1beta2"),
            ),
        ),
        E,
        MEM,
        MEM,
        ("True", "ResourcesExcluded"),
    ),
    "other group, same kind and name": Row(
        (hpa(resource("cpu"), target=CrossVersionObjectReference("Deployment", "web", "x.io/v1")),),
        E,
        ALL,
        ALL,
        None,
    ),
    "hpa without metrics scales on cpu": Row((hpa(),), E, MEM, MEM, ("True", "ResourcesExcluded")),
    "warn keeps the resource, reports": Row(
        (hpa(resource("cpu")),), W, ALL, ALL, ("False", "ConflictNotAvoided")
    ),
    "off ignores hpas": Row((hpa(resource("cpu")),), OFF, ALL, ALL, None),
    "mixed cpu resource and pods metric": Row(
        (hpa(pods_metric(), resource("cpu")),), E, MEM, MEM, ("True", "ResourcesExcluded")
    ),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_awareness_table(row: Row) -> None:
    conflicts = horizontal_conflicts("shop", WEB, row.hpas)
    app = effective_controlled_resources("app", BOTH, conflicts, awareness=row.awareness)
    sidecar = effective_controlled_resources("sidecar", BOTH, conflicts, awareness=row.awareness)
    condition = conflict_condition(conflicts, awareness=row.awareness)
    assert (app, sidecar) == (row.app, row.sidecar)
    if row.condition is None:
        assert condition is None
    else:
        assert condition is not None
        assert condition.type == CONDITION_TYPE
        assert (condition.status, condition.reason) == row.condition


def test_the_condition_names_the_hpa_and_the_resource() -> None:
    conflicts = horizontal_conflicts(
        "shop", WEB, [hpa(resource("cpu")), hpa(container_resource("memory", "app"), name="m")]
    )
    condition = conflict_condition(conflicts, awareness=HpaAwareness.EXCLUDE)
    assert condition is not None
    assert condition.message == (
        "scaled horizontally, left to the HPA: cpu in every container (HPA shop/web, Resource "
        "metric); memory in container app (HPA shop/m, ContainerResource metric)"
    )


def test_a_resource_the_policy_does_not_control_stays_uncontrolled() -> None:
    conflicts = horizontal_conflicts("shop", WEB, [hpa(resource("cpu"))])
    assert effective_controlled_resources(
        "app", ("memory",), conflicts, awareness=HpaAwareness.EXCLUDE
    ) == frozenset({"memory"})


def test_conflicts_are_sorted_and_without_repeats() -> None:
    conflicts = horizontal_conflicts(
        "shop", WEB, [hpa(resource("memory"), resource("cpu"), resource("cpu"))]
    )
    assert conflicts == (
        HorizontalConflict("cpu", None, "shop/web"),
        HorizontalConflict("memory", None, "shop/web"),
    )


METRICS = st.lists(
    st.one_of(
        st.sampled_from(BOTH).map(resource),
        st.tuples(st.sampled_from(BOTH), st.sampled_from(["app", "sidecar"])).map(
            lambda t: container_resource(*t)
        ),
        st.just(pods_metric()),
        st.just(external_metric()),
    ),
    min_size=1,
    max_size=4,
)


@given(metrics=st.lists(METRICS, max_size=3), controlled=st.sets(st.sampled_from(BOTH)))
def test_exclude_only_ever_removes_and_never_touches_a_resource_an_hpa_scales(
    metrics: list[list[MetricSpec]], controlled: set[str]
) -> None:
    hpas = [hpa(*m, name=f"h{i}") for i, m in enumerate(metrics)]
    conflicts = horizontal_conflicts("shop", WEB, hpas)
    for container in ("app", "sidecar"):
        effective = effective_controlled_resources(
            container, controlled, conflicts, awareness=HpaAwareness.EXCLUDE
        )
        assert effective <= controlled
        for c in conflicts:
            if c.applies_to(container):
                assert c.resource not in effective
        warned = effective_controlled_resources(
            container, controlled, conflicts, awareness=HpaAwareness.WARN
        )
        assert warned == frozenset(controlled)
