"""Load traces: CSV parsing, built-in shapes, durations, and clear errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpa.sim.trace import (
    SHAPES,
    TraceError,
    parse_duration,
    parse_shape,
    points_trace,
    read_csv,
    shape_trace,
)


def test_csv_with_header_and_relative_seconds_holds_each_load_until_the_next_row() -> None:
    trace = read_csv("load.csv", text="timestamp,load\n0,100\n15,200\n30,50\n")

    assert trace.times_seconds == (0.0, 15.0, 30.0)
    assert trace.loads == (100.0, 200.0, 50.0)
    assert trace.duration_seconds == 45  # the last row holds one step
    assert [trace.load_at(t) for t in (-5, 0, 14.9, 15, 29, 30, 100)] == [
        100,
        100,
        100,
        200,
        200,
        50,
        50,
    ]
    assert trace.origin is None


def test_csv_with_rfc3339_times_is_relative_to_the_first_row(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("2026-03-01T00:00:00Z,10\n2026-03-01T00:01:00Z,20\n# a comment\n\n")

    trace = read_csv(path)

    assert trace.times_seconds == (0.0, 60.0)
    assert trace.origin is not None
    assert trace.origin.isoformat() == "2026-03-01T00:00:00+00:00"
    assert "2 points" in trace.description


def test_csv_with_epoch_seconds_is_absolute() -> None:
    trace = read_csv("x", text="1767225600,1\n1767225615,2\n")

    assert trace.times_seconds == (0.0, 15.0)
    assert trace.origin is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0,1,2\n", "line 1: expected 2 columns"),
        ("0,abc\n", "line 1: load 'abc' is not a number"),
        ("0,1\n0,2\n", "line 2: timestamp '0' is not after the previous one"),
        ("0,1\n10,-3\n", "line 2: load must be a finite number >= 0"),
        ("0,nan\n", "line 1: load must be a finite number >= 0"),
        ("2026-01-01T00:00:00,1\n", "has no time zone"),
        ("yesterday,1\n", "neither seconds nor an RFC 3339 time"),
        ("timestamp,load\n", "no data rows"),
        ("0,1\n2026-01-01T00:00:00Z,2\n", "mixes absolute and relative timestamps"),
    ],
)
def test_bad_csv_names_the_line_and_the_problem(text: str, message: str) -> None:
    with pytest.raises(TraceError, match=message) as info:
        read_csv("bad.csv", text=text)
    assert str(info.value).startswith("bad.csv")


def test_missing_csv_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"cannot read trace .*missing\.csv"):
        read_csv(tmp_path / "missing.csv")


def test_step_shape_defaults_and_parameters() -> None:
    trace = shape_trace("step:base=10,peak=30,at=1m,duration=3m,resolution=30s")

    assert trace.times_seconds == (0.0, 30.0, 60.0, 90.0, 120.0, 150.0)
    assert trace.loads == (10.0, 10.0, 30.0, 30.0, 30.0, 30.0)
    assert trace.duration_seconds == 180
    assert trace.description.startswith("step:base=10,peak=30,at=60s")


def test_every_shape_has_the_documented_form() -> None:
    ramp = shape_trace("ramp:base=0,peak=100,start=0,end=100s,duration=200s,resolution=50s")
    spike = shape_trace("spike:base=1,peak=9,at=60,width=30,duration=120,resolution=30")
    diurnal = shape_trace("diurnal:base=10,peak=110,period=4h,peak_at=2h,duration=4h,resolution=1h")
    saw = shape_trace("sawtooth:base=0,peak=100,period=100s,duration=200s,resolution=25s")

    assert ramp.loads == (0.0, 50.0, 100.0, 100.0)
    assert spike.loads == (1.0, 1.0, 9.0, 1.0)
    assert [round(v, 6) for v in diurnal.loads] == [10, 60, 110, 60]
    assert saw.loads == (0.0, 25.0, 50.0, 75.0, 0.0, 25.0, 50.0, 75.0)
    assert set(SHAPES) == {"step", "ramp", "spike", "diurnal", "sawtooth", "bursty"}


def test_duration_overrides_a_shape_and_cuts_a_csv() -> None:
    assert shape_trace("step", duration_seconds=7 * 86400).duration_seconds == 7 * 86400
    cut = read_csv("x", text="0,1\n60,2\n120,3\n").with_duration(90)
    assert cut.times_seconds == (0.0, 60.0)
    assert cut.duration_seconds == 90


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("square", "unknown trace shape 'square'.*step, ramp, spike, diurnal, sawtooth"),
        ("step:height=3", "unknown parameter 'height'"),
        ("step:peak", "parameter 'peak' is not key=value"),
        ("step:peak=lots", "peak must be a number"),
        ("step:at=soon", "at: invalid duration 'soon'"),
        ("step:peak=-1", "peak must be >= 0"),
        ("step:resolution=0", "resolution must be positive"),
        ("ramp:start=10m,end=5m", "end must be after start"),
    ],
)
def test_bad_shapes_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        parse_shape(text)


def test_durations_accept_go_strings_days_and_seconds() -> None:
    assert parse_duration("15s") == 15
    assert parse_duration("1h30m") == 5400
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("2d12h") == 2.5 * 86400
    assert parse_duration("90") == 90
    with pytest.raises(TraceError, match="invalid duration 'a while'"):
        parse_duration("a while")


def test_a_trace_rejects_unordered_points_and_negative_load() -> None:
    with pytest.raises(TraceError, match="timestamps must increase"):
        points_trace([(0, 1), (10, 1), (5, 1)], duration_seconds=20, description="t")
    with pytest.raises(TraceError, match="point 2 has -1"):
        points_trace([(0, 1), (10, -1)], duration_seconds=20, description="t")
    with pytest.raises(TraceError, match="duration ends before the last point"):
        points_trace([(0, 1), (10, 1)], duration_seconds=5, description="t")
