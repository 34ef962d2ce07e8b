"""Memos of pure core functions, looked up by the identity of their arguments.

No upstream counterpart: upstream recomputes defaulted behavior, resolved rules and tolerances on
every reconcile. A controller passes the same frozen spec objects to the core on every reconcile
of an HPA, and hashing those nested frozen values costs more than the computation they would
save, so these memos key on ``id()``. Each entry keeps its arguments alive, so an identity cannot
be reused by another object while it is cached, and a hit is confirmed with ``is``. A memo is
emptied when it reaches its size, which bounds memory and keeps no stale answer: the functions are
pure, so an entry is never wrong, only absent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta
from typing import Generic, TypeVar

A = TypeVar("A")
B = TypeVar("B")
R = TypeVar("R")

DEFAULT_MAX_ENTRIES = 1024


@functools.lru_cache(maxsize=256)
def timedelta_of(seconds: float) -> timedelta:
    """``timedelta(seconds=seconds)``, cached: windows, periods and flags repeat on every
    reconcile, and constructing one costs more than the window scan it bounds."""
    return timedelta(seconds=seconds)


class IdentityMemo(Generic[A, R]):
    """``compute(a)``, remembered per object ``a``."""

    __slots__ = ("_compute", "_entries", "_max_entries")

    def __init__(
        self, compute: Callable[[A], R], *, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        self._compute = compute
        self._entries: dict[int, tuple[A, R]] = {}
        self._max_entries = max_entries

    def __call__(self, a: A) -> R:
        hit = self._entries.get(id(a))
        if hit is not None and hit[0] is a:
            return hit[1]
        result = self._compute(a)
        if len(self._entries) >= self._max_entries:
            self._entries.clear()
        self._entries[id(a)] = (a, result)
        return result


class PairIdentityMemo(Generic[A, B, R]):
    """``compute(a, b)``, remembered per pair of objects ``(a, b)``."""

    __slots__ = ("_compute", "_entries", "_max_entries")

    def __init__(
        self, compute: Callable[[A, B], R], *, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        self._compute = compute
        self._entries: dict[tuple[int, int], tuple[A, B, R]] = {}
        self._max_entries = max_entries

    def __call__(self, a: A, b: B) -> R:
        key = (id(a), id(b))
        hit = self._entries.get(key)
        if hit is not None and hit[0] is a and hit[1] is b:
            return hit[2]
        result = self._compute(a, b)
        if len(self._entries) >= self._max_entries:
            self._entries.clear()
        self._entries[key] = (a, b, result)
        return result
