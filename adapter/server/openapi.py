"""Minimal, valid OpenAPI documents for the groups served: ``/openapi/v2`` and ``/openapi/v3``.

Upstream counterparts: k8s.io/kube-openapi ``handler`` (``/openapi/v2``) and ``handler3``
(``/openapi/v3`` answering ``{"paths": {"apis/<group>/<version>": {"serverRelativeURL": ...}}}``
and one OpenAPI 3.0 document per group-version), which kube-apiserver's aggregator downloads from
every aggregated server (``aggregator/openapi``, ``openapiv3``) to merge into its own.

Deliberate deviations: the schemas are small hand-written ones (the list kinds and their items with
``x-kubernetes-group-version-kind``), not generated from Go types; ``kubectl explain`` on these
kinds shows fewer field descriptions than with upstream servers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from adapter.server.discovery import GroupInfo
from adapter.server.wire import CUSTOM_GROUP, EXTERNAL_GROUP, RESOURCE_GROUP

JsonObject = dict[str, Any]

_STRING = {"type": "string"}
_OBJECT = {"type": "object"}
_LIST_META = {"type": "object", "properties": {"resourceVersion": _STRING, "continue": _STRING}}


def _kinds(group: str, version: str) -> dict[str, JsonObject]:
    """Definition name -> schema (without refs prefix) for one group-version."""
    gvk = [{"group": group, "version": version, "kind": ""}]

    def listed(kind: str, item: JsonObject) -> JsonObject:
        return {
            "type": "object",
            "required": ["items", "metadata"],
            "properties": {
                "kind": _STRING,
                "apiVersion": _STRING,
                "metadata": _LIST_META,
                "items": {"type": "array", "items": item},
            },
            "x-kubernetes-group-version-kind": [{**gvk[0], "kind": kind}],
        }

    if group == CUSTOM_GROUP:
        window = "windowSeconds" if version == "v1beta2" else "window"
        item = {
            "type": "object",
            "properties": {
                "describedObject": _OBJECT,
                "timestamp": {"type": "string", "format": "date-time"},
                window: {"type": "integer", "format": "int64"},
                "value": _STRING,
                **(
                    {"metric": _OBJECT}
                    if version == "v1beta2"
                    else {"metricName": _STRING, "selector": _OBJECT}
                ),
            },
        }
        return {
            f"io.k8s.metrics.pkg.apis.custom_metrics.{version}.MetricValueList": listed(
                "MetricValueList", item
            )
        }
    if group == EXTERNAL_GROUP:
        item = {
            "type": "object",
            "properties": {
                "metricName": _STRING,
                "metricLabels": {"type": "object", "additionalProperties": _STRING},
                "timestamp": {"type": "string", "format": "date-time"},
                "window": {"type": "integer", "format": "int64"},
                "value": _STRING,
            },
        }
        return {
            "io.k8s.metrics.pkg.apis.external_metrics.v1beta1.ExternalMetricValueList": listed(
                "ExternalMetricValueList", item
            )
        }
    usage = {"type": "object", "additionalProperties": _STRING}
    pod = {
        "type": "object",
        "properties": {
            "metadata": _OBJECT,
            "timestamp": {"type": "string", "format": "date-time"},
            "window": _STRING,
            "containers": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": _STRING, "usage": usage}},
            },
        },
        "x-kubernetes-group-version-kind": [{**gvk[0], "kind": "PodMetrics"}],
    }
    node = {
        "type": "object",
        "properties": {
            "metadata": _OBJECT,
            "timestamp": {"type": "string", "format": "date-time"},
            "window": _STRING,
            "usage": usage,
        },
        "x-kubernetes-group-version-kind": [{**gvk[0], "kind": "NodeMetrics"}],
    }
    prefix = "io.k8s.metrics.pkg.apis.metrics.v1beta1."
    return {
        prefix + "PodMetrics": pod,
        prefix + "NodeMetrics": node,
        prefix + "PodMetricsList": listed("PodMetricsList", pod),
        prefix + "NodeMetricsList": listed("NodeMetricsList", node),
    }


def _paths(group: str, version: str) -> list[tuple[str, list[str], str]]:
    """(path template, path parameters, definition name) of one group-version."""
    base = f"/apis/{group}/{version}"
    if group == CUSTOM_GROUP:
        ref = f"io.k8s.metrics.pkg.apis.custom_metrics.{version}.MetricValueList"
        return [
            (
                base + "/namespaces/{namespace}/{resource}/{name}/{metric}",
                ["namespace", "resource", "name", "metric"],
                ref,
            ),
            (base + "/namespaces/{namespace}/metrics/{metric}", ["namespace", "metric"], ref),
            (base + "/{resource}/{name}/{metric}", ["resource", "name", "metric"], ref),
        ]
    if group == EXTERNAL_GROUP:
        ref = "io.k8s.metrics.pkg.apis.external_metrics.v1beta1.ExternalMetricValueList"
        return [(base + "/namespaces/{namespace}/{metric}", ["namespace", "metric"], ref)]
    prefix = "io.k8s.metrics.pkg.apis.metrics.v1beta1."
    return [
        (base + "/pods", [], prefix + "PodMetricsList"),
        (base + "/namespaces/{namespace}/pods", ["namespace"], prefix + "PodMetricsList"),
        (
            base + "/namespaces/{namespace}/pods/{name}",
            ["namespace", "name"],
            prefix + "PodMetrics",
        ),
        (base + "/nodes", [], prefix + "NodeMetricsList"),
        (base + "/nodes/{name}", ["name"], prefix + "NodeMetrics"),
    ]


def _operation_id(path: str) -> str:
    words = [w.strip("{}") for w in path.split("/") if w]
    return "get" + "".join(w[:1].upper() + w[1:].replace(".", "_") for w in words)


def _query_parameters() -> list[JsonObject]:
    return [
        {"name": "labelSelector", "in": "query", "type": "string", "uniqueItems": True},
        {"name": "metricLabelSelector", "in": "query", "type": "string", "uniqueItems": True},
    ]


def openapi_v2(groups: Sequence[GroupInfo], *, version: str) -> bytes:
    """A Swagger 2.0 document for every group-version served."""
    paths: JsonObject = {}
    definitions: JsonObject = {}
    for group in groups:
        for gv in group.versions:
            definitions.update(_kinds(group.name, gv))
            paths[f"/apis/{group.name}/{gv}/"] = {
                "get": {
                    "description": "get available resources",
                    "operationId": _operation_id(f"/apis/{group.name}/{gv}/") + "APIResources",
                    "produces": ["application/json"],
                    "schemes": ["https"],
                    "tags": [f"{group.name}_{gv}"],
                    "responses": {
                        "200": {"description": "OK"},
                        "401": {"description": "Unauthorized"},
                    },
                }
            }
            for path, names, ref in _paths(group.name, gv):
                parameters = [
                    {
                        "name": name,
                        "in": "path",
                        "required": True,
                        "type": "string",
                        "uniqueItems": True,
                    }
                    for name in names
                ]
                paths[path] = {
                    "get": {
                        "operationId": _operation_id(path),
                        "produces": ["application/json"],
                        "schemes": ["https"],
                        "tags": [f"{group.name}_{gv}"],
                        "parameters": parameters + _query_parameters(),
                        "responses": {
                            "200": {
                                "description": "OK",
                                "schema": {"$ref": f"#/definitions/{ref}"},
                            },
                            "401": {"description": "Unauthorized"},
                        },
                    }
                }
    doc = {
        "swagger": "2.0",
        "info": {"title": "hpa metrics adapter", "version": version},
        "paths": paths,
        "definitions": definitions,
    }
    return orjson.dumps(doc)


def openapi_v3_group_version(group: GroupInfo, gv: str, *, version: str) -> bytes:
    """The OpenAPI 3.0 document of one group-version (``/openapi/v3/apis/<group>/<version>``)."""
    schemas = _kinds(group.name, gv)
    paths: JsonObject = {}
    for path, names, ref in _paths(group.name, gv):
        parameters: list[JsonObject] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in names
        ]
        parameters += [
            {"name": name, "in": "query", "schema": {"type": "string"}}
            for name in ("labelSelector", "metricLabelSelector")
        ]
        paths[path] = {
            "get": {
                "operationId": _operation_id(path),
                "tags": [f"{group.name}_{gv}"],
                "parameters": parameters,
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {
                            "application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}
                        },
                    },
                    "401": {"description": "Unauthorized"},
                },
            }
        }
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "hpa metrics adapter", "version": version},
        "paths": paths,
        "components": {"schemas": schemas},
    }
    return orjson.dumps(doc)


def openapi_v3_root(groups: Sequence[GroupInfo], *, version: str) -> bytes:
    """``/openapi/v3``: where each group-version's document is, with a content hash."""
    paths: JsonObject = {}
    for group in groups:
        for gv in group.versions:
            body = openapi_v3_group_version(group, gv, version=version)
            digest = hashlib.sha512(body).hexdigest()[:128].upper()
            paths[f"apis/{group.name}/{gv}"] = {
                "serverRelativeURL": f"/openapi/v3/apis/{group.name}/{gv}?hash={digest}"
            }
    return orjson.dumps({"paths": paths})


__all__ = [
    "RESOURCE_GROUP",
    "openapi_v2",
    "openapi_v3_group_version",
    "openapi_v3_root",
]
