"""Rendered objects against the Kubernetes OpenAPI schemas, Pod Security "restricted", RBAC
bounds, and manifests/ drift."""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import kubernetes_validate
import pytest

from adapter.server.requestinfo import RequestAttributes, request_attributes
from tests.delivery.chart import (
    KUBE_VERSION,
    MANIFESTS_FILE,
    RenderedObject,
    ci_values_files,
    render_ci,
    render_manifests,
)
from tests.delivery.podsecurity import pod_templates, restricted_violations

VALUES_FILES = ci_values_files()
VALUES_IDS = [path.name.removesuffix("-values.yaml") for path in VALUES_FILES]
# Custom resources have no schema in kubernetes-validate; they are the only kinds skipped.
CUSTOM_RESOURCE_GROUPS = ("cert-manager.io/", "monitoring.coreos.com/")


def rendered(name: str) -> tuple[RenderedObject, ...]:
    return render_ci(name)


@functools.cache
def strictly_valid(body: str) -> None:
    """kubernetes-validate, strict, once per distinct object (most values files render the same
    objects; each validation reads the whole OpenAPI definitions file). A failure is not cached."""
    kubernetes_validate.validate(json.loads(body), KUBE_VERSION, strict=True)


@pytest.mark.parametrize("name", VALUES_IDS)
def test_every_object_is_valid_for_the_lab_kubernetes_version_strictly(name: str) -> None:
    validated = 0
    for obj in rendered(name):
        if obj.body["apiVersion"].startswith(CUSTOM_RESOURCE_GROUPS):
            continue
        strictly_valid(json.dumps(obj.body, sort_keys=True))
        validated += 1
    assert validated > 0 or name == "everything-off"


def test_strict_validation_refuses_an_unknown_field() -> None:
    deployment = next(o.body for o in rendered("default") if o.kind == "Deployment")
    broken = copy.deepcopy(deployment)
    broken["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBE_VERSION, strict=True)


HOST_NETWORK_VALUES = "host-network"
"""The one values file that opts out of Pod Security "restricted" (adapter.hostNetwork)."""


@pytest.mark.parametrize("name", VALUES_IDS)
def test_every_pod_template_meets_pod_security_restricted(name: str) -> None:
    templates = 0
    for obj in rendered(name):
        for spec in pod_templates(obj.body):
            templates += 1
            problems = restricted_violations(spec)
            if name == HOST_NETWORK_VALUES and obj.name == "hpa-adapter":
                assert problems == ["hostNetwork=true"], problems
                continue
            assert problems == [], f"{obj.kind}/{obj.name}"
    deployments = [o for o in rendered(name) if o.kind == "Deployment"]
    assert templates == len(deployments)
    assert templates == {"everything-off": 0, "inprocess": 1, "vpa": 3, "full": 5}.get(name, 2) + (
        name in ("cert-manager", "existing-secret", "monitoring", "no-rbac")
    )


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
ALL_METRICS_VALUES = "all-metrics"
"""The one values file that opts in to upstream's `*` on the metrics groups."""


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        assert "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def cluster_role(name: str, values: str = "default") -> dict[str, Any]:
    return next(o.body for o in rendered(values) if o.kind == "ClusterRole" and o.name == name)


@pytest.mark.parametrize(
    "name", [n for n in VALUES_IDS if n not in ("everything-off", "vpa", "no-rbac")]
)
def test_controller_cluster_role_stays_within_upstream_plus_its_informers(name: str) -> None:
    for (group, resource), verbs in grants(cluster_role("hpa-controller", name)["rules"]).items():
        upstream = UPSTREAM_HPA_ROLE.get((group, resource), set())
        if group in METRICS_GROUPS:
            upstream = UPSTREAM_HPA_ROLE[(group, "*")]  # a listed metric is one of upstream's `*`
        allowed = upstream | CONTROLLER_EXTENSIONS.get((group, resource), set())
        assert verbs <= allowed, f"{group}/{resource}: {sorted(verbs - allowed)} beyond upstream"


@pytest.mark.parametrize("name", VALUES_IDS)
def test_no_secrets_and_no_wildcard_resources_except_scale(name: str) -> None:
    for obj in rendered(name):
        if obj.kind not in ("ClusterRole", "Role"):
            continue
        for rule in obj.body["rules"]:
            assert "secrets" not in rule["resources"], obj.name
            assert "*" not in rule["verbs"], obj.name
            for resource in rule["resources"]:
                if resource == "*" and name == ALL_METRICS_VALUES:
                    # controller.rbac.allMetrics: upstream's rules, opted in
                    assert set(rule["apiGroups"]) <= set(METRICS_GROUPS), obj.name
                    assert set(rule["verbs"]) == {"get", "list"}, obj.name
                elif "*" in resource:
                    assert resource == "*/scale", f"{obj.name}: {resource}"


def metric_rules(values: str) -> list[dict[str, Any]]:
    groups = ("metrics.k8s.io", *METRICS_GROUPS)
    rules = cluster_role("hpa-controller", values)["rules"]
    return [rule for rule in rules if set(rule["apiGroups"]) & set(groups)]


def test_by_default_the_controller_reads_resource_metrics_and_no_custom_or_external_metric() -> (
    None
):
    assert metric_rules("default") == [
        {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["list"]}
    ]


def test_listed_metrics_become_exact_rules_per_request_shape() -> None:
    assert metric_rules("full") == [
        {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["list"]},
        {
            "apiGroups": ["custom.metrics.k8s.io"],
            "resources": ["pods/http_requests_per_second", "deployments.apps/queue_length"],
            "verbs": ["get"],
        },
        {
            "apiGroups": ["custom.metrics.k8s.io"],
            "resources": ["metrics"],
            "resourceNames": ["tenant_budget"],
            "verbs": ["get"],
        },
        {
            "apiGroups": ["external.metrics.k8s.io"],
            "resources": ["queue_messages_ready"],
            "verbs": ["list"],
        },
    ]


def test_all_metrics_restores_upstreams_wildcards() -> None:
    assert metric_rules(ALL_METRICS_VALUES)[1:] == [
        {"apiGroups": [group], "resources": ["*"], "verbs": ["get", "list"]}
        for group in METRICS_GROUPS
    ]


def test_inprocess_metrics_need_no_metrics_api_rule() -> None:
    assert metric_rules("inprocess") == []


# Which request the controller makes for each metric type (hpa/metrics/custom.py, external.py,
# resource.py; upstream k8s.io/metrics versioned_client.go), as the API server's authorizer sees
# it: k8s.io/apiserver RequestInfo (ported in adapter/server/requestinfo.py) and RBAC's
# ResourceMatches / ResourceNameMatches (pkg/apis/rbac/v1/evaluation_helpers.go: exact
# `<resource>/<subresource>`, `*`, or `*/<subresource>`).
CONTROLLER_REQUESTS: list[tuple[str, bool]] = [
    ("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", True),
    ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second", True),
    ("/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/*/http_requests_per_second", True),
    (
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/web-0/http_requests_per_second",
        True,
    ),
    ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/deployments.apps/web/queue_length", True),
    ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/metrics/tenant_budget", True),
    ("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_messages_ready", True),
    # not listed
    ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/queue_length", False),
    ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/services/web/queue_length", False),
    ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/metrics/queue_length", False),
    ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/tenant_budget", False),
    ("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/http_requests_per_second", False),
]


def rbac_allows(rules: list[dict[str, Any]], attributes: RequestAttributes) -> bool:
    """plugin/pkg/auth/authorizer/rbac/rbac.go RuleAllows for a resource request."""
    combined = attributes.resource
    if attributes.subresource:
        combined += "/" + attributes.subresource
    for rule in rules:
        if attributes.verb not in rule["verbs"] and "*" not in rule["verbs"]:
            continue
        if attributes.api_group not in rule["apiGroups"] and "*" not in rule["apiGroups"]:
            continue
        names = rule.get("resourceNames") or []
        if names and attributes.name not in names:
            continue
        for resource in rule["resources"]:
            if resource in ("*", combined) or (
                attributes.subresource and resource == f"*/{attributes.subresource}"
            ):
                return True
    return False


@pytest.mark.parametrize(("path", "allowed"), CONTROLLER_REQUESTS, ids=lambda p: str(p))
def test_listed_metrics_admit_exactly_the_controllers_requests_for_them(
    path: str, allowed: bool
) -> None:
    attributes = request_attributes("GET", path, query={"labelSelector": "app=web"})
    assert rbac_allows(cluster_role("hpa-controller", "full")["rules"], attributes) is allowed
    # upstream's wildcard admits all of them; the defaults admit only resource metrics
    assert rbac_allows(cluster_role("hpa-controller", ALL_METRICS_VALUES)["rules"], attributes)
    default = rbac_allows(cluster_role("hpa-controller")["rules"], attributes)
    assert default is (attributes.api_group == "metrics.k8s.io")


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
