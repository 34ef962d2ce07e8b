"""Differential: ``hpa adapter`` against the real prometheus-adapter, same Prometheus, same rules.

One adapter pair per rule file (tests/e2e/prometheus_adapter_pair.py): the files of
``../shared/data/prometheus-adapter/`` (the sample config, the deploy ConfigMap), the
walkthrough's ConfigMap from prometheus-adapter's ``docs/walkthrough.md``, and the files in
tests/e2e/prometheus_adapter_rules/ (resource overrides, ``name.matches``/``as``,
``seriesFilters`` ``is``/``isNot``, namespaced and cluster-scoped resources, ``metricsQuery`` with
``<<.GroupBy>>``/``<<.LabelMatchers>>``, external rules with ``namespaced: false``,
``resourceRules``). The requests are derived from prometheus-adapter's own discovery (every
resource/metric pair, in v1beta1 and v1beta2: a single object, ``*`` with and without a
``labelSelector``, a ``metricLabelSelector``, a missing object) plus a fixed set (discovery, unknown
metrics and resources, external metrics with selectors, ``metrics.k8s.io`` pods and nodes). The
hypothesis variant sends random selectors over random label sets to one pair.

The series come from the lab exporter: the load model's cAdvisor-style series of two workloads'
pods and static gauges put through its ``/series`` endpoint. Each test prints its counts:
requests compared, equal, documented deviations (by name), unexplained (must be 0).
"""

from __future__ import annotations

import os
import random
import re
import time
import urllib.parse
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.adapter.default_config import SHARED_DATA
from tests.e2e.controller_lab import deployment_manifest, report
from tests.e2e.prometheus_adapter_pair import (
    VALUE_TOLERANCE,
    Deviation,
    Pair,
    Tally,
    both_refuse,
    elapsed,
    migration_doc,
    put_series,
    quote,
    started_pair,
    wait_for_series,
)
from tests.lab import prometheus_adapter
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.prometheus_adapter import Reply

pytestmark = pytest.mark.e2e

NAMESPACE = "pad"
RULES_DIR = Path(__file__).parent / "prometheus_adapter_rules"
DATA_DIR = Path(os.environ.get("HPA_PEER_DATA") or SHARED_DATA)
CUSTOM = "/apis/custom.metrics.k8s.io"
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"
RESOURCE = "/apis/metrics.k8s.io/v1beta1"
ROOT_SCOPED = frozenset({"nodes", "namespaces", "persistentvolumes"})
WORKLOADS = {"web": ({"app": "web", "tier": "front"}, 2), "db": ({"app": "db", "tier": "back"}, 1)}
RANDOM_SEED = 21
RANDOM_EXAMPLES = 500


def _group_not_installed(path: str, ours: Reply, theirs: Reply) -> bool:
    """prometheus-adapter installs a group only when the rule file has rules for it; otherwise
    the path is its server's plain 404 (a JSON list of ``paths``, no Status)."""
    if theirs.status != 404 or not isinstance(theirs.body, dict) or "paths" not in theirs.body:
        return False
    if ours.status == 200:
        return bool(ours.body.get("kind") == "APIResourceList" and ours.body["resources"] == [])
    return ours.status == 404 and ours.body.get("kind") == "Status"


def _not_equals_metric_selector(path: str, ours: Reply, theirs: Reply) -> bool:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    selector = " ".join(query.get("metricLabelSelector", []))
    return "!=" in selector and theirs.status == 500 and ours.status in (200, 404)


def _empty_list_is_not_found(prefix: str, *, wildcard: bool) -> Callable[[str, Reply, Reply], bool]:
    """prometheus-adapter answers 200 with no items where ours is 404 NotFound (under
    ``prefix``; ``wildcard``: only ``*`` requests)."""

    def applies(path: str, ours: Reply, theirs: Reply) -> bool:
        return (
            path.startswith(prefix)
            and (not wildcard or "/*/" in path)
            and theirs.status == 200
            and theirs.body.get("items") == []
            and ours.status == 404
            and ours.body.get("reason") == "NotFound"
        )

    return applies


def _unknown_resource_by_selector(path: str, ours: Reply, theirs: Reply) -> bool:
    return (
        theirs.status == 500
        and "unable to list matching resources" in str(theirs.body.get("message"))
        and ours.status == 404
        and "/*/" in path
    )


def _names(reply: Reply) -> set[str]:
    return {str(item["describedObject"]["name"]) for item in reply.body.get("items") or ()}


def _node_without_live_series(path: str, ours: Reply, theirs: Reply) -> bool:
    """A node whose pods were deleted within the rule's rate window (the lab deletes pods all
    along, and the exporter's container series carry ``node``): prometheus-adapter still answers
    the rate over the samples before the staleness markers, this adapter answers the node as
    missing (``STALE``) and leaves it out of a ``*`` list."""
    if not path.startswith(CUSTOM + "/") or "/nodes/" not in path or theirs.status != 200:
        return False
    if ours.status == 404:
        return ours.body.get("reason") == "NotFound" and bool(theirs.body.get("items"))
    return ours.status == 200 and _names(ours) < _names(theirs)


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "group without rules",
        "serves `custom.metrics.k8s.io` and `external.metrics.k8s.io` even when the rule file "
        "has no rules for them",
        _group_not_installed,
    ),
    Deviation(
        "!= in metricLabelSelector",
        "A `metricLabelSelector` with `!=`",
        _not_equals_metric_selector,
    ),
    Deviation(
        "empty external list",
        "An external metric whose query returns no series",
        _empty_list_is_not_found(EXTERNAL + "/", wildcard=False),
    ),
    Deviation(
        "selector list without values",
        "A label-selector request (`*`) whose objects all lack a value",
        _empty_list_is_not_found(CUSTOM + "/", wildcard=True),
    ),
    Deviation(
        "object without live series",
        "An object whose every series ended within the rule's rate window",
        _node_without_live_series,
    ),
    Deviation(
        "unknown resource by selector",
        "A label-selector request (`*`) for a resource the cluster does not have",
        _unknown_resource_by_selector,
    ),
)
"""The documented differences; each ``doc`` phrase is asserted in the migration guide."""


# ------------------------------------------------------------------------------- the world


class World:
    """What the lab holds for these tests: pods (by workload), nodes, and the object names
    a request uses for each resource."""

    def __init__(self, pods: dict[str, list[str]], nodes: list[str]) -> None:
        self.pods = pods
        self.nodes = nodes

    @property
    def all_pods(self) -> list[str]:
        return sorted(p for names in self.pods.values() for p in names)

    def object_name(self, resource: str) -> str:
        return {
            "pods": self.all_pods[0],
            "nodes": self.nodes[0],
            "namespaces": NAMESPACE,
            "deployments.apps": "web",
            "services": "frontend",
        }.get(resource, "x")


def static_series(world: World) -> list[dict[str, Any]]:
    """Gauges for every rule file; values are distinct so a wrong match shows."""
    rng = random.Random(RANDOM_SEED)
    ns = NAMESPACE
    series: list[dict[str, Any]] = []

    def add(name: str, value: float, **labels: str) -> None:
        series.append({"name": name, "labels": labels, "value": value})

    for index, pod in enumerate(world.all_pods, start=1):
        add("lab_pod_queue", index * 3, namespace=ns, pod=pod)
        add("lab_pod_ignored_queue", 99, namespace=ns, pod=pod)
        add("lab_pod_queue", 1000, namespace="elsewhere", pod=pod)
        for code, share in (("200", 10), ("500", 1)):
            add("lab_http_requests_total", index * share, namespace=ns, pod=pod, code=code)
        add("lab_container_cpu_cores", index * 0.125, namespace=ns, pod=pod, container="app")
        add("lab_container_memory_bytes", index * 2**20, namespace=ns, pod=pod, container="app")
        for _ in range(3):
            add(
                "lab_rand_items",
                rng.randint(1, 50),
                namespace=ns,
                pod=pod,
                color=rng.choice(["red", "green", "blue"]),
                size=rng.choice(["s", "m", "l"]),
            )
    for name, value in (("web", 7.0), ("db", 2.0)):
        add("lab_app_requests", value, namespace=ns, deployment=name)
        add("lab_app_errors", value / 10, namespace=ns, deployment=name)
        add("lab_app_latency", value * 5, namespace=ns, deployment=name)
    for service, value in (("frontend", 0.25), ("backend", 1.5)):
        add("lab_svc_latency", value, namespace=ns, service=service)
    for index, node in enumerate(world.nodes, start=1):
        add("lab_node_load", index * 1.5, node=node)
        add("lab_node_cpu_cores", index * 0.5, node=node)
        add("lab_node_memory_bytes", index * 2**28, node=node)
        add("node_cpu_usage_seconds_total", index * 100, node=node)
        add("node_memory_working_set_bytes", index * 2**27, node=node)
    add("lab_namespace_quota_used", 42, namespace=ns)
    add("lab_namespace_quota_used", 5, namespace="default")
    for topic, queue, value in (("orders", "a", 12), ("orders", "b", 3), ("billing", "c", 8)):
        add("lab_queue_depth", value, topic=topic, queue=queue)
    for kind, value in (("batch", 4), ("stream", 9)):
        add("lab_jobs_pending", value, namespace=ns, kind=kind)
    add("lab_jobs_pending", 100, namespace="default", kind="batch")
    for queue in "abcdefgh":
        add(
            "lab_rand_queue",
            rng.randint(0, 20),
            queue=queue,
            color=rng.choice(["red", "green", "blue"]),
            size=rng.choice(["s", "m", "l"]),
        )
    return series


@pytest.fixture(scope="module")
def world(lab: Lab) -> World:
    if not (prometheus_adapter.source_dir() / "go.mod").exists():
        pytest.fail(
            f"no prometheus-adapter source at {prometheus_adapter.source_dir()} "
            "(../shared/peers beside the checkout, or $HPA_PROMETHEUS_ADAPTER_SRC)",
            pytrace=False,
        )
    prometheus_adapter.build()
    lab.kubectl("create", "namespace", NAMESPACE)
    manifests = []
    for name, (labels, replicas) in WORKLOADS.items():
        manifest = deployment_manifest(name, NAMESPACE, replicas=replicas)
        manifest["spec"]["template"]["metadata"]["labels"] = labels
        manifests.append(manifest)
    lab.apply(manifests)
    for name, (labels, _) in WORKLOADS.items():
        lab.add_workload(WorkloadProfile(NAMESPACE, name, labels), rps=10)
    pods: dict[str, list[str]] = {}

    def running() -> bool:
        listed = lab.kubectl_json("get", "pods", "-n", NAMESPACE, "-o", "json")["items"]
        pods.clear()
        for pod in listed:
            if pod["status"].get("phase") == "Running":
                app = pod["metadata"]["labels"]["app"]
                pods.setdefault(app, []).append(pod["metadata"]["name"])
        return all(len(pods.get(n, [])) == r for n, (_, r) in WORKLOADS.items())

    lab.wait_for(running, what="the workloads' pods Running", timeout_seconds=120)
    nodes = sorted(
        n["metadata"]["name"] for n in lab.kubectl_json("get", "nodes", "-o", "json")["items"]
    )
    result = World({k: sorted(v) for k, v in pods.items()}, nodes)
    put_series(lab, static_series(result))
    wait_for_series(
        lab,
        [
            "lab_rand_queue",
            "lab_node_load",
            "container_cpu_usage_seconds_total",
            "http_requests_total",
        ],
    )
    return result


# ------------------------------------------------------------------------------- requests


def discovered_paths(pair: Pair, world: World) -> list[str]:
    """Requests for every resource/metric pair prometheus-adapter discovers, both versions."""
    reply = prometheus_adapter.get(pair.theirs_url, f"{CUSTOM}/v1beta1", context=pair.context)
    paths: list[str] = []
    for entry in sorted(r["name"] for r in reply.body.get("resources", [])):
        resource, metric = entry.split("/", 1)
        name = world.object_name(resource)
        for version in ("v1beta1", "v1beta2"):
            base = f"{CUSTOM}/{version}"
            if resource == "namespaces":
                paths += [
                    f"{base}/namespaces/{NAMESPACE}/metrics/{metric}",
                    f"{base}/namespaces/*/metrics/{metric}",
                    f"{base}/namespaces/*/metrics/{metric}?labelSelector={quote('x=y')}",
                    f"{base}/namespaces/nope/metrics/{metric}",
                    f"{base}/namespaces/{NAMESPACE}/{metric}",  # upstream: invalid request path
                ]
                continue
            if resource in ROOT_SCOPED:
                paths += [
                    f"{base}/{resource}/{name}/{metric}",
                    f"{base}/{resource}/*/{metric}",
                    f"{base}/{resource}/nope/{metric}",
                ]
                continue
            scoped = f"{base}/namespaces/{NAMESPACE}/{resource}"
            paths += [
                f"{scoped}/{name}/{metric}",
                f"{scoped}/nope/{metric}",
                f"{scoped}/*/{metric}",
                f"{scoped}/*/{metric}?labelSelector={quote('tier=front')}",
                f"{scoped}/*/{metric}?labelSelector={quote('app in (web,db)')}",
                f"{scoped}/*/{metric}?labelSelector={quote('app=none')}",
                f"{scoped}/{name}/{metric}?metricLabelSelector={quote('code=200')}",
                f"{scoped}/*/{metric}?labelSelector={quote('tier')}"
                f"&metricLabelSelector={quote('code!=200')}",
            ]
    return paths


def fixed_paths(world: World) -> list[str]:
    pod = world.all_pods[0]
    scoped = f"{CUSTOM}/v1beta2/namespaces/{NAMESPACE}"
    return [
        f"{CUSTOM}/v1beta1",
        f"{CUSTOM}/v1beta2",
        EXTERNAL,
        RESOURCE,
        f"{scoped}/pods/*/nope",
        f"{scoped}/pods/{pod}/nope",
        f"{CUSTOM}/v1beta1/namespaces/{NAMESPACE}/pods/*/nope",
        f"{scoped}/widgets/*/nope",
        f"{scoped}/widgets/x/nope",
        f"{CUSTOM}/v1beta2/nodes/*/nope",
        f"{EXTERNAL}/namespaces/{NAMESPACE}/nope_metric",
        f"{RESOURCE}/pods",
        f"{RESOURCE}/namespaces/{NAMESPACE}/pods",
        f"{RESOURCE}/namespaces/{NAMESPACE}/pods/{pod}",
        f"{RESOURCE}/namespaces/{NAMESPACE}/pods?labelSelector={quote('app=web')}",
        f"{RESOURCE}/namespaces/{NAMESPACE}/pods/nope",
        f"{RESOURCE}/nodes",
        f"{RESOURCE}/nodes/{world.nodes[0]}",
        f"{RESOURCE}/nodes/nope",
    ]


def external_paths(pair: Pair) -> list[str]:
    reply = prometheus_adapter.get(pair.theirs_url, EXTERNAL, context=pair.context)
    paths: list[str] = []
    for metric in sorted(r["name"] for r in reply.body.get("resources", [])):
        base = f"{EXTERNAL}/namespaces/{NAMESPACE}/{metric}"
        paths += [
            base,
            f"{base}?labelSelector={quote('topic=orders')}",
            f"{base}?labelSelector={quote('kind in (batch)')}",
            f"{base}?labelSelector={quote('queue!=a,topic')}",
            f"{EXTERNAL}/namespaces/default/{metric}",
        ]
    return paths


def all_paths(pair: Pair, world: World) -> list[str]:
    return fixed_paths(world) + discovered_paths(pair, world) + external_paths(pair)


# ------------------------------------------------------------------------------- rule files


def walkthrough_rules() -> str:
    """The ``config.yaml`` of the ConfigMap in prometheus-adapter's docs/walkthrough.md."""
    text = (prometheus_adapter.source_dir() / "docs" / "walkthrough.md").read_text()
    block = re.search(
        r"<summary>prom-adapter.config.yaml</summary>\s*```yaml\n(.*?)```", text, re.S
    )
    assert block is not None, "docs/walkthrough.md has no prom-adapter.config.yaml block"
    return str(yaml.safe_load(block.group(1))["data"]["config.yaml"])


def config_map_rules(path: Path) -> str:
    return str(yaml.safe_load(path.read_text())["data"]["config.yaml"])


def sample_config_quoted() -> str:
    """The sample config with its one YAML error fixed: three ``metricsQuery`` values are
    double-quoted strings that contain double quotes (``container!="POD"``), which no YAML parser
    reads; here they are single-quoted."""
    text = (DATA_DIR / "sample-config.yaml").read_text()
    return re.sub(r'metricsQuery: "(.*)"$', r"metricsQuery: '\1'", text, flags=re.M)


def sample_config_without_custom_resource() -> str:
    """``sample_config_quoted`` without its ``cheddar`` rule (its ``cheese.io`` resource is no
    CRD in the lab; with it, both refuse the file, see below)."""
    config = yaml.safe_load(sample_config_quoted())
    config["rules"] = [r for r in config["rules"] if "cheddar" not in r["seriesQuery"]]
    return str(yaml.safe_dump(config))


COUNTER_TOLERANCE = Decimal("0.10")
"""Relative tolerance for the rule files whose values are ``rate(...[2m])`` of the load model's
counters: the series are younger than the window, so the extrapolated rate moves by a few percent
between the two requests."""

RULE_FILES: dict[str, tuple[Any, str | None]] = {
    "overrides": (lambda: (RULES_DIR / "overrides.yaml").read_text(), f"{CUSTOM}/v1beta1"),
    "cluster": (lambda: (RULES_DIR / "cluster.yaml").read_text(), f"{CUSTOM}/v1beta1"),
    "template": (lambda: (RULES_DIR / "template.yaml").read_text(), f"{CUSTOM}/v1beta1"),
    "external": (lambda: (RULES_DIR / "external.yaml").read_text(), EXTERNAL),
    "resource": (lambda: (RULES_DIR / "resource.yaml").read_text(), f"{CUSTOM}/v1beta1"),
    "walkthrough": (walkthrough_rules, f"{CUSTOM}/v1beta1"),
    "deploy-configmap": (lambda: config_map_rules(DATA_DIR / "deploy-config-map.yaml"), None),
    "sample-config": (sample_config_without_custom_resource, f"{CUSTOM}/v1beta1"),
}


@pytest.mark.parametrize("label", list(RULE_FILES))
def test_the_same_requests_get_the_same_answers(
    label: str,
    lab: Lab,
    world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    load, discovery = RULE_FILES[label]
    started = time.monotonic()
    tolerance = COUNTER_TOLERANCE if label == "sample-config" else VALUE_TOLERANCE
    with started_pair(
        lab,
        tmp_path,
        load(),
        label=label,
        discovery_path=discovery,
        deviations=DEVIATIONS,
        tolerance=tolerance,
    ) as pair:
        tally = pair.compare(all_paths(pair, world))
    report(capsys, f"{tally.line(label)} in {elapsed(started)} s")
    assert not tally.unexplained, "\n".join(tally.unexplained)


def test_the_sample_config_as_shipped_is_refused_by_both(
    lab: Lab, world: World, tmp_path: Path
) -> None:
    ours, theirs = both_refuse(
        lab, tmp_path, (DATA_DIR / "sample-config.yaml").read_text(), label="sample-as-shipped"
    )
    # the parse error of the double-quoted metricsQuery on lines 29-30 (each parser names one)
    assert re.search(r"line (29|30)", ours), ours[-2000:]
    assert "unable to parse metrics discovery config" in theirs, theirs[-2000:]


def test_a_rule_on_an_unknown_resource_is_refused_by_both(
    lab: Lab, world: World, tmp_path: Path
) -> None:
    ours, theirs = both_refuse(lab, tmp_path, sample_config_quoted(), label="sample-cheddar")
    # ours names the file, the rule, the field and the resource; theirs the resource only
    assert "rules[3] (seriesQuery 'cheddar" in ours, ours[-2000:]
    assert "resources.overrides.brand: unable to normalize group-resource brand.cheese.io" in ours
    assert "unable to normalize group-resource" in theirs, theirs[-2000:]
    assert "brand" in theirs, theirs[-2000:]


def test_the_documented_deviations_are_in_the_migration_guide() -> None:
    text = " ".join(migration_doc().split())  # the guide wraps its lines
    for deviation in DEVIATIONS:
        assert deviation.doc in text, deviation.name


# ------------------------------------------------------------------------------- hypothesis


@pytest.fixture(scope="module")
def random_pair(lab: Lab, world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with started_pair(
        lab,
        tmp_path_factory.mktemp("random"),
        (RULES_DIR / "random.yaml").read_text(),
        label="random",
        deviations=DEVIATIONS,
    ) as pair:
        yield pair


KEYS = ("app", "tier", "color", "size", "queue", "missing")
VALUES = ("web", "db", "front", "back", "red", "green", "blue", "s", "m", "l", "a", "c", "zz")


@st.composite
def requirements(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(KEYS))
    operator = draw(st.sampled_from(("=", "==", "!=", "in", "notin", "exists", "!exists")))
    if operator == "exists":
        return key
    if operator == "!exists":
        return f"!{key}"
    if operator in ("in", "notin"):
        values = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=3, unique=True))
        return f"{key} {operator} ({','.join(values)})"
    return f"{key}{operator}{draw(st.sampled_from(VALUES))}"


selectors = st.lists(requirements(), max_size=3).map(",".join)


@st.composite
def random_requests(draw: st.DrawFn, world: World) -> str:
    kind = draw(st.sampled_from(("pods", "pod", "external")))
    query: list[str] = []
    if kind == "external":
        selector = draw(selectors)
        if selector:
            query.append(f"labelSelector={quote(selector)}")
        path = f"{EXTERNAL}/namespaces/{NAMESPACE}/lab_rand_queue"
    else:
        version = draw(st.sampled_from(("v1beta1", "v1beta2")))
        name = "*" if kind == "pods" else draw(st.sampled_from(world.all_pods))
        path = f"{CUSTOM}/{version}/namespaces/{NAMESPACE}/pods/{name}/lab_rand_items"
        if kind == "pods":
            selector = draw(selectors)
            if selector:
                query.append(f"labelSelector={quote(selector)}")
        metric_selector = draw(selectors)
        if metric_selector:
            query.append(f"metricLabelSelector={quote(metric_selector)}")
    return f"{path}?{'&'.join(query)}" if query else path


def test_random_selectors_get_the_same_answers(
    random_pair: Pair, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    tally = Tally()

    @settings(
        max_examples=RANDOM_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    @given(path=random_requests(world))
    def one(path: str) -> None:
        random_pair.compare([path], tally)

    one()
    report(capsys, tally.line("random selectors"))
    assert tally.compared >= RANDOM_EXAMPLES
    assert not tally.unexplained, "\n".join(tally.unexplained[:20])
