"""Offered load over time: a CSV trace (``timestamp,load``) or a named built-in shape.

Upstream counterpart: none (the simulator's input). A trace is a list of points ``(t, load)``
with ``t`` in seconds from the start of the trace and ``load`` in requests per second; the load
holds from one point to the next (zero-order hold), and the last point holds for one more step.

CSV timestamps are seconds (relative, or Unix epoch seconds) or RFC 3339 times; an optional header
row ``timestamp,load`` is skipped. Built-in shapes are named with optional parameters:
``step``, ``ramp``, ``spike``, ``diurnal`` and ``sawtooth``, e.g.
``step:base=100,peak=1000,at=5m`` (see :data:`SHAPES` for each shape's parameters and defaults).
Durations accept Go duration strings (``90s``, ``5m``, ``1h30m``), plain seconds and a ``d``
suffix for days (``7d``).

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import bisect
import csv
import io
import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from hpa.core.duration import DurationError, parse_duration_seconds

__all__ = [
    "SHAPES",
    "LoadTrace",
    "Shape",
    "TraceError",
    "parse_duration",
    "parse_shape",
    "points_trace",
    "read_csv",
    "shape_trace",
]


class TraceError(ValueError):
    """A trace or shape that cannot be used; the message says where and why."""


_DAYS = re.compile(r"^(\d+(?:\.\d+)?)d(.*)$")


def parse_duration(text: str) -> float:
    """Seconds from ``15s``, ``5m``, ``1h30m``, ``7d``, ``2d12h`` or a plain number of seconds."""
    stripped = text.strip()
    try:
        return float(stripped)
    except ValueError:
        pass
    days = 0.0
    match = _DAYS.match(stripped)
    if match is not None:
        days = float(match.group(1))
        stripped = match.group(2)
        if not stripped:
            return days * 86400.0
    try:
        return days * 86400.0 + parse_duration_seconds(stripped)
    except DurationError as error:
        raise TraceError(f"invalid duration {text!r}: use e.g. 90s, 5m, 1h30m or 7d") from error


@dataclass(frozen=True, slots=True)
class LoadTrace:
    """Offered load (requests per second) at points in time, held until the next point.

    ``times_seconds`` start at 0 and strictly increase; ``duration_seconds`` is where the trace
    ends (at least the last point). ``origin`` is the wall time of ``t = 0`` when the trace was
    recorded at known times (CSV with absolute timestamps, Prometheus), else ``None``.
    ``description`` says where the trace came from (printed with every result).
    """

    times_seconds: tuple[float, ...]
    loads: tuple[float, ...]
    duration_seconds: float
    description: str
    origin: datetime | None = None
    _last_index: list[int] = field(default_factory=lambda: [0], repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.times_seconds:
            raise TraceError(f"{self.description}: the trace has no points")
        if len(self.times_seconds) != len(self.loads):
            raise TraceError(f"{self.description}: times and loads differ in length")
        if self.times_seconds[0] != 0:
            raise TraceError(f"{self.description}: the first point must be at t=0")
        for index in range(1, len(self.times_seconds)):
            if not self.times_seconds[index] > self.times_seconds[index - 1]:
                raise TraceError(
                    f"{self.description}: timestamps must increase "
                    f"(point {index + 1} is not after point {index})"
                )
        for index, load in enumerate(self.loads):
            if not math.isfinite(load) or load < 0:
                raise TraceError(
                    f"{self.description}: load must be a finite number >= 0 "
                    f"(point {index + 1} has {load!r})"
                )
        if self.duration_seconds < self.times_seconds[-1]:
            raise TraceError(f"{self.description}: the duration ends before the last point")

    @property
    def step_seconds(self) -> float:
        """The smallest interval between two points (the trace's resolution)."""
        if len(self.times_seconds) < 2:
            return self.duration_seconds or 1.0
        return min(b - a for a, b in itertools.pairwise(self.times_seconds))

    def load_at(self, t_seconds: float) -> float:
        """The load in force at ``t_seconds`` (the first point's before 0, the last's after)."""
        times = self.times_seconds
        hint = self._last_index[0]
        # fast path: the simulator asks for increasing times
        if times[hint] <= t_seconds and (hint + 1 == len(times) or t_seconds < times[hint + 1]):
            return self.loads[hint]
        index = max(0, bisect.bisect_right(times, t_seconds) - 1)
        self._last_index[0] = index
        return self.loads[index]

    def change_points(self) -> Sequence[float]:
        """Times where the load changes value (for the simulator's event list)."""
        points = []
        for index in range(1, len(self.loads)):
            if self.loads[index] != self.loads[index - 1]:
                points.append(self.times_seconds[index])
        return points

    def with_duration(self, duration_seconds: float) -> LoadTrace:
        """The same points, ending at ``duration_seconds`` (points after it are dropped)."""
        if duration_seconds <= 0:
            raise TraceError(f"duration must be positive, got {duration_seconds:g}s")
        kept = [i for i, t in enumerate(self.times_seconds) if t <= duration_seconds]
        return LoadTrace(
            times_seconds=tuple(self.times_seconds[i] for i in kept),
            loads=tuple(self.loads[i] for i in kept),
            duration_seconds=duration_seconds,
            description=self.description,
            origin=self.origin,
        )


# ------------------------------------------------------------------------------------- CSV


def _parse_timestamp(text: str, *, where: str) -> tuple[float, bool]:
    """Seconds and whether the value was absolute (RFC 3339, or epoch seconds >= 1e9)."""
    stripped = text.strip()
    try:
        value = float(stripped)
    except ValueError:
        try:
            moment = datetime.fromisoformat(stripped.replace("Z", "+00:00"))
        except ValueError as error:
            raise TraceError(
                f"{where}: timestamp {text!r} is neither seconds nor an RFC 3339 time"
            ) from error
        if moment.tzinfo is None:
            raise TraceError(
                f"{where}: timestamp {text!r} has no time zone (add Z or +00:00)"
            ) from None
        return moment.timestamp(), True
    if not math.isfinite(value):
        raise TraceError(f"{where}: timestamp {text!r} is not a finite number")
    return value, value >= 1e9


def read_csv(source: str | Path, *, text: str | None = None) -> LoadTrace:
    """A trace from CSV rows ``timestamp,load`` (file ``source``, or ``text`` named ``source``)."""
    name = str(source)
    if text is None:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as error:
            raise TraceError(f"cannot read trace {name}: {error.strerror or error}") from error
    rows = list(csv.reader(io.StringIO(text)))
    points: list[tuple[float, float]] = []
    absolute: bool | None = None
    for number, row in enumerate(rows, start=1):
        cells = [cell.strip() for cell in row]
        if not cells or all(not cell for cell in cells) or cells[0].startswith("#"):
            continue
        where = f"{name}, line {number}"
        if len(cells) != 2:
            raise TraceError(f"{where}: expected 2 columns (timestamp,load), found {len(cells)}")
        if not points and absolute is None and cells[0].lower() in ("timestamp", "time", "t"):
            continue  # header
        seconds, is_absolute = _parse_timestamp(cells[0], where=where)
        if absolute is None:
            absolute = is_absolute
        elif absolute != is_absolute:
            raise TraceError(f"{where}: mixes absolute and relative timestamps")
        try:
            load = float(cells[1])
        except ValueError as error:
            raise TraceError(f"{where}: load {cells[1]!r} is not a number") from error
        if not math.isfinite(load) or load < 0:
            raise TraceError(f"{where}: load must be a finite number >= 0, got {cells[1]!r}")
        if points and seconds <= points[-1][0]:
            raise TraceError(
                f"{where}: timestamp {cells[0]!r} is not after the previous one "
                "(rows must be in increasing time order)"
            )
        points.append((seconds, load))
    if not points:
        raise TraceError(f"{name}: no data rows (expected lines of timestamp,load)")
    start = points[0][0]
    times = tuple(t - start for t, _ in points)
    step = min((b - a for a, b in itertools.pairwise(times)), default=1.0)
    return LoadTrace(
        times_seconds=times,
        loads=tuple(load for _, load in points),
        duration_seconds=times[-1] + step,
        description=f"CSV {name} ({len(points)} points)",
        origin=datetime.fromtimestamp(start, UTC) if absolute else None,
    )


# ---------------------------------------------------------------------------------- shapes


@dataclass(frozen=True, slots=True)
class Shape:
    """A built-in load shape: its parameters (name -> default text) and its load function."""

    name: str
    summary: str
    defaults: Mapping[str, str]
    function: Callable[[float, Mapping[str, float]], float]

    def help_text(self) -> str:
        params = ",".join(f"{key}={value}" for key, value in self.defaults.items())
        return f"{self.name}:{params}  {self.summary}"


_DURATION_PARAMS = frozenset({"at", "start", "end", "width", "period", "peak_at", "duration"})


def _step(t: float, p: Mapping[str, float]) -> float:
    return p["peak"] if t >= p["at"] else p["base"]


def _ramp(t: float, p: Mapping[str, float]) -> float:
    if t <= p["start"]:
        return p["base"]
    if t >= p["end"]:
        return p["peak"]
    return p["base"] + (p["peak"] - p["base"]) * (t - p["start"]) / (p["end"] - p["start"])


def _spike(t: float, p: Mapping[str, float]) -> float:
    return p["peak"] if p["at"] <= t < p["at"] + p["width"] else p["base"]


def _diurnal(t: float, p: Mapping[str, float]) -> float:
    phase = 2 * math.pi * (t - p["peak_at"]) / p["period"]
    return p["base"] + (p["peak"] - p["base"]) * (1 + math.cos(phase)) / 2


def _sawtooth(t: float, p: Mapping[str, float]) -> float:
    return p["base"] + (p["peak"] - p["base"]) * ((t % p["period"]) / p["period"])


def _mix(value: int) -> int:
    """splitmix64's finaliser: a well-spread 64-bit hash of ``value``."""
    value = (value + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return value ^ (value >> 31)


def _bursty(t: float, p: Mapping[str, float]) -> float:
    """The b-model of Wang, Ailamaki and Faloutsos ("Data mining meets performance evaluation:
    fast algorithms for modeling bursty traffic", ICDE 2002): the total load over the run is
    split in two halves, a fraction ``bias`` to one and ``1 - bias`` to the other (which one is a
    seeded coin), and again within each half, ``levels`` times; the load of a finest interval is
    its share of the total. The mean load above ``base`` is ``mean`` whatever the bias."""
    levels = max(0, round(p["levels"]))
    bins = 2**levels
    index = min(bins - 1, max(0, math.floor(t / p["duration"] * bins)))
    seed = round(p["seed"])
    factor = 1.0
    node = 1
    for level in range(levels):
        bit = (index >> (levels - 1 - level)) & 1
        heavy = _mix(seed * 1_000_003 + node) & 1
        factor *= 2 * (p["bias"] if bit == heavy else 1 - p["bias"])
        node = 2 * node + bit
    return p["base"] + p["mean"] * factor


SHAPES: Mapping[str, Shape] = {
    shape.name: shape
    for shape in (
        Shape(
            "step",
            "base load, then peak from `at` on",
            {"base": "100", "peak": "1000", "at": "5m", "duration": "30m", "resolution": "15s"},
            _step,
        ),
        Shape(
            "ramp",
            "base until `start`, linear to peak at `end`, then peak",
            {
                "base": "100",
                "peak": "1000",
                "start": "5m",
                "end": "35m",
                "duration": "1h",
                "resolution": "15s",
            },
            _ramp,
        ),
        Shape(
            "spike",
            "base load with peak for `width` from `at`",
            {
                "base": "100",
                "peak": "1000",
                "at": "5m",
                "width": "2m",
                "duration": "30m",
                "resolution": "15s",
            },
            _spike,
        ),
        Shape(
            "diurnal",
            "cosine day: peak at `peak_at`, base 12 h away",
            {
                "base": "50",
                "peak": "500",
                "period": "24h",
                "peak_at": "14h",
                "duration": "24h",
                "resolution": "1m",
            },
            _diurnal,
        ),
        Shape(
            "sawtooth",
            "linear rise from base to peak every `period`, then a drop",
            {
                "base": "100",
                "peak": "1000",
                "period": "20m",
                "duration": "1h",
                "resolution": "15s",
            },
            _sawtooth,
        ),
        Shape(
            "bursty",
            "b-model bursts (Wang et al. 2002): mean above base, split by bias, levels deep",
            {
                "base": "50",
                "mean": "200",
                "bias": "0.6",
                "levels": "10",
                "seed": "1",
                "duration": "24h",
                "resolution": "1m",
            },
            _bursty,
        ),
    )
}


def parse_shape(text: str) -> tuple[Shape, dict[str, float]]:
    """``name[:key=value,...]`` -> the shape and its parameters (defaults filled in)."""
    name, _, rest = text.partition(":")
    shape = SHAPES.get(name.strip())
    if shape is None:
        raise TraceError(
            f"unknown trace shape {name.strip()!r}: expected a CSV file or one of "
            + ", ".join(SHAPES)
        )
    given: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or not value.strip():
            raise TraceError(f"shape {shape.name}: parameter {item!r} is not key=value")
        if key not in shape.defaults:
            raise TraceError(
                f"shape {shape.name}: unknown parameter {key!r} "
                f"(known: {', '.join(shape.defaults)})"
            )
        given[key] = value.strip()
    params: dict[str, float] = {}
    for key, default in shape.defaults.items():
        value = given.get(key, default)
        if key in _DURATION_PARAMS or key == "resolution":
            try:
                params[key] = parse_duration(value)
            except TraceError as error:
                raise TraceError(f"shape {shape.name}: {key}: {error}") from error
        else:
            try:
                params[key] = float(value)
            except ValueError as error:
                raise TraceError(
                    f"shape {shape.name}: {key} must be a number, got {value!r}"
                ) from error
        if not math.isfinite(params[key]) or params[key] < 0:
            raise TraceError(f"shape {shape.name}: {key} must be >= 0, got {value!r}")
    for key in ("duration", "resolution", "period"):
        if key in params and params[key] <= 0:
            raise TraceError(f"shape {shape.name}: {key} must be positive")
    if shape.name == "ramp" and params["end"] <= params["start"]:
        raise TraceError("shape ramp: end must be after start")
    if "bias" in params and not 0.5 <= params["bias"] <= 1:
        raise TraceError(f"shape {shape.name}: bias must be in [0.5, 1], got {params['bias']:g}")
    if "levels" in params and params["levels"] > 20:
        raise TraceError(f"shape {shape.name}: levels must be at most 20")
    return shape, params


def _canonical(shape: Shape, params: Mapping[str, float]) -> str:
    def show(key: str, value: float) -> str:
        if key in _DURATION_PARAMS or key == "resolution":
            return f"{value:g}s"
        return f"{value:g}"

    return f"{shape.name}:" + ",".join(f"{k}={show(k, v)}" for k, v in params.items())


def shape_trace(text: str, *, duration_seconds: float | None = None) -> LoadTrace:
    """The trace of a named shape (``duration_seconds`` overrides the shape's ``duration``)."""
    shape, params = parse_shape(text)
    if duration_seconds is not None:
        if duration_seconds <= 0:
            raise TraceError(f"duration must be positive, got {duration_seconds:g}s")
        params["duration"] = duration_seconds
    resolution = params["resolution"]
    count = max(1, math.ceil(params["duration"] / resolution - 1e-9))
    times = [index * resolution for index in range(count)]
    return LoadTrace(
        times_seconds=tuple(times),
        loads=tuple(shape.function(t, params) for t in times),
        duration_seconds=params["duration"],
        description=_canonical(shape, params),
    )


def points_trace(
    points: Iterable[tuple[float, float]],
    *,
    duration_seconds: float,
    description: str,
    origin: datetime | None = None,
) -> LoadTrace:
    """A trace from ``(t, load)`` points with ``t`` relative to the first point."""
    pairs = list(points)
    if not pairs:
        raise TraceError(f"{description}: no points")
    start = pairs[0][0]
    return LoadTrace(
        times_seconds=tuple(t - start for t, _ in pairs),
        loads=tuple(load for _, load in pairs),
        duration_seconds=duration_seconds,
        description=description,
        origin=origin,
    )
