"""The cluster model's indexes answer what a walk over every VPA and pod answers."""

from __future__ import annotations

import itertools
import random

from hypothesis import given
from hypothesis import strategies as st

from hpa.core.selector import NOTHING, parse_selector
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.cluster import ClusterState, ContainerId, PodId, VpaId

SELECTORS = [
    "app=a",
    "app=b",
    "app in (a,b)",
    "tier=web,app=a",
    "!tier",
    "app",
    "",
    None,
    "NOTHING",
]
LABELS = [{"app": "a"}, {"app": "b", "tier": "web"}, {"app": "a", "tier": "web"}, {}, {"x": "y"}]


def brute_count(cluster: ClusterState, vpa_id: VpaId) -> int:
    vpa = cluster.vpas[vpa_id]
    return sum(
        1
        for pod in cluster.pods.values()
        if pod.id.namespace == vpa_id.namespace
        and vpa.pod_selector is not None
        and vpa.pod_selector.matches(cluster.label_set_map[pod.label_set_key])
    )


@given(st.integers(min_value=0, max_value=10_000))
def test_indexes_agree_with_a_full_walk(seed: int) -> None:
    rng = random.Random(seed)
    cluster = ClusterState(gc_interval_ns=1)
    namespaces = ["a", "b"]
    for i, (namespace, text) in enumerate(itertools.product(namespaces, SELECTORS)):
        if rng.random() < 0.3:
            continue
        selector = None if text is None else NOTHING if text == "NOTHING" else parse_selector(text)
        cluster.add_or_update_vpa(VpaId(namespace, f"v{i}"), selector=selector, created_ns=0)
    for i in range(rng.randint(0, 12)):
        pod_id = PodId(rng.choice(namespaces), f"p{i}")
        cluster.add_or_update_pod(pod_id, rng.choice(LABELS), "Running", now_ns=0)
        cluster.add_or_update_container(ContainerId(pod_id, "c"), Resources(), now_ns=0)
        if rng.random() < 0.3:
            cluster.add_or_update_pod(pod_id, rng.choice(LABELS), "Running", now_ns=0)
        if rng.random() < 0.2:
            cluster.delete_pod(pod_id)
    late = VpaId("a", "late")
    cluster.add_or_update_vpa(late, selector=parse_selector("app=a"), created_ns=0)
    for vpa_id, vpa in cluster.vpas.items():
        assert vpa.pod_count == brute_count(cluster, vpa_id), vpa_id
        assert len(cluster.get_matching_pods(vpa)) == vpa.pod_count
        wanted = {
            key
            for key in cluster.aggregate_state_map
            if key.namespace == vpa_id.namespace
            and vpa.pod_selector is not None
            and vpa.pod_selector.matches(cluster.labels_of(key))
        }
        assert set(vpa.aggregate_container_states) == wanted
    for pod in cluster.pods.values():
        first = next(
            (
                v
                for v in cluster.vpas.values()
                if v.id.namespace == pod.id.namespace
                and v.pod_selector is not None
                and v.pod_selector.matches(cluster.label_set_map[pod.label_set_key])
            ),
            None,
        )
        assert cluster.get_controlling_vpa(pod) is first
