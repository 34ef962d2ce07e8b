"""PrometheusClient on the wire, against the recording fake Prometheus (tests/fakes/prometheus.py).

Upstream counterpart: prometheus-adapter ``pkg/client/api.go`` behaviour (paths, ``match[]``,
``timeout``, headers, error envelope handling); coalescing, bounded concurrency and cancellation
are this client's own guarantees.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus import (
    BasicAuth,
    PrometheusAPIError,
    PrometheusClient,
    PrometheusConnection,
    PrometheusConnectionError,
    PrometheusHTTPError,
    PrometheusResponseError,
    PrometheusTimeoutError,
    TLSConfig,
)
from adapter.prometheus.client import LARGE_ANSWER_BYTES, SLICED_ANSWER_BYTES
from adapter.prometheus.results import decode_part
from adapter.rules import Series
from tests.fakes.prometheus import FakePrometheus, FakeSample
from tests.lab.pki import create_ca, issue_certificate


@pytest.fixture
async def prometheus() -> AsyncIterator[FakePrometheus]:
    async with FakePrometheus() as fake:
        yield fake


def connect(fake: FakePrometheus, **options: object) -> PrometheusClient:
    registry = options.pop("registry", None)
    assert registry is None or isinstance(registry, CollectorRegistry)
    return PrometheusClient(PrometheusConnection(fake.url, **options), registry=registry)  # type: ignore[arg-type]


def sample_value(registry: CollectorRegistry, name: str, *, labels: dict[str, str]) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


# ---------------------------------------------------------------- requests and decoding


async def test_instant_query_returns_the_vector_with_exact_values(
    prometheus: FakePrometheus,
) -> None:
    prometheus.vectors["up"] = [
        FakeSample({"pod": "a"}, "0.1", timestamp_seconds=1700000000.5),
        FakeSample({"pod": "b"}, "NaN", timestamp_seconds=1700000000.5),
    ]
    async with connect(prometheus) as client:
        result = await client.query("up")
    assert result.result_type == "vector"
    assert [(s.labels["pod"], s.value_text, s.timestamp_seconds) for s in result.samples] == [
        ("a", "0.1", 1700000000.5),
        ("b", "NaN", 1700000000.5),
    ]
    request = prometheus.requests[0]
    assert request.method == "GET"
    assert request.path == "/api/v1/query"
    assert request.param("time") is None  # Prometheus evaluates at its own "now"


async def test_scalar_result_is_one_unlabelled_sample(prometheus: FakePrometheus) -> None:
    prometheus.scalars["scalar(vector(3))"] = "3"
    async with connect(prometheus) as client:
        result = await client.query("scalar(vector(3))", time_seconds=1700000000.25)
    assert result.result_type == "scalar"
    assert result.samples[0].labels == {}
    assert result.samples[0].value == 3.0
    assert prometheus.requests[0].param("time") == "1700000000.25"


async def test_deadline_is_sent_as_the_timeout_parameter(prometheus: FakePrometheus) -> None:
    async with connect(prometheus, timeout_seconds=7.0) as client:
        await client.query("up")
        await client.query("up", timeout_seconds=0.5)
    first, second = (request.param("timeout") for request in prometheus.requests)
    assert first is not None
    assert second is not None
    assert first.endswith("ms")
    assert 6000 < int(first[:-2]) <= 7000
    assert second.endswith("ms")
    assert 0 < int(second[:-2]) <= 500


async def test_range_query_and_series(prometheus: FakePrometheus) -> None:
    prometheus.matrices["rate(x[1m])"] = [({"pod": "a"}, [(100.0, "1"), (110.0, "2.5")])]
    prometheus.series = [{"__name__": "x_total", "pod": "a", "namespace": "n"}]
    async with connect(prometheus) as client:
        matrix = await client.query_range(
            "rate(x[1m])", start_seconds=100, end_seconds=110, step_seconds=10
        )
        series = await client.series(["x_total", '{__name__=~"y.*"}'], start_seconds=50)
    assert matrix[0].labels == {"pod": "a"}
    assert matrix[0].values() == [(100.0, 1.0), (110.0, 2.5)]
    assert series == [Series("x_total", {"pod": "a", "namespace": "n"})]
    range_request, series_request = prometheus.requests
    assert (range_request.param("start"), range_request.param("step")) == ("100", "10")
    assert series_request.params_named("match[]") == ["x_total", '{__name__=~"y.*"}']
    assert series_request.param("start") == "50"


async def test_post_sends_the_parameters_form_encoded(prometheus: FakePrometheus) -> None:
    async with connect(prometheus, method="POST") as client:
        await client.query('sum(x{pod=~"a|b"})')
    request = prometheus.requests[0]
    assert request.method == "POST"
    assert request.param("query") == 'sum(x{pod=~"a|b"})'


async def test_base_url_path_prefix_is_kept(prometheus: FakePrometheus) -> None:
    prometheus.vectors["up"] = [FakeSample({}, "1")]
    client = PrometheusClient(PrometheusConnection(prometheus.url + "/prefix/"))
    async with client:
        result = await client.query("up")
    assert result.samples[0].value == 1.0
    assert prometheus.requests[0].path == "/prefix/api/v1/query"


# ---------------------------------------------------------------- credentials and TLS


async def test_bearer_token_file_is_reread_when_it_changes(
    prometheus: FakePrometheus, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n")
    async with connect(
        prometheus, bearer_token_file=token, headers={"X-Scope-OrgID": "tenant-a"}
    ) as client:
        await client.query("up")
        token.write_text("second-token-rotated\n")
        await client.query("up")
    first, second = prometheus.requests
    assert first.headers["Authorization"] == "Bearer first-token"
    assert second.headers["Authorization"] == "Bearer second-token-rotated"
    assert first.headers["X-Scope-OrgID"] == second.headers["X-Scope-OrgID"] == "tenant-a"


async def test_answers_are_asked_for_uncompressed_unless_a_header_says_otherwise(
    prometheus: FakePrometheus,
) -> None:
    async with connect(prometheus) as client:
        await client.query("up")
    async with connect(prometheus, headers={"accept-encoding": "gzip"}) as client:
        await client.query("up")
    default, overridden = prometheus.requests
    assert default.headers["Accept-Encoding"] == "identity"
    assert overridden.headers["Accept-Encoding"] == "gzip"


async def test_basic_auth_password_file(prometheus: FakePrometheus, tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("s3cret")
    async with connect(
        prometheus, basic_auth=BasicAuth("adapter", password_file=password)
    ) as client:
        await client.query("up")
    # base64("adapter:s3cret")
    assert prometheus.requests[0].headers["Authorization"] == "Basic YWRhcHRlcjpzM2NyZXQ="


def test_bearer_token_and_basic_auth_are_exclusive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="either"):
        PrometheusConnection(
            "http://x", bearer_token_file=tmp_path / "t", basic_auth=BasicAuth("u", "p")
        )


async def test_ca_and_client_certificate(tmp_path: Path) -> None:
    ca = create_ca(tmp_path, "ca", common_name="test-ca")
    server_pair = issue_certificate(
        ca, tmp_path / "server", common_name="prometheus", ip_addresses=("127.0.0.1",), server=True
    )
    client_pair = issue_certificate(ca, tmp_path / "client", common_name="adapter", client=True)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=ca.pair.cert_path)
    server_context.load_cert_chain(server_pair.cert_path, server_pair.key_path)
    server_context.verify_mode = ssl.CERT_REQUIRED
    async with FakePrometheus(ssl_context=server_context) as fake:
        tls = TLSConfig(
            ca_file=ca.pair.cert_path,
            cert_file=client_pair.cert_path,
            key_file=client_pair.key_path,
        )
        async with connect(fake, tls=tls) as client:
            await client.query("up")
        assert fake.requests[0].client_common_name == "adapter"
        # Without the CA the server certificate is not trusted: a typed connection error.
        async with connect(fake, tls=TLSConfig(), timeout_seconds=5.0) as untrusting:
            with pytest.raises(PrometheusConnectionError):
                await untrusting.query("up")


# ---------------------------------------------------------------- coalescing and concurrency


async def test_concurrent_identical_queries_share_one_request(prometheus: FakePrometheus) -> None:
    prometheus.vectors["sum(x)"] = [FakeSample({}, "42")]
    gate = prometheus.hold()
    registry = CollectorRegistry()
    async with connect(prometheus, registry=registry) as client:
        tasks = [asyncio.create_task(client.query("sum(x)")) for _ in range(10)]
        await prometheus.wait_for_requests(1)
        gate.set()
        results = await asyncio.gather(*tasks)
    assert len(prometheus.requests) == 1
    assert {result.samples[0].value_text for result in results} == {"42"}
    assert all(result is results[0] for result in results)  # the answer is decoded once
    assert (
        sample_value(
            registry,
            "prometheus_adapter_prometheus_client_coalesced_total",
            labels={"path": "/api/v1/query"},
        )
        == 9
    )


async def test_sequential_identical_queries_are_not_cached(prometheus: FakePrometheus) -> None:
    async with connect(prometheus) as client:
        await client.query("sum(x)")
        await client.query("sum(x)")
    assert len(prometheus.requests) == 2


async def test_concurrency_is_bounded(prometheus: FakePrometheus) -> None:
    gate = prometheus.hold()
    async with connect(prometheus, max_concurrent_requests=2) as client:
        tasks = [asyncio.create_task(client.query(f"q{index}")) for index in range(5)]
        await prometheus.wait_for_requests(2)
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(prometheus.requests) == 2
        gate.set()
        await asyncio.gather(*tasks)
    assert len(prometheus.requests) == 5
    assert prometheus.max_in_flight == 2


# ---------------------------------------------------------------- cancellation and deadlines


async def test_cancelling_the_only_caller_cancels_the_http_request(
    prometheus: FakePrometheus,
) -> None:
    prometheus.hold()
    async with connect(prometheus) as client:
        task = asyncio.create_task(client.query("slow"))
        await prometheus.wait_for_requests(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await prometheus.wait_for_cancelled(1)
    assert prometheus.answered == 0


async def test_cancelling_one_of_two_waiters_keeps_the_shared_request(
    prometheus: FakePrometheus,
) -> None:
    prometheus.vectors["shared"] = [FakeSample({}, "5")]
    gate = prometheus.hold()
    async with connect(prometheus) as client:
        impatient = asyncio.create_task(client.query("shared"))
        patient = asyncio.create_task(client.query("shared"))
        await prometheus.wait_for_requests(1)
        impatient.cancel()
        with pytest.raises(asyncio.CancelledError):
            await impatient
        gate.set()
        result = await patient
    assert result.samples[0].value_text == "5"
    assert prometheus.cancelled == 0
    assert len(prometheus.requests) == 1


async def test_deadline_raises_a_typed_timeout_and_cancels_the_request(
    prometheus: FakePrometheus,
) -> None:
    prometheus.hold()
    registry = CollectorRegistry()
    async with connect(prometheus, timeout_seconds=0.2, registry=registry) as client:
        with pytest.raises(PrometheusTimeoutError) as caught:
            await client.query("slow")
        await prometheus.wait_for_cancelled(1)
    assert caught.value.source == "client"
    assert caught.value.timeout_seconds == 0.2
    assert (
        sample_value(
            registry,
            "prometheus_adapter_prometheus_client_errors_total",
            labels={"path": "/api/v1/query", "error": "timeout"},
        )
        == 1
    )


# ---------------------------------------------------------------- error mapping


async def test_api_error_keeps_type_message_and_status(prometheus: FakePrometheus) -> None:
    prometheus.fail_api(
        "/api/v1/query", status=400, error_type="bad_data", error="parse error at char 3"
    )
    async with connect(prometheus) as client:
        with pytest.raises(PrometheusAPIError) as caught:
            await client.query("x{")
    assert (caught.value.error_type, caught.value.status) == ("bad_data", 400)
    assert caught.value.error == "parse error at char 3"
    assert caught.value.endpoint == "/api/v1/query"


async def test_prometheus_timeout_error_type_is_a_timeout(prometheus: FakePrometheus) -> None:
    prometheus.fail_api(
        "/api/v1/query",
        status=503,
        error_type="timeout",
        error="query timed out in query execution",
    )
    async with connect(prometheus) as client:
        with pytest.raises(PrometheusTimeoutError) as caught:
            await client.query("heavy")
    assert caught.value.source == "server"


async def test_unknown_status_without_json_is_an_http_error(prometheus: FakePrometheus) -> None:
    prometheus.fail("/api/v1/series", status=502, text="Bad Gateway")
    async with connect(prometheus) as client:
        with pytest.raises(PrometheusHTTPError) as caught:
            await client.series(["up"])
    assert caught.value.status == 502
    assert "Bad Gateway" in caught.value.body


async def test_undecodable_success_is_a_response_error(prometheus: FakePrometheus) -> None:
    prometheus.fail("/api/v1/query", status=200, text="<html>proxy login</html>")
    async with connect(prometheus) as client:
        with pytest.raises(PrometheusResponseError):
            await client.query("up")


async def test_wrong_result_type_is_a_response_error(prometheus: FakePrometheus) -> None:
    prometheus.fail(
        "/api/v1/query",
        status=200,
        body={"status": "success", "data": {"resultType": "matrix", "result": []}},
    )
    async with connect(prometheus) as client:
        with pytest.raises(PrometheusResponseError, match="matrix"):
            await client.query("x[1m]")


async def test_connection_refused_is_a_connection_error() -> None:
    async with FakePrometheus() as fake:
        url = fake.url
    async with PrometheusClient(PrometheusConnection(url, timeout_seconds=5.0)) as client:
        with pytest.raises(PrometheusConnectionError, match="cannot reach Prometheus"):
            await client.query("up")


async def test_request_latency_is_observed(prometheus: FakePrometheus) -> None:
    registry = CollectorRegistry()
    async with connect(prometheus, registry=registry) as client:
        await client.query("up")
        await client.series(["up"])
    for path in ("/api/v1/query", "/api/v1/series"):
        count = sample_value(
            registry,
            "prometheus_adapter_prometheus_client_request_duration_seconds_count",
            labels={"path": path},
        )
        assert count == 1


# ---------------------------------------------------------------- large answers


def large_vector(count: int) -> list[dict[str, object]]:
    """More than ``LARGE_ANSWER_BYTES`` of samples, one with a label value that spells the
    cut between two samples (escaped in JSON, so never a cut)."""
    result: list[dict[str, object]] = [
        {
            "metric": {"namespace": f"ns-{i // 1000}", "pod": f"pod-{i}"},
            "value": [1700000000.5 + i % 3, f"{i}.25"],
        }
        for i in range(count)
    ]
    result[7]["metric"] = {"pod": 'x"},{"metric":{"pod":"y', "odd": "\\"}
    return result


def answer_large_vector(prometheus: FakePrometheus) -> list[dict[str, object]]:
    """The next instant query is answered with ``large_vector(20_000)``, returned."""
    result = large_vector(20_000)
    body = {"status": "success", "data": {"resultType": "vector", "result": result}}
    prometheus.fail("/api/v1/query", status=200, body=body)
    return result


async def test_a_large_answer_is_decoded_whole_while_the_loop_keeps_serving(
    prometheus: FakePrometheus,
) -> None:
    result = answer_large_vector(prometheus)
    ticks = 0
    stop = asyncio.Event()

    async def serve_meanwhile() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    async with connect(prometheus) as client:
        ticker = asyncio.create_task(serve_meanwhile())
        await asyncio.sleep(0)
        before = ticks
        answer = await client.query("sum by (namespace, pod) (x)")
        during = ticks - before
        stop.set()
        await ticker
    assert answer.result_type == "vector"
    assert [[s.labels, [s.timestamp_seconds, s.value_text]] for s in answer.samples] == [
        [item["metric"], item["value"]] for item in result
    ]
    assert during >= 20  # the loop ran between the slices (about 600 samples each)


async def test_a_truncated_large_answer_is_a_response_error(prometheus: FakePrometheus) -> None:
    body = {"status": "success", "data": {"resultType": "vector", "result": large_vector(20_000)}}
    text = orjson.dumps(body).decode()
    prometheus.fail("/api/v1/query", status=200, text=text[: len(text) // 2])
    async with connect(prometheus) as client:
        with pytest.raises(PrometheusResponseError, match="not JSON"):
            await client.query("x")


async def test_a_large_error_answer_keeps_its_error(prometheus: FakePrometheus) -> None:
    message = "many samples " + ",".join(f'"result":[{i}]' for i in range(100_000))
    prometheus.fail_api("/api/v1/query", status=422, error_type="execution", error=message)
    async with connect(prometheus) as client:
        with pytest.raises(PrometheusAPIError) as caught:
            await client.query("x")
    assert caught.value.error_type == "execution"


async def test_a_large_answer_in_parts_decodes_part_by_part_to_the_same_samples(
    prometheus: FakePrometheus,
) -> None:
    result = answer_large_vector(prometheus)
    async with connect(prometheus) as client:
        answer = await client.query("x", in_parts=True)
    assert len(answer.parts) > 10
    samples = [s for part in answer.parts for s in decode_part(part, endpoint="/api/v1/query")]
    samples += answer.samples
    assert [[s.labels, [s.timestamp_seconds, s.value_text]] for s in samples] == [
        [item["metric"], item["value"]] for item in result
    ]


async def test_an_answer_under_a_mebibyte_is_left_in_parts_too(prometheus: FakePrometheus) -> None:
    """An answer of some thousands of samples (a batch over a few namespaces) is not decoded in
    one call either: it comes in parts, decoded one per slice of the loop."""
    result = large_vector(4_000)
    body = {"status": "success", "data": {"resultType": "vector", "result": result}}
    assert SLICED_ANSWER_BYTES <= len(orjson.dumps(body)) < LARGE_ANSWER_BYTES
    prometheus.fail("/api/v1/query", status=200, body=body)
    async with connect(prometheus) as client:
        answer = await client.query("x", in_parts=True)
    assert len(answer.parts) >= 4
    samples = [s for part in answer.parts for s in decode_part(part, endpoint="/api/v1/query")]
    samples += answer.samples
    assert [[s.labels, [s.timestamp_seconds, s.value_text]] for s in samples] == [
        [item["metric"], item["value"]] for item in result
    ]
