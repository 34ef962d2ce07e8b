"""admission.k8s.io/v1 AdmissionReview."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from hpa.api.admission import AdmissionResponse, AdmissionReview
from hpa.api.pod import Pod
from tests.hpa.api.strategies import assert_round_trip, wire_objects

REVIEW = {
    "kind": "AdmissionReview",
    "apiVersion": "admission.k8s.io/v1",
    "request": {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "namespace": "shop",
        "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
        "object": {"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "a"}]}},
        "oldObject": None,
        "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    },
}


def test_review_request_round_trips_and_its_object_parses_as_a_pod() -> None:
    review = assert_round_trip(AdmissionReview, REVIEW)
    assert isinstance(review, AdmissionReview)
    assert review.request is not None
    assert review.request.operation == "CREATE"
    pod = Pod.from_dict(review.request.object)
    assert pod.spec.containers[0].name == "a"


def test_response_is_written_with_wire_names() -> None:
    response = AdmissionResponse(uid="u", allowed=True, patch="W10=", patch_type="JSONPatch")
    assert AdmissionReview(
        api_version="admission.k8s.io/v1", kind="AdmissionReview", response=response
    ).to_dict() == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u", "allowed": True, "patch": "W10=", "patchType": "JSONPatch"},
    }


@settings(max_examples=300, deadline=None)
@given(wire_objects(AdmissionReview))
def test_any_admission_review_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(AdmissionReview, data)
