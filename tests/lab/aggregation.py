"""Manifests that route an API group through kube-apiserver's aggregation layer to a server in
the lab's network namespace.

Upstream counterpart: the `APIService`/`Service` pair of `staging/src/k8s.io/sample-apiserver/
artifacts/example` and kube-aggregator's endpoint routing (`pkg/apiserver/resolvers.go`, which
with `--enable-aggregator-routing=true` resolves the Service through its EndpointSlices and dials
the endpoint address directly). Deviation: the Service has no selector; we write its
EndpointSlice ourselves, pointing at the namespace end of the lab's veth pair.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

MANAGED_BY = "hpa-lab"


def service_dns_name(name: str, namespace: str) -> str:
    """The name kube-aggregator verifies the server's certificate against."""
    return f"{name}.{namespace}.svc"


def manifests(
    *,
    name: str,
    namespace: str,
    address: str,
    target_port: int,
    api_versions: list[tuple[str, str]],
    ca_path: Path,
) -> list[dict[str, Any]]:
    """Namespace, selector-less Service, its EndpointSlice and one APIService per group/version."""
    ca_bundle = base64.b64encode(ca_path.read_bytes()).decode()
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "type": "ClusterIP",
                "ports": [
                    {"name": "https", "port": 443, "targetPort": target_port, "protocol": "TCP"}
                ],
            },
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-lab",
                "namespace": namespace,
                "labels": {
                    "kubernetes.io/service-name": name,
                    "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": target_port, "protocol": "TCP"}],
        },
    ]
    for group, version in api_versions:
        objects.append(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": f"{version}.{group}"},
                "spec": {
                    "group": group,
                    "version": version,
                    "service": {"namespace": namespace, "name": name, "port": 443},
                    "caBundle": ca_bundle,
                    "groupPriorityMinimum": 1000,
                    "versionPriority": 15,
                },
            }
        )
    return objects
