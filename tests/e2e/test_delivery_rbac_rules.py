"""Every rule of the chart's controller RBAC is needed: with any one removed, the real controller,
running as the chart's ServiceAccount token, fails where that rule is used.

Setup as in tests/e2e/test_delivery_rbac.py (the chart rendered with its SCENARIO_VALUES, only
its RBAC objects applied, the adapter on its own token). Three Deployments, each with an HPA
(max 5): ``ext`` on the External metric ``lab_workload_offered_load_rps`` (30 offered, 10 per
replica: the controller wants 3), ``rps`` on the Pods metric ``http_requests_per_second`` (20
offered) and ``cpu`` on CPU utilization. For each case the ClusterRole ``hpa-controller`` (or the
Role ``hpa-controller-leader-election``) is applied without one rule, a SubjectAccessReview
confirms the API server's authorizer sees the change, the HPAs are created afresh, and ``hpa
controller`` starts with the chart's arguments (1 s sync) and the token. The case then waits for
the failure that rule's absence causes, as a user would see it:

==========================  ===============================================================
rule removed                observed
==========================  ===============================================================
(none: the baseline)        ext scaled 1 -> 3, all three HPAs ScalingActive=True, a
                            SuccessfulRescale event, no RBAC denial in the controller's log
``*/scale`` get, update     ext: AbleToScale=False, "forbidden"; the Deployment stays at 1
HPA ``/status`` update      ext scaled to 3, but its HPA never gets a status
``events`` create, patch    ext scaled, status written, no event on the HPA
HPAs list, watch            nothing reconciled (the HPA informer cannot list); no status
pods list, watch            nothing reconciled (the pod informer cannot list); no status
apps workloads list, watch  scaling still works (``GET /scale`` fallback); the RBAC denial in
                            the log fails the scenario's no-denial check
``metrics.k8s.io`` pods     cpu: ScalingActive=False/FailedGetResourceMetric, "forbidden"
custom metrics              rps: ScalingActive=False/FailedGetPodsMetric, "forbidden"
external metrics            ext: ScalingActive=False/FailedGetExternalMetric, "forbidden"
Lease get, update (Role)    never leader: no HPA gets a status
Lease create (Role)         never leader: no HPA gets a status
==========================  ===============================================================

Last, ``controller.metricsSource: inprocess``: the chart renders no metrics-API rule at all, and
the controller, reading the adapter's rules and Prometheus itself, reaches the baseline's outcome.
"""

from __future__ import annotations

import copy
import functools
import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.delivery.chart import RELEASE_NAMESPACE
from tests.e2e.controller_lab import (
    ApiReader,
    adapter_rules,
    component_log,
    cpu_utilization_metric,
    deployment_manifest,
    describe_hpas,
    hpa_manifest,
    offered_load_metric,
    pods_metric,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.e2e.test_delivery import restricted_namespace
from tests.e2e.test_delivery_rbac import (
    CONTROLLER,
    EXTERNAL_METRIC,
    PODS_METRIC,
    SCENARIO_VALUES,
    Identities,
    chart_rbac,
    controller_flags,
    identities,
)
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.process import Component, LabError

pytestmark = pytest.mark.e2e

__all__ = ["identities", "restricted_namespace"]  # fixtures shared with test_delivery_rbac.py

NAMESPACE = "e2e-delivery-rules"
SYNC_SECONDS = 1.0
SETTLE_SECONDS = 4 * SYNC_SECONDS
"""How long an absence (no status, no event) must last after the controller had its chance."""
TIMEOUT_SECONDS = 60.0
CONTROLLER_USER = f"system:serviceaccount:{RELEASE_NAMESPACE}:{CONTROLLER}"
DENIAL = f'is forbidden: User "{CONTROLLER_USER}"'
LEASE_ROLE = f"{CONTROLLER}-leader-election"
RULE_VALUES: dict[str, Any] = copy.deepcopy(SCENARIO_VALUES)
RULE_VALUES["controller"]["syncPeriod"] = f"{SYNC_SECONDS:g}s"
# name -> (metric spec, requests/s offered)
WORKLOADS: dict[str, tuple[dict[str, Any], int]] = {
    "ext": (offered_load_metric("ext", "10"), 30),
    "rps": (pods_metric(PODS_METRIC, "10"), 20),
    "cpu": (cpu_utilization_metric(50), 0),
}


@dataclass(frozen=True)
class Access:
    """The SubjectAccessReview attributes of one request the removed rule admits."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    name: str = ""
    namespace: str = NAMESPACE

    def attributes(self) -> dict[str, str]:
        return {
            "verb": self.verb,
            "group": self.group,
            "resource": self.resource,
            "subresource": self.subresource,
            "name": self.name,
            "namespace": self.namespace,
        }


@dataclass
class Run:
    """One controller run with a reduced role."""

    lab: Lab
    reader: ApiReader
    controller: Component

    def hpa(self, name: str) -> dict[str, Any]:
        path = f"/apis/autoscaling/v2/namespaces/{NAMESPACE}/horizontalpodautoscalers/{name}"
        return dict(self.reader.try_get(path) or {})

    def condition(self, name: str, kind: str) -> tuple[str, str, str]:
        """(status, reason, message) of the HPA's condition ``kind``."""
        for found in (self.hpa(name).get("status") or {}).get("conditions") or ():
            if found.get("type") == kind:
                return (found["status"], found.get("reason", ""), found.get("message", ""))
        return ("", "", "")

    def active(self, name: str) -> bool:
        return self.condition(name, "ScalingActive")[0] == "True"

    def has_status(self, name: str) -> bool:
        return bool((self.hpa(name).get("status") or {}).get("conditions"))

    def replicas(self, name: str) -> int:
        found = self.reader.try_get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}")
        return int(((found or {}).get("spec") or {}).get("replicas", -1))

    def event_reasons(self, name: str) -> list[str]:
        """Reasons of the events on the HPA ``name``."""
        selector = urllib.parse.quote(
            f"involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={name}"
        )
        found = self.reader.try_get(
            f"/api/v1/namespaces/{NAMESPACE}/events?fieldSelector={selector}"
        )
        return [str(item.get("reason")) for item in (found or {}).get("items", [])]

    def denials(self, fragment: str = "") -> list[str]:
        """Lines of the controller's log where the API server refused it (containing
        ``fragment``)."""
        text = self.controller.log_path.read_text(errors="replace")
        return [
            line
            for line in map(_log_text, text.splitlines())
            if DENIAL in line and fragment in line
        ]

    def wait(self, check: Callable[[], bool], *, what: str) -> None:
        try:
            self.lab.wait_for(
                check, what=what, timeout_seconds=TIMEOUT_SECONDS, interval_seconds=0.2
            )
        except LabError as error:
            raise AssertionError(self.failure(what)) from error

    def settle(self) -> None:
        """Give the controller SETTLE_SECONDS more (for checks that something did not happen)."""
        until = time.monotonic() + SETTLE_SECONDS
        self.lab.wait_for(
            lambda: time.monotonic() >= until,
            what="the settle time",
            timeout_seconds=SETTLE_SECONDS + 5,
        )

    def failure(self, message: str) -> str:
        return (
            f"{message}\n{component_log(self.controller)}\n"
            f"----- kubectl describe hpa -n {NAMESPACE} -----\n{describe_hpas(self.lab, NAMESPACE)}"
        )


def _log_text(line: str) -> str:
    """A log line as a user reads it: a JSON line's fields decoded (the API server's message
    quotes names, which JSON escapes)."""
    try:
        fields = json.loads(line)
    except ValueError:
        return line
    if not isinstance(fields, dict):
        return line
    return " ".join(f"{key}={value}" for key, value in fields.items())


def forbidden_metric(run: Run, name: str, reason: str) -> None:
    def refused() -> bool:
        status, found, message = run.condition(name, "ScalingActive")
        return (status, found) == ("False", reason) and "forbidden" in message

    run.wait(refused, what=f"{name}: ScalingActive=False/{reason} with a forbidden message")


def never_reconciles(run: Run, fragment: str) -> None:
    run.wait(lambda: bool(run.denials(fragment)), what=f"a denial of {fragment} in the log")
    run.settle()
    assert [n for n in WORKLOADS if run.has_status(n)] == [], run.failure("an HPA got a status")
    assert run.replicas("ext") == 1


def check_baseline(run: Run) -> None:
    run.wait(lambda: run.replicas("ext") == 3, what="ext scaled to 3")
    for name in WORKLOADS:
        run.wait(functools.partial(run.active, name), what=f"{name}: ScalingActive=True")
    run.wait(lambda: "SuccessfulRescale" in run.event_reasons("ext"), what="SuccessfulRescale")
    assert run.denials() == [], run.failure("an RBAC denial with the whole role")


def check_scale(run: Run) -> None:
    def refused() -> bool:
        status, _, message = run.condition("ext", "AbleToScale")
        return status == "False" and "forbidden" in message

    run.wait(refused, what="ext: AbleToScale=False with a forbidden message")
    assert run.replicas("ext") == 1


def check_status(run: Run) -> None:
    run.wait(lambda: run.replicas("ext") == 3, what="ext scaled to 3")
    run.wait(
        lambda: bool(run.denials("horizontalpodautoscalers/status")),
        what="a denial of horizontalpodautoscalers/status in the log",
    )
    run.settle()
    assert not run.has_status("ext"), run.failure("ext's HPA got a status")


def check_events(run: Run) -> None:
    run.wait(lambda: run.replicas("ext") == 3, what="ext scaled to 3")
    # the rescale's status write (lastScaleTime) lands although its event is refused; the
    # AbleToScale/SucceededRescale it also writes lasts one sync period (1 s here), too short to
    # poll for reliably on a busy machine, so the durable field is what is checked
    run.wait(
        lambda: bool((run.hpa("ext").get("status") or {}).get("lastScaleTime")),
        what="ext: status.lastScaleTime written by the rescale",
    )
    run.wait(lambda: bool(run.denials('"events"')), what="a denial of events in the log")
    run.settle()
    assert run.event_reasons("ext") == [], run.failure("an event on ext's HPA")


def check_workload_informers(run: Run) -> None:
    run.wait(lambda: bool(run.denials('"deployments"')), what="a denial of deployments")
    run.wait(lambda: run.replicas("ext") == 3, what="ext scaled to 3 through GET /scale")


@dataclass(frozen=True)
class Case:
    id: str
    role: str
    """The (Cluster)Role the rule is removed from."""
    rule: tuple[tuple[str, ...], tuple[str, ...]] | None
    """The removed rule's (apiGroups, resources); None removes nothing."""
    access: Access | None
    """A request only the removed rule admits (None for the baseline)."""
    check: Callable[[Run], None]


CASES = [
    Case("none", CONTROLLER, None, None, check_baseline),
    Case(
        "scale",
        CONTROLLER,
        (("*",), ("*/scale",)),
        Access("update", "apps", "deployments", "scale", "ext"),
        check_scale,
    ),
    Case(
        "hpa-status",
        CONTROLLER,
        (("autoscaling",), ("horizontalpodautoscalers/status",)),
        Access("update", "autoscaling", "horizontalpodautoscalers", "status", "ext"),
        check_status,
    ),
    Case(
        "events",
        CONTROLLER,
        (("",), ("events",)),
        Access("create", "", "events"),
        check_events,
    ),
    Case(
        "hpas",
        CONTROLLER,
        (("autoscaling",), ("horizontalpodautoscalers",)),
        Access("list", "autoscaling", "horizontalpodautoscalers", namespace=""),
        lambda run: never_reconciles(run, '"horizontalpodautoscalers"'),
    ),
    Case(
        "pods",
        CONTROLLER,
        (("",), ("pods",)),
        Access("list", "", "pods", namespace=""),
        lambda run: never_reconciles(run, '"pods"'),
    ),
    Case(
        "workloads",
        CONTROLLER,
        (("apps",), ("deployments", "statefulsets", "replicasets")),
        Access("list", "apps", "deployments", namespace=""),
        check_workload_informers,
    ),
    Case(
        "resource-metrics",
        CONTROLLER,
        (("metrics.k8s.io",), ("pods",)),
        Access("list", "metrics.k8s.io", "pods"),
        lambda run: forbidden_metric(run, "cpu", "FailedGetResourceMetric"),
    ),
    Case(
        "custom-metrics",
        CONTROLLER,
        (
            ("custom.metrics.k8s.io",),
            (f"pods/{PODS_METRIC}", f"deployments.apps/{PODS_METRIC}"),
        ),
        Access("get", "custom.metrics.k8s.io", "pods", PODS_METRIC, "*"),
        lambda run: forbidden_metric(run, "rps", "FailedGetPodsMetric"),
    ),
    Case(
        "external-metrics",
        CONTROLLER,
        (("external.metrics.k8s.io",), (EXTERNAL_METRIC,)),
        Access("list", "external.metrics.k8s.io", EXTERNAL_METRIC),
        lambda run: forbidden_metric(run, "ext", "FailedGetExternalMetric"),
    ),
    Case(
        "lease-get-update",
        LEASE_ROLE,
        (("coordination.k8s.io",), ("leases",)),
        Access(
            "get", "coordination.k8s.io", "leases", name=CONTROLLER, namespace=RELEASE_NAMESPACE
        ),
        lambda run: never_reconciles(run, '"leases"'),
    ),
    Case(
        "lease-create",
        LEASE_ROLE,
        (("coordination.k8s.io",), ("leases",)),
        Access("create", "coordination.k8s.io", "leases", namespace=RELEASE_NAMESPACE),
        lambda run: never_reconciles(run, '"leases"'),
    ),
]


def without_rule(case: Case) -> list[dict[str, Any]]:
    """The chart's RBAC objects for RULE_VALUES with the case's one rule removed."""
    objects = chart_rbac(RULE_VALUES)
    if case.rule is None:
        return objects
    groups, resources = case.rule
    role = next(
        o
        for o in objects
        if o["kind"] in ("ClusterRole", "Role") and o["metadata"]["name"] == case.role
    )
    verb = case.access.verb if case.access else ""
    matching = [
        rule
        for rule in role["rules"]
        if (tuple(rule["apiGroups"]), tuple(rule["resources"])) == (groups, resources)
        and verb in rule["verbs"]
    ]
    assert len(matching) == 1, f"{case.id}: {len(matching)} rules match {case.rule}"
    role["rules"].remove(matching[0])
    return objects


def controller_may(lab: Lab, access: Access) -> bool:
    """A SubjectAccessReview for the controller's ServiceAccount, posted as the admin."""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": CONTROLLER_USER,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{RELEASE_NAMESPACE}",
                "system:authenticated",
            ],
            "resourceAttributes": access.attributes(),
        },
    }
    request = urllib.request.Request(  # noqa: S310 - the lab's https URL
        f"{lab.server_url}/apis/authorization.k8s.io/v1/subjectaccessreviews",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(  # noqa: S310
        request, context=lab.control_plane.admin_tls, timeout=10
    ) as answer:
        return bool(json.loads(answer.read())["status"].get("allowed"))


@pytest.fixture(scope="module")
def workloads(
    lab: Lab, identities: Identities, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiReader]:
    lab.kubectl("create", "namespace", NAMESPACE)
    for name, (_, rps) in WORKLOADS.items():
        lab.add_workload(WorkloadProfile(NAMESPACE, name, {"app": name}), rps=rps)
    lab.apply([deployment_manifest(name, NAMESPACE, replicas=1) for name in WORKLOADS])
    adapter = start_adapter(
        lab,
        tmp_path_factory.mktemp("delivery-rules-adapter"),
        rules=adapter_rules(window_seconds=5),
        relist_interval="2s",
        kubeconfig=identities.adapter,
    )
    try:
        yield ApiReader(lab)
    finally:
        stop_adapter(lab, adapter)
        lab.apply(chart_rbac(SCENARIO_VALUES))
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def fresh_hpas(lab: Lab) -> None:
    """The three Deployments back at 1 replica under new HPAs; no events, no Lease."""
    lab.kubectl("delete", "hpa", "--all", "-n", NAMESPACE, "--wait=true")
    lab.kubectl("delete", "events", "--all", "-n", NAMESPACE)
    lab.kubectl("delete", "lease", CONTROLLER, "-n", RELEASE_NAMESPACE, "--ignore-not-found")
    lab.kubectl("scale", "deployment", *WORKLOADS, "-n", NAMESPACE, "--replicas=1")
    lab.apply(
        [
            hpa_manifest(name, NAMESPACE, min_replicas=1, max_replicas=5, metrics=[spec])
            for name, (spec, _) in WORKLOADS.items()
        ]
    )


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_without_the_rule_the_controller_fails_where_it_is_used(
    lab: Lab, identities: Identities, workloads: ApiReader, case: Case
) -> None:
    lab.apply(without_rule(case))
    accesses = [other.access for other in CASES if other.access is not None]

    def authorizer_sees_the_role() -> bool:
        return all(controller_may(lab, access) is (access != case.access) for access in accesses)

    lab.wait_for(
        authorizer_sees_the_role,
        what="SubjectAccessReviews to deny exactly the removed rule's request",
        timeout_seconds=30,
    )
    fresh_hpas(lab)
    controller = start_controller(
        lab,
        f"hpa-controller-without-{case.id}",
        kubeconfig=identities.controller,
        flags=controller_flags(RULE_VALUES),
    )
    try:
        case.check(Run(lab, workloads, controller))
    finally:
        lab.group.end(controller.name)


def test_inprocess_controller_scales_on_every_metric_type_without_metrics_api_rules(
    lab: Lab, identities: Identities, workloads: ApiReader, tmp_path: Path
) -> None:
    """``controller.metricsSource: inprocess``: the chart renders no rule for metrics.k8s.io,
    custom.metrics.k8s.io or external.metrics.k8s.io, and the controller, on its token with the
    rendered arguments, reads the adapter's rules and Prometheus itself: the baseline's outcome
    (ext at 3, all three HPAs ScalingActive=True, an event, no RBAC denial)."""
    values = copy.deepcopy(RULE_VALUES)
    values["controller"]["metricsSource"] = "inprocess"
    lab.apply(chart_rbac(values))
    metric_reads = [
        case.access for case in CASES if case.id.endswith("-metrics") and case.access is not None
    ]
    assert len(metric_reads) == 3
    lab.wait_for(
        lambda: not any(controller_may(lab, access) for access in metric_reads),
        what="SubjectAccessReviews to deny every metrics API read",
        timeout_seconds=30,
    )
    fresh_hpas(lab)
    rules = tmp_path / "config.yaml"
    rules.write_text(adapter_rules(window_seconds=5))
    flags = [
        *controller_flags(values),  # --metrics-source=inprocess --config=/etc/... (in-cluster)
        f"--config={rules}",
        f"--prometheus-url={lab.prometheus_url}",
        "--metrics-relist-interval=2s",
    ]
    assert "--metrics-source=inprocess" in flags
    controller = start_controller(
        lab, "hpa-controller-inprocess", kubeconfig=identities.controller, flags=flags
    )
    try:
        check_baseline(Run(lab, workloads, controller))
    finally:
        lab.group.end(controller.name)
