"""hpa.core.explain: the printable trace."""

from __future__ import annotations

from hpa.core.explain import Explanation, Stage, TraceEntry, format_names, format_value


def test_render_prints_stage_summary_and_formatted_details() -> None:
    explanation = Explanation().with_entry(
        TraceEntry(
            Stage.METRIC,
            "cpu: proposes 4 replicas",
            (("usage ratio", 1.3333333), ("unready", frozenset({"b", "a"})), ("window", (4, 5))),
        )
    )
    assert explanation.render() == (
        "[metric] cpu: proposes 4 replicas\n"
        "    usage ratio: 1.3333\n"
        "    unready: a, b\n"
        "    window: 4, 5"
    )


def test_long_pod_lists_are_bounded() -> None:
    names = frozenset(f"pod-{i:02d}" for i in range(13))
    assert format_names(names) == (
        "pod-00, pod-01, pod-02, pod-03, pod-04, pod-05, pod-06, pod-07, pod-08, pod-09, "
        "... (3 more)"
    )
    assert format_value(()) == "-"
    assert format_value(frozenset()) == "-"


def _entry(replicas: int) -> TraceEntry:
    return TraceEntry(Stage.DECISION, f"no rescale: replicas stay at {replicas}")


def _two_entries(replicas: int) -> list[TraceEntry]:
    return [_entry(replicas), _entry(replicas + 1)]


def test_a_deferred_part_reads_as_the_entries_it_builds() -> None:
    """decide defers the entries it writes on every pass; readers see plain entries."""
    deferred = Explanation(((_entry, (3,)), (_two_entries, (4,)))).with_entry(_entry(9))
    built = Explanation((_entry(3), _entry(4), _entry(5), _entry(9)))
    assert deferred.entries == built.entries
    assert deferred == built
    assert hash(deferred) == hash(built)
    assert repr(deferred) == repr(built)
    assert deferred.render() == built.render() == str(built)
    assert deferred != Explanation((_entry(3),))
