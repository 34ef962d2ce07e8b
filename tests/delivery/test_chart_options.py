"""charts/hpa: the options people expect (pod options, ServiceAccounts, RBAC switch, TLS from an
existing Secret, hostNetwork, NetworkPolicy extras, ServiceMonitor options) and the VPA
components (their arguments, Leases, RBAC against upstream's deploy/vpa-rbac.yaml, the webhook
registration and its caBundle, the recommendation API's APIService and bindings, the CRDs).

Every check renders the chart with Helm's engine over a values file of charts/hpa/ci/.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import helm_python as helm
import pytest
import yaml
from cryptography import x509

from hpa.app import recommender as recommender_app
from hpa.app import updater as updater_app
from hpa.app import webhook as webhook_app
from hpa.cli import build_parser
from hpa.webhook import query
from tests.delivery.chart import (
    CHART_DIR,
    RELEASE_NAMESPACE,
    RenderedObject,
    load_values,
    of_kind,
    one,
    render,
    render_ci,
)
from tests.delivery.configref import CONFIGURATION_DOC, chart_values
from tests.delivery.test_chart import assert_delegated_auth_bindings
from tests.delivery.test_objects import grants

VPA_COMPONENTS = ("hpa-vpa-recommender", "hpa-vpa-updater", "hpa-vpa-admission")


def rendered(name: str) -> tuple[RenderedObject, ...]:
    return render_ci(name)


def pod(objects: tuple[RenderedObject, ...], name: str) -> dict[str, Any]:
    spec: dict[str, Any] = one(objects, "Deployment", name)["spec"]["template"]
    return spec


def parsed(objects: tuple[RenderedObject, ...], name: str) -> Any:
    container = pod(objects, name)["spec"]["containers"][0]
    return build_parser().parse_args([str(a) for a in container["args"]])


# ------------------------------------------------------------------------------ pod options


def test_pod_options_reach_the_pods() -> None:
    objects = rendered("pod-options")
    controller = pod(objects, "hpa-controller")
    spec = controller["spec"]
    container = spec["containers"][0]
    # an existing ServiceAccount: used, not created, and the bindings name it
    assert spec["serviceAccountName"] == "platform-hpa-controller"
    assert "hpa-controller" not in {
        a["metadata"]["name"] for a in of_kind(objects, "ServiceAccount")
    }
    binding = one(objects, "ClusterRoleBinding", "hpa-controller")
    assert binding["subjects"][0]["name"] == "platform-hpa-controller"
    assert {"name": "TZ", "value": "UTC"} in container["env"]
    assert container["envFrom"] == [{"configMapRef": {"name": "hpa-extra-env"}}]
    assert controller["metadata"]["labels"]["team"] == "platform"
    assert controller["metadata"]["labels"]["app.kubernetes.io/component"] == "controller"
    assert controller["metadata"]["annotations"] == {"example.com/owner": "platform"}
    # a probe override is merged over the default probe
    assert container["livenessProbe"]["periodSeconds"] == 20
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert one(objects, "Deployment", "hpa-controller")["spec"]["strategy"] == {"type": "Recreate"}
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    # the top-level podSecurityContext override is merged over the restricted defaults
    assert spec["securityContext"]["runAsUser"] == 10001
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    service = one(objects, "Service", "hpa-controller")
    assert service["metadata"]["annotations"] == {"example.com/scrape": "true"}
    assert one(objects, "Service", "hpa-adapter")["spec"]["type"] == "NodePort"
    args = parsed(objects, "hpa-controller")
    assert (args.log_level, args.log_format) == ("debug", "console")
    # a CA file for Prometheus: the extra volume, its mount and the flag naming the file
    adapter = pod(objects, "hpa-adapter")["spec"]
    assert {"name": "prometheus-ca", "configMap": {"name": "prometheus-ca"}} in adapter["volumes"]
    mounts = adapter["containers"][0]["volumeMounts"]
    assert {"name": "prometheus-ca", "mountPath": "/etc/prometheus-ca", "readOnly": True} in mounts
    adapter_args = parsed(objects, "hpa-adapter")
    assert str(adapter_args.prometheus_ca_file) == "/etc/prometheus-ca/ca.crt"
    assert adapter_args.log_format == "console"
    account = one(objects, "ServiceAccount", "hpa-adapter")
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].endswith("hpa-adapter")


def test_defaults_log_json_at_info_and_keep_the_probes() -> None:
    objects = rendered("default")
    for name in ("hpa-controller", "hpa-adapter"):
        args = parsed(objects, name)
        assert (args.log_level, args.log_format) == ("info", "json")
    container = pod(objects, "hpa-adapter")["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert "hostNetwork" not in pod(objects, "hpa-adapter")["spec"]


def test_host_network_sets_the_dns_policy_for_it() -> None:
    spec = pod(rendered("host-network"), "hpa-adapter")["spec"]
    assert spec["hostNetwork"] is True
    assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert "hostNetwork" not in pod(rendered("host-network"), "hpa-controller")["spec"]


def test_rbac_create_false_renders_no_role_and_no_binding() -> None:
    kinds = {o.kind for o in rendered("no-rbac")}
    assert kinds.isdisjoint({"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"})
    assert "ServiceAccount" in kinds


@pytest.mark.parametrize(
    "values",
    [
        {"controller": {"serviceAccount": {"create": False}}},
        {"tls": {"mode": "existingSecret", "existingSecret": {"adapter": "a"}}},
        {
            "tls": {
                "mode": "existingSecret",
                "existingSecret": {"caBundle": "-----BEGIN CERTIFICATE-----\nx\n"},
            }
        },
    ],
    ids=["no-service-account-name", "no-ca-bundle", "no-secret-name"],
)
def test_missing_required_values_fail_with_the_value_named(values: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmError) as error:
        render(values)
    assert any(
        key in str(error.value)
        for key in ("serviceAccount.name", "existingSecret/caBundle", "existingSecret.adapter")
    )


@pytest.mark.parametrize(
    "values",
    [
        {"controller": {"mode": "dry-run"}},
        {"controller": {"dryRun": True}},
        {"logging": {"level": "trace"}},
        {"logging": {"format": "text"}},
        {"rbac": {"create": "no"}},
        {"vpa": {"recommender": {"enable": True}}},
        {"vpa": {"admission": {"timeoutSeconds": 60}}},
        {"vpa": {"admission": {"recommendationAPI": {"enable": True}}}},
        {"vpa": {"admission": {"recommendationAPI": {"port": 0}}}},
        {"tls": {"mode": "existingSecret", "existingSecret": {"caBundle": "not a pem"}}},
        {"serviceMonitor": {"scrapeTimeout": "ten seconds"}},
        {"controller": {"service": {"type": "ExternalName"}}},
        {"controller": {"updateStrategy": {"type": "OnDelete"}}},
        {"controller": {"env": [{"value": "no name"}]}},
        {"networkPolicy": {"extraEgress": {"to": []}}},
        {"prometheusRule": {"for": "often"}},
        {"grafanaDashboard": {"folder": "x"}},
    ],
    ids=repr,
)
def test_schema_refuses_bad_option_values(values: dict[str, Any]) -> None:
    with helm.Chart.load(CHART_DIR) as chart, pytest.raises(helm.HelmValuesError):
        chart.validate_schema(values)


# ------------------------------------------------------------------------------------- TLS


def test_existing_secrets_are_mounted_and_their_ca_is_every_ca_bundle() -> None:
    objects = rendered("existing-secret")
    values = load_values(CHART_DIR / "ci" / "existing-secret-values.yaml")
    ca_bundle = base64.b64encode(values["tls"]["existingSecret"]["caBundle"].encode()).decode()
    assert of_kind(objects, "Secret") == []
    assert of_kind(objects, "Certificate") == []
    for api_service in of_kind(objects, "APIService"):
        assert api_service["spec"]["caBundle"] == ca_bundle
    webhook = one(objects, "MutatingWebhookConfiguration", "hpa-vpa-admission")
    assert webhook["webhooks"][0]["clientConfig"]["caBundle"] == ca_bundle
    volumes = {
        name: pod(objects, name)["spec"]["volumes"] for name in ("hpa-adapter", "hpa-vpa-admission")
    }
    assert {"name": "serving-cert", "secret": {"secretName": "adapter-serving-cert"}} in volumes[
        "hpa-adapter"
    ]
    assert {"name": "serving-cert", "secret": {"secretName": "admission-serving-cert"}} in volumes[
        "hpa-vpa-admission"
    ]


def test_generated_webhook_certificate_is_signed_for_its_service_by_the_ca_bundle() -> None:
    objects = rendered("vpa")
    secret = one(objects, "Secret", "hpa-vpa-admission-tls")
    ca_pem = base64.b64decode(secret["data"]["ca.crt"])
    webhook = one(objects, "MutatingWebhookConfiguration", "hpa-vpa-admission")["webhooks"][0]
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == ca_pem
    serving = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    ca = x509.load_pem_x509_certificate(ca_pem)
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"hpa-vpa-admission.{RELEASE_NAMESPACE}.svc" in names.get_values_for_type(x509.DNSName)


# ---------------------------------------------------------------------------- NetworkPolicy


def test_prometheus_rule_switch_and_extra_rules_reach_every_policy() -> None:
    objects = rendered("network")
    values = load_values(CHART_DIR / "ci" / "network-values.yaml")["networkPolicy"]
    policies = [
        p for p in of_kind(objects, "NetworkPolicy") if p["metadata"]["name"] != "hpa-default-deny"
    ]
    assert {p["metadata"]["name"] for p in policies} == {"hpa-controller", "hpa-adapter"}
    for policy in policies:
        text = yaml.safe_dump(policy)
        assert "app.kubernetes.io/name: prometheus" not in text, policy["metadata"]["name"]
        assert policy["spec"]["egress"][-1] == values["extraEgress"][0]
        assert policy["spec"]["ingress"][-1] == values["extraIngress"][0]
    # with the Prometheus rules on (default), they are there
    default = one(rendered("default"), "NetworkPolicy", "hpa-adapter")
    assert "app.kubernetes.io/name: prometheus" in yaml.safe_dump(default)


def test_vpa_policies_open_the_webhook_to_the_api_server_and_prometheus_egress_for_history() -> (
    None
):
    objects = rendered("vpa")
    webhook = one(objects, "NetworkPolicy", "hpa-vpa-admission")["spec"]
    assert webhook["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert webhook["ingress"][-1]["ports"] == [{"protocol": "TCP", "port": 8944}]
    recommender = one(objects, "NetworkPolicy", "hpa-vpa-recommender")["spec"]
    assert [{"protocol": "TCP", "port": 9090}] in [r.get("ports") for r in recommender["egress"]]
    updater = one(objects, "NetworkPolicy", "hpa-vpa-updater")["spec"]
    assert [{"protocol": "TCP", "port": 9090}] not in [r.get("ports") for r in updater["egress"]]


# ------------------------------------------------------------------------------- monitoring


def test_service_monitor_options_reach_every_endpoint() -> None:
    objects = rendered("monitoring")
    monitors = of_kind(objects, "ServiceMonitor")
    assert {m["metadata"]["name"] for m in monitors} == {
        "hpa-controller",
        "hpa-adapter",
        "hpa-vpa-recommender",
    }
    for monitor in monitors:
        endpoint = monitor["spec"]["endpoints"][0]
        assert endpoint["interval"] == "15s"
        assert endpoint["scrapeTimeout"] == "10s"
        assert endpoint["relabelings"][0]["targetLabel"] == "node"
        assert endpoint["metricRelabelings"][0]["action"] == "drop"
        service = one(objects, "Service", monitor["metadata"]["name"])
        assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    dashboard = one(objects, "ConfigMap", "hpa-dashboard")
    assert dashboard["metadata"]["namespace"] == "grafana"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"


# --------------------------------------------------------------------------------------- VPA


def test_the_vpa_components_are_off_by_default_and_each_has_its_switch() -> None:
    default = rendered("default")
    assert [o for o in default if "vpa" in o.name or o.kind == "CustomResourceDefinition"] == []
    vpa = rendered("vpa")
    assert {d["metadata"]["name"] for d in of_kind(vpa, "Deployment")} == set(VPA_COMPONENTS)
    # one switch each: monitoring-values turns on the recommender, cert-manager-values the webhook
    for values, component in (("monitoring", "recommender"), ("cert-manager", "admission")):
        names = {d["metadata"]["name"] for d in of_kind(rendered(values), "Deployment")}
        assert names == {"hpa-controller", "hpa-adapter", f"hpa-vpa-{component}"}
    only_updater = {"vpa": {"updater": {"enabled": True}}, "adapter": {"enabled": False}}
    names = {o.name for o in render(only_updater) if o.kind == "Deployment"}
    assert names == {"hpa-controller", "hpa-vpa-updater"}


def test_vpa_arguments_name_the_codes_subcommands_and_leases() -> None:
    objects = rendered("vpa")
    recommender = parsed(objects, "hpa-vpa-recommender")
    assert (recommender.command, recommender.leader_elect) == ("vpa", True)
    assert recommender.leader_elect_resource_name == recommender_app.LEASE_NAME
    assert recommender.leader_elect_resource_namespace == RELEASE_NAMESPACE
    assert recommender.storage == "prometheus"
    assert recommender.prometheus_url == "http://prometheus-operated.monitoring.svc:9090"
    updater = parsed(objects, "hpa-vpa-updater")
    assert updater.leader_elect_resource_name == updater_app.LEASE_NAME
    assert updater.admission_controller_status_lease_namespace == RELEASE_NAMESPACE
    admission = parsed(objects, "hpa-vpa-admission")
    assert admission.status_lease_name == webhook_app.AdmissionSettings().status_lease_name
    assert admission.status_lease_name == updater.admission_controller_status_lease_name
    assert admission.status_lease_namespace == RELEASE_NAMESPACE
    # each Role names the Lease its component holds (and the updater reads the webhook's)
    for name, own, read in (
        ("hpa-vpa-recommender", recommender_app.LEASE_NAME, None),
        ("hpa-vpa-updater", updater_app.LEASE_NAME, admission.status_lease_name),
        ("hpa-vpa-admission", admission.status_lease_name, None),
    ):
        rules = one(objects, "Role", f"{name}-leases")["rules"]
        named = {(r["resourceNames"][0], tuple(r["verbs"])) for r in rules if "resourceNames" in r}
        expected = {(own, ("get", "update"))} | ({(read, ("get",))} if read else set())
        assert named == expected, name
    # the webhook's serving certificate is where --tls-cert-file says
    container = pod(objects, "hpa-vpa-admission")["spec"]["containers"][0]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "serving-cert")
    assert admission.tls_cert_file.parent.as_posix() == mount["mountPath"]


def test_webhook_registration_points_at_its_service_and_fails_open() -> None:
    objects = rendered("vpa")
    webhook = one(objects, "MutatingWebhookConfiguration", "hpa-vpa-admission")["webhooks"][0]
    assert webhook["failurePolicy"] == "Ignore"
    assert webhook["clientConfig"]["service"] == {
        "name": "hpa-vpa-admission",
        "namespace": RELEASE_NAMESPACE,
        "port": 443,
        "path": "/mutate",
    }
    service = one(objects, "Service", "hpa-vpa-admission")
    assert {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"} in service[
        "spec"
    ]["ports"]
    excluded = webhook["namespaceSelector"]["matchExpressions"][0]["values"]
    assert set(excluded) == {"kube-system", RELEASE_NAMESPACE, "monitoring"}
    resources = {r["resources"][0]: r["operations"] for r in webhook["rules"]}
    assert resources == {"pods": ["CREATE"], "verticalpodautoscalers": ["CREATE", "UPDATE"]}


def test_the_crds_are_upstreams_kept_on_uninstall() -> None:
    upstream = [
        d
        for d in yaml.safe_load_all((CHART_DIR / "files" / "vpa-v1-crd-gen.yaml").read_text())
        if d
    ]
    crds = {c["metadata"]["name"]: c for c in of_kind(rendered("vpa"), "CustomResourceDefinition")}
    assert set(crds) == {
        "verticalpodautoscalers.autoscaling.k8s.io",
        "verticalpodautoscalercheckpoints.autoscaling.k8s.io",
    }
    for original in upstream:
        crd = crds[original["metadata"]["name"]]
        assert crd["spec"] == original["spec"]
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["metadata"]["labels"]["app.kubernetes.io/instance"] == "hpa"
    assert of_kind(rendered("monitoring"), "CustomResourceDefinition") == []  # only with crds


# Upstream's deploy/vpa-rbac.yaml (kubernetes/autoscaler vertical-pod-autoscaler v1.8.1) per
# ServiceAccount, as (apiGroup, resource) -> verbs over every ClusterRole bound to it.
_UPSTREAM_ACTOR = {
    ("", "pods"): {"get", "list", "watch"},
    ("", "nodes"): {"get", "list", "watch"},
    ("", "limitranges"): {"get", "list", "watch"},
    ("", "events"): {"create", "get", "list", "watch", "patch", "update"},
    ("events.k8s.io", "events"): {"create", "get", "list", "watch", "patch", "update"},
    ("autoscaling.k8s.io", "verticalpodautoscalers"): {"get", "list", "watch"},
}
_UPSTREAM_TARGET_READER = {
    ("*", "*/scale"): {"get", "watch"},
    ("", "replicationcontrollers"): {"get", "list", "watch"},
    **{
        ("apps", r): {"get", "list", "watch"}
        for r in ("daemonsets", "deployments", "replicasets", "statefulsets")
    },
    **{("batch", r): {"get", "list", "watch"} for r in ("jobs", "cronjobs")},
}
UPSTREAM_VPA_RBAC: dict[str, dict[tuple[str, str], set[str]]] = {
    "hpa-vpa-recommender": {
        **_UPSTREAM_ACTOR,
        **_UPSTREAM_TARGET_READER,
        ("metrics.k8s.io", "pods"): {"get", "list"},
        ("autoscaling.k8s.io", "verticalpodautoscalers/status"): {"get", "patch"},
        ("autoscaling.k8s.io", "verticalpodautoscalercheckpoints"): {
            "get",
            "list",
            "watch",
            "create",
            "patch",
            "delete",
        },
    },
    "hpa-vpa-updater": {
        **_UPSTREAM_ACTOR,
        **_UPSTREAM_TARGET_READER,
        ("", "pods/eviction"): {"create"},
        ("apps", "replicasets"): {"get", "list", "watch"},
        ("", "pods/resize"): {"patch"},
        ("", "pods"): {"get", "list", "watch", "patch"},
    },
    "hpa-vpa-admission": {
        ("", "pods"): {"get", "list", "watch"},
        ("", "configmaps"): {"get", "list", "watch"},
        ("", "nodes"): {"get", "list", "watch"},
        ("", "limitranges"): {"get", "list", "watch"},
        ("autoscaling.k8s.io", "verticalpodautoscalers"): {"get", "list", "watch"},
        **_UPSTREAM_TARGET_READER,
    },
}
# What the code adds to upstream's: the HPA informer (--hpa-awareness), and list/watch where
# upstream reads through informers under other rules.
VPA_EXTENSIONS = {("autoscaling", "horizontalpodautoscalers"): {"list", "watch"}}


@pytest.mark.parametrize("name", VPA_COMPONENTS)
def test_vpa_cluster_roles_stay_within_upstreams_plus_the_hpa_informer(name: str) -> None:
    role = one(rendered("vpa"), "ClusterRole", name)
    upstream = UPSTREAM_VPA_RBAC[name]
    for (group, resource), verbs in grants(role["rules"]).items():
        allowed = upstream.get((group, resource), set()) | VPA_EXTENSIONS.get(
            (group, resource), set()
        )
        assert verbs <= allowed, f"{name}: {group}/{resource} {sorted(verbs - allowed)}"
    binding = one(rendered("vpa"), "ClusterRoleBinding", name)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": name, "namespace": RELEASE_NAMESPACE}
    ]


# ------------------------------------------------------------------ the recommendation API

RECOMMENDATION_API = f"{query.VERSION}.{query.GROUP}"
DEFAULT_API_PORT = load_values(CHART_DIR / "values.yaml")["vpa"]["admission"]["recommendationAPI"][
    "port"
]


def test_recommendation_api_flag_port_service_and_api_service_agree() -> None:
    objects = rendered("vpa")
    values = load_values(CHART_DIR / "ci" / "vpa-values.yaml")["vpa"]["admission"]
    port = values["recommendationAPI"].get("port", DEFAULT_API_PORT)
    args = parsed(objects, "hpa-vpa-admission")
    assert args.recommendation_api_port == port != args.port
    container = pod(objects, "hpa-vpa-admission")["spec"]["containers"][0]
    assert {"name": "recommendation", "containerPort": port, "protocol": "TCP"} in container[
        "ports"
    ]
    service = one(objects, "Service", "hpa-vpa-admission")
    service_port = next(p for p in service["spec"]["ports"] if p["targetPort"] == "recommendation")
    api_service = one(objects, "APIService", RECOMMENDATION_API)["spec"]
    assert (api_service["group"], api_service["version"]) == (query.GROUP, query.VERSION)
    assert api_service["service"] == {
        "name": "hpa-vpa-admission",
        "namespace": RELEASE_NAMESPACE,
        "port": service_port["port"],
    }
    assert "insecureSkipTLSVerify" not in api_service
    # the same CA as the webhook's, and the certificate names the Service the aggregator dials
    secret = one(objects, "Secret", "hpa-vpa-admission-tls")
    webhook = one(objects, "MutatingWebhookConfiguration", "hpa-vpa-admission")["webhooks"][0]
    assert (
        api_service["caBundle"] == webhook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    )
    serving = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"hpa-vpa-admission.{RELEASE_NAMESPACE}.svc" in names.get_values_for_type(x509.DNSName)
    # the API server reaches the pods on that port
    ingress = one(objects, "NetworkPolicy", "hpa-vpa-admission")["spec"]["ingress"]
    assert [{"protocol": "TCP", "port": port}] in [rule["ports"] for rule in ingress]


def test_recommendation_api_ca_follows_the_tls_mode() -> None:
    existing = rendered("existing-secret")
    api_service = one(existing, "APIService", RECOMMENDATION_API)["spec"]
    webhook = one(existing, "MutatingWebhookConfiguration", "hpa-vpa-admission")["webhooks"][0]
    assert api_service["caBundle"] == webhook["clientConfig"]["caBundle"]
    full = one(rendered("full"), "APIService", RECOMMENDATION_API)
    assert full["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{RELEASE_NAMESPACE}/hpa-vpa-admission"
    )
    assert "caBundle" not in full["spec"]
    certificate = one(rendered("full"), "Certificate", "hpa-vpa-admission")
    assert f"hpa-vpa-admission.{RELEASE_NAMESPACE}.svc" in certificate["spec"]["dnsNames"]


def test_recommendation_api_is_off_unless_enabled() -> None:
    objects = rendered("cert-manager")  # the webhook on, the recommendation API not
    assert parsed(objects, "hpa-vpa-admission").recommendation_api_port == 0
    assert RECOMMENDATION_API not in {o.name for o in objects if o.kind == "APIService"}
    service = one(objects, "Service", "hpa-vpa-admission")
    assert [p["name"] for p in service["spec"]["ports"]] == ["https", "metrics"]
    bindings = {o.name for o in objects if o.kind in ("ClusterRoleBinding", "RoleBinding")}
    assert {n for n in bindings if n.startswith("hpa-vpa-admission")} == {
        "hpa-vpa-admission",
        "hpa-vpa-admission-leases",
    }
    assert not [o for o in objects if "recommendation" in o.name]


def test_recommendation_api_binds_delegated_auth_and_offers_a_role_to_ask() -> None:
    objects = rendered("vpa")
    assert_delegated_auth_bindings(objects, "hpa-vpa-admission")
    # the webhook's own ClusterRole gains nothing (the VPA RBAC test holds it to upstream's)
    creator = one(objects, "ClusterRole", "hpa-recommendation-query-creator")
    assert grants(creator["rules"]) == {(query.GROUP, query.RESOURCE): {"create"}}
    assert not [k for k in creator["metadata"]["labels"] if k.startswith("rbac.authorization")]
    # aggregateToEdit: every user of the built-in edit and admin roles may ask
    labels = one(rendered("full"), "ClusterRole", "hpa-recommendation-query-creator")["metadata"][
        "labels"
    ]
    assert labels["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert labels["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    # rbac.create=false: the APIService is registered, no binding or role rendered
    no_rbac = rendered("no-rbac")
    assert (
        one(no_rbac, "APIService", RECOMMENDATION_API)["spec"]["service"]["port"]
        == DEFAULT_API_PORT
    )
    assert [o.name for o in no_rbac if "Role" in o.kind] == []


def test_recommendation_api_port_must_differ_from_the_webhooks() -> None:
    values = {
        "tls": {"mode": "certManager"},
        "vpa": {
            "admission": {"enabled": True, "recommendationAPI": {"enabled": True, "port": 8000}}
        },
    }
    with pytest.raises(helm.HelmError) as error:
        render(values)
    assert "vpa.admission.recommendationAPI.port" in str(error.value)


# ------------------------------------------------------------------ schema and reference


def _schema_at(schema: dict[str, Any], root: dict[str, Any], path: list[str]) -> dict[str, Any]:
    for key in path:
        if "$ref" in schema:
            schema = root["definitions"][schema["$ref"].rsplit("/", 1)[1]]
        properties = schema.get("properties")
        assert properties is not None, ".".join(path)
        assert key in properties, ".".join(path)
        schema = properties[key]
    return schema


def test_every_value_is_in_the_schema_and_the_configuration_reference() -> None:
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    page = CONFIGURATION_DOC.read_text()
    rows = chart_values()
    assert len(rows) > 150
    for key, _default, description in rows:
        _schema_at(schema, schema, key.split("."))
        assert f"| `{key}` |" in page, key
        assert description, key
    # the option groups the install guide promises, by key
    keys = {key for key, _, _ in rows}
    for component in ("controller", "adapter", "vpa.recommender", "vpa.updater", "vpa.admission"):
        for option in (
            "enabled",
            "serviceAccount.create",
            "serviceAccount.name",
            "serviceAccount.annotations",
            "env",
            "envFrom",
            "extraArgs",
            "extraVolumes",
            "extraVolumeMounts",
            "podLabels",
            "podAnnotations",
            "podSecurityContext",
            "securityContext",
            "livenessProbe",
            "readinessProbe",
            "updateStrategy",
            "priorityClassName",
            "topologySpreadConstraints",
            "hostNetwork",
            "service.type",
            "service.annotations",
        ):
            assert f"{component}.{option}" in keys, f"{component}.{option}"
    assert {
        "controller.mode",
        "rbac.create",
        "logging.level",
        "logging.format",
        "vpa.crds.enabled",
    } <= keys
