"""external.metrics.k8s.io, metrics.k8s.io, discovery, OpenAPI, health and /metrics routes."""

from __future__ import annotations

import gzip
import io

import orjson
import pytest

from adapter.providers import (
    ExternalMetricValue,
    MetricFetchError,
    MetricNotFoundError,
    MissingCause,
    NodeUsage,
)
from adapter.providers.index import GZIP_THRESHOLD_BYTES, MetricIndex
from adapter.rules import (
    ExternalSeriesRegistry,
    GroupResource,
    Series,
    SeriesRegistry,
    StaticRESTMapper,
    namers_from_config,
)
from adapter.rules.config import load_rules
from adapter.server.ports import ObjectMeta
from hpa.kube.logs import configure_logging
from tests.adapter.server.harness import (
    ALICE,
    STAMP,
    FakeLister,
    FakeProviders,
    cpu,
    memory,
    pod_usage,
    serve,
)

EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"
RESOURCE = "/apis/metrics.k8s.io/v1beta1"


def _external(labels: dict[str, str], milli: int) -> ExternalMetricValue:
    return ExternalMetricValue(
        metric="queue_consumer_lag",
        labels=labels,
        value=__import__("hpa.core.quantity", fromlist=["Quantity"]).Quantity.from_milli(milli),
        timestamp=STAMP,
        window_seconds=60,
    )


async def test_external_body_and_metric_selector() -> None:
    providers = FakeProviders()
    providers.external.values = [_external({"name": "worker_tasks"}, 42_000)]
    async with serve(providers) as h:
        response = await h.client.get(
            EXTERNAL + "/namespaces/default/queue_consumer_lag",
            params={"labelSelector": "name=worker_tasks"},
            headers=ALICE,
        )
        body = await response.read()
    assert body == orjson.dumps(
        {
            "kind": "ExternalMetricValueList",
            "apiVersion": "external.metrics.k8s.io/v1beta1",
            "metadata": {},
            "items": [
                {
                    "metricName": "queue_consumer_lag",
                    "metricLabels": {"name": "worker_tasks"},
                    "timestamp": "2026-09-01T12:00:00Z",
                    "window": 60,
                    "value": "42",
                }
            ],
        }
    )
    assert providers.external.calls == [("queue_consumer_lag", "default", "name=worker_tasks")]


async def test_external_not_found_is_status_404() -> None:
    providers = FakeProviders()
    providers.external.error = MetricNotFoundError(
        GroupResource("", "namespaces"), "lag", cause=MissingCause.EMPTY_RESULT
    )
    async with serve(providers) as h:
        body = await h.get_json(EXTERNAL + "/namespaces/default/lag", status=404)
    assert (body["reason"], body["code"]) == ("NotFound", 404)
    assert body["message"] == "the server could not find the metric lag for namespaces"


def _resource_setup() -> tuple[FakeProviders, FakeLister]:
    providers = FakeProviders()
    assert providers.resource is not None
    providers.resource.pods[("x", "web-1")] = pod_usage(
        "x", "web-1", ("app", 250, 64 * 1024 * 1024)
    )
    providers.resource.pods[("y", "db-0")] = pod_usage("y", "db-0", ("db", 1000, 1024))
    providers.resource.nodes["n1"] = NodeUsage(
        name="n1",
        timestamp=STAMP,
        window_milliseconds=30_000,
        cpu=cpu(1500),
        memory=memory(2 * 1024**3 * 1000),
    )
    lister = FakeLister(
        pods=[
            ObjectMeta("web-1", "x", labels={"app": "web"}),
            ObjectMeta("web-2", "x", labels={"app": "web"}),  # no metrics: left out of lists
            ObjectMeta("db-0", "y", labels={"app": "db"}),
        ],
        nodes=[ObjectMeta("n1", "", labels={"role": "worker"}), ObjectMeta("n2", "", labels={})],
    )
    return providers, lister


async def test_pod_metrics_list_in_namespace_has_metrics_server_shape() -> None:
    providers, lister = _resource_setup()
    async with serve(providers, lister=lister) as h:
        response = await h.client.get(RESOURCE + "/namespaces/x/pods", headers=ALICE)
        body = await response.read()
    created = "2026-01-01T00:00:00Z"  # the fake clock's now
    assert body == orjson.dumps(
        {
            "kind": "PodMetricsList",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {},
            "items": [
                {  # no kind/apiVersion in list items, as metrics-server and prometheus-adapter
                    "metadata": {
                        "name": "web-1",
                        "namespace": "x",
                        "creationTimestamp": created,
                        "labels": {"app": "web"},
                    },
                    "timestamp": "2026-09-01T12:00:00Z",
                    "window": "30s",
                    "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "64Mi"}}],
                }
            ],
        }
    )
    assert providers.resource is not None
    assert providers.resource.pod_calls == [[("x", "web-1"), ("x", "web-2")]]


async def test_pod_metrics_all_namespaces_and_label_selector() -> None:
    providers, lister = _resource_setup()
    async with serve(providers, lister=lister) as h:
        everything = await h.get_json(RESOURCE + "/pods")
        selected = await h.get_json(RESOURCE + "/pods", labelSelector="app=db")
        bad = await h.get_json(RESOURCE + "/pods", status=400, labelSelector="app in (")
    assert [i["metadata"]["name"] for i in everything["items"]] == ["web-1", "db-0"]
    assert [i["metadata"]["name"] for i in selected["items"]] == ["db-0"]
    assert bad["reason"] == "BadRequest"


async def test_pod_metrics_get_and_its_not_found_texts() -> None:
    providers, lister = _resource_setup()
    async with serve(providers, lister=lister) as h:
        one = await h.get_json(RESOURCE + "/namespaces/x/pods/web-1")
        no_metrics = await h.get_json(RESOURCE + "/namespaces/x/pods/web-2", status=404)
        no_pod = await h.get_json(RESOURCE + "/namespaces/x/pods/ghost", status=404)
    assert one["kind"] == "PodMetrics"
    assert one["containers"][0]["usage"] == {"cpu": "250m", "memory": "64Mi"}
    assert no_metrics["message"] == 'podmetrics.metrics.k8s.io "x/web-2" not found'
    assert no_pod["message"] == 'pods "ghost" not found'
    assert no_pod["details"] == {"name": "ghost", "kind": "pods"}


async def test_node_metrics_list_get_and_not_found() -> None:
    providers, lister = _resource_setup()
    async with serve(providers, lister=lister) as h:
        listed = await h.get_json(RESOURCE + "/nodes", labelSelector="role=worker")
        one = await h.get_json(RESOURCE + "/nodes/n1")
        missing = await h.get_json(RESOURCE + "/nodes/n2", status=404)
        no_node = await h.get_json(RESOURCE + "/nodes/ghost", status=404)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["n1"]
    # the node lister's NotFound (prometheus-adapter, metrics-server): singular, no group
    assert no_node["message"] == 'node "ghost" not found'
    assert no_node["details"] == {"name": "ghost", "kind": "node"}
    assert one["usage"] == {"cpu": "1500m", "memory": "2Gi"}
    assert one["window"] == "30s"
    assert "namespace" not in one["metadata"]
    assert missing["message"] == 'nodemetrics.metrics.k8s.io "n2" not found'


async def test_resource_provider_failure_is_internal_error() -> None:
    providers, lister = _resource_setup()
    assert providers.resource is not None
    providers.resource.error = MetricFetchError(detail="prometheus down")
    async with serve(providers, lister=lister) as h:
        body = await h.get_json(RESOURCE + "/namespaces/x/pods", status=500)
    assert (body["reason"], body["message"]) == ("InternalError", "unable to fetch metrics")


async def test_without_resource_rules_metrics_k8s_io_is_not_served() -> None:
    async with serve(FakeProviders(resource=None)) as h:
        groups = await h.get_json("/apis")
        await h.get_json(RESOURCE + "/pods", status=404)
        await h.get_json(RESOURCE, status=404)
    assert [g["name"] for g in groups["groups"]] == [
        "custom.metrics.k8s.io",
        "external.metrics.k8s.io",
    ]


def _documents() -> dict[str, bytes]:
    return dict(MetricIndex.empty(StaticRESTMapper.builtin()).discovery)


async def test_discovery_documents() -> None:
    providers = FakeProviders(documents=_documents())
    async with serve(providers) as h:
        groups = await h.get_json("/apis")
        custom = await h.get_json("/apis/custom.metrics.k8s.io")
        v2 = await h.client.get("/apis/custom.metrics.k8s.io/v1beta2", headers=ALICE)
        v2_body = await v2.read()
        external = await h.get_json("/apis/external.metrics.k8s.io/v1beta1")
        resource = await h.get_json("/apis/metrics.k8s.io/v1beta1")
        await h.get_json("/apis/custom.metrics.k8s.io/v1alpha1", status=404)
        await h.get_json("/apis/apps", status=404)
    assert groups["kind"] == "APIGroupList"
    assert groups["groups"][0] == {
        "name": "custom.metrics.k8s.io",
        "versions": [
            {"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"},
            {"groupVersion": "custom.metrics.k8s.io/v1beta1", "version": "v1beta1"},
        ],
        "preferredVersion": {"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"},
    }
    assert [g["name"] for g in groups["groups"]][2] == "metrics.k8s.io"
    assert custom["kind"] == "APIGroup"
    assert custom["preferredVersion"]["version"] == "v1beta2"
    assert v2_body == providers.documents["custom.metrics.k8s.io/v1beta2"]  # served as prebuilt
    assert external == {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "external.metrics.k8s.io/v1beta1",
        "resources": [],
    }
    assert resource["resources"] == [
        {
            "name": "nodes",
            "singularName": "",
            "namespaced": False,
            "kind": "NodeMetrics",
            "verbs": ["get", "list"],
        },
        {
            "name": "pods",
            "singularName": "",
            "namespaced": True,
            "kind": "PodMetrics",
            "verbs": ["get", "list"],
        },
    ]


async def test_openapi_v2_is_a_swagger_document_with_every_path() -> None:
    async with serve() as h:
        doc = await h.get_json("/openapi/v2")
    assert doc["swagger"] == "2.0"
    assert doc["info"]["title"]
    paths = doc["paths"]
    for path in (
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/{resource}/{name}/{metric}",
        "/apis/custom.metrics.k8s.io/v1beta1/namespaces/{namespace}/metrics/{metric}",
        "/apis/custom.metrics.k8s.io/v1beta2/{resource}/{name}/{metric}",
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{metric}",
        "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods",
        "/apis/metrics.k8s.io/v1beta1/nodes/{name}",
    ):
        assert path in paths
    refs = []
    operation_ids = []
    for item in paths.values():
        operation = item["get"]
        operation_ids.append(operation["operationId"])
        schema = operation["responses"]["200"].get("schema")
        if schema:
            refs.append(schema["$ref"].removeprefix("#/definitions/"))
    assert len(set(operation_ids)) == len(operation_ids)  # the aggregator merges by id
    assert set(refs) <= set(doc["definitions"])  # every reference resolves
    for definition in doc["definitions"].values():
        assert definition["type"] == "object"


async def test_openapi_v3_root_points_at_valid_group_version_documents() -> None:
    async with serve() as h:
        root = await h.get_json("/openapi/v3")
        assert set(root["paths"]) == {
            "apis/custom.metrics.k8s.io/v1beta2",
            "apis/custom.metrics.k8s.io/v1beta1",
            "apis/external.metrics.k8s.io/v1beta1",
            "apis/metrics.k8s.io/v1beta1",
        }
        for entry in root["paths"].values():
            url = entry["serverRelativeURL"]
            assert "?hash=" in url
            response = await h.client.get(url, headers=ALICE)
            doc = await response.json()
            assert doc["openapi"].startswith("3.")
            assert doc["paths"]
            for item in doc["paths"].values():
                ref = item["get"]["responses"]["200"]["content"]["application/json"]["schema"][
                    "$ref"
                ]
                assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"]
        await h.get_json("/openapi/v3/apis/apps/v1", status=404)


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
async def test_health_endpoints_need_no_credentials(path: str) -> None:
    async with serve() as h:
        response = await h.client.get(path)
        text = await response.text()
    assert (response.status, text) == (200, "ok")
    assert h.authorizer.asked == []


async def test_readyz_fails_until_the_first_relist() -> None:
    async with serve() as h:
        h.source.ready = False
        response = await h.client.get("/readyz")
        text = await response.text()
    assert response.status == 500
    assert "metric-index" in text


async def test_metrics_endpoint_needs_authentication_and_a_non_resource_grant() -> None:
    async with serve() as h:
        anonymous = await h.client.get("/metrics")
        bob = await h.client.get("/metrics", headers={"X-Test-User": "bob"})
        bob_body = await bob.json()
        # a few requests so the histogram has samples
        await h.client.get(
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/x/pods/a/m", headers=ALICE
        )
        alice = await h.client.get("/metrics", headers=ALICE)
        text = await alice.text()
    assert anonymous.status == 401
    assert bob.status == 403
    assert bob_body["message"] == 'forbidden: User "bob" cannot get path "/metrics"'
    assert alice.status == 200
    tail = 'component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics"'
    for code in (401, 403):
        line = f'apiserver_request_total{{code="{code}",{tail},verb="GET",version=""}} 1.0'
        assert line in text
    name, attributes = h.authorizer.asked[-1]
    assert (name, attributes.is_resource_request, attributes.verb, attributes.path) == (
        "alice",
        False,
        "get",
        "/metrics",
    )


def _large_index() -> MetricIndex:
    """An index whose custom-metrics documents are over the gzip threshold (3,000 resources)."""
    mapper = StaticRESTMapper.builtin()
    config = load_rules(
        "rules:\n"
        "- seriesQuery: '{__name__=~\"m_.*\"}'\n"
        "  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}\n"
        "  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n",
        source="test",
    )
    namers = namers_from_config(config.rules, mapper, kind="rules", source="test")
    found = [Series(f"m_{i}", {"namespace": "a", "pod": "b"}) for i in range(1500)]
    custom = SeriesRegistry.from_series([found], namers, mapper)
    return MetricIndex.build(custom, ExternalSeriesRegistry(), generation=1, listed_at=None)


async def test_a_large_discovery_document_is_served_gzipped_as_prebuilt_when_accepted() -> None:
    index = _large_index()
    v2 = "custom.metrics.k8s.io/v1beta2"
    assert len(index.discovery[v2]) > GZIP_THRESHOLD_BYTES
    assert gzip.decompress(index.discovery_gzip[v2]) == index.discovery[v2]
    assert "external.metrics.k8s.io/v1beta1" not in index.discovery_gzip  # small: never gzipped
    providers = FakeProviders(documents=index.discovery, compressed=index.discovery_gzip)
    answers = {}
    async with serve(providers) as h:
        for accept in ("gzip", "deflate, gzip", "gzip;q=0.5", "identity", None):
            headers = {**ALICE, "Accept-Encoding": accept or ""}
            response = await h.client.get(f"/apis/{v2}", headers=headers, auto_decompress=False)
            answers[accept] = (response.headers.get("Content-Encoding"), await response.read())
    gzipped = ("gzip", index.discovery_gzip[v2])
    plain = (None, index.discovery[v2])
    assert answers == {
        "gzip": gzipped,
        "deflate, gzip": gzipped,
        "gzip;q=0.5": plain,  # as k8s.io/apiserver: the bare token only
        "identity": plain,
        None: plain,
    }


@pytest.mark.parametrize("level", ["debug", "info"])
async def test_each_request_is_a_debug_line(level: str) -> None:
    """Every answered request is one ``request`` line at ``--log-level=debug`` (method, path,
    status, api, user, seconds), and none above it."""
    out = io.StringIO()
    configure_logging(level, file=out)
    async with serve(FakeProviders()) as h:
        response = await h.client.get(f"{EXTERNAL}/namespaces/default/queue_depth", headers=ALICE)
        assert response.status == 200
        assert (await h.client.get("/healthz")).status == 200
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    requests = [line for line in lines if line["event"] == "request"]
    if level == "info":
        assert requests == []
        return
    assert [(r["method"], r["path"], r["code"], r["api"], r["user"]) for r in requests] == [
        ("GET", f"{EXTERNAL}/namespaces/default/queue_depth", 200, "external", "alice"),
        ("GET", "/healthz", 200, "health", None),
    ]
    assert all(r["level"] == "debug" and r["seconds"] >= 0 for r in requests)
