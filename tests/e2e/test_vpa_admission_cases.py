"""The admission differential's generator and comparison (no lab needed)."""

from __future__ import annotations

import base64
import copy
import json
from collections import Counter
from typing import Any

from tests.e2e.vpa_admission_cases import (
    CAPPED,
    INVALID_SPECS,
    POD_REVIEWS,
    SEED,
    canonical_object,
    compare,
    pod_reviews,
    probe_review,
    spelling_differences,
    upstream_panics,
    vpa_reviews,
    workloads_and_vpas,
)


def _owners() -> dict[str, tuple[str, str]]:
    workloads, _ = workloads_and_vpas()
    return {
        f"{w.namespace}/{w.name}": ("StatefulSet", w.name)
        if w.kind == "StatefulSet"
        else ("ReplicaSet", f"{w.name}-5d8f9c")
        for w in workloads
    }


def _answer(patch: list[dict[str, Any]] | None, *, allowed: bool = True) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": "u", "allowed": allowed}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def test_the_vpas_cover_every_update_mode_and_both_namespaces() -> None:
    workloads, vpas = workloads_and_vpas()
    modes = {v.spec.get("updatePolicy", {}).get("updateMode") for v in vpas}
    assert modes == {None, "Off", "Initial", "Recreate", "Auto", "InPlaceOrRecreate"}
    assert {v.workload.namespace for v in vpas} == {w.namespace for w in workloads}
    assert len(vpas) == 14
    hamster = vpas[0].manifest()
    assert hamster["metadata"] == {"name": "hamster-vpa", "namespace": CAPPED}
    assert hamster["spec"]["targetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "hamster",
    }


def test_pod_reviews_are_deterministic_and_cover_every_workload() -> None:
    owners = _owners()
    workloads, _ = workloads_and_vpas()
    first = pod_reviews(workloads, owners, count=POD_REVIEWS, seed=SEED)
    assert first == pod_reviews(workloads, owners, count=POD_REVIEWS, seed=SEED)
    assert len(first) == POD_REVIEWS
    assert len({r["request"]["uid"] for r in first}) == POD_REVIEWS
    apps = Counter(r["request"]["object"]["metadata"]["labels"]["app"] for r in first)
    assert {w.name for w in workloads} <= apps.keys()
    orphans = [r for r in first if "ownerReferences" not in r["request"]["object"]["metadata"]]
    assert 0 < len(orphans) < POD_REVIEWS // 5


def test_vpa_reviews_are_every_vpa_an_update_and_the_invalid_specs() -> None:
    _, vpas = workloads_and_vpas()
    reviews = vpa_reviews(vpas)
    assert len(reviews) == len(vpas) + 1 + len(INVALID_SPECS)
    assert [r["request"]["operation"] for r in reviews].count("UPDATE") == 1


def test_compare_applies_each_patch_and_reads_quantities_and_updates_by_meaning() -> None:
    pod = {"metadata": {"annotations": {}}, "spec": {"containers": [{"name": "a"}]}}
    review = {"request": {"uid": "u", "object": pod}}
    upstream: list[dict[str, Any]] = [
        {"op": "add", "path": "/spec/containers/0/resources", "value": {}},
        {"op": "add", "path": "/spec/containers/0/resources/requests", "value": {}},
        {"op": "add", "path": "/spec/containers/0/resources/requests/memory", "value": "262144k"},
        {"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "0.5"},
        {
            "op": "add",
            "path": "/metadata/annotations/vpaUpdates",
            "value": "Pod resources updated by v: container 0: memory request, cpu request",
        },
    ]
    ours: list[dict[str, Any]] = [
        *upstream[:2],
        {"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "500m"},
        {"op": "add", "path": "/spec/containers/0/resources/requests/memory", "value": "256000Ki"},
        {
            "op": "add",
            "path": "/metadata/annotations/vpaUpdates",
            "value": "Pod resources updated by v: container 0: cpu request, memory request",
        },
    ]
    verdict = compare(review, _answer(upstream), _answer(ours))
    assert verdict.same_meaning
    assert verdict.same_allowed
    assert verdict.same_code
    assert not verdict.same_text
    different = compare(review, _answer(upstream), _answer(ours[:3]))
    assert not different.same_meaning
    refused = compare(review, _answer(None, allowed=False), _answer(None))
    assert not refused.same_allowed
    assert refused.same_meaning


def test_canonical_object_leaves_what_is_not_a_quantity() -> None:
    pod = {"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "lots"}}}]}}
    assert canonical_object(pod) == pod


def test_spelling_differences_name_what_tells_same_meaning_objects_apart() -> None:
    pod = {"metadata": {"annotations": {}}, "spec": {"containers": [{"name": "a"}]}}
    review = {"request": {"uid": "u", "object": pod}}
    cpu = "/spec/containers/0/resources"
    updates = "/metadata/annotations/vpaUpdates"

    def answer(quantity: str, items: str) -> dict[str, Any]:
        return _answer(
            [
                {"op": "add", "path": cpu, "value": {"requests": {"cpu": quantity}}},
                {"op": "add", "path": updates, "value": f"Pod resources updated by v: {items}"},
            ]
        )

    both = "container 0: cpu request, memory request"
    swapped = "container 0: memory request, cpu request"
    assert spelling_differences(compare(review, answer("0.5", both), answer("0.5", both))) == set()
    assert spelling_differences(compare(review, answer("0.5", both), answer("500m", both))) == {
        "quantities"
    }
    assert spelling_differences(compare(review, answer("1", both), answer("1", swapped))) == {
        "vpaUpdates"
    }


def test_upstream_panics_for_owned_capped_pods_with_a_container_no_recommendation_names() -> None:
    workloads, vpas = workloads_and_vpas()
    hamster = next(w for w in workloads if w.name == "hamster")
    gateway = next(w for w in workloads if w.name == "gateway")
    owner = ("ReplicaSet", "hamster-5d8f9c")
    plain = probe_review(hamster, owner)
    with_sidecar = copy.deepcopy(plain)
    with_sidecar["request"]["object"]["spec"]["containers"].append({"name": "istio-proxy"})
    orphan = copy.deepcopy(with_sidecar)
    del orphan["request"]["object"]["metadata"]["ownerReferences"]
    open_namespace = probe_review(gateway, ("ReplicaSet", "gateway-1"))  # "other" only
    assert not upstream_panics(plain, vpas)
    assert upstream_panics(with_sidecar, vpas)
    assert not upstream_panics(orphan, vpas)
    assert not upstream_panics(open_namespace, vpas)
