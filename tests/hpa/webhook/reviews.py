"""AdmissionReview bodies for the webhook's tests."""

from __future__ import annotations

from typing import Any

from hpa.core.vpa.amount import Resources
from hpa.core.vpa.policy import ContainerResourcePolicy, PodResourcePolicy
from hpa.core.vpa.recommender import RecommendedContainerResources
from hpa.webhook.handler import MatchedVpa

MI = 1024 * 1024


def pod(
    *,
    app: str = "web",
    annotations: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "generateName": "web-7d4b9c-",
        "namespace": "shop",
        "labels": {"app": app},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-7d4b9c",
                "controller": True,
            }
        ],
    }
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": containers
            if containers is not None
            else [{"name": "app", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]
        },
    }


def review(
    obj: dict[str, Any] | None = None,
    *,
    uid: str = "b5e2-1",
    resource: tuple[str, str, str] = ("", "v1", "pods"),
    kind: str = "Pod",
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    namespace: str = "shop",
    name: str | None = None,
    username: str = "system:serviceaccount:kube-system:replicaset-controller",
) -> dict[str, Any]:
    group, version, plural = resource
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": plural},
        "namespace": namespace,
        "operation": operation,
        "userInfo": {"username": username},
        "object": pod() if obj is None else obj,
        "dryRun": False,
    }
    if name is not None:
        request["name"] = name
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def web_vpa(*, off: bool = False) -> MatchedVpa:
    target = Resources(cpu=250, memory=256 * MI)
    return MatchedVpa(
        name="web",
        update_mode_off=off,
        recommendation=(RecommendedContainerResources("app", target, target, target, target),),
        policy=PodResourcePolicy(
            (ContainerResourcePolicy(container_name="*", max_allowed=Resources(cpu=2000)),)
        ),
    )
