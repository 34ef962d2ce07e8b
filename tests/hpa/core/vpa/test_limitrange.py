"""Merging a namespace's LimitRanges as VPA v1.8.1's ``getLimitRangeItem`` does."""

from __future__ import annotations

from hpa.core.vpa.amount import Resources
from hpa.core.vpa.capping import LimitRangeItem
from hpa.core.vpa.limitrange import LimitRangeEntry, merge_limit_range_items


def test_lowest_max_highest_min_last_default() -> None:
    entries = [
        LimitRangeEntry(
            "Container", min=Resources(cpu=100), max=Resources(cpu=4000, memory=8 << 30),
            default=Resources(cpu=500),
        ),
        LimitRangeEntry(
            "Container", min=Resources(cpu=200, memory=64 << 20), max=Resources(cpu=2000)
        ),
        LimitRangeEntry("Container", default=Resources(cpu=1000, memory=1 << 30)),
        LimitRangeEntry("Pod", max=Resources(cpu=1)),
    ]  # fmt: skip
    assert merge_limit_range_items(entries, "Container") == LimitRangeItem(
        min=Resources(cpu=200, memory=64 << 20),
        max=Resources(cpu=2000, memory=8 << 30),
        default=Resources(cpu=1000, memory=1 << 30),
    )
    assert merge_limit_range_items(entries, "Pod") == LimitRangeItem(max=Resources(cpu=1))


def test_no_item_of_the_type_is_none() -> None:
    assert (
        merge_limit_range_items([LimitRangeEntry("Pod", max=Resources(cpu=1))], "Container") is None
    )
    assert merge_limit_range_items([LimitRangeEntry("Container")], "Container") is None
    assert merge_limit_range_items([], "Container") is None
