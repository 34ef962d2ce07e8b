"""10,000 malformed or hostile AdmissionReview bodies: none crashes the webhook; each is answered
400 or with a well-formed AdmissionReview for its uid, and a pod that could not be read is let
through unchanged.

The bodies are mutations of a valid pod review, drawn from a seeded generator (so a failure
reproduces): fields dropped or given the wrong JSON type, invalid and extreme quantities, huge
container lists, hostile strings (NUL, U+FFFD, JSON Pointer characters, 64 KiB names), deep
nesting, and random bytes. 300 of them also go through the HTTP server."""

from __future__ import annotations

import base64
import random
from typing import Any

import orjson
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from hpa.core.vpa.admission import apply_patch
from hpa.webhook.handler import AdmissionHandler
from hpa.webhook.review import ReviewError, parse_review
from hpa.webhook.server import WebhookMetrics, build_webhook_app
from tests.fakes.webhook import FakeVpaMatcher
from tests.hpa.webhook.reviews import pod, review, web_vpa

BODIES = 10_000
SEED = 20261126

HOSTILE_VALUES: list[Any] = [
    None, True, 0, -1, 1.5e308, "", "x" * 65536, "\x00", "\ufffd", "~1/~0", "../../etc",
    [], {}, [[[[[]]]]], {"a": {"b": {"c": {}}}}, "1e400", "-1", "NaN", "0.0000000001m",
    "9223372036854775808", "1Ei", "1e19", "12Qi", "\uff11\uff10\uff10m",
]  # fmt: skip
QUANTITIES = ["100m", "1", "64Mi", "-5", "1Ei", "999999999999999999999", "0", "0.5", "1e3", "abc"]


def mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """Replace, drop or perturb one part of a JSON value."""
    if depth > 6 or rng.random() < 0.15:
        return rng.choice(HOSTILE_VALUES)
    if isinstance(value, dict) and value:
        out = dict(value)
        key = rng.choice(list(out))
        roll = rng.random()
        if roll < 0.3:
            del out[key]
        elif roll < 0.4:
            out[rng.choice(["extra", "\x00", "x" * 300])] = rng.choice(HOSTILE_VALUES)
        else:
            out[key] = mutate(rng, out[key], depth + 1)
        return out
    if isinstance(value, list) and value:
        out_list = list(value)
        index = rng.randrange(len(out_list))
        out_list[index] = mutate(rng, out_list[index], depth + 1)
        return out_list
    return rng.choice(HOSTILE_VALUES)


def container(rng: random.Random, index: int) -> dict[str, Any]:
    resources = {
        field: {name: rng.choice(QUANTITIES) for name in rng.sample(["cpu", "memory", "gpu"], 2)}
        for field in rng.sample(["requests", "limits"], rng.randint(0, 2))
    }
    return {"name": f"c{index}", "resources": resources}


def body(rng: random.Random, number: int) -> bytes:
    roll = rng.random()
    if roll < 0.05:
        return rng.randbytes(rng.randint(0, 512))
    count = 2000 if rng.random() < 0.01 else rng.choice([0, 1, 2, 3])
    containers = [container(rng, i) for i in range(count)]
    document: Any = review(pod(containers=containers), uid=f"uid-{number}")
    for _ in range(rng.randint(0, 4)):
        document = mutate(rng, document)
    return orjson.dumps(document)


async def test_ten_thousand_hostile_bodies() -> None:
    rng = random.Random(SEED)
    handler = AdmissionHandler(FakeVpaMatcher(by_app={"web": web_vpa()}))
    outcomes = {"400": 0, "patched": 0, "unchanged": 0, "denied": 0}
    for number in range(BODIES):
        data = body(rng, number)
        try:
            request = parse_review(data)
        except ReviewError:
            outcomes["400"] += 1
            continue
        answer = await handler.review(request)
        response = answer.body["response"]
        assert answer.body["apiVersion"] == "admission.k8s.io/v1"
        assert response["uid"] == request.uid
        if not response["allowed"]:
            outcomes["denied"] += 1
            assert response["status"]["message"]
        elif "patch" in response:
            outcomes["patched"] += 1
            patches = orjson.loads(base64.b64decode(response["patch"]))
            assert request.object is not None
            apply_patch(request.object, patches)  # it applies to the pod it was made for
        else:
            outcomes["unchanged"] += 1
    assert sum(outcomes.values()) == BODIES
    assert min(outcomes["400"], outcomes["patched"], outcomes["unchanged"]) > 100, outcomes


async def test_hostile_bodies_over_http_never_get_a_server_error() -> None:
    rng = random.Random(SEED + 1)
    app = build_webhook_app(
        AdmissionHandler(FakeVpaMatcher(by_app={"web": web_vpa()})),
        metrics=WebhookMetrics(CollectorRegistry()),
    )
    async with TestClient(TestServer(app)) as client:
        for number in range(300):
            response = await client.post(
                "/", data=body(rng, number), headers={"Content-Type": "application/json"}
            )
            assert response.status in (200, 400), await response.text()
            document = await response.json()
            assert document["kind"] in ("AdmissionReview", "Status")
