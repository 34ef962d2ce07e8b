"""The differential pair's re-read rule, without a lab: answers that move between two reads agree
on a re-read, a systematic difference never does."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from tests.e2e.prometheus_adapter_pair import REREADS, agree_on_reread
from tests.lab.prometheus_adapter import Reply


def reader(values: list[str]) -> tuple[Callable[[], Reply], list[str]]:
    """A reader answering ``values`` in turn; the list it returns records what was read."""
    answers: Iterator[str] = iter(values)
    read: list[str] = []

    def read_one() -> Reply:
        value = next(answers)
        read.append(value)
        return Reply(200, {"value": value})

    return read_one, read


def equal(ours: Reply, theirs: Reply) -> bool:
    return bool(ours.body == theirs.body)


def test_a_value_that_moved_between_the_two_reads_agrees_on_the_next_read() -> None:
    # ours read before a deleted pod's samples left the window, theirs after; ours again after.
    read_ours, ours_read = reader(["10"])
    read_theirs, theirs_read = reader([])
    first = (Reply(200, {"value": "12.1"}), Reply(200, {"value": "10"}))
    assert agree_on_reread(first, read_ours, read_theirs, equal) == 1
    assert (ours_read, theirs_read) == (["10"], [])


def test_theirs_is_read_again_when_ours_moved_on_too() -> None:
    read_ours, ours_read = reader(["14"])
    read_theirs, theirs_read = reader(["14"])
    first = (Reply(200, {"value": "12"}), Reply(200, {"value": "13"}))
    assert agree_on_reread(first, read_ours, read_theirs, equal) == 2
    assert (ours_read, theirs_read) == (["14"], ["14"])


def test_a_systematic_difference_is_still_a_difference_after_every_reread() -> None:
    read_ours, ours_read = reader(["20"] * REREADS)
    read_theirs, theirs_read = reader(["21"] * REREADS)
    first = (Reply(200, {"value": "20"}), Reply(200, {"value": "21"}))
    assert agree_on_reread(first, read_ours, read_theirs, equal) is None
    assert len(ours_read) + len(theirs_read) == REREADS
