"""The chart's Grafana dashboard and PrometheusRule query only what the components export.

Every metric a dashboard query or an alert names must be in the registry one of the components
builds (the registries of tests/test_metrics_doc.py, built as each composition root builds them),
with its ``_bucket``/``_sum``/``_count`` series for histograms, and every label a query selects or
groups by must be one of that metric's labels or a label Prometheus adds to a scraped target. The
only other metrics are named in ``EXTERNAL_METRICS`` (Prometheus' ``up``, kube-apiserver's and
kube-state-metrics'). ``promtool check rules`` accepts the PrometheusRule's groups.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from hpa.app import recommender as recommender_app
from hpa.app import updater as updater_app
from hpa.kube.client import KubeClient
from tests.delivery.chart import CHART_DIR, render_ci
from tests.fakes.clock import FakeClock
from tests.test_metrics_doc import (
    _NoUsage,
    _parsed,
    adapter_registry,
    admission_registry,
    controller_registry,
    exposed,
    kube,
)

__all__ = ["kube"]  # the fixture of tests/test_metrics_doc.py

Exported = dict[str, frozenset[str] | None]
"""Series name -> label names (``None``: not declared, any label accepted)."""

TARGET_LABELS = frozenset(
    {"job", "namespace", "pod", "instance", "service", "container", "endpoint"}
)
"""Labels Prometheus (prometheus-operator's ServiceMonitor) adds to every scraped series."""
EXTERNAL_METRICS = frozenset(
    {
        "up",  # Prometheus, per target
        "aggregator_unavailable_apiservice",  # kube-apiserver
        "kube_horizontalpodautoscaler_status_condition",  # kube-state-metrics
    }
)
PROMQL_WORDS = frozenset(
    {
        "sum", "max", "min", "avg", "count", "rate", "increase", "irate", "absent",
        "histogram_quantile", "label_values", "by", "without", "or", "and", "unless", "on",
        "ignoring", "time", "vector", "clamp_min",
    }
)  # fmt: skip
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_LABEL_VALUES = re.compile(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*(\w+)\s*\)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)")


async def all_exported(client: KubeClient, registry: CollectorRegistry, tmp: Path) -> Exported:
    """Every component's series, as docs/metrics.md's test builds their registries."""
    registries: list[CollectorRegistry] = []
    for build in ("controller", "adapter", "admission", "recommender", "updater"):
        own = CollectorRegistry()
        registries.append(own)
        if build == "controller":
            await controller_registry(client, own)
        elif build == "adapter":
            rules = tmp / "rules.yaml"
            rules.write_text("rules: []\n")
            await adapter_registry(own, rules)
        elif build == "admission":
            admission_registry(client, own, tmp)
        elif build == "recommender":
            settings = _parsed(recommender_app.add_flags, recommender_app.settings_from_args)
            recommender_app.build_app(
                settings, client, clock=FakeClock(), registry=own, metrics=_NoUsage()
            )
        else:
            settings = _parsed(updater_app.add_flags, updater_app.settings_from_args)
            updater_app.build_app(settings, client, clock=FakeClock(), registry=own)
    series: Exported = {}
    for own in [registry, *registries]:
        for name, (kind, labels) in exposed(own).items():
            names = [name]
            if kind == "histogram":
                names = [f"{name}_bucket", f"{name}_sum", f"{name}_count"]
                labels = None if labels is None else labels | {"le"}
            for one in names:
                known = series.get(one, frozenset())
                series[one] = None if labels is None or known is None else known | labels
    return series


def problems(expr: str, exported: Exported) -> list[str]:
    """What in one PromQL expression names a metric or label no component exports."""
    found: list[str] = []
    selected: dict[str, frozenset[str] | None] = {}
    text = _LABEL_VALUES.sub(lambda m: f'{m[1]}{{{m[2]}=~".+"}}', expr)
    for name, matchers in _SELECTOR.findall(text):
        labels = frozenset(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", matchers))
        if name in EXTERNAL_METRICS:
            selected[name] = None
            continue
        if name not in exported:
            found.append(f"{name}: no component exports it")
            continue
        selected[name] = exported[name]
        declared = exported[name]
        if declared is not None and not labels <= declared | TARGET_LABELS:
            found.append(f"{name}: unknown labels {sorted(labels - declared - TARGET_LABELS)}")
    if not _SELECTOR.search(text):
        found.append(f"names no metric: {expr}")
    rest = _SELECTOR.sub(" ", text)
    for group in _GROUPING.findall(rest):
        for label in re.findall(r"\w+", group):
            known = any(
                labels is None or label in labels or label.removeprefix("exported_") in labels
                for labels in selected.values()
            )
            if not (known or label in TARGET_LABELS or label == "le"):
                found.append(f"groups by {label}, a label of none of {sorted(selected)}")
    bare = re.sub(r'"[^"]*"|\[[^\]]*\]|\b\d+(\.\d+)?\b', " ", _GROUPING.sub(" ", rest))
    for word in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare):
        if word not in PROMQL_WORDS:
            found.append(f"{word}: a metric without a selector, or an unknown function")
    return found


def dashboard_queries() -> list[str]:
    configmap = next(
        o.body for o in render_ci("full") if o.kind == "ConfigMap" and o.name == "hpa-dashboard"
    )
    dashboard = json.loads(configmap["data"]["hpa.json"])
    assert dashboard == json.loads((CHART_DIR / "files" / "dashboard.json").read_text())
    queries = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    queries += [
        v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"
    ]
    return queries


def alert_rules(values: str = "full") -> list[dict[str, Any]]:
    rule = next(o.body for o in render_ci(values) if o.kind == "PrometheusRule")
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


@pytest.fixture
async def exported(kube: tuple[KubeClient, CollectorRegistry], tmp_path: Path) -> Exported:
    client, registry = kube
    return await all_exported(client, registry, tmp_path)


async def test_every_dashboard_query_names_metrics_the_components_export(
    exported: Exported,
) -> None:
    queries = dashboard_queries()
    assert len(queries) >= 20
    assert {q: problems(q, exported) for q in queries if problems(q, exported)} == {}


async def test_every_alert_names_metrics_the_components_export(exported: Exported) -> None:
    rules = alert_rules()
    assert {r["alert"] for r in rules} == {
        "HpaAdapterUnavailable",
        "HpaMetricsAPIServiceUnavailable",
        "HpaControllerReconcileErrors",
        "HpaMetricComputationErrors",
        "HpaMetricsUnavailable",
        "VpaRecommendationStale",
        "VpaWithoutRecommendation",
    }
    assert {r["alert"]: problems(r["expr"], exported) for r in rules} == {
        r["alert"]: [] for r in rules
    }


async def test_the_check_catches_a_misspelt_metric_and_label(exported: Exported) -> None:
    assert problems('sum(rate(hpa_reconciles_total{namespace="x"}[5m]))', exported) == [
        "hpa_reconciles_total: no component exports it"
    ]
    wrong_label = 'sum(horizontal_pod_autoscaler_controller_desired_replicas{hpa="web"})'
    assert problems(wrong_label, exported) == [
        "horizontal_pod_autoscaler_controller_desired_replicas: unknown labels ['hpa']"
    ]
    assert problems("sum(workqueue_depth)", exported) == [
        "names no metric: sum(workqueue_depth)",
        "workqueue_depth: a metric without a selector, or an unknown function",
    ]
    reconciliations = "horizontal_pod_autoscaler_controller_reconciliations_total"
    grouped = f'sum by (verb) (rate({reconciliations}{{job="c"}}[5m]))'
    assert problems(grouped, exported) == [
        "groups by verb, a label of none of "
        "['horizontal_pod_autoscaler_controller_reconciliations_total']"
    ]


def test_alerts_follow_the_components_and_promtool_accepts_them(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool (Debian's prometheus package, `make system-deps`)"
    rule = next(o.body for o in render_ci("monitoring") if o.kind == "PrometheusRule")
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    result = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    alerts = {r.get("alert") for r in rule["spec"]["groups"][0]["rules"]}
    # monitoring-values: no updater or admission; the recommender on; one additional rule
    assert "VpaRecommendationStale" in alerts
    assert "HpaControllerQueueBacklog" in alerts
    assert all(
        r["labels"]["team"] == "platform"
        for r in rule["spec"]["groups"][0]["rules"]
        if r.get("alert") != "HpaControllerQueueBacklog"
    )
