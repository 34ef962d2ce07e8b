"""Rendered objects against the Kubernetes OpenAPI schemas, Pod Security "restricted", RBAC
bounds, and manifests/ drift."""

from __future__ import annotations

import copy
import functools
from typing import Any

import kubernetes_validate
import pytest

from tests.delivery.chart import (
    CHART_DIR,
    KUBE_VERSION,
    MANIFESTS_FILE,
    RenderedObject,
    ci_values_files,
    load_values,
    render,
    render_manifests,
)
from tests.delivery.podsecurity import pod_templates, restricted_violations

VALUES_FILES = ci_values_files()
VALUES_IDS = [path.name.removesuffix("-values.yaml") for path in VALUES_FILES]
# Custom resources have no schema in kubernetes-validate; they are the only kinds skipped.
CUSTOM_RESOURCE_GROUPS = ("cert-manager.io/", "monitoring.coreos.com/")


@functools.cache
def rendered(name: str) -> tuple[RenderedObject, ...]:
    return tuple(render(load_values(CHART_DIR / "ci" / f"{name}-values.yaml")))


@pytest.mark.parametrize("name", VALUES_IDS)
def test_every_object_is_valid_for_the_lab_kubernetes_version_strictly(name: str) -> None:
    validated = 0
    for obj in rendered(name):
        if obj.body["apiVersion"].startswith(CUSTOM_RESOURCE_GROUPS):
            continue
        kubernetes_validate.validate(obj.body, KUBE_VERSION, strict=True)
        validated += 1
    assert validated > 0 or name == "everything-off"


def test_strict_validation_refuses_an_unknown_field() -> None:
    deployment = next(o.body for o in rendered("default") if o.kind == "Deployment")
    broken = copy.deepcopy(deployment)
    broken["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBE_VERSION, strict=True)


@pytest.mark.parametrize("name", VALUES_IDS)
def test_every_pod_template_meets_pod_security_restricted(name: str) -> None:
    templates = 0
    for obj in rendered(name):
        for spec in pod_templates(obj.body):
            templates += 1
            assert restricted_violations(spec) == [], f"{obj.kind}/{obj.name}"
    assert templates == (0 if name == "everything-off" else 2)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"hostNetwork": True}, "hostNetwork=true"),
        ({"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}, "volume h"),
        ({"securityContext": {"runAsNonRoot": False}}, "runAsNonRoot must be true"),
        ({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}, "seccompProfile"),
    ],
)
def test_pod_security_check_refuses_pod_level_breaches(
    change: dict[str, Any], expected: str
) -> None:
    spec = _compliant_spec()
    spec.update(change)
    container = spec["containers"][0]
    # let the pod-level setting decide
    container["securityContext"].pop("runAsNonRoot")
    container["securityContext"].pop("seccompProfile")
    assert any(expected in problem for problem in restricted_violations(spec))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"allowPrivilegeEscalation": True}, "allowPrivilegeEscalation"),
        ({"capabilities": {"drop": ["NET_RAW"]}}, "capabilities.drop must include ALL"),
        ({"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}, "capabilities.add"),
        ({"privileged": True}, "privileged=true"),
        ({"runAsUser": 0}, "runAsUser=0"),
        ({"readOnlyRootFilesystem": False}, "readOnlyRootFilesystem"),
        ({"procMount": "Unmasked"}, "procMount"),
        ({"seLinuxOptions": {"type": "spc_t"}}, "seLinuxOptions.type"),
    ],
)
def test_pod_security_check_refuses_container_breaches(
    change: dict[str, Any], expected: str
) -> None:
    spec = _compliant_spec()
    spec["containers"][0]["securityContext"].update(change)
    assert any(expected in problem for problem in restricted_violations(spec))


def _compliant_spec() -> dict[str, Any]:
    deployment = next(o.body for o in rendered("default") if o.kind == "Deployment")
    spec: dict[str, Any] = copy.deepcopy(deployment["spec"]["template"]["spec"])
    assert restricted_violations(spec) == []
    return spec


# ------------------------------------------------------------------------------------ RBAC

# Upstream's system:controller:horizontal-pod-autoscaler (kubernetes/kubernetes
# plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go, v1.37), as
# (apiGroup, resource) -> verbs; eventsRule() is events in "" and events.k8s.io.
UPSTREAM_HPA_ROLE: dict[tuple[str, str], set[str]] = {
    ("autoscaling", "horizontalpodautoscalers"): {"get", "list", "watch"},
    ("autoscaling", "horizontalpodautoscalers/status"): {"update"},
    ("*", "*/scale"): {"get", "update"},
    ("", "pods"): {"list"},
    ("metrics.k8s.io", "pods"): {"list"},
    ("custom.metrics.k8s.io", "*"): {"get", "list"},
    ("external.metrics.k8s.io", "*"): {"get", "list"},
    ("", "events"): {"create", "update", "patch"},
    ("events.k8s.io", "events"): {"create", "update", "patch"},
}
# What we add, and why (docs/security.md): the controller's informers (upstream's run under
# kube-controller-manager's own identity): pods, and the built-in scale targets.
CONTROLLER_EXTENSIONS: dict[tuple[str, str], set[str]] = {
    ("", "pods"): {"watch"},
    ("apps", "deployments"): {"list", "watch"},
    ("apps", "statefulsets"): {"list", "watch"},
    ("apps", "replicasets"): {"list", "watch"},
}
METRICS_GROUPS = ("custom.metrics.k8s.io", "external.metrics.k8s.io")


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        assert "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def cluster_role(name: str) -> dict[str, Any]:
    return next(o.body for o in rendered("default") if o.kind == "ClusterRole" and o.name == name)


def test_controller_cluster_role_stays_within_upstream_plus_the_pod_watch() -> None:
    for (group, resource), verbs in grants(cluster_role("hpa-controller")["rules"]).items():
        allowed = UPSTREAM_HPA_ROLE.get((group, resource), set()) | CONTROLLER_EXTENSIONS.get(
            (group, resource), set()
        )
        assert verbs <= allowed, f"{group}/{resource}: {sorted(verbs - allowed)} beyond upstream"


@pytest.mark.parametrize("name", VALUES_IDS)
def test_no_secrets_and_no_wildcards_except_scale_and_metric_names(name: str) -> None:
    for obj in rendered(name):
        if obj.kind not in ("ClusterRole", "Role"):
            continue
        for rule in obj.body["rules"]:
            assert "secrets" not in rule["resources"], obj.name
            assert "*" not in rule["verbs"], obj.name
            for resource in rule["resources"]:
                if resource == "*":
                    # metric names are the resources of these groups: not known in advance
                    assert set(rule["apiGroups"]) <= set(METRICS_GROUPS), obj.name
                    assert set(rule["verbs"]) <= {"get", "list"}, obj.name
                elif "*" in resource:
                    assert resource == "*/scale", obj.name


def test_adapter_cluster_role_only_reads_pods_and_nodes() -> None:
    assert grants(cluster_role("hpa-adapter")["rules"]) == {
        ("", "pods"): {"list", "watch"},
        ("", "nodes"): {"list", "watch"},
    }


# ------------------------------------------------------------------------------- manifests


def test_manifests_are_what_the_chart_renders() -> None:
    assert MANIFESTS_FILE.read_text() == render_manifests(), (
        "manifests/hpa.yaml drifted from charts/hpa; run `make manifests` and commit"
    )


def test_manifests_carry_no_private_key() -> None:
    text = MANIFESTS_FILE.read_text()
    assert "PRIVATE KEY" not in text
    assert "\nkind: Secret\n" not in text
