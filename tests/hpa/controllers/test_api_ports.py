"""``hpa.controllers.api_ports``: the informer-backed lister adapters and the Scale a workload
record stands for. The adapters that talk to an API server are exercised in
``tests/hpa/app/test_controller.py`` with the rest of the wiring."""

from __future__ import annotations

import dataclasses

from hpa.controllers.api_ports import InformerHPALister, InformerPodLister, scale_from_workload
from hpa.core.selector import parse_selector
from hpa.kube.informer import Store
from hpa.kube.records import HpaRecord, PodRecord, parse_hpa, parse_pod, parse_workload

LONG_AGO = "2025-12-31T00:00:00Z"


def test_the_hpa_lister_converts_once_per_resource_version() -> None:
    store: Store[HpaRecord] = Store()
    record = parse_hpa(
        {
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
        }
    )
    store.put("default/web", record)
    lister = InformerHPALister(store)
    first = lister.get("default", "web")
    assert first is not None
    assert first.spec.max_replicas == 3
    assert lister.get("default", "web") is first
    store.delete("default/web")
    assert lister.get("default", "web") is None


def _pod_record(name: str, *, cpu: str, ready: str = "True") -> PodRecord:
    return parse_pod(
        {
            "metadata": {
                "name": name,
                "namespace": "default",
                "resourceVersion": "1",
                "labels": {"app": "web"},
            },
            "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": LONG_AGO}],
            },
        }
    )


def test_the_pod_lister_hands_out_the_records_with_their_pod_shape() -> None:
    store: Store[PodRecord] = Store()
    for record in (
        _pod_record("web-1", cpu="250m"),
        _pod_record("web-2", cpu="250m"),
        _pod_record("web-3", cpu="1", ready="False"),
    ):
        store.put(f"default/{record.name}", record)
    lister = InformerPodLister(store)
    first, second, third = lister.list_pods("default", parse_selector("app=web"))
    assert [p.info.name for p in (first, second, third)] == ["web-1", "web-2", "web-3"]
    assert first.info.containers is second.info.containers
    assert first.info.ready_condition is second.info.ready_condition
    assert first.info.containers[0].requests_milli == {"cpu": 250}
    assert third.info.containers[0].requests_milli == {"cpu": 1000}
    assert third.info.ready_condition is not None
    assert str(third.info.ready_condition.status) == "False"
    assert lister.list_pods("default", parse_selector("app=web"))[0] is first, "listed once"
    assert store.delete("default/web-1") is not None
    assert [p.info.name for p in lister.list_pods("default", parse_selector("app=web"))] == [
        "web-2",
        "web-3",
    ]


def test_the_pod_lister_answers_from_its_cache_until_a_pod_of_the_namespace_changes() -> None:
    store: Store[PodRecord] = Store()
    for record in (_pod_record("web-1", cpu="250m"), _pod_record("web-2", cpu="250m")):
        store.put(f"default/{record.name}", record)
    lister = InformerPodLister(store)
    web = parse_selector("app=web")
    listed = lister.list_pods("default", web)
    assert lister.list_pods("default", web) is listed, "a steady namespace is not listed again"
    elsewhere = dataclasses.replace(_pod_record("web-9", cpu="250m"), namespace="other")
    store.put("other/web-9", elsewhere)
    assert lister.list_pods("default", web) is listed, "another namespace's pods do not matter"
    store.put("default/web-3", _pod_record("web-3", cpu="1"))
    assert [p.info.name for p in lister.list_pods("default", web)] == ["web-1", "web-2", "web-3"]
    unready = _pod_record("web-1", cpu="250m", ready="False")
    store.put("default/web-1", dataclasses.replace(unready, resource_version="2"))
    first = lister.list_pods("default", web)[0]
    assert first.info.ready_condition is not None
    assert str(first.info.ready_condition.status) == "False", "an updated pod is seen"
    store.delete("default/web-2")
    assert [p.info.name for p in lister.list_pods("default", web)] == ["web-1", "web-3"]


def test_a_cached_scale_has_the_api_server_s_scale_document() -> None:
    record = parse_workload(
        {
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "42"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2},
        },
        kind="Deployment",
    )
    scale = scale_from_workload(record)
    assert dict(scale.raw) == {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": "42"},
        "spec": {"replicas": 3},
        "status": {"replicas": 2, "selector": "app=web"},
    }
    assert scale.raw["spec"] == {"replicas": 3}
    assert len(scale.raw) == 5
