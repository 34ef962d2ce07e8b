"""Differential: upstream's VPA admission-controller v1.8.1 and ``hpa vpa admission`` answer the
same AdmissionReviews, against the same API server and the same VPAs, and give the same pods.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/admission-controller`` (built from the Go module proxy by ``tests.lab.vpa_upstream``). The
objects and reviews are ``tests/e2e/vpa_admission_cases.py``: 14 VPAs over 13 workloads in two
namespaces (one with LimitRanges), recommendations written into their status, and 200 pod reviews
drawn with a seeded RNG, plus the VPAs themselves as CREATE/UPDATE reviews and ten invalid VPAs.

Both webhooks run as lab processes with the admin's kubeconfig; every review is POSTed directly
over HTTPS to each (no ``MutatingWebhookConfiguration``), each answer's JSON Patch is applied to the
reviewed object, and the results are compared.

Documented deviations (``docs/vpa.md``, "Compatibility with upstream's admission-controller"),
asserted here:

- quantities: ours writes each amount canonically (cpu ``DecimalSI``, memory ``BinarySI``), upstream
  writes the recommendation's spelling (``262144k`` against ours ``256000Ki``): same amounts, so
  the pods are compared after parsing every quantity (``same_meaning``), and the count of
  byte-identical pods is reported;
- ``vpaUpdates``: within a container ours lists cpu before memory, upstream in Go map order
  (random): compared with each container's items sorted;
- a refused VPA's ``status.message``: the same field errors, worded by each implementation; the
  code (422) and ``allowed`` must agree.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.controller_lab import report
from tests.e2e.vpa_admission_cases import (
    INVALID_SPECS,
    NAMESPACES,
    POD_REVIEWS,
    SEED,
    Verdict,
    Vpa,
    Workload,
    compare,
    limit_ranges,
    patch_of,
    pod_reviews,
    probe_review,
    spelling_differences,
    upstream_panics,
    vpa_reviews,
    workloads_and_vpas,
)
from tests.e2e.vpa_lab import (
    ReviewClient,
    install_vpa_crds,
    loopback_certificate,
    ready,
    start_ours,
    start_upstream,
    write_vpa_statuses,
)
from tests.lab import vpa_upstream
from tests.lab.lab import Lab

pytestmark = pytest.mark.e2e

OURS = "hpa-vpa-admission-diff"


@dataclass
class Differential:
    lab: Lab
    workloads: list[Workload]
    vpas: list[Vpa]
    owners: dict[str, tuple[str, str]]
    upstream: ReviewClient
    ours: ReviewClient
    setup_seconds: float


def _owners(lab: Lab, workloads: list[Workload]) -> dict[str, tuple[str, str]] | None:
    """``namespace/name`` of each workload -> its pods' controlling owner, once every
    Deployment has its ReplicaSet."""
    owners: dict[str, tuple[str, str]] = {}
    for namespace in NAMESPACES:
        replica_sets = lab.kubectl_json("get", "replicasets", "-n", namespace)["items"]
        for replica_set in replica_sets:
            for reference in replica_set["metadata"].get("ownerReferences", []):
                if reference.get("kind") == "Deployment":
                    key = f"{namespace}/{reference['name']}"
                    owners[key] = ("ReplicaSet", replica_set["metadata"]["name"])
    for workload in workloads:
        if workload.kind == "StatefulSet":
            owners[f"{workload.namespace}/{workload.name}"] = ("StatefulSet", workload.name)
    keys = {f"{w.namespace}/{w.name}" for w in workloads}
    return owners if keys <= owners.keys() else None


def _both_patch(probe: dict[str, Any], clients: tuple[ReviewClient, ReviewClient]) -> bool:
    """Both webhooks patch the probe pod's requests: their caches hold the VPAs (with status),
    the workloads and the LimitRanges."""
    for client in clients:
        answer = client.try_post(probe)
        patch = patch_of((answer or {}).get("response", {}))
        if not any("/resources/requests/" in op["path"] for op in patch):
            return False
    return True


@pytest.fixture(scope="module")
def differential(lab: Lab) -> Iterator[Differential]:
    started = time.monotonic()
    vpa_upstream.build()
    install_vpa_crds(lab)
    workloads, vpas = workloads_and_vpas()
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in NAMESPACES
    ]
    lab.apply(namespaces)
    lab.apply([*limit_ranges(), *(w.manifest() for w in workloads), *(v.manifest() for v in vpas)])
    write_vpa_statuses(lab, vpas)
    owners: dict[str, tuple[str, str]] = {}

    def have_owners() -> bool:
        found = _owners(lab, workloads)
        owners.update(found or {})
        return found is not None

    lab.wait_for(have_owners, what="a ReplicaSet for every Deployment")
    pair = loopback_certificate(lab, "vpa-admission-diff")
    upstream_hook = start_upstream(lab, pair)
    ours_hook = start_ours(lab, OURS, pair, lease_name="hpa-vpa-admission-diff")
    clients = (ReviewClient(lab, upstream_hook.port), ReviewClient(lab, ours_hook.port))
    hamster = workloads[0]
    probe = probe_review(hamster, owners[f"{hamster.namespace}/{hamster.name}"])
    lab.wait_for(lambda: ready(ours_hook), what="hpa vpa admission /readyz")
    lab.wait_for(lambda: _both_patch(probe, clients), what="both webhooks patch the probe pod")
    try:
        yield Differential(
            lab, workloads, vpas, owners, *clients, round(time.monotonic() - started, 1)
        )
    finally:
        for client in clients:
            client.close()
        lab.group.end(OURS)
        lab.group.end(vpa_upstream.ADMISSION_CONTROLLER)
        lab.kubectl("delete", "namespace", *NAMESPACES, "--wait=false")


def _run(differential: Differential, reviews: list[dict[str, Any]]) -> list[Verdict]:
    verdicts = []
    for review in reviews:
        upstream = differential.upstream.try_post(review)
        ours = differential.ours.post(review)
        for answer in (upstream, ours):
            assert answer is None or answer["response"]["uid"] == review["request"]["uid"]
        verdicts.append(compare(review, upstream, ours))
    return verdicts


def _differences(verdicts: list[Verdict]) -> str:
    lines = []
    for verdict in verdicts:
        if verdict.same_meaning and verdict.same_allowed and verdict.same_code:
            continue
        lines.append(f"--- {verdict.uid}")
        lines.append(f"upstream: {json.dumps(verdict.upstream, sort_keys=True)}")
        lines.append(f"ours:     {json.dumps(verdict.ours, sort_keys=True)}")
    return "\n".join(lines)


def _kind(verdict: Verdict) -> str:
    if verdict.upstream_failed:
        return "upstream dropped the connection"
    if verdict.same_text:
        return "identical"
    return "same meaning" if verdict.same_meaning else "different"


def test_200_pod_reviews_give_the_same_pods(
    differential: Differential, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    reviews = pod_reviews(differential.workloads, differential.owners, count=POD_REVIEWS, seed=SEED)
    verdicts = _run(differential, reviews)
    patched = Counter(
        (bool(v.upstream != r["request"]["object"]), bool(v.ours != r["request"]["object"]))
        for v, r in zip(verdicts, reviews, strict=True)
    )
    counts = Counter(_kind(v) for v in verdicts)
    spellings = Counter("+".join(sorted(spelling_differences(v))) for v in verdicts)
    del spellings[""]
    report(
        capsys,
        f"admission differential ({len(reviews)} pod reviews, seed {SEED}, setup "
        f"{differential.setup_seconds} s, reviews {time.monotonic() - started:.1f} s): "
        f"{dict(counts)}; same meaning, spelled differently in: {dict(spellings)}; "
        f"patched by (upstream, ours): {dict(patched)}",
    )
    assert len(reviews) == POD_REVIEWS
    assert patched[(True, True)] >= POD_REVIEWS // 2, "most reviews should be patched by both"
    # the documented deviation: upstream panics where ours caps (see upstream_panics)
    unexplained = [
        v.uid
        for v, r in zip(verdicts, reviews, strict=True)
        if v.upstream_failed and not upstream_panics(r, differential.vpas)
    ]
    assert unexplained == [], f"upstream dropped these reviews: {unexplained}"
    compared = [v for v in verdicts if not v.upstream_failed]
    assert all(v.same_allowed and v.same_code and v.same_warnings for v in compared)
    assert counts["different"] == 0, _differences(compared)


def test_vpa_reviews_get_the_same_verdicts(
    differential: Differential, capsys: pytest.CaptureFixture[str]
) -> None:
    reviews = vpa_reviews(differential.vpas)
    verdicts = _run(differential, reviews)
    counts = Counter(_kind(v) for v in verdicts)
    report(
        capsys,
        f"admission differential ({len(reviews)} VPA reviews, {len(INVALID_SPECS)} invalid): "
        f"{dict(counts)}; refusals worded alike: "
        f"{sum(v.same_message for v in verdicts[-len(INVALID_SPECS) :])}/{len(INVALID_SPECS)}",
    )
    assert all(v.same_allowed and v.same_code for v in verdicts), _differences(verdicts)
    assert all(v.same_warnings for v in verdicts), [v.uid for v in verdicts if not v.same_warnings]
    assert counts["different"] == 0, _differences(verdicts)
