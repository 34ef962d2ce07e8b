"""hpa.core.memo: identity memos answer exactly what the function answers, and stay bounded."""

from __future__ import annotations

from hpa.core.memo import IdentityMemo, PairIdentityMemo


class Box:
    """An unhashable-by-value argument, like a frozen spec with nested tuples."""

    def __init__(self, value: int) -> None:
        self.value = value


def test_an_object_seen_again_is_answered_from_the_memo_and_an_equal_one_is_computed() -> None:
    calls: list[int] = []

    def double(box: Box) -> int:
        calls.append(box.value)
        return 2 * box.value

    memo = IdentityMemo(double)
    first, second = Box(3), Box(3)
    assert (memo(first), memo(first), memo(second)) == (6, 6, 6)
    assert calls == [3, 3]  # once per object, not once per call


def test_a_pair_memo_tells_pairs_apart_by_both_objects() -> None:
    calls: list[tuple[int, int]] = []

    def add(a: Box, b: Box) -> int:
        calls.append((a.value, b.value))
        return a.value + b.value

    memo = PairIdentityMemo(add)
    one, two = Box(1), Box(2)
    assert (memo(one, two), memo(two, one), memo(one, two)) == (3, 3, 3)
    assert calls == [(1, 2), (2, 1)]


def test_a_full_memo_starts_over_and_keeps_answering_correctly() -> None:
    memo: IdentityMemo[Box, int] = IdentityMemo(lambda box: box.value, max_entries=2)
    boxes = [Box(n) for n in range(5)]
    assert [memo(box) for box in boxes] == [0, 1, 2, 3, 4]
    assert [memo(box) for box in reversed(boxes)] == [4, 3, 2, 1, 0]
    assert len(memo._entries) <= 2
