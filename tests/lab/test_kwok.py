"""kwok's Stages give pods the start-up and readiness delays the lab was configured with."""

from __future__ import annotations

from typing import Any

import yaml

from tests.lab import kwok


def stages(**delays: float) -> dict[str, dict[str, Any]]:
    documents = yaml.safe_load_all(kwok.render_stages(**delays))
    return {doc["metadata"]["name"]: doc["spec"] for doc in documents}


def test_pod_lifecycle_delays_follow_the_configuration() -> None:
    spec = stages(startup_delay_seconds=2.5, readiness_delay_seconds=7)
    assert "delay" not in spec["pod-create"]
    assert spec["pod-start"]["delay"] == {"durationMilliseconds": 2500}
    assert spec["pod-ready"]["delay"] == {"durationMilliseconds": 7000}
    assert spec["pod-delete"]["next"] == {"delete": True}
    assert spec["node-heartbeat"]["delay"] == {"durationMilliseconds": 10000}


def test_ready_stage_stamps_the_ready_transition_and_keeps_start_time() -> None:
    spec = stages(startup_delay_seconds=0, readiness_delay_seconds=0)
    template = spec["pod-ready"]["next"]["statusTemplate"]
    assert "type: Ready" in template
    assert "lastTransitionTime: {{ $now | Quote }}" in template
    assert "\nstartTime:" in spec["pod-create"]["next"]["statusTemplate"]
    assert "\nstartTime:" not in template  # set once, when the "kubelet" accepted the pod
    assert all(s["resourceRef"]["apiGroup"] == "v1" for s in spec.values())


def test_node_manifest_is_selected_by_kwok() -> None:
    node = kwok.node_manifest("n0", cpu="4", memory="8Gi", pods="110")
    assert node["metadata"]["labels"][kwok.NODE_LABEL_KEY] == kwok.NODE_LABEL_VALUE
    assert node["status"]["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}


def test_ready_pods_report_their_containers_resources_so_resizes_complete() -> None:
    spec = stages(startup_delay_seconds=0, readiness_delay_seconds=0)
    resize = spec["pod-resize"]
    keys = {m["key"]: m.get("values") for m in resize["selector"]["matchExpressions"]}
    assert keys[".status.phase"] == ["Running"]
    assert f'.metadata.annotations["{kwok.RESIZE_HOLD_ANNOTATION}"]' in keys
    assert "delay" not in resize
    assert "resources: {{ YAML $item.resources 2 }}" in resize["next"]["statusTemplate"]
