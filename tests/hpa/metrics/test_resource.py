"""The resource metrics client: per-pod shaping exactly as upstream ``metrics/client.go``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st
from pydantic import ValidationError

from hpa.api.metrics import PodMetricsList
from hpa.core.decision import MetricFetchError, PodMetricsObservation
from hpa.core.duration import DurationError
from hpa.kube.client import ApiStatus, ForbiddenError
from hpa.metrics.resource import ResourceMetricsClient, shape_pod_metrics, window_seconds
from tests.fakes.metrics import FakeJsonGetter

PATH = "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods"
T0 = "2026-01-01T00:00:00Z"


def pod_metrics(name: str, containers: dict[str, dict[str, str]], *, window: str = "30s") -> Any:
    return {
        "metadata": {"name": name, "namespace": "shop"},
        "timestamp": T0,
        "window": window,
        "containers": [{"name": c, "usage": usage} for c, usage in containers.items()],
    }


def listing(*items: Any) -> dict[str, Any]:
    return {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "items": list(items)}


async def test_a_pod_value_is_the_sum_over_its_containers(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing(
        pod_metrics("a", {"app": {"cpu": "250m"}, "sidecar": {"cpu": "0.1"}}, window="10.5s"),
        pod_metrics("b", {"app": {"cpu": "1"}}),
    )
    result = await ResourceMetricsClient(getter).get_resource_metric(
        "cpu", "shop", selector="app=shop"
    )
    assert isinstance(result, PodMetricsObservation)
    assert {name: m.value_milli for name, m in result.metrics.items()} == {"a": 350, "b": 1000}
    assert result.metrics["a"].window_seconds == 10.5
    assert result.timestamp == datetime(2026, 1, 1, tzinfo=UTC)
    assert getter.requests[0].params == {"labelSelector": "app=shop"}


async def test_a_pod_lacking_the_resource_in_any_container_is_missing(
    getter: FakeJsonGetter,
) -> None:
    getter.routes[PATH] = listing(
        pod_metrics("a", {"app": {"cpu": "250m"}, "sidecar": {"memory": "1Mi"}}),
        pod_metrics("empty", {}),
        pod_metrics("b", {"app": {"cpu": "100m", "memory": "1Mi"}}),
    )
    result = await ResourceMetricsClient(getter).get_resource_metric("cpu", "shop", selector="")
    assert isinstance(result, PodMetricsObservation)
    assert set(result.metrics) == {"b"}
    assert getter.requests[0].params == {}, "an empty selector is not sent"


async def test_a_container_metric_is_that_container_s_value(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing(
        pod_metrics("a", {"app": {"cpu": "250m"}, "sidecar": {"cpu": "900m"}}),
        pod_metrics("b", {"app": {"memory": "1Mi"}}),
    )
    result = await ResourceMetricsClient(getter).get_resource_metric(
        "cpu", "shop", selector="", container="app"
    )
    assert isinstance(result, PodMetricsObservation)
    assert {name: m.value_milli for name, m in result.metrics.items()} == {"a": 250}


async def test_a_pod_without_the_named_container_fails_the_call(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing(pod_metrics("a", {"other": {"cpu": "1"}}))
    result = await ResourceMetricsClient(getter).get_resource_metric(
        "cpu", "shop", selector="", container="app"
    )
    assert result == MetricFetchError(
        "failed to get container metrics: container app not present in metrics for pod shop/a"
    )


async def test_an_empty_list_is_no_metrics_returned(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing()
    result = await ResourceMetricsClient(getter).get_resource_metric("cpu", "shop", selector="")
    assert result == MetricFetchError("no metrics returned from resource metrics API")


async def test_a_failed_request_is_wrapped_with_the_status_message(
    getter: FakeJsonGetter,
) -> None:
    getter.routes[PATH] = ForbiddenError(
        ApiStatus(403, "Forbidden", 'pods.metrics.k8s.io is forbidden: User "x" cannot list')
    )
    result = await ResourceMetricsClient(getter).get_resource_metric("cpu", "shop", selector="")
    assert result == MetricFetchError(
        "unable to fetch metrics from resource metrics API: "
        'pods.metrics.k8s.io is forbidden: User "x" cannot list'
    )


async def test_an_unparsable_answer_is_an_error_not_a_crash(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing(pod_metrics("a", {"app": {"cpu": "lots"}}))
    result = await ResourceMetricsClient(getter).get_resource_metric("cpu", "shop", selector="")
    assert isinstance(result, MetricFetchError)
    assert result.message.startswith("unable to fetch metrics from resource metrics API: ")


# ------------------------------------------------- the raw fast path against the validating path


def _maybe(key: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), values.map(lambda v: {key: v}))


def item_strategy(
    *,
    names: st.SearchStrategy[Any],
    quantities: st.SearchStrategy[Any],
    usages: st.SearchStrategy[Any],
    times: st.SearchStrategy[Any],
    windows: st.SearchStrategy[Any],
    container_lists: st.SearchStrategy[Any],
    metadata: st.SearchStrategy[Any],
) -> st.SearchStrategy[Any]:
    usage = st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities, max_size=2)
    containers = st.lists(
        st.builds(
            lambda name, u: {**name, **u},
            _maybe("name", names),
            _maybe("usage", st.one_of(usage, usages)),
        ),
        max_size=3,
    )
    return st.builds(
        lambda meta, ts, window, cs: {**meta, **ts, **window, **cs},
        _maybe("metadata", metadata),
        _maybe("timestamp", times),
        _maybe("window", windows),
        _maybe("containers", st.one_of(containers, container_lists)),
    )


pod_names = st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "b", "c"]), "namespace": st.just("shop")}
)
regular_items = item_strategy(
    names=st.sampled_from(["app", "sidecar"]),
    quantities=st.sampled_from(["250m", "123456789n", "1", "0.5", "1e3", "40Mi", "0"]),
    usages=st.nothing(),
    times=st.sampled_from([T0, "2026-01-01T00:00:01.750Z", "2026-01-01T01:00:00+01:00", None]),
    windows=st.sampled_from(["30s", "", "1m0.5s"]),
    container_lists=st.nothing(),
    metadata=pod_names,
)
irregular_items = st.one_of(
    item_strategy(
        names=st.sampled_from(["app", "sidecar", 7]),
        quantities=st.sampled_from(["250m", "1", "lots", "", 5, 0.25, None, "-1"]),
        usages=st.sampled_from([None, []]),
        times=st.sampled_from([T0, "yesterday", None, 17]),
        windows=st.sampled_from(["30s", "soon", None, 30]),
        container_lists=st.just(None),
        metadata=st.one_of(pod_names, st.sampled_from([{}, {"name": 3}, None])),
    ),
    st.just("not an object"),
)
documents = st.one_of(
    st.builds(
        lambda i: {"kind": "PodMetricsList", "items": i}, st.lists(regular_items, max_size=4)
    ),
    st.builds(
        lambda i: {"kind": "PodMetricsList", "items": i},
        st.lists(st.one_of(regular_items, irregular_items), max_size=4),
    ),
    st.sampled_from([{"kind": "PodMetricsList"}, {"items": None}, {"items": {"a": 1}}]),
)


def validating_reference(
    document: Any, resource: str, container: str
) -> PodMetricsObservation | MetricFetchError:
    """The client before the raw fast path: decode through the models, then shape."""
    try:
        listing = PodMetricsList.from_dict(document)
    except ValidationError as error:
        return MetricFetchError(
            "unable to fetch metrics from resource metrics API: "
            f"the response does not parse: {error.error_count()} errors"
        )
    if not listing.items:
        return MetricFetchError("no metrics returned from resource metrics API")
    try:
        shaped = shape_pod_metrics(listing.items, resource, container=container)
    except Exception as error:  # noqa: BLE001 - a bad window or quantity, or a missing container
        if type(error) is ValueError:
            return MetricFetchError(f"failed to get container metrics: {error}")
        return MetricFetchError(f"unable to fetch metrics from resource metrics API: {error}")
    return PodMetricsObservation(metrics=shaped, timestamp=listing.items[0].timestamp)


@hypothesis.settings(max_examples=1500, deadline=None)
@hypothesis.given(
    document=documents,
    resource=st.sampled_from(["cpu", "memory"]),
    container=st.sampled_from(["", "app"]),
)
async def test_raw_shaping_answers_what_the_validating_path_answers(
    document: dict[str, Any], resource: str, container: str
) -> None:
    getter = FakeJsonGetter(lambda path: AssertionError(path))
    getter.routes[PATH] = document
    result = await ResourceMetricsClient(getter).get_resource_metric(
        resource, "shop", selector="", container=container
    )
    assert result == validating_reference(document, resource, container)


def test_windows_parse_and_errors_stay_errors() -> None:
    assert window_seconds("") == 0.0
    assert window_seconds("30s") == 30.0
    assert window_seconds("1m0.5s") == 60.5
    assert window_seconds("30s") == 30.0
    with pytest.raises(DurationError, match="invalid duration"):
        window_seconds("soon")
