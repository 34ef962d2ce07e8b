"""HPA manifests: parsed like the API server does, bad ones refused with the field path."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpa.core.spec import ScalingPolicySelect, ScalingPolicyType
from hpa.sim.manifest import (
    HPAManifest,
    ManifestError,
    load_manifests,
    parse_manifests,
    target_utilization_percent,
)
from hpa.sim.scenarios import hpa_manifest

PODS_METRIC = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  maxReplicas: 20
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "20"}
"""


def test_a_user_manifest_becomes_the_controllers_view_with_api_server_defaults() -> None:
    (manifest,) = parse_manifests(
        hpa_manifest("web", behavior="scaleDown:\n  selectPolicy: Disabled"), source="web.yaml"
    )

    hpa = manifest.hpa
    assert (hpa.namespace, hpa.name) == ("demo", "web")
    assert hpa.spec.behavior is not None
    down = hpa.spec.behavior.scale_down
    up = hpa.spec.behavior.scale_up
    assert down is not None
    assert up is not None
    assert down.select_policy == ScalingPolicySelect.DISABLED
    assert down.policies is not None
    assert [p.type for p in down.policies] == [ScalingPolicyType.PERCENT]  # defaulted
    assert up.policies is not None
    assert len(up.policies) == 2


def test_namespace_defaults_and_min_replicas_defaults_to_one() -> None:
    (manifest,) = parse_manifests(PODS_METRIC, source="api.yaml")

    assert manifest.hpa.namespace == "default"
    assert manifest.hpa.spec.min_replicas == 1


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("maxReplicas: 100", "maxReplicas: 0"), r"spec\.maxReplicas: Invalid value: 0"),
        (
            ("averageUtilization: 50", "averageUtilization: 0"),
            r"spec\.metrics\[0\]\.resource\.target\.averageUtilization: Invalid value: 0",
        ),
        (("name: cpu", "name: memory"), r"spec\.metrics\[0\]\.resource\.name: .*cpu only"),
        (("maxReplicas: 100", "maxReplicas: many"), r"spec\.maxReplicas: .*integer"),
        (("kind: HorizontalPodAutoscaler", "kind: Deployment"), "kind: expected Horizontal"),
        (("autoscaling/v2", "autoscaling/v1"), "apiVersion: expected autoscaling/v2"),
    ],
)
def test_bad_manifests_name_the_file_and_field(edit: tuple[str, str], message: str) -> None:
    text = hpa_manifest("web").replace(*edit)

    with pytest.raises(ManifestError, match=message) as info:
        parse_manifests(text, source="web.yaml")
    assert str(info.value).startswith("web.yaml")


def test_bad_behavior_is_reported_with_its_path() -> None:
    text = hpa_manifest(
        "web", behavior="scaleUp:\n  policies:\n  - {type: Percent, value: 0, periodSeconds: 60}"
    )

    with pytest.raises(ManifestError, match=r"spec\.behavior\.scaleUp\.policies\[0\]\.value"):
        parse_manifests(text, source="web.yaml")


def test_yaml_errors_and_empty_files_are_clear() -> None:
    with pytest.raises(ManifestError, match="not valid YAML"):
        parse_manifests("a: [", source="x.yaml")
    with pytest.raises(ManifestError, match="no HorizontalPodAutoscaler found"):
        parse_manifests("---\n", source="x.yaml")


def test_several_files_and_documents_get_unique_names(tmp_path: Path) -> None:
    first = tmp_path / "a.yaml"
    second = tmp_path / "b.yaml"
    first.write_text(hpa_manifest("web") + "---\n" + PODS_METRIC)
    second.write_text(hpa_manifest("web"))

    manifests = load_manifests([first, second])

    assert [m.name for m in manifests] == ["web", "api", "web#2"]
    assert manifests[1].source.endswith("a.yaml (document 2)")
    with pytest.raises(ManifestError, match="cannot read"):
        load_manifests([tmp_path / "none.yaml"])


def test_target_utilization_from_cpu_or_from_a_request_rate_target() -> None:
    (cpu,) = parse_manifests(hpa_manifest("web"), source="a")
    (pods,) = parse_manifests(PODS_METRIC, source="b")

    def target(manifest: HPAManifest) -> float | None:
        return target_utilization_percent(
            manifest.hpa, cpu_request_milli=500, cpu_per_request_milli=10.0, idle_cpu_milli=0.0
        )

    assert target(cpu) == 50
    assert target(pods) == 40  # 20 req/s x 10m of 500m
