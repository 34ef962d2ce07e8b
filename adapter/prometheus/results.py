"""Decoded answers of the Prometheus HTTP API: instant vectors and scalars, matrices, series.

Upstream counterpart: prometheus-adapter ``pkg/client/interfaces.go`` (``QueryResult`` with
``Vector``/``Scalar``/``Matrix``, ``Series`` with the name split from the labels) over
``prometheus/common/model``.

Deliberate deviations: each sample keeps the exact decimal text Prometheus sent (``value_text``)
next to the float, so values become exact milli-quantities without a float round trip; an instant
scalar is one sample with no labels; series are ``adapter.rules.Series`` so they go straight into
the rule namers. A large ``/api/v1/series`` answer (a relist's: a series per pod) is a
``SeriesList``: its JSON bytes, decoded a chunk at a time, with its distinct series shapes (name
and label names, what discovery needs) counted once; its million label sets are never all
decoded at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, NamedTuple, overload

import orjson

from adapter.prometheus.errors import PrometheusResponseError
from adapter.rules import Series


class Sample(NamedTuple):
    """One point: labels (``__name__`` included when Prometheus kept it), time, value.

    A named tuple rather than a frozen dataclass: immutable all the same, and built about twice
    as fast (a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``),
    which counts with a sample per pod per request (``bench/adapter.py --profile``)."""

    labels: Mapping[str, str]
    timestamp_seconds: float
    value_text: str

    @property
    def value(self) -> float:
        return float(self.value_text)

    @property
    def is_finite(self) -> bool:
        return math.isfinite(self.value)

    def value_decimal(self) -> Decimal:
        """The exact value Prometheus printed (``Decimal('NaN')``/``Infinity`` for those)."""
        return Decimal(self.value_text)


@dataclass(frozen=True, slots=True)
class InstantResult:
    """An instant query's answer: a vector (any number of samples) or a scalar (one sample).

    parts: a large vector's leading samples left undecoded, when the caller asked for them so
        (``PrometheusClient.query(..., in_parts=True)``): JSON arrays to decode one at a time
        with ``decode_part``, in order, before ``samples`` (which then holds the rest)."""

    result_type: Literal["vector", "scalar"]
    samples: tuple[Sample, ...] = ()
    parts: tuple[bytes, ...] = ()


@dataclass(frozen=True, slots=True)
class RangeSeries:
    """One series of a range query: its labels and ``(timestamp_seconds, value_text)`` points."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, str], ...] = field(default=())

    def values(self) -> list[tuple[float, float]]:
        return [(timestamp, float(text)) for timestamp, text in self.points]


def _sample_point(raw: Any, endpoint: str) -> tuple[float, str]:
    if not isinstance(raw, list) or len(raw) != 2 or not isinstance(raw[1], str):
        raise PrometheusResponseError(f"malformed sample point {raw!r}", endpoint=endpoint)
    try:
        timestamp = float(raw[0])
        Decimal(raw[1])
    except (TypeError, ValueError, InvalidOperation):
        message = f"malformed sample point {raw!r}"
        raise PrometheusResponseError(message, endpoint=endpoint) from None
    return timestamp, raw[1]


def _labels(raw: Any, endpoint: str) -> dict[str, str]:
    """The label set as decoded (a fresh dict of the JSON answer, not copied again)."""
    if not isinstance(raw, dict):
        raise PrometheusResponseError(f"malformed label set {raw!r}", endpoint=endpoint)
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise PrometheusResponseError(f"malformed label set {raw!r}", endpoint=endpoint)
    return raw


def decode_instant(data: Any, *, endpoint: str) -> InstantResult:
    """``QueryResult.UnmarshalJSON`` for ``/api/v1/query``: a vector or a scalar."""
    if not isinstance(data, dict):
        raise PrometheusResponseError("query data is not an object", endpoint=endpoint)
    result_type = data.get("resultType")
    result = data.get("result")
    if result_type == "vector" and isinstance(result, list):
        return InstantResult("vector", tuple(decode_vector_items(result, endpoint=endpoint)))
    if result_type == "scalar":
        timestamp, text = _sample_point(result, endpoint)
        return InstantResult("scalar", (Sample({}, timestamp, value_text=text),))
    raise PrometheusResponseError(
        f"unexpected value type {result_type!r} for an instant query", endpoint=endpoint
    )


def decode_vector_items(result: list[Any], *, endpoint: str) -> list[Sample]:
    """The samples of a decoded vector's ``result`` list (or of one part of it, see
    ``split_vector_answer``).

    The loop checks each element inline (the same checks as ``_sample_point`` and ``_labels``):
    an answer has a sample per pod, and this runs for every request (a batched evaluation's
    100,000 samples took 0.13 s, 0.10 s as written). A value text that ``float`` reads is one
    ``Decimal`` reads, and ``float`` reads it in half the time; the few texts only ``Decimal``
    reads (``sNaN``, a NaN with digits) and the malformed ones go through ``_sample_point``,
    which keeps the first and raises for the others. A ``Sample`` is built as the tuple it is
    (``tuple.__new__``), without the named tuple's keyword handling."""
    samples: list[Sample] = []
    append = samples.append
    build = tuple.__new__
    for item in result:
        if type(item) is not dict:
            raise PrometheusResponseError(f"malformed sample {item!r}", endpoint=endpoint)
        point = item.get("value")
        if type(point) is list and len(point) == 2 and type(point[1]) is str:
            text: str = point[1]
            try:
                timestamp = float(point[0])
                float(text)
            except (TypeError, ValueError):
                timestamp, text = _sample_point(point, endpoint)  # Decimal's texts, or raises
        else:
            timestamp, text = _sample_point(point, endpoint)  # raises the error
        labels = item.get("metric", {})
        if type(labels) is not dict:
            labels = _labels(labels, endpoint)  # raises the error
        for value in labels.values():
            if type(value) is not str:
                _labels(labels, endpoint)  # raises the error
        append(build(Sample, (labels, timestamp, text)))
    return samples


def decode_part(part: bytes, *, endpoint: str) -> list[Sample]:
    """The samples of one part of a large vector (``split_vector_answer``)."""
    try:
        items = orjson.loads(part)
    except orjson.JSONDecodeError as exc:
        raise PrometheusResponseError(f"answer is not JSON: {exc}", endpoint=endpoint) from None
    if type(items) is not list:
        raise PrometheusResponseError("a part of the result is not a list", endpoint=endpoint)
    return decode_vector_items(items, endpoint=endpoint)


def element_cuts(body: bytes, position: int, separator: bytes, part_bytes: int) -> Iterator[int]:
    """Where to cut the JSON array of objects that starts at ``position`` in ``body`` into parts
    of about ``part_bytes``: the offset just past each part's last object (the ``}`` of the next
    ``separator``, which starts ``},{``), the next part starting after the comma."""
    while (cut := body.find(separator, position + part_bytes)) >= 0:
        yield cut + 1
        position = cut + 2


_RESULT_ARRAY = b'"result":['
_NEXT_SAMPLE = b'},{"metric":'


def split_vector_answer(body: bytes, *, part_bytes: int) -> tuple[list[bytes], bytes]:
    """A large instant answer cut into JSON documents of about ``part_bytes`` each, so that it
    can be decoded a part at a time: JSON arrays holding the leading samples of the result, in
    order, then the answer's envelope holding the remaining samples. An answer without a
    result array (an error, a scalar) is the envelope alone.

    The cuts are at ``},{"metric":`` between two samples: that byte sequence cannot occur
    inside a JSON string (a quote inside a string is escaped, and a quote that closes one is
    never followed by a letter), so every cut is between two elements of the result array.
    Every byte of ``body`` but the cut commas lands in exactly one document, so the documents
    all parse exactly when ``body`` does."""
    begin = body.find(_RESULT_ARRAY)
    if begin < 0:
        return [], body
    start = begin + len(_RESULT_ARRAY)
    parts: list[bytes] = []
    position = start
    for end in element_cuts(body, start, _NEXT_SAMPLE, part_bytes):
        parts.append(b"[" + body[position:end] + b"]")
        position = end + 1
    if not parts:
        return [], body
    return parts, body[:start] + body[position:]


def decode_matrix(data: Any, *, endpoint: str) -> list[RangeSeries]:
    """``/api/v1/query_range``: a matrix."""
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise PrometheusResponseError("a range query did not return a matrix", endpoint=endpoint)
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusResponseError("matrix result is not a list", endpoint=endpoint)
    out = []
    for item in result:
        if not isinstance(item, dict) or not isinstance(item.get("values", []), list):
            raise PrometheusResponseError(f"malformed series {item!r}", endpoint=endpoint)
        points = tuple(_sample_point(point, endpoint) for point in item.get("values", []))
        out.append(RangeSeries(_labels(item.get("metric", {}), endpoint), points))
    return out


def decode_series(data: Any, *, endpoint: str) -> list[Series]:
    """``Series.UnmarshalJSON`` for ``/api/v1/series``: ``__name__`` split from the labels."""
    if not isinstance(data, list):
        raise PrometheusResponseError("series data is not a list", endpoint=endpoint)
    out = []
    for item in data:
        labels = _labels(item, endpoint)
        name = labels.pop("__name__", "")
        out.append(Series(name, labels))
    return out


SERIES_CHUNK_BYTES = 1 << 20
"""The size of the pieces a large series answer is decoded in (and the size from which it is)."""

_DATA_ARRAY = b'"data":['

SeriesShape = tuple[str, frozenset[str]]
"""A series' name and label names: all the relist keeps of it."""


def distinct_series(found: Iterable[Series]) -> list[tuple[Series, int]]:
    """The first series of each shape (name and label names), in order, and how many series
    have that shape."""
    if isinstance(found, SeriesList):
        return found.distinct
    first: dict[SeriesShape, Series] = {}
    counts: dict[SeriesShape, int] = {}
    for item in found:
        shape = (item.name, frozenset(item.labels))
        if shape in counts:
            counts[shape] += 1
        else:
            first[shape] = item
            counts[shape] = 1
    return [(item, counts[shape]) for shape, item in first.items()]


class SeriesList(Sequence[Series]):
    """A decoded ``/api/v1/series`` answer kept as the JSON bytes of its ``data`` array, cut at
    element boundaries into ``SERIES_CHUNK_BYTES`` pieces; iterating decodes one piece at a time.

    Built by ``split_series_answer``, which checks every element (``distinct`` is counted then).
    """

    __slots__ = ("_body", "_endpoint", "_length", "_spans", "distinct")

    def __init__(self, body: bytes, spans: Sequence[tuple[int, int]], *, endpoint: str) -> None:
        """Raises ``orjson.JSONDecodeError`` when a piece is not JSON (a cut inside a string)
        and ``PrometheusResponseError`` for an element that is not a label set."""
        self._body = body
        self._spans = tuple(spans)
        self._endpoint = endpoint
        self._length = 0
        self.distinct: list[tuple[Series, int]] = []
        self.distinct = distinct_series(self._decode())
        self._length = sum(count for _, count in self.distinct)

    def _decode(self) -> Iterator[Series]:
        for start, end in self._spans:
            for item in orjson.loads(b"[" + self._body[start:end] + b"]"):
                labels = _labels(item, self._endpoint)
                name = labels.pop("__name__", "")
                yield Series(name, labels)

    def __iter__(self) -> Iterator[Series]:
        return self._decode()

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Series: ...

    @overload
    def __getitem__(self, index: slice) -> list[Series]: ...

    def __getitem__(self, index: int | slice) -> Series | list[Series]:
        return list(self._decode())[index]


def split_series_answer(
    body: bytes, *, endpoint: str, chunk_bytes: int = SERIES_CHUNK_BYTES
) -> tuple[bytes, SeriesList] | None:
    """A large series answer as (its envelope with an empty ``data`` array, its data as a
    ``SeriesList``); ``None`` when the answer is small or not in the compact shape Prometheus
    writes (one ``"data":[`` key, elements joined by ``},{``), for the caller to decode whole.

    A cut is only taken at ``},{``; one that falls inside a string leaves a piece that is not JSON,
    which makes this answer ``None`` too, never a wrong split. Raises ``PrometheusResponseError``
    for an element that is not a label set (as ``decode_series``)."""
    if len(body) < chunk_bytes:
        return None
    start = body.find(_DATA_ARRAY)
    if start < 0 or body.find(_DATA_ARRAY, start + 1) >= 0:
        return None
    position = start + len(_DATA_ARRAY)
    if body[position : position + 1] != b"{":
        return None
    spans: list[tuple[int, int]] = []
    for end in element_cuts(body, position, b"},{", chunk_bytes):
        spans.append((position, end))
        position = end + 1
    end = body.find(b"}]", position)
    if end < 0:
        return None
    spans.append((position, end + 1))
    try:
        answer = SeriesList(body, spans, endpoint=endpoint)
    except orjson.JSONDecodeError:
        return None
    return body[: spans[0][0]] + body[spans[-1][1] :], answer


def series_selectors(matches: Sequence[str]) -> list[str]:
    """Validate a non-empty list of ``match[]`` selectors."""
    if not matches:
        raise ValueError("at least one series selector is needed")
    return list(matches)
