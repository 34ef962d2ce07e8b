"""The JSON client: token bucket, retry decisions, typed errors, and the protocol against a fake
API server (429 Retry-After, 5xx backoff, no retry on 400/422, watch framing)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path

import aiohttp
import pytest

from hpa.kube.client import (
    AlreadyExistsError,
    ApiStatus,
    BadRequestError,
    ClientSettings,
    ConflictError,
    GoneError,
    InvalidError,
    KubeClient,
    NotFoundError,
    RetryPolicy,
    ServerError,
    TokenBucket,
    TooManyRequestsError,
    TransportError,
    environment_proxy,
    error_for_status,
    load_client,
    parse_retry_after,
)
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.clock import FakeClock

PODS = "/api/v1/namespaces/default/pods"


def test_token_bucket_allows_a_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(5.0, 3, clock=clock)
    waits = [bucket.reserve() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.2, 0.4])


async def test_token_bucket_refills_while_idle_up_to_the_burst() -> None:
    clock = FakeClock(auto_advance=True)
    bucket = TokenBucket(10.0, 2, clock=clock)
    assert [await bucket.acquire() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])
    await clock.sleep(60)  # a long idle period refills only up to the burst
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])


def test_token_bucket_with_zero_qps_never_waits() -> None:
    bucket = TokenBucket(0.0, 1, clock=FakeClock())
    assert {bucket.reserve() for _ in range(100)} == {0.0}


POLICY = RetryPolicy(max_attempts=5, base_delay_seconds=0.5, max_delay_seconds=30, jitter_ratio=0)


@pytest.mark.parametrize(
    ("code", "retry_after", "attempt", "method", "retry", "delay"),
    [
        (429, 7.0, 1, "PUT", True, 7.0),  # honour Retry-After
        (429, None, 1, "POST", True, 1.0),  # default 1 s
        (429, 600.0, 1, "GET", True, 30.0),  # capped
        (500, None, 1, "GET", True, 0.5),  # 5xx: exponential backoff
        (503, None, 3, "PUT", True, 2.0),
        (504, 4.0, 2, "GET", True, 4.0),  # 5xx with Retry-After
        (500, None, 5, "GET", False, 0.0),  # attempts exhausted
        (501, None, 1, "GET", False, 0.0),  # not implemented never heals
        (400, None, 1, "PUT", False, 0.0),
        (422, None, 1, "PUT", False, 0.0),
        (409, None, 1, "PUT", False, 0.0),  # conflicts are the caller's
        (404, None, 1, "GET", False, 0.0),
        (403, None, 1, "GET", False, 0.0),
        (None, None, 1, "GET", True, 0.5),  # transport failure on an idempotent verb
        (None, None, 1, "PUT", True, 0.5),  # PUT carries a resourceVersion precondition
        (None, None, 1, "POST", False, 0.0),  # POST might have happened
        (None, None, 1, "PATCH", False, 0.0),
    ],
)
def test_retry_decisions(
    code: int | None,
    retry_after: float | None,
    attempt: int,
    method: str,
    retry: bool,
    delay: float,
) -> None:
    decision = POLICY.decide(
        code,
        attempt,
        method=method,  # type: ignore[arg-type]
        retry_after_seconds=retry_after,
        rng=random.Random(0),
    )
    assert (decision.retry, decision.delay_seconds) == (retry, delay)


def test_backoff_jitter_stays_within_the_ratio() -> None:
    policy = RetryPolicy(base_delay_seconds=1.0, jitter_ratio=0.5)
    rng = random.Random(3)
    delays = [policy.backoff_seconds(2, rng=rng) for _ in range(200)]
    assert all(2.0 <= delay <= 3.0 for delay in delays)
    assert max(delays) - min(delays) > 0.5, "jitter spreads retries"


def test_retry_after_parses_seconds_and_http_dates() -> None:
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after(
        "Wed, 21 Oct 2015 07:28:10 GMT", now_epoch_seconds=1445412480.0
    ) == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("code", "reason", "message", "error_type"),
    [
        (400, "BadRequest", "", BadRequestError),
        (404, "NotFound", "", NotFoundError),
        (409, "Conflict", "", ConflictError),
        (409, "AlreadyExists", "", AlreadyExistsError),
        (410, "Gone", "", GoneError),
        (500, "Expired", "", GoneError),
        (500, "InternalError", "too old resource version: 5 (9)", GoneError),
        (422, "Invalid", "", InvalidError),
        (429, "TooManyRequests", "", TooManyRequestsError),
        (503, "ServiceUnavailable", "", ServerError),
    ],
)
def test_failure_statuses_map_to_typed_errors(
    code: int, reason: str, message: str, error_type: type[Exception]
) -> None:
    error = error_for_status(ApiStatus(code=code, reason=reason, message=message))
    assert type(error) is error_type
    assert error.status.reason == reason


def test_a_non_status_body_keeps_its_text_as_the_message() -> None:
    status = ApiStatus.from_body(b"upstream connect error", code=502)
    assert (status.code, status.reason, status.message) == (502, "", "upstream connect error")


async def test_429_is_retried_after_retry_after(
    apiserver: FakeApiServer, kube: KubeClient, clock: FakeClock
) -> None:
    apiserver.put_object("/api/v1", "pods", {"metadata": {"name": "p", "namespace": "default"}})
    apiserver.fail(
        "GET",
        f"{PODS}/p",
        status=429,
        reason="TooManyRequests",
        headers={"Retry-After": "3"},
        times=2,
    )
    pod = await kube.get(f"{PODS}/p")
    assert pod["metadata"]["name"] == "p"
    assert len(apiserver.requests_to("GET", f"{PODS}/p")) == 3
    assert clock.sleep_calls == [3.0, 3.0]


async def test_5xx_is_retried_with_backoff_until_attempts_run_out(
    apiserver: FakeApiServer, kube: KubeClient, clock: FakeClock
) -> None:
    apiserver.fail("GET", PODS, status=503, reason="ServiceUnavailable", times=10)
    with pytest.raises(ServerError) as raised:
        await kube.list(PODS)
    assert raised.value.status.code == 503
    assert len(apiserver.requests_to("GET", PODS)) == 4
    assert len(clock.sleep_calls) == 3
    assert clock.sleep_calls[0] < clock.sleep_calls[1] < clock.sleep_calls[2]


@pytest.mark.parametrize(("code", "error_type"), [(400, BadRequestError), (422, InvalidError)])
async def test_400_and_422_are_never_retried(
    apiserver: FakeApiServer,
    kube: KubeClient,
    clock: FakeClock,
    code: int,
    error_type: type[Exception],
) -> None:
    apiserver.fail("POST", PODS, status=code, reason="Invalid" if code == 422 else "BadRequest")
    with pytest.raises(error_type):
        await kube.post(PODS, {"metadata": {"name": "x"}})
    assert len(apiserver.requests_to("POST", PODS)) == 1
    assert clock.sleep_calls == []


async def test_errors_carry_the_servers_status(apiserver: FakeApiServer, kube: KubeClient) -> None:
    with pytest.raises(NotFoundError) as raised:
        await kube.get(f"{PODS}/missing")
    assert raised.value.status.reason == "NotFound"
    assert "missing" in raised.value.status.message


async def test_requests_wait_for_the_token_bucket(apiserver: FakeApiServer) -> None:
    clock = FakeClock(auto_advance=True)
    client = KubeClient(
        aiohttp.ClientSession(),
        apiserver.url,
        clock=clock,
        limiter=TokenBucket(2.0, 1, clock=clock),
    )
    try:
        for _ in range(3):
            await client.list(PODS)
    finally:
        await client.close()
    assert clock.sleep_calls == pytest.approx([0.5, 0.5])


async def test_watch_frames_large_objects_and_many_events(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    big = "x" * 300_000  # larger than aiohttp's default line buffer
    apiserver.put_object(
        "/api/v1",
        "pods",
        {"metadata": {"name": "big", "namespace": "default", "annotations": {"a": big}}},
    )
    for index in range(3):
        apiserver.put_object(
            "/api/v1", "pods", {"metadata": {"name": f"p{index}", "namespace": "default"}}
        )
    events = []
    stream = kube.watch(PODS, params={"resourceVersion": "100"})
    async with contextlib.aclosing(stream):
        async for event in stream:
            events.append(event)
            if len(events) == 4:
                break
    assert [e["object"]["metadata"]["name"] for e in events] == ["big", "p0", "p1", "p2"]
    assert events[0]["object"]["metadata"]["annotations"]["a"] == big
    assert {e["type"] for e in events} == {"ADDED"}


async def test_a_corrupt_watch_line_is_a_transport_error(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    received: list[dict[str, object]] = []

    async def consume() -> None:
        stream = kube.watch(PODS, params={"resourceVersion": "100"})
        async with contextlib.aclosing(stream):
            async for event in stream:
                received.append(event)

    consumer = asyncio.create_task(consume())
    await apiserver.wait_for_watches()
    apiserver.put_object("/api/v1", "pods", {"metadata": {"name": "p", "namespace": "default"}})
    apiserver.send_raw(b'{"type": "ADDED", "object": {')
    with pytest.raises(TransportError, match="JSONDecodeError"):
        await asyncio.wait_for(consumer, timeout=5)
    assert [e["type"] for e in received] == ["ADDED"]


async def test_opening_a_watch_on_a_missing_resource_raises_the_typed_error(
    kube: KubeClient,
) -> None:
    stream = kube.watch("/api/v1/namespaces/default/gizmos")
    async with contextlib.aclosing(stream):
        with pytest.raises(NotFoundError):
            await anext(stream)


def test_the_environment_proxy_is_resolved_for_the_api_server_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert environment_proxy("https://10.0.0.1:6443") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert environment_proxy("https://10.0.0.1:6443") == "http://proxy.example:3128"
    monkeypatch.setenv("NO_PROXY", "10.0.0.1")
    assert environment_proxy("https://10.0.0.1:6443") is None


async def test_a_loaded_client_talks_to_the_kubeconfig_server(
    apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: c\n  cluster:\n    server: {apiserver.url}\n"
        "users:\n- name: u\n  user: {}\n"
        "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
        "current-context: x\n"
    )
    client = await load_client(
        ClientSettings(kubeconfig_path=str(kubeconfig), qps=0, max_connections=3)
    )
    try:
        created = await client.post(PODS, {"metadata": {"name": "a", "namespace": "default"}})
        assert created["metadata"]["name"] == "a"
        listed = await asyncio.gather(*(client.list(PODS) for _ in range(10)))
        assert all(len(page["items"]) == 1 for page in listed)
    finally:
        await client.close()


def test_a_policy_like_client_go_retries_server_errors_only_with_retry_after() -> None:
    policy = RetryPolicy(server_errors_need_retry_after=True)
    rng = random.Random(0)
    assert not policy.decide(500, 1, method="GET", rng=rng).retry
    assert not policy.decide(503, 1, method="GET", rng=rng).retry
    waited = policy.decide(503, 1, method="GET", retry_after_seconds=2.0, rng=rng)
    assert waited.retry
    assert waited.delay_seconds == 2.0
    assert policy.decide(429, 1, method="GET", rng=rng).retry
