"""The objects and AdmissionReviews of the admission differential (upstream's admission-controller
v1.8.1 against ``hpa vpa admission``), and how two answers are compared.

Built from upstream's examples (``../shared/data/vpa/hamster.yaml``, ``redis.yaml``: the
``hamster`` and ``redis-master`` workloads and their VPAs) plus workloads and VPAs that cover the
policies: update modes ``Off``, ``Initial``, ``Recreate``, ``Auto``, ``InPlaceOrRecreate``;
``controlledResources``; ``RequestsOnly`` and ``RequestsAndLimits``; ``minAllowed``/``maxAllowed``;
container names and ``*``; a container ``mode: Off``; a VPA without status; a recommendation for
a container the pod lacks; two VPAs on one workload; a StatefulSet; and LimitRanges in one of the
two namespaces. Pods are drawn with a seeded RNG from the workloads' templates with varied
requests, limits, quantity spellings, annotations, extra containers, and some that no VPA matches.

Pure: no I/O. ``tests/e2e/test_vpa_admission_differential.py`` applies the objects to the lab and
sends the reviews; ``tests/e2e/test_vpa_admission_cases.py`` tests this module.
"""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hpa.core.quantity import QuantityError, parse_quantity
from hpa.core.vpa.admission import RESOURCE_UPDATES_ANNOTATION, apply_patch
from hpa.webhook.handler import VPA_GROUP
from tests.hpa.api.data import VPA_DATA, load_yaml_documents
from tests.hpa.webhook.reviews import review

CAPPED = "vpa-diff"
"""The namespace with LimitRanges."""
OPEN = "vpa-diff-open"
"""The namespace without."""
NAMESPACES = (CAPPED, OPEN)
SEED = 20260101
POD_REVIEWS = 200

Obj = dict[str, Any]


@dataclass(frozen=True)
class Workload:
    name: str
    namespace: str
    containers: tuple[Obj, ...]
    kind: str = "Deployment"

    @property
    def labels(self) -> dict[str, str]:
        return {"app": self.name}

    def manifest(self) -> Obj:
        """Zero replicas: the ReplicaSet (a pod's owner) exists, no pod is created."""
        spec: Obj = {
            "replicas": 0,
            "selector": {"matchLabels": self.labels},
            "template": {
                "metadata": {"labels": self.labels},
                "spec": {"containers": [copy.deepcopy(c) for c in self.containers]},
            },
        }
        if self.kind == "StatefulSet":
            spec["serviceName"] = self.name
        return {
            "apiVersion": "apps/v1",
            "kind": self.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        }


@dataclass(frozen=True)
class Vpa:
    name: str
    workload: Workload
    spec: Obj = field(default_factory=dict)
    """Everything but ``targetRef``."""
    recommendation: tuple[Obj, ...] | None = None

    def manifest(self) -> Obj:
        spec = {
            "targetRef": {
                "apiVersion": "apps/v1",
                "kind": self.workload.kind,
                "name": self.workload.name,
            },
            **copy.deepcopy(self.spec),
        }
        return {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": {"name": self.name, "namespace": self.workload.namespace},
            "spec": spec,
        }

    def status(self) -> Obj | None:
        if self.recommendation is None:
            return None
        return {"recommendation": {"containerRecommendations": list(self.recommendation)}}


def container(name: str, requests: Obj | None = None, limits: Obj | None = None) -> Obj:
    """A pause container with these requests and limits (an absent one is left out)."""
    resources: Obj = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": resources}


def container_recommendation(
    container: str, target: Obj, *, lower: Obj | None = None, upper: Obj | None = None
) -> Obj:
    return {
        "containerName": container,
        "target": target,
        "lowerBound": lower or target,
        "upperBound": upper or target,
        "uncappedTarget": target,
    }


def _mode(mode: str) -> Obj:
    return {"updatePolicy": {"updateMode": mode}}


def _policies(*policies: Obj) -> Obj:
    return {"resourcePolicy": {"containerPolicies": list(policies)}}


def _example(file_name: str, kind: str) -> Obj:
    documents = load_yaml_documents(VPA_DATA / file_name)
    return next(d for d in documents if d.get("kind") == kind)


def _example_workload(file_name: str, namespace: str) -> Workload:
    deployment = _example(file_name, "Deployment")
    containers = tuple(
        container(c["name"], c.get("resources", {}).get("requests"))
        for c in deployment["spec"]["template"]["spec"]["containers"]
    )
    return Workload(deployment["metadata"]["name"], namespace, containers)


def _example_spec(file_name: str) -> tuple[str, Obj]:
    vpa = _example(file_name, "VerticalPodAutoscaler")
    spec = {k: v for k, v in vpa["spec"].items() if k != "targetRef"}
    return vpa["metadata"]["name"], spec


def workloads_and_vpas() -> tuple[list[Workload], list[Vpa]]:
    hamster = _example_workload("hamster.yaml", CAPPED)
    redis = _example_workload("redis.yaml", CAPPED)
    frontend = Workload("frontend", CAPPED, (container("web", {"cpu": "200m"}),))
    cache = Workload("cache", CAPPED, (container("redis", {"memory": "256Mi"}),))
    api = Workload("api", CAPPED, (container("api", {"cpu": "100m"}, {"cpu": "300m"}),))
    worker = Workload(
        "worker",
        CAPPED,
        (
            container("worker", {"cpu": "250m", "memory": "128Mi"}, {"memory": "256Mi"}),
            container("sidecar", {"cpu": "10m"}),
        ),
    )
    batch = Workload("batch", OPEN, (container("batch", {"cpu": "1"}),))
    gateway = Workload("gateway", OPEN, (container("gateway"),))
    queue = Workload("queue", OPEN, (container("queue", {"cpu": "50m"}),))
    shop = Workload(
        "shop",
        OPEN,
        (container("app", {"cpu": "300m", "memory": "300Mi"}), container("log", {"cpu": "5m"})),
    )
    db = Workload("db", OPEN, (container("db", {"memory": "1Gi"}),), kind="StatefulSet")
    duo = Workload("duo", OPEN, (container("duo", {"cpu": "100m"}),))
    edge = Workload(
        "edge",
        OPEN,
        (container("edge", {"cpu": "10m", "memory": "20Mi"}, {"cpu": "30m", "memory": "50Mi"}),),
    )
    hamster_name, hamster_spec = _example_spec("hamster.yaml")
    redis_name, redis_spec = _example_spec("redis.yaml")
    vpas = [
        Vpa(
            hamster_name,
            hamster,
            hamster_spec,
            (
                container_recommendation(
                    "hamster",
                    {"cpu": "587m", "memory": "262144k"},
                    lower={"cpu": "100m", "memory": "50Mi"},
                    upper={"cpu": "1", "memory": "500Mi"},
                ),
            ),
        ),
        Vpa(
            redis_name,
            redis,
            {**redis_spec, **_mode("Recreate")},
            (container_recommendation("master", {"cpu": "1500m", "memory": "3Gi"}),),
        ),
        Vpa(
            "frontend-vpa",
            frontend,
            _mode("Off"),
            (container_recommendation("web", {"cpu": "350m", "memory": "100Mi"}),),
        ),
        Vpa(
            "cache-vpa",
            cache,
            {
                **_mode("Initial"),
                **_policies({"containerName": "*", "controlledResources": ["memory"]}),
            },
            (container_recommendation("redis", {"cpu": "120m", "memory": "400M"}),),
        ),
        Vpa(
            "api-vpa",
            api,
            {
                **_mode("Recreate"),
                **_policies(
                    {
                        "containerName": "*",
                        "controlledValues": "RequestsOnly",
                        "minAllowed": {"cpu": "200m"},
                    }
                ),
            },
            (container_recommendation("api", {"cpu": "150m", "memory": "90Mi"}),),
        ),
        Vpa(
            "worker-vpa",
            worker,
            {
                **_mode("InPlaceOrRecreate"),
                **_policies(
                    {
                        "containerName": "worker",
                        "controlledValues": "RequestsAndLimits",
                        "maxAllowed": {"memory": "1Gi"},
                    },
                    {"containerName": "sidecar", "mode": "Off"},
                ),
            },
            (
                container_recommendation("worker", {"cpu": "700m", "memory": "1500Mi"}),
                container_recommendation("sidecar", {"cpu": "40m", "memory": "30Mi"}),
            ),
        ),
        Vpa(
            "batch-vpa",
            batch,
            {
                **_mode("Auto"),
                **_policies(
                    {
                        "containerName": "*",
                        "controlledResources": ["cpu"],
                        "minAllowed": {"cpu": "50m"},
                        "maxAllowed": {"cpu": "500m"},
                    }
                ),
            },
            (container_recommendation("batch", {"cpu": "2", "memory": "2Gi"}),),
        ),
        Vpa(
            "gateway-vpa",
            gateway,
            _mode("Recreate"),
            (container_recommendation("other", {"cpu": "100m", "memory": "100Mi"}),),
        ),
        Vpa("queue-vpa", queue, _mode("Recreate"), None),
        Vpa(
            "shop-vpa",
            shop,
            _policies(
                {"containerName": "*", "minAllowed": {"memory": "64Mi"}},
                {
                    "containerName": "log",
                    "maxAllowed": {"cpu": "100m"},
                    "controlledValues": "RequestsOnly",
                },
            ),
            (
                container_recommendation("app", {"cpu": "450m", "memory": "50Mi"}),
                container_recommendation("log", {"cpu": "250m", "memory": "32Mi"}),
            ),
        ),
        Vpa(
            "db-vpa",
            db,
            _mode("Recreate"),
            (container_recommendation("db", {"cpu": "333m", "memory": "1.5Gi"}),),
        ),
        Vpa("duo-off", duo, _mode("Off"), (container_recommendation("duo", {"cpu": "900m"}),)),
        Vpa(
            "duo-auto",
            duo,
            _mode("Recreate"),
            (container_recommendation("duo", {"cpu": "400m", "memory": "64Mi"}),),
        ),
        Vpa(
            "edge-vpa",
            edge,
            {
                **_mode("InPlaceOrRecreate"),
                **_policies({"containerName": "edge", "controlledValues": "RequestsAndLimits"}),
            },
            (container_recommendation("edge", {"cpu": "33m", "memory": "100M"}),),
        ),
    ]
    workloads = [hamster, redis, frontend, cache, api, worker, batch, gateway, queue, shop, db]
    return [*workloads, duo, edge], vpas


def limit_ranges() -> list[Obj]:
    """Two LimitRanges in ``CAPPED`` (upstream merges every item of the namespace)."""
    container_item = {
        "type": "Container",
        "max": {"cpu": "1200m", "memory": "1Gi"},
        "min": {"memory": "32Mi"},
        "default": {"cpu": "500m", "memory": "256Mi"},
    }
    pod = {"type": "Pod", "max": {"cpu": "2", "memory": "2Gi"}}
    return [
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": name, "namespace": CAPPED},
            "spec": {"limits": [item]},
        }
        for name, item in (("containers", container_item), ("pods", pod))
    ]


CPU_SPELLINGS = ("50m", "100m", "0.25", "1", "1500m", "2")
MEMORY_SPELLINGS = ("32Mi", "100M", "0.5Gi", "134217728", "1e8", "300Mi", "2Gi")
LIMIT_FACTORS = (1, 1.5, 2, 3)


def _scaled(text: str, factor: float) -> str:
    amount = parse_quantity(text).amount * Decimal(str(factor))
    return f"{int(amount * 1000)}m" if amount != amount.to_integral() else str(int(amount))


def _resources(rng: random.Random, template: Obj) -> Obj:
    """The template's resources, or a variant: none, requests only, limits only, both."""
    shape = rng.choice(("template", "none", "requests", "limits", "both", "both", "empty"))
    if shape == "template":
        return copy.deepcopy(template.get("resources", {}))
    if shape == "none":
        return {}
    if shape == "empty":
        return {"requests": {}, "limits": {}}
    requests: Obj = {}
    if rng.random() < 0.8:
        requests["cpu"] = rng.choice(CPU_SPELLINGS)
    if rng.random() < 0.7:
        requests["memory"] = rng.choice(MEMORY_SPELLINGS)
    if shape == "requests":
        return {"requests": requests}
    if shape == "limits":
        return {"limits": requests or {"cpu": "1"}}
    factor = rng.choice(LIMIT_FACTORS)
    limits = {name: _scaled(value, factor) for name, value in requests.items()}
    return {"requests": requests, "limits": limits}


def draw_pod(
    rng: random.Random, workload: Workload, owner: tuple[str, str] | None, index: int
) -> Obj:
    """A pod of ``workload`` as its controller would create it, varied. ``owner`` is the pod's
    controlling owner (kind, name): the ReplicaSet of a Deployment, the StatefulSet itself."""
    containers = []
    for template in workload.containers:
        drawn = copy.deepcopy(template)
        drawn["resources"] = _resources(rng, template)
        if not drawn["resources"] and rng.random() < 0.5:
            del drawn["resources"]
        containers.append(drawn)
    if rng.random() < 0.2:
        containers.append(container("istio-proxy", {"cpu": "10m", "memory": "40Mi"}))
    if rng.random() < 0.1:
        rng.shuffle(containers)
    labels = dict(workload.labels)
    if rng.random() < 0.05:
        labels["app"] = f"{workload.name}-canary"  # the owner is the workload's; the selector not
    metadata: Obj = {"namespace": workload.namespace, "labels": labels}
    if rng.random() < 0.3:
        metadata["name"] = f"{workload.name}-{index}"
    else:
        metadata["generateName"] = f"{owner[1] if owner else workload.name}-"
    annotations = rng.choice((None, None, {}, {"team": "shop"}, {"a/b~c": "x", "team": "shop"}))
    if annotations is not None:
        metadata["annotations"] = annotations
    if owner is not None and rng.random() >= 0.05:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner[0],
                "name": owner[1],
                "uid": f"00000000-0000-0000-0000-{index:012d}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": containers},
    }


def pod_review(pod: Obj, uid: str) -> Obj:
    metadata = pod["metadata"]
    return review(pod, uid=uid, namespace=metadata["namespace"], name=metadata.get("name"))


def vpa_review(vpa: Obj, uid: str, *, old: Obj | None = None) -> Obj:
    metadata = vpa["metadata"]
    return review(
        vpa,
        uid=uid,
        resource=(VPA_GROUP, "v1", "verticalpodautoscalers"),
        kind="VerticalPodAutoscaler",
        operation="CREATE" if old is None else "UPDATE",
        old=old,
        namespace=metadata["namespace"],
        name=metadata["name"],
        username="hpa-lab-admin",
    )


def probe_review(workload: Workload, owner: tuple[str, str]) -> Obj:
    """A pod of ``workload`` with no resources: a webhook that knows the workload's VPA (with a
    recommendation) patches its requests, so polling it tells when a webhook's caches are filled."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{owner[1]}-",
            "namespace": workload.namespace,
            "labels": workload.labels,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner[0],
                    "name": owner[1],
                    "uid": "00000000-0000-0000-0000-00000000beef",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [{"name": c["name"], "image": c["image"]} for c in workload.containers]
        },
    }
    return pod_review(pod, "probe")


def pod_reviews(
    workloads: Sequence[Workload], owners: Mapping[str, tuple[str, str]], *, count: int, seed: int
) -> list[Obj]:
    """``count`` pod reviews; ``owners`` maps a workload's ``namespace/name`` to its pods' owner."""
    rng = random.Random(seed)
    reviews = []
    for index in range(count):
        workload = workloads[index % len(workloads)] if index < len(workloads) else None
        workload = workload or rng.choice(list(workloads))
        owner = owners.get(f"{workload.namespace}/{workload.name}")
        reviews.append(pod_review(draw_pod(rng, workload, owner, index), f"pod-{index:03d}"))
    return reviews


INVALID_SPECS: tuple[tuple[str, Obj], ...] = (
    ("min-replicas-zero", {"updatePolicy": {"updateMode": "Recreate", "minReplicas": 0}}),
    ("unknown-mode", {"updatePolicy": {"updateMode": "Sometimes"}}),
    ("no-update-mode", {"updatePolicy": {}}),
    (
        "max-below-min",
        _policies({"containerName": "*", "minAllowed": {"cpu": "2"}, "maxAllowed": {"cpu": "1"}}),
    ),
    ("storage", _policies({"containerName": "*", "controlledResources": ["storage"]})),
    (
        "off-with-limits",
        _policies({"containerName": "x", "mode": "Off", "controlledValues": "RequestsAndLimits"}),
    ),
    ("no-container-name", _policies({"minAllowed": {"cpu": "1"}})),
    ("two-recommenders", {"recommenders": [{"name": "a"}, {"name": "b"}]}),
    ("cpu-resolution", _policies({"containerName": "*", "minAllowed": {"cpu": "100u"}})),
    ("memory-resolution", _policies({"containerName": "*", "minAllowed": {"memory": "100m"}})),
)


def vpa_reviews(vpas: Sequence[Vpa]) -> list[Obj]:
    """Every VPA of the differential as a CREATE, the first as an UPDATE, and invalid specs."""
    reviews = [vpa_review(v.manifest(), f"vpa-{i:03d}") for i, v in enumerate(vpas)]
    first = vpas[0].manifest()
    reviews.append(vpa_review(first, "vpa-update", old=first))
    for name, spec in INVALID_SPECS:
        manifest = Vpa(f"invalid-{name}", vpas[0].workload, spec).manifest()
        reviews.append(vpa_review(manifest, f"vpa-invalid-{name}"))
    return reviews


# ----------------------------------------------------------------------------- comparison


def patch_of(response: Obj) -> list[Obj]:
    encoded = response.get("patch")
    if not encoded:
        return []
    operations: list[Obj] = json.loads(base64.b64decode(encoded))
    return operations


def _canonical_quantity(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return parse_quantity(text).amount.normalize()
    except QuantityError:
        return text


def _canonical_updates(text: str) -> Any:
    """``vpaUpdates`` with each container's items sorted (upstream ranges over a Go map)."""
    head, separator, rest = text.partition(": ")
    if not separator:
        return text
    containers = []
    for part in rest.split("; "):
        label, _, items = part.partition(": ")
        containers.append((label, tuple(sorted(items.split(", ")))))
    return (head, tuple(containers))


def canonical_object(obj: Obj, *, quantities: bool = True, updates: bool = True) -> Obj:
    """A pod or VPA with every resource quantity as its exact amount and ``vpaUpdates`` in a
    stable order: two objects equal here are the same to the API server and the kubelet.
    ``quantities``/``updates`` False leave that part as it is (to tell which one differed)."""
    out = copy.deepcopy(obj)
    for container in out.get("spec", {}).get("containers", []) if quantities else ():
        resources = container.get("resources", {})
        for field_name in ("requests", "limits"):
            values = resources.get(field_name)
            if isinstance(values, dict):
                resources[field_name] = {k: _canonical_quantity(v) for k, v in values.items()}
    annotations = out.get("metadata", {}).get("annotations")
    if updates and isinstance(annotations, dict) and RESOURCE_UPDATES_ANNOTATION in annotations:
        annotations[RESOURCE_UPDATES_ANNOTATION] = _canonical_updates(
            annotations[RESOURCE_UPDATES_ANNOTATION]
        )
    return out


@dataclass(frozen=True)
class Verdict:
    """One review's two answers side by side."""

    uid: str
    same_allowed: bool
    same_code: bool
    same_text: bool
    """The objects after the patches are byte for byte equal."""
    same_meaning: bool
    """Equal after :func:`canonical_object`."""
    same_warnings: bool
    same_message: bool
    """The refusals' ``status.message`` (both None when allowed)."""
    upstream: Obj
    ours: Obj
    upstream_failed: bool = False
    """Upstream answered nothing (it dropped the connection); see :func:`upstream_panics`."""


def compare(review: Obj, upstream: Obj | None, ours: Obj) -> Verdict:
    """Compare two ``AdmissionReview`` answers to ``review``: ``allowed``, the status code, and
    the object after each answer's JSON Patch (the API server applies it as RFC 6902). A missing
    upstream answer is what kube-apiserver's ``failurePolicy: Ignore`` makes of it: the object
    unchanged."""
    obj = review["request"]["object"]
    if upstream is None:
        upstream = {"response": {"allowed": True}}
        failed = True
    else:
        failed = False
    up, our = upstream.get("response", {}), ours.get("response", {})
    after_up = apply_patch(obj, patch_of(up))
    after_our = apply_patch(obj, patch_of(our))
    return Verdict(
        uid=review["request"]["uid"],
        same_allowed=bool(up.get("allowed")) == bool(our.get("allowed")),
        same_code=(up.get("status") or {}).get("code") == (our.get("status") or {}).get("code"),
        same_text=after_up == after_our,
        same_meaning=canonical_object(after_up) == canonical_object(after_our),
        same_warnings=up.get("warnings") == our.get("warnings"),
        same_message=(up.get("status") or {}).get("message")
        == (our.get("status") or {}).get("message"),
        upstream=after_up,
        ours=after_our,
        upstream_failed=failed,
    )


def spelling_differences(verdict: Verdict) -> set[str]:
    """What tells two same-meaning objects apart: ``quantities`` (spelling), ``vpaUpdates``
    (item order), or both."""
    if verdict.same_text or not verdict.same_meaning:
        return set()
    kinds = set()
    if canonical_object(verdict.upstream, quantities=False) != canonical_object(
        verdict.ours, quantities=False
    ):
        kinds.add("quantities")
    if canonical_object(verdict.upstream, updates=False) != canonical_object(
        verdict.ours, updates=False
    ):
        kinds.add("vpaUpdates")
    return kinds


def upstream_panics(review: Obj, vpas: Sequence[Vpa]) -> bool:
    """Upstream v1.8.1 panics (``pkg/utils/vpa/capping.go:480``, ``applyPodLimitRange``:
    "assignment to entry in nil map", or a nil dereference a few lines above) when a pod's
    namespace has a Pod LimitRange and one of the pod's containers has no recommendation:
    ``insertRequestsForMissingRecommendations`` gives such a container a recommendation with only
    a ``target`` (nil ``upperBound``/``lowerBound`` maps) or none, and scaling the pod's sums into
    the LimitRange writes into it. net/http recovers and drops the connection, so kube-apiserver
    applies the webhook's ``failurePolicy`` (``Ignore``: the pod is created unchanged).

    True when ``review`` is such a pod: in ``CAPPED``, owned, with a container that no
    recommendation of its workload's VPAs names (only the pods' sums exceeding the LimitRange
    reach the write, so this is necessary, not sufficient)."""
    pod = review["request"]["object"]
    metadata = pod["metadata"]
    if metadata["namespace"] != CAPPED or "ownerReferences" not in metadata:
        return False
    app = metadata["labels"]["app"]
    named = {
        r["containerName"]
        for v in vpas
        if v.workload.namespace == CAPPED and v.workload.name == app
        for r in v.recommendation or ()
    }
    return any(c["name"] not in named for c in pod["spec"]["containers"])
