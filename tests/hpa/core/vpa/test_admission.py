"""Properties of the admission patch: it always applies to the pod it was computed for, and the
patched requests are the capped targets, never outside the policy's bounds."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hpa.core.quantity import parse_quantity
from hpa.core.vpa.admission import AdmissionContainer, admission_patches, apply_patch
from hpa.core.vpa.amount import ResourceName, Resources, quantity_text
from hpa.core.vpa.policy import ContainerResourcePolicy, PodResourcePolicy
from hpa.core.vpa.recommender import RecommendedContainerResources

AMOUNT = st.one_of(st.none(), st.integers(min_value=0, max_value=10**12))
RESOURCES = st.builds(Resources, cpu=AMOUNT, memory=AMOUNT)
NAMES = st.lists(st.sampled_from(["app", "sidecar", "init", "log"]), unique=True, max_size=4)


def spec_container(container: AdmissionContainer) -> dict[str, Any]:
    out: dict[str, Any] = {"name": container.name}
    resources: dict[str, Any] = {}
    for field, present, values in (
        ("requests", container.has_requests, container.requests),
        ("limits", container.has_limits, container.limits),
    ):
        if present:
            resources[field] = {r.value: quantity_text(r, v) for r, v in values.items()}
    if resources:
        out["resources"] = resources
    return out


@given(
    names=NAMES,
    data=st.data(),
    low=st.integers(min_value=1, max_value=10**6),
    span=st.integers(min_value=0, max_value=10**6),
)
def test_the_patch_applies_and_requests_stay_within_the_policy(
    names: list[str], data: st.DataObject, low: int, span: int
) -> None:
    containers = [
        AdmissionContainer(
            name,
            requests=data.draw(RESOURCES),
            limits=data.draw(RESOURCES),
            has_requests=data.draw(st.booleans()),
            has_limits=data.draw(st.booleans()),
        )
        for name in names
    ]
    recommendation = [
        RecommendedContainerResources(n, t, t, t, t)
        for n in names
        if (t := data.draw(RESOURCES)) is not None
    ]
    bounds = Resources(cpu=low, memory=low), Resources(cpu=low + span, memory=low + span)
    policy = PodResourcePolicy(
        (ContainerResourcePolicy(container_name="*", min_allowed=bounds[0], max_allowed=bounds[1]),)
    )
    patches = admission_patches(
        containers,
        vpa_name="v",
        update_mode_off=False,
        recommendation=recommendation,
        policy=policy,
        pod_has_annotations=False,
    )
    pod = {"metadata": {}, "spec": {"containers": [spec_container(c) for c in containers]}}
    patched = apply_patch(pod, patches)
    for index, _ in enumerate(containers):
        requests = patched["spec"]["containers"][index].get("resources", {}).get("requests", {})
        for resource in (ResourceName.CPU, ResourceName.MEMORY):
            written = [
                p for p in patches if p["path"].endswith(f"/{index}/resources/requests/{resource}")
            ]
            if written:
                assert requests[resource.value] == written[0]["value"]
                amount = parse_quantity(written[0]["value"])
                value = amount.milli_value() if resource is ResourceName.CPU else amount.value()
                assert low <= value <= low + span
