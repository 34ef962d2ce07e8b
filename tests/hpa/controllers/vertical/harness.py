"""A recommender wired to fakes: informer stores filled from JSON through the real parse
functions, fake metrics, history and API writes, a fake clock."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from hpa.controllers.conversion import hpa_from_dict
from hpa.controllers.vertical.feeder import ClusterFeeder
from hpa.controllers.vertical.ports import HistoryProvider
from hpa.controllers.vertical.recommender import Recommender, RecommenderSettings
from hpa.core.vpa.aggregation import HOUR_NS
from hpa.core.vpa.awareness import HorizontalScaler
from hpa.core.vpa.cluster import ClusterState, PodId
from hpa.core.vpa.matching import ControllerKey
from hpa.core.vpa.recommender import create_pod_resource_recommender
from hpa.kube.informer import Store
from hpa.kube.records import HpaRecord, PodRecord, parse_hpa, parse_pod, record_key
from hpa.kube.targets import ControllerRecord, ScaleInfo, TargetResolver, parse_controller
from hpa.kube.vpa_records import VpaRecord, parse_vpa
from tests.fakes.clock import FakeClock
from tests.fakes.vertical import FakeContainerMetrics, FakeRecommenderApi

NS = "shop"
MIB = 1024 * 1024
SECOND_NS = 1_000_000_000


class Controllers:
    def __init__(self) -> None:
        self.stores: dict[str, Store[ControllerRecord]] = {}

    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None:
        store = self.stores.get(kind)
        return None if store is None else store.get_by_name(namespace, name)


class Scales:
    """``ScaleReader`` over a dict (custom resources with ``/scale``)."""

    def __init__(self) -> None:
        self.scales: dict[tuple[str, str, str], ScaleInfo] = {}

    async def get_scale(self, key: ControllerKey) -> ScaleInfo | None:
        return self.scales.get((key.namespace, key.kind, key.name))


def vpa_json(
    name: str = "web",
    *,
    target: Mapping[str, str] | None = None,
    recommenders: Sequence[str] = (),
    policy: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    namespace: str = NS,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if target is not None:
        spec["targetRef"] = dict(target)
    else:
        spec["targetRef"] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    if recommenders:
        spec["recommenders"] = [{"name": r} for r in recommenders]
    if policy is not None:
        spec["resourcePolicy"] = dict(policy)
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {
            "namespace": namespace,
            "name": name,
            "resourceVersion": "1",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": dict(status or {}),
    }


def deployment_json(name: str = "web", *, app: str = "web") -> dict[str, Any]:
    return {
        "metadata": {"namespace": NS, "name": name, "resourceVersion": "1"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}}},
    }


def replica_set_json(name: str, *, owner: str, app: str = "web") -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": NS,
            "name": name,
            "resourceVersion": "1",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner, "controller": True}
            ],
        },
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}}},
    }


def pod_json(
    name: str,
    *,
    app: str = "web",
    containers: Mapping[str, tuple[str, str]] | None = None,
    statuses: Sequence[Mapping[str, Any]] = (),
    resource_version: str = "1",
    init_containers: Sequence[str] = (),
    owner: str = "web-1",
) -> dict[str, Any]:
    wanted = containers or {"app": ("100m", "128Mi")}
    return {
        "metadata": {
            "namespace": NS,
            "name": name,
            "resourceVersion": resource_version,
            "labels": {"app": app},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True}
            ],
        },
        "spec": {
            "containers": [
                {"name": c, "resources": {"requests": {"cpu": cpu, "memory": mem}}}
                for c, (cpu, mem) in wanted.items()
            ],
            "initContainers": [{"name": c} for c in init_containers],
        },
        "status": {"phase": "Running", "containerStatuses": list(statuses)},
    }


def hpa_json(
    name: str, *, target: str = "web", metrics: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"namespace": NS, "name": name, "resourceVersion": "1"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": list(
                metrics
                if metrics is not None
                else [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 60},
                        },
                    }
                ]
            ),
        },
    }


def eviction_json(
    uid: str, *, at: str, usage: str = "500Mi", pod: str = "web-0", container: str = "app"
) -> dict[str, Any]:
    """An Event as the kubelet writes it when it evicts ``pod`` for memory pressure."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "namespace": NS,
            "name": f"{pod}.{uid}",
            "uid": uid,
            "resourceVersion": "1",
            "creationTimestamp": at,
            "annotations": {
                "offending_containers": container,
                "offending_containers_usage": usage,
                "starved_resource": "memory",
            },
        },
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": pod},
        "reason": "Evicted",
    }


class Harness:
    def __init__(
        self,
        *,
        settings: RecommenderSettings | None = None,
        history: HistoryProvider | None = None,
        recommender_name: str = "default",
        api: FakeRecommenderApi | None = None,
        ignored_vpa_object_namespaces: frozenset[str] = frozenset(),
    ) -> None:
        self.clock = FakeClock()
        self.vpas: Store[VpaRecord] = Store()
        self.vpa_data: dict[tuple[str, str], dict[str, Any]] = {}
        self.pods: Store[PodRecord] = Store()
        self.hpas: Store[HpaRecord] = Store()
        self.controllers = Controllers()
        self.scales = Scales()
        self.metrics = FakeContainerMetrics()
        self.api = api or FakeRecommenderApi()
        self.registry = CollectorRegistry()
        self.cluster = ClusterState(gc_interval_ns=HOUR_NS)
        self.feeder = ClusterFeeder(
            self.cluster,
            vpas=lambda: iter(self.vpas),
            pods=lambda: iter(self.pods),
            resolver=TargetResolver(self.controllers, self.scales),
            controllers=self.controllers,
            metrics=self.metrics,
            recommender_name=recommender_name,
            ignored_vpa_object_namespaces=ignored_vpa_object_namespaces,
            hpas=self._scalers,
        )
        self.recommender = Recommender(
            self.feeder,
            pod_recommender=create_pod_resource_recommender(),
            api=self.api,
            hpas=self._scalers,
            clock=self.clock,
            registry=self.registry,
            settings=settings or RecommenderSettings(),
            history=history,
        )

    @staticmethod
    def scales_info(selector: str) -> ScaleInfo:
        return ScaleInfo(selector=selector, owner=None)

    def _scalers(self, namespace: str) -> Sequence[HorizontalScaler]:
        return [
            HorizontalScaler(namespace, r.name, hpa.spec, hpa.status)
            for r in self.hpas.list_namespace(namespace)
            for hpa in (hpa_from_dict(r.raw),)
        ]

    def now_ns(self) -> int:
        return self.recommender.now_ns()

    def put_vpa(self, data: Mapping[str, Any]) -> None:
        self.vpa_data[(data["metadata"]["namespace"], data["metadata"]["name"])] = dict(data)
        record = parse_vpa(data)
        self.vpas.put(record_key(record), record)

    def put_pod(self, data: Mapping[str, Any]) -> None:
        record = parse_pod(data)
        self.pods.put(record_key(record), record)

    def put_hpa(self, data: Mapping[str, Any]) -> None:
        record = parse_hpa(data)
        self.hpas.put(record_key(record), record)

    def put_controller(self, kind: str, data: Mapping[str, Any]) -> None:
        record = functools.partial(parse_controller, kind=kind)(data)
        self.controllers.stores.setdefault(kind, Store()).put(record_key(record), record)

    def web(
        self, *, pods: int = 1, containers: Mapping[str, tuple[str, str]] | None = None
    ) -> None:
        """Deployment ``web`` → ReplicaSet ``web-1`` → ``pods`` pods, and its VPA."""
        self.put_controller("Deployment", deployment_json())
        self.put_controller("ReplicaSet", replica_set_json("web-1", owner="web"))
        for i in range(pods):
            self.put_pod(pod_json(f"web-{i}", containers=containers))
        self.put_vpa(vpa_json())

    def observe_vpa_status(self, name: str = "web") -> None:
        """The informer's copy of the VPA now carries the last status written."""
        status = self.api.last_status(NS, name)
        data = self.vpa_data[(NS, name)]
        self.put_vpa({**data, "status": dict(status or {})})

    def feed(
        self, pod: str = "web-0", container: str = "app", *, cpu: int | None, memory: int | None
    ) -> None:
        self.metrics.set(PodId(NS, pod), container, time_ns=self.now_ns(), cpu=cpu, memory=memory)

    async def run_once(self) -> None:
        await self.recommender.run_once()
        for namespace, name in list(self.vpa_data):
            if namespace == NS and self.api.last_status(namespace, name) is not None:
                self.observe_vpa_status(name)

    def status(self, name: str = "web") -> Mapping[str, Any]:
        status = self.api.last_status(NS, name)
        assert status is not None, f"no status written for {name}"
        return status

    def conditions(self, name: str = "web") -> dict[str, Mapping[str, Any]]:
        return {c["type"]: c for c in self.status(name).get("conditions", [])}
