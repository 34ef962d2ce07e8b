"""End to end: a rule on a custom resource, served through the aggregator once its CRD exists.

prometheus-adapter's sample config maps the ``brand`` label to ``brands.cheese.io``. Here the lab
gets that CRD and two Brand objects, the exporter serves ``cheese_sold{namespace, brand}``, and
``hpa adapter`` runs behind kube-apiserver with the rule: the metric is listed as
``brands.cheese.io/cheese_sold``, a single object names the discovered ``cheese.io/v1`` ``Brand``,
and ``*`` with a ``labelSelector`` lists the Brands through the API. Without the CRD the same file
is refused (the refusal is compared with prometheus-adapter itself in
``test_prometheus_adapter_differential.py``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.adapter.server.test_restmapper import BRAND_RULES
from tests.commands import command_env
from tests.e2e.controller_lab import ADAPTER_RULES, HPA_BINARY, start_adapter, stop_adapter
from tests.e2e.prometheus_adapter_pair import put_series, wait_for_series
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.process import Component

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-cheese"
RULES = BRAND_RULES
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "brands.cheese.io"},
    "spec": {
        "group": "cheese.io",
        "scope": "Namespaced",
        "names": {
            "plural": "brands",
            "singular": "brand",
            "kind": "Brand",
            "listKind": "BrandList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
    },
}
BASE = f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NAMESPACE}/brands.cheese.io"


def _lab_rules() -> str:
    """The lab's rules (``resourceRules`` keep ``metrics.k8s.io`` Available) plus the brand
    rule."""
    config = yaml.safe_load(ADAPTER_RULES)
    config["rules"] = [*config.get("rules", []), *yaml.safe_load(RULES)["rules"]]
    return str(yaml.safe_dump(config))


def _refusal(lab: Lab, work: Path) -> subprocess.CompletedProcess[str]:
    config = work / "brands.yaml"
    config.write_text(RULES)
    return subprocess.run(
        [
            str(HPA_BINARY),
            "adapter",
            f"--config={config}",
            f"--kubeconfig={lab.kubeconfig}",
            f"--prometheus-url={lab.prometheus_url}",
            "--secure-port=0",
            f"--cert-dir={work / 'certs'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO_ROOT,
        env=command_env(),
    )


@pytest.fixture(scope="module")
def served(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Component]:
    work = tmp_path_factory.mktemp("cheese")
    refused = _refusal(lab, work)
    assert refused.returncode == 2, refused.stderr[-2000:]
    events = [json.loads(line) for line in refused.stderr.splitlines() if line.startswith("{")]
    errors = [event["error"] for event in events if event["event"] == "invalid_input"]
    rule = 'rules[0] (seriesQuery \'cheese_sold{namespace!="",brand!=""}\')'
    assert errors == [
        f"{work / 'brands.yaml'}: {rule}: resources.overrides.brand: unable to normalize "
        "group-resource brand.cheese.io: no matches for brand.cheese.io"
    ], refused.stderr[-2000:]
    lab.apply([CRD])
    lab.kubectl("wait", "--for=condition=Established", "crd/brands.cheese.io", "--timeout=60s")
    lab.kubectl("create", "namespace", NAMESPACE)
    lab.apply(
        [
            {
                "apiVersion": "cheese.io/v1",
                "kind": "Brand",
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            }
            for name, labels in (("gouda", {"tier": "top"}), ("brie", {"tier": "plain"}))
        ]
    )
    put_series(
        lab,
        [
            {"name": "cheese_sold", "labels": {"namespace": NAMESPACE, "brand": b}, "value": v}
            for b, v in (("gouda", 7), ("brie", 2))
        ],
    )
    wait_for_series(lab, ["cheese_sold"])
    adapter = start_adapter(lab, work, rules=_lab_rules(), relist_interval="2s")
    try:
        yield adapter
    finally:
        stop_adapter(lab, adapter)
        put_series(lab, [])
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
        lab.kubectl("delete", "crd", "brands.cheese.io", "--wait=false")


def _get(lab: Lab, path: str) -> Any:
    return json.loads(lab.kubectl("get", "--raw", path))


def test_a_custom_resource_metric_is_served_with_its_discovered_kind(
    lab: Lab, served: Component
) -> None:
    def listed() -> bool:
        try:
            items = _get(lab, f"{BASE}/*/cheese_sold")["items"]
        except Exception:  # noqa: BLE001 - not relisted yet
            return False
        return len(items) == 2

    lab.wait_for(listed, what="cheese_sold of both brands", timeout_seconds=60)
    discovery = _get(lab, "/apis/custom.metrics.k8s.io/v1beta2")
    assert "brands.cheese.io/cheese_sold" in [r["name"] for r in discovery["resources"]]
    one = _get(lab, f"{BASE}/gouda/cheese_sold")["items"][0]
    assert one["describedObject"] == {
        "kind": "Brand",
        "namespace": NAMESPACE,
        "name": "gouda",
        "apiVersion": "cheese.io/v1",
    }
    assert one["value"] == "7"
    top = _get(lab, f"{BASE}/*/cheese_sold?labelSelector=tier%3Dtop")["items"]
    assert [(item["describedObject"]["name"], item["value"]) for item in top] == [("gouda", "7")]
