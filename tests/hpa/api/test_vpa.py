"""autoscaling.k8s.io VerticalPodAutoscaler and checkpoint: upstream examples and the CRD schema.

Every upstream example round-trips through :class:`VerticalPodAutoscaler` (``redis.yaml`` is
``v1beta2``; ``hamster-labelselectors.yaml`` uses ``spec.podLabelSelector``, which the CRD lacks and
which survives as an unknown field). Objects our models produce validate against the CRD's
``openAPIV3Schema``, and the models' field sets equal the schema's properties.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpa.api.autoscaling_v2 import CrossVersionObjectReference
from hpa.api.base import KubeModel, unknown_fields
from hpa.api.vpa import (
    ContainerResourcePolicy,
    EvictionRequirement,
    GenericStartupBoost,
    PodResourcePolicy,
    PodUpdatePolicy,
    RecommendedContainerResources,
    RecommendedPodResources,
    StartupBoost,
    VerticalPodAutoscaler,
    VerticalPodAutoscalerCheckpoint,
    VerticalPodAutoscalerCheckpointList,
    VerticalPodAutoscalerCondition,
    VerticalPodAutoscalerList,
    VerticalPodAutoscalerRecommenderSelector,
    VerticalPodAutoscalerSpec,
    VerticalPodAutoscalerStatus,
)
from tests.hpa.api.data import VPA_DATA, load_yaml_documents
from tests.hpa.api.strategies import assert_round_trip, quantity_strings, times, wire_objects


def _vpa_document(name: str) -> dict[str, Any]:
    (doc,) = [
        d for d in load_yaml_documents(VPA_DATA / name) if d["kind"] == "VerticalPodAutoscaler"
    ]
    return dict(doc)


@cache
def _crd_schema(kind: str, version: str = "v1") -> dict[str, Any]:
    for crd in load_yaml_documents(VPA_DATA / "vpa-v1-crd-gen.yaml"):
        if crd["spec"]["names"]["kind"] == kind:
            for served in crd["spec"]["versions"]:
                if served["name"] == version:
                    schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
                    return schema
    raise LookupError(kind)


def _crd_errors(kind: str, obj: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(_crd_schema(kind))
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(obj)]


def test_hamster_example_round_trips_with_the_int_cpu_written_as_a_string() -> None:
    doc = _vpa_document("hamster.yaml")
    assert doc["spec"]["resourcePolicy"]["containerPolicies"][0]["maxAllowed"]["cpu"] == 1
    expected = copy.deepcopy(doc)
    expected["spec"]["resourcePolicy"]["containerPolicies"][0]["maxAllowed"]["cpu"] = "1"
    vpa = VerticalPodAutoscaler.from_dict(doc)
    assert vpa.to_dict() == expected  # the only change is what the API server does too
    assert_round_trip(VerticalPodAutoscaler, expected)
    policy = vpa.spec.resource_policy
    assert policy is not None
    (container,) = policy.container_policies
    assert container.container_name == "*"
    assert container.min_allowed == {"cpu": "100m", "memory": "50Mi"}
    assert container.controlled_resources == ["cpu", "memory"]
    assert vpa.spec.target_ref == CrossVersionObjectReference(
        api_version="apps/v1", kind="Deployment", name="hamster"
    )
    assert _crd_errors("VerticalPodAutoscaler", vpa.to_dict()) == []


def test_redis_v1beta2_example_round_trips_through_the_v1_model() -> None:
    doc = _vpa_document("redis.yaml")
    vpa = assert_round_trip(VerticalPodAutoscaler, doc)
    assert isinstance(vpa, VerticalPodAutoscaler)
    assert vpa.api_version == "autoscaling.k8s.io/v1beta2"
    assert vpa.spec.target_ref is not None
    assert vpa.spec.target_ref.name == "redis-master"
    assert unknown_fields(vpa) == {}


def test_label_selector_example_keeps_the_field_the_crd_lacks() -> None:
    doc = _vpa_document("hamster-labelselectors.yaml")
    expected = copy.deepcopy(doc)
    expected["spec"]["resourcePolicy"]["containerPolicies"][0]["maxAllowed"]["cpu"] = "1"
    vpa = VerticalPodAutoscaler.from_dict(doc)
    assert vpa.to_dict() == expected
    assert unknown_fields(vpa) == {"spec.podLabelSelector": {"matchLabels": {"app": "hamster"}}}
    assert vpa.spec.target_ref is None


def _wire_names(model: type[KubeModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def _nested_model(model: type[KubeModel], wire: str) -> type[KubeModel] | None:
    import typing

    for name, info in model.model_fields.items():
        if (info.alias or name) != wire:
            continue
        candidates = [info.annotation]
        while candidates:
            ann = candidates.pop()
            if isinstance(ann, type) and issubclass(ann, KubeModel):
                return ann
            candidates.extend(typing.get_args(ann))
    return None


def _mismatches(model: type[KubeModel], schema: dict[str, Any], path: str) -> list[str]:
    if schema.get("type") == "array":
        return _mismatches(model, schema["items"], path + "[]")
    properties = schema.get("properties")
    if not properties:
        return []
    found = []
    ours, theirs = _wire_names(model), set(properties)
    if ours != theirs:
        found.append(
            f"{path}: model-only {sorted(ours - theirs)}, crd-only {sorted(theirs - ours)}"
        )
    for wire in sorted(ours & theirs):
        nested = _nested_model(model, wire)
        if nested is not None and wire != "metadata":
            found += _mismatches(nested, properties[wire], f"{path}.{wire}")
    return found


@pytest.mark.parametrize("model", [VerticalPodAutoscaler, VerticalPodAutoscalerCheckpoint])
def test_model_fields_equal_the_crd_properties(model: type[KubeModel]) -> None:
    assert _mismatches(model, _crd_schema(model.__name__), model.__name__) == []


# ------------------------------------------------------------------ CRD-valid objects we produce

_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
_resources = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), quantity_strings)


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


def _container_policy(**values: Any) -> ContainerResourcePolicy:
    return ContainerResourcePolicy(**{k: v for k, v in values.items() if v is not None})


_boosts = st.builds(
    lambda kind, factor, quantity, duration: StartupBoost(
        cpu=GenericStartupBoost(type=kind, duration_seconds=duration, factor=factor)
        if kind == "Factor"
        else GenericStartupBoost(type=kind, duration_seconds=duration, quantity=quantity)
    ),
    st.sampled_from(["Factor", "Quantity"]),
    st.integers(1, 10),
    quantity_strings,
    st.integers(0, 3600),
)

_container_policies = st.builds(
    _container_policy,
    container_name=st.just("*") | _names,
    mode=_optional(st.sampled_from(["Auto", "Off"])),
    min_allowed=_optional(_resources),
    max_allowed=_optional(_resources),
    controlled_resources=_optional(st.lists(st.sampled_from(["cpu", "memory"]), unique=True)),
    controlled_values=_optional(st.sampled_from(["RequestsAndLimits", "RequestsOnly"])),
    oom_bump_up_ratio=_optional(quantity_strings),
    oom_min_bump_up=_optional(quantity_strings),
    memory_aggregation_interval_count=_optional(st.integers(1, 2**40)),
    memory_aggregation_interval_seconds=_optional(st.integers(1, 2**31 - 1)),
    target_cpu_percentile=_optional(quantity_strings),
    target_memory_percentile=_optional(quantity_strings),
    startup_boost=_optional(_boosts),
)


def _update_policy(**values: Any) -> PodUpdatePolicy:
    return PodUpdatePolicy(**{k: v for k, v in values.items() if v is not None})


_update_policies = st.builds(
    _update_policy,
    update_mode=_optional(
        st.sampled_from(["Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto"])
    ),
    min_replicas=_optional(st.integers(-5, 100)),
    eviction_requirements=_optional(
        st.lists(
            st.builds(
                EvictionRequirement,
                resources=st.lists(st.sampled_from(["cpu", "memory"])),
                change_requirement=st.sampled_from(
                    ["TargetHigherThanRequests", "TargetLowerThanRequests"]
                ),
            ),
            max_size=2,
        )
    ),
    evict_after_oom_seconds=_optional(st.integers(1, 2**31 - 1)),
)

_recommendations = st.builds(
    RecommendedContainerResources,
    container_name=_names,
    target=_resources,
    lower_bound=_resources,
    upper_bound=_resources,
    uncapped_target=_resources,
)


def _spec(**values: Any) -> VerticalPodAutoscalerSpec:
    return VerticalPodAutoscalerSpec(**{k: v for k, v in values.items() if v is not None})


crd_valid_vpas = st.builds(
    lambda name, spec, status: VerticalPodAutoscaler(
        api_version="autoscaling.k8s.io/v1",
        kind="VerticalPodAutoscaler",
        metadata={"name": name, "namespace": "default"},  # type: ignore[arg-type]
        spec=spec,
        **({"status": status} if status is not None else {}),
    ),
    _names,
    st.builds(
        _spec,
        target_ref=st.builds(
            CrossVersionObjectReference,
            kind=st.sampled_from(["Deployment", "StatefulSet"]),
            name=_names,
            api_version=st.just("apps/v1"),
        ),
        update_policy=_optional(_update_policies),
        resource_policy=_optional(
            st.builds(
                PodResourcePolicy, container_policies=st.lists(_container_policies, max_size=2)
            )
        ),
        recommenders=_optional(
            st.lists(st.builds(VerticalPodAutoscalerRecommenderSelector, name=_names), max_size=2)
        ),
        startup_boost=_optional(_boosts),
    ),
    _optional(
        st.builds(
            VerticalPodAutoscalerStatus,
            observed_generation=st.integers(0, 2**40),
            recommendation=st.builds(
                RecommendedPodResources,
                container_recommendations=st.lists(_recommendations, max_size=2),
            ),
            conditions=st.lists(
                st.builds(
                    VerticalPodAutoscalerCondition,
                    type=st.sampled_from(["RecommendationProvided", "LowConfidence"]),
                    status=st.sampled_from(["True", "False"]),
                    last_transition_time=times.map(lambda t: t.replace(microsecond=0)),
                    reason=_names,
                    message=st.text(max_size=10),
                ),
                max_size=2,
            ),
        )
    ),
)


@settings(max_examples=300, deadline=None)
@given(crd_valid_vpas)
def test_vpas_we_produce_validate_against_the_crd_schema(vpa: VerticalPodAutoscaler) -> None:
    written = vpa.to_dict()
    assert _crd_errors("VerticalPodAutoscaler", written) == []
    assert VerticalPodAutoscaler.from_dict(written) == vpa


def test_crd_schema_check_is_not_vacuous() -> None:
    bad = {
        "spec": {"targetRef": {"kind": "Deployment"}, "updatePolicy": {"updateMode": "Sometimes"}}
    }
    errors = _crd_errors("VerticalPodAutoscaler", bad)
    assert any("'name' is a required property" in e for e in errors)
    assert any(e.startswith("spec.updatePolicy.updateMode") for e in errors)


@settings(max_examples=300, deadline=None)
@given(wire_objects(VerticalPodAutoscaler))
def test_any_vpa_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(VerticalPodAutoscaler, data)


@settings(max_examples=300, deadline=None)
@given(wire_objects(VerticalPodAutoscalerCheckpoint))
def test_any_checkpoint_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(VerticalPodAutoscalerCheckpoint, data)


@settings(max_examples=50, deadline=None)
@given(wire_objects(VerticalPodAutoscalerList), wire_objects(VerticalPodAutoscalerCheckpointList))
def test_any_vpa_lists_round_trip(vpas: dict[str, Any], checkpoints: dict[str, Any]) -> None:
    assert_round_trip(VerticalPodAutoscalerList, vpas)
    assert_round_trip(VerticalPodAutoscalerCheckpointList, checkpoints)


def test_checkpoint_fields_the_recommender_reads() -> None:
    checkpoint = VerticalPodAutoscalerCheckpoint.from_dict(
        {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscalerCheckpoint",
            "metadata": {"name": "hamster-vpa-hamster", "namespace": "default"},
            "spec": {"vpaObjectName": "hamster-vpa", "containerName": "hamster"},
            "status": {
                "version": "v3",
                "lastUpdateTime": "2026-01-01T00:00:00Z",
                "totalSamplesCount": 42,
                "cpuHistogram": {
                    "referenceTimestamp": "2026-01-01T00:00:00Z",
                    "bucketWeights": {"0": 10000, "7": 312},
                    "totalWeight": 3.5,
                },
                "memoryHistogram": {"referenceTimestamp": None},
            },
        }
    )
    assert checkpoint.spec.vpa_object_name == "hamster-vpa"
    assert checkpoint.status.cpu_histogram.bucket_weights == {"0": 10000, "7": 312}
    assert checkpoint.status.total_samples_count == 42
    assert _crd_errors("VerticalPodAutoscalerCheckpoint", checkpoint.to_dict()) == [
        "status.memoryHistogram.referenceTimestamp: None is not of type 'string'"
    ]  # the CRD says nullable: true, an OpenAPI keyword plain JSON Schema does not know
