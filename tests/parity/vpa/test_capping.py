"""Parity: upstream capping tests of kubernetes/autoscaler v1.8.1.

Ported from ``vertical-pod-autoscaler/pkg/utils/vpa/capping_test.go`` at the v1.8.1 release
(``TestApplyVPAPolicy`` lives in ``test_estimator.py`` with the recommender's post-processors).
Each test is named after its Go function, table rows by their ``name``. Quantities are written as
integers: CPU in millicores, memory in bytes (``"1G"`` = 10**9, ``"1Gi"`` = 2**30,
``NewScaledQuantity(7000, 1)`` = 70000). Upstream's ``fakeLimitRangeCalculator{}`` returns empty
(non-nil) LimitRange items, which is ``LimitRangeItem()`` here. ``TestApplyWithNilVPA`` and
``TestApplyWithNilPod`` have no counterpart: both arguments are required here.
"""

from __future__ import annotations

import pytest

from hpa.core.vpa.amount import NO_RESOURCES, ResourceName, Resources
from hpa.core.vpa.capping import (
    LimitRangeItem,
    PodContainer,
    apply_capping,
    apply_pod_limit_range,
    get_boundary_request,
    get_proportional_limit,
)
from hpa.core.vpa.policy import (
    ContainerControlledValues,
    ContainerResourcePolicy,
    PodResourcePolicy,
)
from hpa.core.vpa.recommender import RecommendedContainerResources

CPU, MEMORY = ResourceName.CPU, ResourceName.MEMORY
G = 10**9
M = 10**6
GI = 2**30
MI = 2**20
EMPTY = LimitRangeItem()
REQUESTS_ONLY = ContainerControlledValues.REQUESTS_ONLY
REQUESTS_AND_LIMITS = ContainerControlledValues.REQUESTS_AND_LIMITS


def rec(
    name: str,
    target: Resources = NO_RESOURCES,
    lower: Resources = NO_RESOURCES,
    upper: Resources = NO_RESOURCES,
) -> RecommendedContainerResources:
    return RecommendedContainerResources(name, target, lower, upper, NO_RESOURCES)


def r(cpu: int | None = None, memory: int | None = None) -> Resources:
    return Resources(cpu=cpu, memory=memory)


def default_policy(controlled_values: ContainerControlledValues) -> PodResourcePolicy:
    return PodResourcePolicy((ContainerResourcePolicy("*", controlled_values=controlled_values),))


def test_recommendation_not_available() -> None:
    result = apply_capping(
        [rec("ctr-name-other", r(100, 50000 * MI))],
        policy=None,
        containers=[PodContainer("ctr-name")],
        container_limit_range=EMPTY,
        pod_limit_range=EMPTY,
    )
    assert result is not None
    assert result.annotations == {}
    assert result.container_recommendations == ()


LIMITED = PodContainer("ctr-name", limits=r(30_000, 70000))
STATUS_LIMITED = PodContainer("ctr-name", limits=r(2500, 60000))  # the container status's


@pytest.mark.parametrize(
    ("container", "policy", "expected_target", "expected_upper", "annotated"),
    [
        pytest.param(
            LIMITED,
            PodResourcePolicy(),
            r(20_000, 80000),
            r(100_000, 90000),
            False,
            id="no capping for default policy",
        ),
        pytest.param(
            LIMITED,
            default_policy(REQUESTS_AND_LIMITS),
            r(20_000, 80000),
            r(100_000, 90000),
            False,
            id="no capping for RequestsAndLimits policy",
        ),
        pytest.param(
            LIMITED,
            default_policy(REQUESTS_ONLY),
            r(20_000, 70000),
            r(30_000, 70000),
            True,
            id="capping for RequestsOnly policy",
        ),
        pytest.param(
            STATUS_LIMITED,
            default_policy(REQUESTS_ONLY),
            r(2500, 60000),
            r(2500, 60000),
            True,
            id="capping for RequestsOnly policy for limits defined in containerStatus",
        ),
    ],
)
def test_recommendation_to_limit_capping(
    container: PodContainer,
    policy: PodResourcePolicy,
    expected_target: Resources,
    expected_upper: Resources,
    annotated: bool,
) -> None:
    recommendation = rec("ctr-name", target=r(20_000, 80000), upper=r(100_000, 90000))
    result = apply_capping(
        [recommendation],
        policy=policy,
        containers=[container],
        container_limit_range=EMPTY,
        pod_limit_range=EMPTY,
    )
    assert result is not None
    (capped,) = result.container_recommendations
    assert capped.target == expected_target
    assert capped.upper_bound == expected_upper
    if annotated:
        assert "memory capped to container limit" in result.annotations["ctr-name"]
    else:
        assert "ctr-name" not in result.annotations


def test_recommendation_capped_to_min_max_policy() -> None:
    recommendation = rec(
        "ctr-name", target=r(300_000, 50000), lower=r(200_000, 43000), upper=r(500_000, 55000)
    )
    policy = PodResourcePolicy(
        (
            ContainerResourcePolicy(
                "ctr-name", min_allowed=r(400_000, 40000), max_allowed=r(450_000, 45000)
            ),
        )
    )
    result = apply_capping(
        [recommendation],
        policy=policy,
        containers=[PodContainer("ctr-name")],
        container_limit_range=EMPTY,
        pod_limit_range=EMPTY,
    )
    assert result is not None
    (capped,) = result.container_recommendations
    assert capped.target == r(400_000, 45000)
    assert "cpu capped to minAllowed" in result.annotations["ctr-name"]
    assert "memory capped to maxAllowed" in result.annotations["ctr-name"]
    assert capped.lower_bound == r(400_000, 43000)
    assert capped.upper_bound == r(450_000, 45000)


def test_apply() -> None:
    containers = [PodContainer("ctr-name")]
    assert apply_capping(None, policy=None, containers=containers) is None
    recommendation = rec(
        "ctr-name", target=r(50_000, 100), lower=r(500_000, 1000), upper=r(1_500_000, 2000)
    )
    result = apply_capping(
        [recommendation],
        policy=None,
        containers=containers,
        container_limit_range=EMPTY,
        pod_limit_range=EMPTY,
    )
    assert result is not None
    assert result.container_recommendations == (recommendation,)


def test_apply_caps_to_limit_range() -> None:
    limit_range = LimitRangeItem(max=r(cpu=1000), min=r(memory=500 * M))
    container = PodContainer("container", requests=r(1000, 1 * G), limits=r(1000, 1 * G))
    result = apply_capping(
        [rec("container", target=r(2000, 200 * M))],
        policy=None,
        containers=[container],
        container_limit_range=limit_range,
        pod_limit_range=EMPTY,
    )
    assert result is not None
    assert sorted(result.annotations["container"]) == [
        "cpu capped to fit Max in container LimitRange",
        "memory capped to fit Min in container LimitRange",
    ]
    assert result.container_recommendations == (rec("container", target=r(1000, 500_000_000)),)


def pod_of(*containers: tuple[str, Resources, Resources]) -> list[PodContainer]:
    return [PodContainer(name, requests=req, limits=lim) for name, req, lim in containers]


@pytest.mark.parametrize(
    ("resources", "pod", "limit_range", "resource", "expect"),
    [
        pytest.param(
            [rec("container1", r(1000)), rec("container2", r(1000))],
            pod_of(("container1", r(1000), r(1000)), ("container2", r(1000), r(1000))),
            LimitRangeItem(max=r(cpu=1000)),
            CPU,
            [rec("container1", r(500)), rec("container2", r(500))],
            id="cap target cpu to max",
        ),
        pytest.param(  # identical to the previous row in upstream's table
            [rec("container1", r(1000)), rec("container2", r(1000))],
            pod_of(("container1", r(1000), r(1000)), ("container2", r(1000), r(1000))),
            LimitRangeItem(max=r(cpu=1000)),
            CPU,
            [rec("container1", r(500)), rec("container2", r(500))],
            id="cap cpu to max",
        ),
        pytest.param(
            [rec("container1", r(memory=G)), rec("container2", r(memory=G))],
            pod_of(
                ("container1", r(memory=1), r(memory=1)), ("container2", r(memory=1), r(memory=1))
            ),
            LimitRangeItem(min=r(memory=4 * G)),
            MEMORY,
            [rec("container1", r(memory=2 * G)), rec("container2", r(memory=2 * G))],
            id="cap mem to min",
        ),
        pytest.param(
            [rec("container1", r(memory=G)), rec("container2", r(memory=G))],
            pod_of(
                ("container1", r(memory=1), r(memory=2)), ("container2", r(memory=1), r(memory=2))
            ),
            LimitRangeItem(max=r(memory=10 * G), min=r(memory=4 * G)),
            MEMORY,
            [rec("container1", r(memory=2 * G)), rec("container2", r(memory=2 * G))],
            id="cap mem request to pod min",
        ),
        pytest.param(
            [rec("container1", r(memory=G))],
            pod_of(
                ("container1", r(memory=G), r(memory=2 * G)),
                ("container2", r(memory=G), r(memory=2 * G)),
            ),
            LimitRangeItem(max=r(memory=10 * G), min=r(memory=4 * G)),
            MEMORY,
            [rec("container1", r(memory=2 * G))],
            id="cap mem request to pod min, only one container with recommendation",
        ),
        pytest.param(
            [rec("container1", r(memory=G)), rec("container2", r(memory=G))],
            pod_of(("container2", r(memory=1), r(memory=2))),
            LimitRangeItem(max=r(memory=10 * G), min=r(memory=4 * G)),
            MEMORY,
            [rec("container1", r(memory=G)), rec("container2", r(memory=4 * G))],
            id="cap mem request to pod min, extra recommendation",
        ),
        pytest.param(
            [rec("container1", r(15)), rec("container2", r(100))],
            pod_of(("container1", r(1), r(1)), ("container2", r(1), r(1))),
            LimitRangeItem(min=r(cpu=150)),
            CPU,
            # ceil(15*150/115) and ceil(100*150/115)
            [rec("container1", r(20)), rec("container2", r(131))],
            id="cap target cpu to pod min",
        ),
        pytest.param(
            [rec("container1", r(15)), rec("container2", r(100))],
            pod_of(("container1", r(1), r(1)), ("container2", r(1), r(1))),
            LimitRangeItem(max=r(cpu=90)),
            CPU,
            # floor(15*90/115) and floor(100*90/115)
            [rec("container1", r(11)), rec("container2", r(78))],
            id="cap target cpu to pod max",
        ),
    ],
)
def test_apply_pod_limit_range(
    resources: list[RecommendedContainerResources],
    pod: list[PodContainer],
    limit_range: LimitRangeItem,
    resource: ResourceName,
    expect: list[RecommendedContainerResources],
) -> None:
    assert apply_pod_limit_range(resources, pod, limit_range, resource, "target") == tuple(expect)


@pytest.mark.parametrize(
    ("resources", "pod", "policy", "container_limit_range", "pod_limit_range", "expect", "notes"),
    [
        pytest.param(
            [rec("container", r(1000, 200 * M))],
            pod_of(("container", r(1000, 50 * M), r(1000, 600 * M))),
            None,
            LimitRangeItem(min=r(memory=500 * M)),
            EMPTY,
            [rec("container", r(1000, 500 * M))],
            {"container": ["memory capped to fit Min in container LimitRange"]},
            id="caps to min range if above container limit",
        ),
        pytest.param(
            [rec("container", r(1000, 200 * M))],
            pod_of(("container", r(1000, 50 * M), r(1000, 100 * M))),
            default_policy(REQUESTS_ONLY),
            LimitRangeItem(min=r(memory=500 * M)),
            EMPTY,
            [rec("container", r(1000, 100 * M))],
            {
                "container": [
                    "memory capped to fit Min in container LimitRange",
                    "memory capped to container limit",
                ]
            },
            id="caps to container limit if below container limit",
        ),
        pytest.param(
            [rec("container", r(1000, 200 * M))],
            pod_of(("container", r(1000, 50 * M), r(1000, 100 * M))),
            default_policy(REQUESTS_ONLY),
            EMPTY,
            LimitRangeItem(min=r(memory=500 * M)),
            [rec("container", r(1000, 100 * M))],
            {"container": ["memory capped to container limit"]},
            id="caps to pod limit if below pod limit",
        ),
        pytest.param(
            [rec("container", r(1000, 200 * M))],
            # The container status's requests and limits (the spec's 10 cores / 1G are ignored).
            pod_of(("container", r(5, 50 * M), r(5, 100 * M))),
            default_policy(REQUESTS_ONLY),
            EMPTY,
            LimitRangeItem(min=r(2000, 500 * M)),
            [rec("container", r(5, 100 * M))],
            {"container": ["memory capped to container limit", "cpu capped to container limit"]},
            id="Should use container status limits when lower than both recommendation and pod "
            "limit range",
        ),
        pytest.param(
            [rec("container1", r(1000, 200 * M))],
            pod_of(
                ("container1", r(1000, 50 * M), r(1000, 100 * M)),
                ("container2", r(1000, 50 * M), r(1000, 100 * M)),
            ),
            default_policy(REQUESTS_AND_LIMITS),
            EMPTY,
            LimitRangeItem(min=r(memory=500 * M)),
            [rec("container1", r(1000, 400_000_000)), rec("container2", r(1000, 100_000_000))],
            {},
            id="caps to pod limit if below pod limit one container with recommendation and one "
            "without",
        ),
        pytest.param(
            [rec("container1", r(1000, 200 * M)), rec("container2", r(1000, 200 * M))],
            pod_of(
                ("container1", r(1000, 50 * M), r(1000, 100 * M)),
                ("container2", r(1000, 50 * M), r(1000, 100 * M)),
            ),
            default_policy(REQUESTS_AND_LIMITS),
            EMPTY,
            LimitRangeItem(min=r(memory=500 * M)),
            [rec("container1", r(1000, 250_000_000)), rec("container2", r(1000, 250_000_000))],
            {},
            id="caps to pod limit if below pod limit two containers with recommendation",
        ),
    ],
)
def test_apply_limit_range_min_to_request(
    resources: list[RecommendedContainerResources],
    pod: list[PodContainer],
    policy: PodResourcePolicy | None,
    container_limit_range: LimitRangeItem,
    pod_limit_range: LimitRangeItem,
    expect: list[RecommendedContainerResources],
    notes: dict[str, list[str]],
) -> None:
    result = apply_capping(
        resources,
        policy=policy,
        containers=pod,
        container_limit_range=container_limit_range,
        pod_limit_range=pod_limit_range,
    )
    assert result is not None
    assert {name: sorted(a) for name, a in result.annotations.items()} == {
        name: sorted(a) for name, a in notes.items()
    }
    assert result.container_recommendations == tuple(expect)


@pytest.mark.parametrize(
    ("limit_range", "expected"),
    [
        pytest.param(LimitRangeItem(max=r(memory=GI)), (357913941, 715827882), id="cap to max"),
        pytest.param(
            LimitRangeItem(min=r(memory=4 * GI)), (1431655765, 2863311530), id="cap to min"
        ),
    ],
)
def test_cap_pod_memory_with_under_byte_split(
    limit_range: LimitRangeItem, expected: tuple[int, int]
) -> None:
    pod = pod_of(
        ("container-1", r(memory=50 * M), r(memory=50 * M)),
        ("container-2", r(memory=50 * M), r(memory=50 * M)),
    )
    result = apply_capping(
        [rec("container-1", r(memory=GI)), rec("container-2", r(memory=2 * GI))],
        policy=None,
        containers=pod,
        container_limit_range=EMPTY,
        pod_limit_range=limit_range,
    )
    assert result is not None
    assert result.container_recommendations == (
        rec("container-1", r(memory=expected[0])),
        rec("container-2", r(memory=expected[1])),
    )


# -- limit_and_request_scaling.go: the helpers, cases from the v1.8.1 reference summary ---------


@pytest.mark.parametrize(
    ("limit", "original_request", "recommendation", "default", "expected", "annotations"),
    [
        pytest.param(r(), r(), r(100, 100), r(), None, (), id="no limits: none, no annotations"),
        pytest.param(
            r(2000, 2 * GI),
            r(1000, GI),
            r(500, GI // 2),
            r(),
            r(1000, GI),
            (),
            id="ratio kept",
        ),
        pytest.param(
            r(1000),
            r(1000),
            r(500, 100),
            r(),
            r(cpu=500),
            ("memory: limit NOT set since originalLimit is nil or 0",),
            id="request equals limit; memory without limit",
        ),
        pytest.param(
            r(memory=GI), r(), r(7, 100), r(cpu=2000), r(7, 100), (), id="no request: limit = rec"
        ),
        pytest.param(
            r(cpu=1000, memory=GI),
            r(cpu=500),
            r(cpu=0, memory=0),
            r(),
            None,
            (),
            id="zero recommendation: none",
        ),
        pytest.param(
            r(cpu=2**62),
            r(cpu=1),
            r(cpu=4),
            r(),
            r(cpu=2**63 - 1),
            (
                "cpu: failed to keep limit to request ratio; capping limit to int64",
                "memory: limit NOT set since originalLimit is nil or 0",
            ),
            id="overflow saturates",
        ),
    ],
)
def test_get_proportional_limit(
    limit: Resources,
    original_request: Resources,
    recommendation: Resources,
    default: Resources,
    expected: Resources | None,
    annotations: tuple[str, ...],
) -> None:
    got, notes = get_proportional_limit(limit, original_request, recommendation, default)
    assert got == expected
    assert notes == annotations


def test_get_boundary_request() -> None:
    assert get_boundary_request(CPU, 500, 0, 1000, 0) == 0  # no limit: no boundary
    assert get_boundary_request(CPU, 0, 2000, 1000, 0) == 1000  # no request: the boundary
    assert get_boundary_request(CPU, 500, 2000, 1000, 0) == 250  # keeps the ratio
    assert get_boundary_request(MEMORY, 500, 0, 1000, 3000) == 166  # default limit, floored
