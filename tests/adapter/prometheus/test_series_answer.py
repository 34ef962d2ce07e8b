"""A large ``/api/v1/series`` answer read a piece at a time (``SeriesList``): the same series as
decoding it whole, a wrong cut never taken, and the relist's shapes and counts."""

from __future__ import annotations

import orjson
import pytest

from adapter.prometheus import PrometheusClient, PrometheusConnection, PrometheusResponseError
from adapter.prometheus.results import (
    SeriesList,
    decode_series,
    distinct_series,
    split_series_answer,
)
from adapter.rules import Series
from tests.fakes.prometheus import FakePrometheus

ENDPOINT = "/api/v1/series"


def answer(items: list[dict[str, str]], **extra: object) -> bytes:
    return orjson.dumps({"status": "success", "data": items, **extra})


def pods(count: int, name: str = "up") -> list[dict[str, str]]:
    return [{"__name__": name, "namespace": f"ns-{i % 3}", "pod": f"pod-{i}"} for i in range(count)]


def whole(body: bytes) -> list[Series]:
    return decode_series(orjson.loads(body)["data"], endpoint=ENDPOINT)


def test_pieces_give_the_series_of_the_whole_answer() -> None:
    items = [*pods(500), *pods(200, "other"), {"__name__": "up", "job": "x"}]
    body = answer(items, warnings=["a warning"])
    split = split_series_answer(body, endpoint=ENDPOINT, chunk_bytes=1000)
    assert split is not None
    envelope, found = split
    assert orjson.loads(envelope) == {"status": "success", "data": [], "warnings": ["a warning"]}
    assert len(found._spans) > 10
    assert list(found) == whole(body)
    assert len(found) == 701
    assert found[3] == whole(body)[3]
    assert [(item.name, sorted(item.labels), count) for item, count in found.distinct] == [
        ("up", ["namespace", "pod"], 500),
        ("other", ["namespace", "pod"], 200),
        ("up", ["job"], 1),
    ]
    assert found.distinct == distinct_series(whole(body))


@pytest.mark.parametrize("value", ['a},{"b', "a}]", 'x"},{"y', "}", "},{", "\\},{"])
def test_a_cut_inside_a_string_is_never_taken(value: str) -> None:
    items = [{**item, "note": value} for item in pods(300)]
    body = answer(items)
    for chunk_bytes in (1, 7, 100, 1000):
        split = split_series_answer(body, endpoint=ENDPOINT, chunk_bytes=chunk_bytes)
        if split is not None:
            assert list(split[1]) == whole(body)


def test_answers_in_another_layout_or_small_are_left_to_the_whole_decode() -> None:
    spaced = orjson.dumps({"status": "success", "data": pods(50)}, option=orjson.OPT_INDENT_2)
    found = split_series_answer(spaced, endpoint=ENDPOINT, chunk_bytes=100)
    assert found is None or list(found[1]) == whole(spaced)
    assert split_series_answer(answer([]), endpoint=ENDPOINT, chunk_bytes=1) is None
    assert split_series_answer(answer(pods(10)), endpoint=ENDPOINT) is None  # under 1 MiB
    error = orjson.dumps({"status": "error", "errorType": "bad_data", "error": '"data":['})
    assert split_series_answer(error, endpoint=ENDPOINT, chunk_bytes=1) is None


def test_an_element_that_is_not_a_label_set_is_a_response_error() -> None:
    body = answer([*pods(100), {"__name__": "up", "pod": 3}])  # type: ignore[dict-item]
    with pytest.raises(PrometheusResponseError, match="malformed label set"):
        split_series_answer(body, endpoint=ENDPOINT, chunk_bytes=100)


async def test_the_client_answers_a_large_series_list_in_pieces() -> None:
    async with FakePrometheus() as fake:
        fake.series = pods(30_000)
        async with PrometheusClient(PrometheusConnection(url=fake.url)) as client:
            found = await client.series(["up"])
    assert isinstance(found, SeriesList)
    assert len(found) == 30_000
    assert list(found)[-1] == Series("up", {"namespace": "ns-2", "pod": "pod-29999"})
    assert [count for _, count in found.distinct] == [30_000]
