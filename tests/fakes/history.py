"""A fake of the history provider's range-query port (``hpa.controllers.vertical.history``):
answers from a table (exact query text -> series, or an error), recording every call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hpa.controllers.vertical.ports import HistoryError


@dataclass(frozen=True)
class FakeSeries:
    labels: Mapping[str, str]
    points: Sequence[tuple[float, str]]


@dataclass(frozen=True)
class RangeCall:
    query: str
    start_seconds: float
    end_seconds: float
    step_seconds: float
    timeout_seconds: float


@dataclass
class FakeRangeQuerier:
    """matrices: query text -> series (unknown queries answer an empty matrix, as Prometheus does
    for a selector matching nothing); errors: query text -> the cause to raise as HistoryError;
    strict: an unknown query is an error (to pin the exact query text)."""

    matrices: dict[str, list[FakeSeries]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    strict: bool = False
    calls: list[RangeCall] = field(default_factory=list)

    async def query_range(
        self,
        query: str,
        *,
        start_seconds: float,
        end_seconds: float,
        step_seconds: float,
        timeout_seconds: float,
    ) -> Sequence[FakeSeries]:
        self.calls.append(
            RangeCall(query, start_seconds, end_seconds, step_seconds, timeout_seconds)
        )
        if query in self.errors:
            raise HistoryError(self.errors[query])
        if self.strict and query not in self.matrices:
            raise HistoryError(f"unexpected query {query}")
        return self.matrices.get(query, [])

    @property
    def queries(self) -> list[str]:
        return [call.query for call in self.calls]
