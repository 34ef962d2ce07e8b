"""``--from-prometheus``: history replayed through the metrics layer's range query, against a
real Prometheus holding backfilled series (``promtool tsdb create-blocks-from openmetrics``)."""

from __future__ import annotations

import asyncio
import csv
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hpa.cli import main
from hpa.sim.history import parse_time_seconds, prometheus_trace
from hpa.sim.scenarios import hpa_manifest
from hpa.sim.trace import TraceError
from tests.lab.prometheus import PrometheusServer

STEP_SECONDS = 15
POINTS = 121  # 30 minutes


def history(start_seconds: int) -> str:
    """Two pods' request rates: 5 + 5 req/s, then 500 + 500 from minute 10 on."""
    lines = ["# HELP web_rps Requests per second.", "# TYPE web_rps gauge"]
    for index in range(POINTS):
        timestamp = start_seconds + STEP_SECONDS * index
        value = 5 if index < 40 else 500
        lines.append(f'web_rps{{pod="a"}} {value} {timestamp}')
        lines.append(f'web_rps{{pod="b"}} {value} {timestamp}')
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, int]]:
    start = (int(time.time()) - 4 * 3600) // 60 * 60
    server = PrometheusServer(workdir=tmp_path_factory.mktemp("prometheus"))
    server.backfill_openmetrics(history(start))
    with server:
        yield server, start


def test_the_range_query_becomes_the_trace_summed_over_series(
    backfilled: tuple[PrometheusServer, int],
) -> None:
    server, start = backfilled
    end = start + STEP_SECONDS * (POINTS - 1)

    trace = asyncio.run(
        prometheus_trace(
            server.url,
            "web_rps",
            start_seconds=start,
            end_seconds=end,
            step_seconds=STEP_SECONDS,
        )
    )

    assert trace.times_seconds[:2] == (0, 15)
    assert len(trace.loads) == POINTS
    assert trace.loads[39:41] == (10, 1000)  # two series summed
    assert "sum of 2 series" in trace.description
    assert trace.duration_seconds == POINTS * STEP_SECONDS
    assert trace.origin is not None
    assert trace.origin.timestamp() == start


def test_hpa_simulate_replays_prometheus_history(
    backfilled: tuple[PrometheusServer, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, start = backfilled
    manifest = tmp_path / "web.yaml"
    manifest.write_text(hpa_manifest("web"))
    out = tmp_path / "out"

    code = main(
        [
            "simulate",
            str(manifest),
            "--from-prometheus",
            server.url,
            "--query",
            "sum(web_rps)",
            "--start",
            str(start),
            "--end",
            str(start + STEP_SECONDS * (POINTS - 1)),
            "--step",
            "15s",
            "--no-plot",
            "--output",
            str(out),
        ]
    )

    assert code == 0, capsys.readouterr().err
    with (out / "web.timeline.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert float(rows[0]["load_rps"]) == 10
    # the step at minute 10 is seen by the sync 15 s later: 1 pod -> 4 (legacy limit) and on
    events = [(float(r["t_seconds"]), r["event"]) for r in rows if r["event"]]
    assert events[0] == (615.0, "scale 1 -> 4")
    assert rows[-1]["replicas"] == "40"  # 1000 req/s at 25 per pod
    assert "Prometheus" in capsys.readouterr().out


def test_an_empty_query_and_a_dead_prometheus_are_clear_errors(
    backfilled: tuple[PrometheusServer, int],
) -> None:
    server, start = backfilled
    with pytest.raises(TraceError, match="no finite points"):
        asyncio.run(
            prometheus_trace(
                server.url,
                "nothing_here",
                start_seconds=start,
                end_seconds=start + 60,
                step_seconds=15,
            )
        )
    with pytest.raises(TraceError, match="Prometheus range query failed"):
        asyncio.run(
            prometheus_trace(
                "http://127.0.0.1:9",
                "up",
                start_seconds=start,
                end_seconds=start + 60,
                step_seconds=15,
                timeout_seconds=2,
            )
        )


def test_times_are_unix_seconds_or_rfc3339() -> None:
    assert parse_time_seconds("1767225600") == 1767225600
    assert parse_time_seconds("2026-01-01T00:00:00Z") == 1767225600
    with pytest.raises(TraceError, match="neither Unix seconds nor RFC 3339"):
        parse_time_seconds("last tuesday")
