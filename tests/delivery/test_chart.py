"""charts/hpa: helm lint, schema, names and labels, TLS, APIServices, components, NetworkPolicy.

Every check renders the chart with Helm's engine (helm-python-sdk) over the values files of
charts/hpa/ci/ (defaults, cert-manager, metrics API on, everything off, everything on).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from adapter.rules.config import load_rules
from hpa.cli import build_parser
from tests.delivery.chart import (
    CHART_DIR,
    RELEASE_NAMESPACE,
    RenderedObject,
    ci_values_files,
    lint,
    load_values,
    of_kind,
    one,
    render_ci,
)
from tests.delivery.configref import chart_values

VALUES_FILES = ci_values_files()
VALUES_IDS = [path.name.removesuffix("-values.yaml") for path in VALUES_FILES]
INSTANCE_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/part-of",
    "helm.sh/chart",
)


def rendered(name: str) -> tuple[RenderedObject, ...]:
    return render_ci(name)


def test_the_checks_cover_the_values_files_the_issue_names() -> None:
    assert set(VALUES_IDS) >= {"default", "cert-manager", "metrics-api", "everything-off"}


@pytest.mark.parametrize("values_file", VALUES_FILES, ids=VALUES_IDS)
def test_helm_lint_strict_finds_nothing(values_file: Path) -> None:
    report = lint(load_values(values_file))
    assert report["errors"] == []
    # severity 1 is "info" (only "icon is recommended"); warnings (2) and errors (3) fail --strict
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize(
    "values",
    [
        {"unknown": 1},
        {"controller": {"replica": 2}},
        {"adapter": {"apiServices": {"resourceMetrics": {"enabled": True, "insecure": True}}}},
        {"adapter": {"rules": {"rule": []}}},
        {"networkPolicy": {"apiServer": {"cidr": "10.0.0.1/32"}}},
        {"tls": {"mode": "insecureSkipTLSVerify"}},
        {"controller": {"syncPeriod": "fifteen seconds"}},
        {"image": {"digest": "latest"}},
        {"controller": {"metricsSource": "prometheus"}},
        {"controller": {"rbac": {"customMetrics": ["*"]}}},
        {"controller": {"rbac": {"customMetrics": ["pods/*"]}}},
        {"controller": {"rbac": {"customMetrics": ["http_requests_per_second"]}}},
        {"controller": {"rbac": {"externalMetrics": ["*"]}}},
        {"controller": {"rbac": {"allMetrics": "yes"}}},
        {"controller": {"rbac": {"resources": ["*"]}}},
    ],
    ids=repr,
)
def test_schema_refuses_unknown_keys_and_bad_values(values: dict[str, Any]) -> None:
    with helm.Chart.load(CHART_DIR) as chart, pytest.raises(helm.HelmValuesError):
        chart.validate_schema(values)


def leaf_paths(values: dict[str, Any], prefix: str = "") -> list[str]:
    paths = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            paths += leaf_paths(value, f"{path}.")
        else:
            paths.append(path)
    return paths


def test_every_default_value_is_documented_for_helm_docs() -> None:
    text = (CHART_DIR / "values.yaml").read_text()
    documented = {key for key, _default, _description in chart_values()}
    undocumented = [
        path
        for path in leaf_paths(yaml.safe_load(text))
        if not any(path == d or path.startswith(f"{d}.") for d in documented)
    ]
    assert undocumented == []
    assert "adapter.rules" in documented  # the default rules are in values, documented


@pytest.mark.parametrize("name", VALUES_IDS)
def test_every_object_carries_the_instance_labels(name: str) -> None:
    for obj in rendered(name):
        labels = obj.body["metadata"].get("labels", {})
        missing = [label for label in INSTANCE_LABELS if label not in labels]
        assert missing == [], f"{obj.kind}/{obj.name} ({obj.source}) lacks {missing}"
        assert labels["app.kubernetes.io/instance"] == "hpa"


@pytest.mark.parametrize("name", VALUES_IDS)
def test_never_insecure_skip_tls_verify(name: str) -> None:
    for api_service in of_kind(rendered(name), "APIService"):
        assert "insecureSkipTLSVerify" not in api_service["spec"]


def api_service_names(name: str) -> set[str]:
    return {o.name for o in rendered(name) if o.kind == "APIService"}


def test_api_services_by_values() -> None:
    custom_and_external = {
        "v1beta1.custom.metrics.k8s.io",
        "v1beta2.custom.metrics.k8s.io",
        "v1beta1.external.metrics.k8s.io",
    }
    # metrics-server keeps metrics.k8s.io by default
    assert api_service_names("default") == custom_and_external
    assert api_service_names("metrics-api") == custom_and_external | {"v1beta1.metrics.k8s.io"}
    assert api_service_names("everything-off") == set()


def test_chart_generated_ca_signs_the_serving_certificate_for_the_service() -> None:
    objects = rendered("default")
    secret = one(objects, "Secret", "hpa-adapter-tls")
    ca_pem = base64.b64decode(secret["data"]["ca.crt"])
    ca = x509.load_pem_x509_certificate(ca_pem)
    serving = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    for api_service in of_kind(objects, "APIService"):
        assert base64.b64decode(api_service["spec"]["caBundle"]) == ca_pem
        assert api_service["spec"]["service"] == {
            "name": "hpa-adapter",
            "namespace": RELEASE_NAMESPACE,
            "port": 443,
        }
    public_key = ca.public_key()
    assert isinstance(public_key, rsa.RSAPublicKey)
    assert serving.signature_hash_algorithm is not None
    public_key.verify(
        serving.signature,
        serving.tbs_certificate_bytes,
        padding.PKCS1v15(),
        serving.signature_hash_algorithm,
    )
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    # the aggregator dials <service>.<namespace>.svc
    assert f"hpa-adapter.{RELEASE_NAMESPACE}.svc" in names.get_values_for_type(x509.DNSName)
    basic = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert basic.ca is True


def test_cert_manager_mode_injects_the_ca_of_the_serving_certificate() -> None:
    objects = rendered("cert-manager")
    assert of_kind(objects, "Secret") == []  # no key material in the release
    certificate = one(objects, "Certificate", "hpa-adapter")
    assert certificate["spec"]["secretName"] == "hpa-adapter-tls"
    assert f"hpa-adapter.{RELEASE_NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    assert certificate["spec"]["privateKey"]["algorithm"] == "ECDSA"
    issuer = certificate["spec"]["issuerRef"]
    assert one(objects, "Issuer", issuer["name"])["spec"] == {"ca": {"secretName": "hpa-ca"}}
    for api_service in of_kind(objects, "APIService"):
        annotations = api_service["metadata"]["annotations"]
        assert annotations["cert-manager.io/inject-ca-from"] == f"{RELEASE_NAMESPACE}/hpa-adapter"
        assert "caBundle" not in api_service["spec"]
    # the admission webhook's certificate comes from the same CA Issuer, its caBundle injected
    webhook = one(objects, "Certificate", "hpa-vpa-admission")
    assert webhook["spec"]["issuerRef"] == issuer
    assert webhook["spec"]["secretName"] == "hpa-vpa-admission-tls"
    configuration = one(objects, "MutatingWebhookConfiguration", "hpa-vpa-admission")
    assert configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{RELEASE_NAMESPACE}/hpa-vpa-admission"
    )
    assert "caBundle" not in configuration["webhooks"][0]["clientConfig"]
    # a user-provided issuer replaces the self-signed bootstrap
    full = rendered("full")
    assert of_kind(full, "Issuer") == []
    assert one(full, "Certificate", "hpa-adapter")["spec"]["issuerRef"]["kind"] == "ClusterIssuer"


def args_of(deployment: dict[str, Any]) -> list[str]:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return [str(arg) for arg in container["args"]]


@pytest.mark.parametrize("name", VALUES_IDS)
def test_container_args_are_accepted_by_the_hpa_cli(name: str) -> None:
    parser = build_parser()
    for deployment in of_kind(rendered(name), "Deployment"):
        args = parser.parse_args(args_of(deployment))
        assert args.command in ("controller", "adapter", "vpa")


def test_controller_runs_two_replicas_with_leader_election_on_its_own_lease() -> None:
    objects = rendered("default")
    deployment = one(objects, "Deployment", "hpa-controller")
    assert deployment["spec"]["replicas"] == 2
    args = build_parser().parse_args(args_of(deployment))
    assert args.leader_elect is True
    assert args.leader_elect_resource_namespace == RELEASE_NAMESPACE
    role = one(objects, "Role", "hpa-controller-leader-election")
    named = [rule for rule in role["rules"] if rule.get("resourceNames")]
    assert named == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [args.leader_elect_resource_name],
            "verbs": ["get", "update"],
        }
    ]
    assert one(objects, "PodDisruptionBudget", "hpa-controller")["spec"]["maxUnavailable"] == 1


def test_inprocess_controller_reads_the_adapter_rules_and_may_reach_prometheus() -> None:
    objects = rendered("inprocess")
    assert of_kind(objects, "APIService") == []
    assert [d["metadata"]["name"] for d in of_kind(objects, "Deployment")] == ["hpa-controller"]
    deployment = one(objects, "Deployment", "hpa-controller")
    args = build_parser().parse_args(args_of(deployment))
    assert args.metrics_source == "inprocess"
    assert args.prometheus_url == "http://prometheus-operated.monitoring.svc:9090"
    pod = deployment["spec"]["template"]["spec"]
    mount = pod["containers"][0]["volumeMounts"][0]
    assert args.config.parent.as_posix() == mount["mountPath"]
    assert mount["readOnly"] is True
    assert pod["volumes"] == [{"name": "config", "configMap": {"name": "hpa-adapter-config"}}]
    text = one(objects, "ConfigMap", "hpa-adapter-config")["data"]["config.yaml"]
    assert load_rules(text, source="hpa-adapter-config").resource_rules is not None
    egress = one(objects, "NetworkPolicy", "hpa-controller")["spec"]["egress"]
    prometheus_port = [{"protocol": "TCP", "port": 9090}]
    assert [rule["ports"] for rule in egress if rule.get("ports") == prometheus_port] != []
    api_mode = one(rendered("default"), "NetworkPolicy", "hpa-controller")["spec"]["egress"]
    assert [rule for rule in api_mode if rule.get("ports") == prometheus_port] == []
    assert "--metrics-source=inprocess" not in args_of(
        one(rendered("default"), "Deployment", "hpa-controller")
    )


def notes(values: dict[str, Any]) -> str:
    with helm.Chart.load(CHART_DIR) as chart:
        rendered_files = chart.render(values, name="hpa", namespace=RELEASE_NAMESPACE)
    return str(rendered_files["hpa/templates/NOTES.txt"])


def test_notes_say_which_metrics_the_controller_may_read() -> None:
    assert "controller.rbac.customMetrics" in notes({})  # none listed: the user is told
    listed = {"rbac": {"customMetrics": ["pods/rps"], "externalMetrics": ["queue"]}}
    assert "Metrics: custom pods/rps; external queue." in notes({"controller": listed})
    every = notes({"controller": {"rbac": {"allMetrics": True}}})
    assert "every custom and external metric" in every
    assert "read in-process" in notes({"controller": {"metricsSource": "inprocess"}})


def test_the_controller_runs_in_shadow_mode_unless_told_active() -> None:
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    assert values["controller"]["mode"] == "shadow"
    default = build_parser().parse_args(
        args_of(one(rendered("default"), "Deployment", "hpa-controller"))
    )
    assert default.dry_run is True
    active = build_parser().parse_args(
        args_of(one(rendered("active"), "Deployment", "hpa-controller"))
    )
    assert active.dry_run is False
    assert "Shadow mode" in notes({})
    assert "--controllers=*,-horizontal-pod-autoscaler-controller" in notes(
        {"controller": {"mode": "active"}}
    )


def test_adapter_runs_two_replicas_with_a_pdb_and_delegated_auth_bindings() -> None:
    objects = rendered("default")
    deployment = one(objects, "Deployment", "hpa-adapter")
    assert deployment["spec"]["replicas"] == 2
    pdb = one(objects, "PodDisruptionBudget", "hpa-adapter")
    assert pdb["spec"]["minAvailable"] == 1
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert_delegated_auth_bindings(objects, "hpa-adapter")


def assert_delegated_auth_bindings(objects: tuple[RenderedObject, ...], account: str) -> None:
    """An aggregated API server's ServiceAccount (named like its objects) may create TokenReviews
    and SubjectAccessReviews and read kube-system/extension-apiserver-authentication."""
    delegator = one(objects, "ClusterRoleBinding", f"{account}:system:auth-delegator")
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    reader = one(objects, "RoleBinding", f"{account}-auth-reader")
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "extension-apiserver-authentication-reader",
    }
    for binding in (delegator, reader):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": RELEASE_NAMESPACE}
        ]


def test_default_adapter_rules_live_in_values_and_load() -> None:
    objects = rendered("default")
    configmap = one(objects, "ConfigMap", "hpa-adapter-config")
    text = configmap["data"]["config.yaml"]
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    assert yaml.safe_load(text) == values["adapter"]["rules"]
    config = load_rules(text, source="hpa-adapter-config")
    assert len(config.rules) == 4
    assert config.resource_rules is not None
    volumes = one(objects, "Deployment", "hpa-adapter")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": "hpa-adapter-config"}} in volumes


def test_existing_configmap_is_mounted_instead_of_ours() -> None:
    objects = rendered("full")
    assert [c for c in of_kind(objects, "ConfigMap") if "config.yaml" in c["data"]] == []
    volumes = one(objects, "Deployment", "hpa-adapter")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": "adapter-config"}} in volumes


@pytest.mark.parametrize("name", VALUES_IDS)
def test_service_account_tokens_are_mounted_only_by_the_pods_that_call_the_api(name: str) -> None:
    objects = rendered(name)
    for account in of_kind(objects, "ServiceAccount"):
        assert account["automountServiceAccountToken"] is False
    for deployment in of_kind(objects, "Deployment"):
        assert deployment["spec"]["template"]["spec"]["automountServiceAccountToken"] is True


def test_network_policies_deny_by_default_and_open_only_api_server_prometheus_and_dns() -> None:
    objects = rendered("full")
    policies = {p["metadata"]["name"]: p for p in of_kind(objects, "NetworkPolicy")}
    deny = policies.pop("hpa-default-deny")
    assert deny["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in deny["spec"]
    assert "egress" not in deny["spec"]
    for deployment in of_kind(objects, "Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deny["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    api_server = [{"ipBlock": {"cidr": "10.0.0.10/32"}}, {"ipBlock": {"cidr": "10.0.0.11/32"}}]
    prometheus = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }
    dns = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    adapter = policies["hpa-adapter"]["spec"]
    assert [rule["to"] for rule in adapter["egress"]] == [api_server, [prometheus], [dns]]
    assert adapter["ingress"] == [
        {"ports": [{"protocol": "TCP", "port": 6443}], "from": [*api_server, prometheus]}
    ]
    controller = policies["hpa-controller"]["spec"]
    assert [rule["to"] for rule in controller["egress"]] == [api_server, [dns]]
    assert controller["ingress"] == [
        {"from": [prometheus], "ports": [{"protocol": "TCP", "port": 8080}]}
    ]


def test_without_api_server_cidrs_egress_is_still_limited_to_its_ports() -> None:
    adapter = one(rendered("default"), "NetworkPolicy", "hpa-adapter")["spec"]
    assert adapter["egress"][0] == {
        "ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]
    }


def test_service_monitors_are_optional() -> None:
    assert of_kind(rendered("default"), "ServiceMonitor") == []
    monitors = {m["metadata"]["name"]: m for m in of_kind(rendered("full"), "ServiceMonitor")}
    assert set(monitors) == {
        "hpa-adapter",
        "hpa-controller",
        "hpa-vpa-recommender",
        "hpa-vpa-updater",
        "hpa-vpa-admission",
    }
    assert monitors["hpa-adapter"]["spec"]["endpoints"][0]["scheme"] == "https"
    assert monitors["hpa-controller"]["metadata"]["labels"]["release"] == "prometheus"


def test_image_by_digest_or_by_app_version() -> None:
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    default = one(rendered("default"), "Deployment", "hpa-adapter")
    image = default["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"ghcr.io/hpa-autoscaling/hpa:{chart['appVersion']}"
    full = one(rendered("full"), "Deployment", "hpa-adapter")
    assert full["spec"]["template"]["spec"]["containers"][0]["image"].endswith(
        "@sha256:" + "0" * 64
    )
