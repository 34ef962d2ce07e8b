"""The Pod Security Standards "restricted" profile, checked on a pod spec offline.

Upstream counterpart: k8s.io/pod-security-admission ``policy/check_*.go`` at level
``restricted``, version ``latest`` (hostProcess, host namespaces, privileged, capabilities,
hostPath volumes, host ports, AppArmor, SELinux, /proc mount, seccomp, sysctls; and for
restricted: volume types, privilege escalation, runAsNonRoot, runAsUser, seccomp and
``capabilities.drop: [ALL]``). The live admission plugin of the lab checks the same pods in
tests/e2e/test_delivery.py; this copy lets ``make test`` explain a failure without a cluster.

Deliberate deviation: our policy also requires ``readOnlyRootFilesystem: true`` on every
container (not part of the standard; the chart promises it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ALLOWED_VOLUME_TYPES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
ALLOWED_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
VOLUME_KEYS_NOT_TYPES = frozenset({"name"})


def _containers(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    found = []
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(field) or ():
            found.append((f"{field}[{container.get('name', '?')}]", container))
    return found


def restricted_violations(spec: Mapping[str, Any]) -> list[str]:
    """Every way ``spec`` (a PodSpec) breaks "restricted" or our read-only root filesystem rule."""
    problems: list[str] = []
    pod_sc: Mapping[str, Any] = spec.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            problems.append(f"{field}=true")
    if (pod_sc.get("windowsOptions") or {}).get("hostProcess"):
        problems.append("pod windowsOptions.hostProcess=true")
    for volume in spec.get("volumes") or ():
        kinds = set(volume) - VOLUME_KEYS_NOT_TYPES
        if not kinds <= ALLOWED_VOLUME_TYPES:
            problems.append(f"volume {volume.get('name')}: type {sorted(kinds)} not allowed")
    for sysctl in pod_sc.get("sysctls") or ():
        if sysctl.get("name") not in SAFE_SYSCTLS:
            problems.append(f"sysctl {sysctl.get('name')} not allowed")
    problems += _selinux_problems("pod", pod_sc)
    if (pod_sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
        problems.append("pod appArmorProfile Unconfined")
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type")
    if pod_seccomp not in (None, "RuntimeDefault", "Localhost"):
        problems.append(f"pod seccompProfile {pod_seccomp}")
    pod_non_root = pod_sc.get("runAsNonRoot")
    if pod_sc.get("runAsUser") == 0:
        problems.append("pod runAsUser=0")
    for where, container in _containers(spec):
        sc: Mapping[str, Any] = container.get("securityContext") or {}
        if sc.get("privileged"):
            problems.append(f"{where}: privileged=true")
        if (sc.get("windowsOptions") or {}).get("hostProcess"):
            problems.append(f"{where}: windowsOptions.hostProcess=true")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation must be false")
        capabilities = sc.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or ()):
            problems.append(f"{where}: capabilities.drop must include ALL")
        added = set(capabilities.get("add") or ()) - {"NET_BIND_SERVICE"}
        if added:
            problems.append(f"{where}: capabilities.add {sorted(added)} not allowed")
        non_root = sc.get("runAsNonRoot", pod_non_root)
        if non_root is not True or sc.get("runAsNonRoot") is False:
            problems.append(f"{where}: runAsNonRoot must be true")
        if sc.get("runAsUser") == 0:
            problems.append(f"{where}: runAsUser=0")
        seccomp = (sc.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{where}: seccompProfile must be RuntimeDefault or Localhost")
        if sc.get("procMount", "Default") != "Default":
            problems.append(f"{where}: procMount {sc.get('procMount')}")
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            problems.append(f"{where}: appArmorProfile Unconfined")
        problems += _selinux_problems(where, sc)
        for port in container.get("ports") or ():
            if port.get("hostPort"):
                problems.append(f"{where}: hostPort {port['hostPort']}")
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{where}: readOnlyRootFilesystem must be true")
    return problems


def _selinux_problems(where: str, security_context: Mapping[str, Any]) -> list[str]:
    options = security_context.get("seLinuxOptions") or {}
    problems = []
    if options.get("type", "") not in ALLOWED_SELINUX_TYPES:
        problems.append(f"{where}: seLinuxOptions.type {options['type']}")
    for field in ("user", "role"):
        if options.get(field):
            problems.append(f"{where}: seLinuxOptions.{field} must be empty")
    return problems


def pod_templates(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The PodSpecs an object runs: a Pod's spec, a workload's template, a CronJob's job's."""
    kind = body.get("kind")
    spec = body.get("spec") or {}
    if kind == "Pod":
        return [spec]
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        return [spec["template"]["spec"]]
    if kind == "CronJob":
        return [spec["jobTemplate"]["spec"]["template"]["spec"]]
    return []
