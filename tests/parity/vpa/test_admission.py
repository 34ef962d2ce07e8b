"""Parity with the VPA admission controller's pod patches.

Ported from kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/admission-controller/resource/pod/patch/resource_updates_test.go``
(``TestCalculatePatches_ResourceUpdates``: the calculator given container resources),
``recommendation/recommendation_provider_test.go`` (``TestUpdateResourceRequests``: capping and
proportional limits per pod), ``patch/observed_containers_test.go`` and ``handler.go``
(``GetPatches``: empty annotations first, then the calculators in order).

Amounts are the core's: CPU in millicores, memory in bytes; upstream's test quantities are read
with ``hpa.core.quantity``.
"""

from __future__ import annotations

from typing import Any

import pytest

from hpa.core.quantity import parse_quantity
from hpa.core.vpa.admission import (
    AdmissionContainer,
    ContainerResources,
    admission_patches,
    apply_patch,
    containers_resources_for_pod,
    resource_update_patches,
)
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.awareness import HorizontalConflict, HpaAwareness
from hpa.core.vpa.capping import LimitRangeItem
from hpa.core.vpa.policy import (
    ContainerControlledValues,
    ContainerResourcePolicy,
    PodResourcePolicy,
)
from hpa.core.vpa.recommender import RecommendedContainerResources

MAX_INT64 = 2**63 - 1


def amounts(cpu: str = "", mem: str = "") -> Resources:
    return Resources(
        cpu=parse_quantity(cpu).milli_value() if cpu else None,
        memory=parse_quantity(mem).value() if mem else None,
    )


def add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


def updates(text: str) -> dict[str, Any]:
    return add("/metadata/annotations/vpaUpdates", f"Pod resources updated by name: {text}")


# ------------------------------------------------------ TestCalculatePatches_ResourceUpdates

CALCULATOR_CASES = {
    "new cpu recommendation": (
        [AdmissionContainer("")],
        [ContainerResources(requests=amounts("1"))],
        [
            add("/spec/containers/0/resources", {}),
            add("/spec/containers/0/resources/requests", {}),
            add("/spec/containers/0/resources/requests/cpu", "1"),
            updates("container 0: cpu request"),
        ],
    ),
    "replacement cpu recommendation": (
        [AdmissionContainer("", requests=amounts("0"), has_requests=True)],
        [ContainerResources(requests=amounts("1"))],
        [
            add("/spec/containers/0/resources/requests/cpu", "1"),
            updates("container 0: cpu request"),
        ],
    ),
    "two containers": (
        [
            AdmissionContainer("container-1", requests=amounts("0"), has_requests=True),
            AdmissionContainer(""),
        ],
        [ContainerResources(requests=amounts("1")), ContainerResources(requests=amounts("2"))],
        [
            add("/spec/containers/0/resources/requests/cpu", "1"),
            add("/spec/containers/1/resources", {}),
            add("/spec/containers/1/resources/requests", {}),
            add("/spec/containers/1/resources/requests/cpu", "2"),
            updates("container 0: cpu request; container 1: cpu request"),
        ],
    ),
    "new cpu limit": (
        [AdmissionContainer("")],
        [ContainerResources(limits=amounts("1"))],
        [
            add("/spec/containers/0/resources", {}),
            add("/spec/containers/0/resources/limits", {}),
            add("/spec/containers/0/resources/limits/cpu", "1"),
            updates("container 0: cpu limit"),
        ],
    ),
    "replacement cpu limit": (
        [AdmissionContainer("", limits=amounts("0"), has_limits=True)],
        [ContainerResources(limits=amounts("1"))],
        [add("/spec/containers/0/resources/limits/cpu", "1"), updates("container 0: cpu limit")],
    ),
    "no recommendation present": (
        [AdmissionContainer("", limits=amounts("0"), has_limits=True)],
        [ContainerResources()],
        [],
    ),
    "capping annotations lead the container's updates": (
        [AdmissionContainer("c", requests=amounts("1", "1Mi"), has_requests=True)],
        [ContainerResources(requests=amounts("2", "2Mi"))],
        [
            add("/spec/containers/0/resources/requests/cpu", "2"),
            add("/spec/containers/0/resources/requests/memory", "2Mi"),
            updates("container 0: cpu capped to maxAllowed, cpu request, memory request"),
        ],
    ),
}


@pytest.mark.parametrize(
    ("containers", "resources", "expected"),
    CALCULATOR_CASES.values(),
    ids=CALCULATOR_CASES.keys(),
)
def test_calculate_patches_resource_updates(
    containers: list[AdmissionContainer],
    resources: list[ContainerResources],
    expected: list[dict[str, Any]],
) -> None:
    notes = {"c": ["cpu capped to maxAllowed"]}
    got = resource_update_patches(
        containers, resources, notes, vpa_name="name", update_mode_off=False
    )
    assert got == expected


def test_update_mode_off_applies_nothing() -> None:
    got = resource_update_patches(
        [AdmissionContainer("")],
        [ContainerResources(requests=amounts("1"))],
        {},
        vpa_name="name",
        update_mode_off=True,
    )
    assert got == [add("/spec/containers/0/resources", {}), updates("container 0: ")]


# ---------------------------------------------------------------- TestUpdateResourceRequests

C = "container1"


def vpa_recommendation(cpu: str, mem: str) -> list[RecommendedContainerResources]:
    target = amounts(cpu, mem)
    return [RecommendedContainerResources(C, target, target, target, target)]


def policy(
    min_allowed: tuple[str, str] = ("1", "100Mi"),
    max_allowed: tuple[str, str] = ("3", "1Gi"),
    controlled: ContainerControlledValues | None = None,
) -> PodResourcePolicy:
    return PodResourcePolicy(
        (
            ContainerResourcePolicy(
                container_name=C,
                min_allowed=amounts(*min_allowed),
                max_allowed=amounts(*max_allowed),
                controlled_values=controlled,
            ),
        )
    )


UNINITIALIZED = AdmissionContainer(C)
INITIALIZED = AdmissionContainer(C, requests=amounts("2", "100Mi"), has_requests=True)
LIMITS_MATCH = AdmissionContainer(
    C, amounts("2", "200Mi"), amounts("2", "200Mi"), has_requests=True, has_limits=True
)
DOUBLE_LIMIT = AdmissionContainer(
    C, amounts("1", "100Mi"), amounts("2", "200Mi"), has_requests=True, has_limits=True
)
TENFOLD_LIMIT = AdmissionContainer(
    C, amounts("1", "100Mi"), amounts("10", "1000Mi"), has_requests=True, has_limits=True
)
LIMITS_NO_REQUESTS = AdmissionContainer(C, limits=amounts("2", "200Mi"), has_limits=True)
ALL_VALUES = ContainerControlledValues.REQUESTS_AND_LIMITS
REQUESTS_ONLY = ContainerControlledValues.REQUESTS_ONLY

# container, recommendation, policy, container LimitRange,
# expected (cpu, memory) requests, expected (cpu, memory) limits or None, annotations
PROVIDER_CASES: dict[str, tuple[Any, ...]] = {
    "uninitialized pod": (
        UNINITIALIZED, vpa_recommendation("2", "200Mi"), policy(), None,
        ("2", "200Mi"), None, {},
    ),
    "target below min": (
        UNINITIALIZED, vpa_recommendation("3", "150Mi"), policy(("4", "300Mi"), ("5", "1Gi")), None,
        ("4", "300Mi"), None, {C: ["cpu capped to minAllowed", "memory capped to minAllowed"]},
    ),
    "target above max": (
        UNINITIALIZED, vpa_recommendation("7", "2Gi"), policy(("4", "300Mi"), ("5", "1Gi")), None,
        ("5", "1Gi"), None, {C: ["cpu capped to maxAllowed", "memory capped to maxAllowed"]},
    ),
    "initialized pod": (
        INITIALIZED, vpa_recommendation("2", "200Mi"), policy(), None, ("2", "200Mi"), None, {},
    ),
    "high memory": (
        INITIALIZED, vpa_recommendation("2", "1000Mi"), policy(("", ""), ("3", "3Gi")), None,
        ("2", "1000Mi"), None, {},
    ),
    "nil recommendation": (INITIALIZED, None, policy(), None, ("", ""), None, {}),
    "guaranteed resources": (
        LIMITS_MATCH, vpa_recommendation("2", "200Mi"), policy(), None,
        ("2", "200Mi"), ("2", "200Mi"), {},
    ),
    "guaranteed resources - no request": (
        LIMITS_NO_REQUESTS, vpa_recommendation("2", "200Mi"), policy(), None,
        ("2", "200Mi"), ("2", "200Mi"), {},
    ),
    "proportional limit - as default": (
        DOUBLE_LIMIT, vpa_recommendation("2", "200Mi"), policy(), None,
        ("2", "200Mi"), ("4", "400Mi"), {},
    ),
    "proportional limit - set explicit": (
        DOUBLE_LIMIT, vpa_recommendation("2", "200Mi"), policy(controlled=ALL_VALUES), None,
        ("2", "200Mi"), ("4", "400Mi"), {},
    ),
    "disabled limit scaling": (
        DOUBLE_LIMIT, vpa_recommendation("2", "200Mi"), policy(controlled=REQUESTS_ONLY), None,
        ("2", "200Mi"), None, {},
    ),
    "disabled limit scaling - requests capped at limit": (
        DOUBLE_LIMIT, vpa_recommendation("3", "500Mi"),
        policy(max_allowed=("5", "1Gi"), controlled=REQUESTS_ONLY), None,
        ("2", "200Mi"), None,
        {C: ["cpu capped to container limit", "memory capped to container limit"]},
    ),
    "proportional limit from default": (
        INITIALIZED, vpa_recommendation("2", "200Mi"), policy(),
        LimitRangeItem(default=amounts("2", "100Mi")),
        ("2", "200Mi"), ("2", "200Mi"), {},
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("container", "recommendation", "the_policy", "limit_range", "requests", "limits", "notes"),
    PROVIDER_CASES.values(),
    ids=PROVIDER_CASES.keys(),
)
def test_update_resource_requests(
    container: AdmissionContainer,
    recommendation: list[RecommendedContainerResources] | None,
    the_policy: PodResourcePolicy,
    limit_range: LimitRangeItem | None,
    requests: tuple[str, str],
    limits: tuple[str, str] | None,
    notes: dict[str, list[str]],
) -> None:
    resources, annotations = containers_resources_for_pod(
        [container],
        update_mode_off=False,
        recommendation=recommendation,
        policy=the_policy,
        container_limit_range=limit_range,
    )
    (got,) = resources
    want = amounts(*requests)
    assert (got.requests or Resources()) == want
    assert got.limits == (None if limits is None else amounts(*limits))
    assert {k: sorted(v) for k, v in annotations.items()} == {
        k: sorted(v) for k, v in notes.items()
    }


def test_limit_over_int64() -> None:
    resources, annotations = containers_resources_for_pod(
        [TENFOLD_LIMIT],
        update_mode_off=False,
        recommendation=vpa_recommendation("1Ei", "1Ei"),
        policy=policy(("", ""), ("1Ei", "1Ei")),
    )
    (got,) = resources
    assert got.requests == amounts("1Ei", "1Ei")
    assert got.limits == Resources(cpu=MAX_INT64, memory=MAX_INT64)  # both saturate
    assert annotations == {
        C: [
            "cpu: failed to keep limit to request ratio; capping limit to int64",
            "memory: failed to keep limit to request ratio; capping limit to int64",
        ]
    }


# ---------------------------------------------------------------- GetPatches (handler.go)


def test_get_patches_initializes_annotations_and_lists_observed_containers() -> None:
    patches = admission_patches(
        [UNINITIALIZED, AdmissionContainer("sidecar")],
        vpa_name="name",
        update_mode_off=False,
        recommendation=vpa_recommendation("2", "200Mi"),
        policy=policy(),
        pod_has_annotations=False,
    )
    assert patches == [
        add("/metadata/annotations", {}),
        add("/spec/containers/0/resources", {}),
        add("/spec/containers/0/resources/requests", {}),
        add("/spec/containers/0/resources/requests/cpu", "2"),
        add("/spec/containers/0/resources/requests/memory", "200Mi"),
        add("/spec/containers/1/resources", {}),
        updates("container 0: cpu request, memory request; container 1: "),
        add("/metadata/annotations/vpaObservedContainers", "container1, sidecar"),
    ]
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": C}, {"name": "sidecar"}]}}
    patched = apply_patch(pod, patches)
    assert patched["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "2", "memory": "200Mi"}
    }
    assert patched["metadata"]["annotations"]["vpaObservedContainers"] == "container1, sidecar"


def test_an_hpa_scaled_resource_is_never_patched() -> None:
    conflicts = [HorizontalConflict("cpu", None, "shop/web")]
    patches = admission_patches(
        [INITIALIZED],
        vpa_name="name",
        update_mode_off=False,
        recommendation=vpa_recommendation("3", "200Mi"),
        policy=policy(),
        pod_has_annotations=True,
        conflicts=conflicts,
    )
    paths = [p["path"] for p in patches]
    assert "/spec/containers/0/resources/requests/memory" in paths
    assert not any(path.endswith("/cpu") for path in paths)
    warned = admission_patches(
        [INITIALIZED],
        vpa_name="name",
        update_mode_off=False,
        recommendation=vpa_recommendation("3", "200Mi"),
        policy=policy(),
        pod_has_annotations=True,
        conflicts=conflicts,
        awareness=HpaAwareness.WARN,
    )
    assert "/spec/containers/0/resources/requests/cpu" in [p["path"] for p in warned]


def test_annotation_names_are_escaped_as_json_pointers() -> None:
    patched = apply_patch(
        {"metadata": {"annotations": {}}},
        [add("/metadata/annotations/a~1b~0c", "v")],
    )
    assert patched["metadata"]["annotations"] == {"a/b~c": "v"}
