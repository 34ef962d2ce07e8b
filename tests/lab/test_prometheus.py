"""The lab's Prometheus: config, start/stop, reload, queries, backfill, series deletion."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.lab.prometheus import (
    PROMTOOL_BINARY,
    PrometheusError,
    PrometheusServer,
    render_config,
)


def history(now_seconds: int) -> str:
    """OpenMetrics text: a gauge per pod, one sample a minute from 2 h to 1 h ago."""
    lines = ["# HELP lab_history_rps Past load.", "# TYPE lab_history_rps gauge"]
    for minute in range(61):
        timestamp = now_seconds - 7200 + 60 * minute
        lines.append(f'lab_history_rps{{namespace="shop",pod="a"}} {minute} {timestamp}')
        lines.append(f'lab_history_rps{{namespace="shop",pod="b"}} {2 * minute} {timestamp}')
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    with PrometheusServer() as server:
        yield server


def test_the_generated_config_passes_promtool(tmp_path: Path) -> None:
    text = render_config(
        {"workloads": ["127.0.0.1:9100"], "adapter": ["127.0.0.1:6443", "127.0.0.1:6444"]},
        scrape_interval_seconds=1,
    )
    config_path = tmp_path / "prometheus.yml"
    config_path.write_text(text)

    check = subprocess.run(
        [PROMTOOL_BINARY, "check", "config", str(config_path)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert check.returncode == 0, check.stdout + check.stderr
    config = yaml.safe_load(text)
    assert config["global"]["scrape_interval"] == "1s"
    assert config["global"]["evaluation_interval"] == "1s"
    assert [job["honor_labels"] for job in config["scrape_configs"]] == [True, True]


def test_sub_second_intervals_are_written_in_milliseconds() -> None:
    config = yaml.safe_load(render_config({}, scrape_interval_seconds=0.5))

    assert config["global"]["scrape_interval"] == "500ms"


def test_the_server_answers_queries_on_a_loopback_port(prometheus: PrometheusServer) -> None:
    assert prometheus.url.startswith("http://127.0.0.1:")
    (sample,) = prometheus.query("1 + 1")
    assert sample.value == 2
    (series,) = prometheus.query_range(
        "vector(3)", start_seconds=1000, end_seconds=1010, step_seconds=5
    )
    assert series.points == [(1000, 3), (1005, 3), (1010, 3)]


def test_a_bad_query_is_an_error_with_prometheus_message(prometheus: PrometheusServer) -> None:
    with pytest.raises(PrometheusError, match="bad_data"):
        prometheus.query("sum(")


def test_an_added_target_is_scraped_after_a_reload(prometheus: PrometheusServer) -> None:
    # Prometheus scrapes itself; its discovery sends new targets within ~5 s.
    prometheus.add_target("self", f"127.0.0.1:{prometheus.port}")

    prometheus.wait_for_targets(timeout_seconds=15)

    (sample,) = prometheus.query('up{job="self"}')
    assert sample.value == 1
    assert yaml.safe_load(prometheus.config_path.read_text())["scrape_configs"][0][
        "static_configs"
    ] == [{"targets": [f"127.0.0.1:{prometheus.port}"]}]
    assert prometheus.series(['up{job="self"}']) == [
        {"__name__": "up", "instance": f"127.0.0.1:{prometheus.port}", "job": "self"}
    ]


async def test_the_async_helpers_do_not_block_the_loop(prometheus: PrometheusServer) -> None:
    (sample,) = await prometheus.query_async("vector(7)")
    (series,) = await prometheus.query_range_async(
        "vector(7)", start_seconds=0, end_seconds=2, step_seconds=1
    )
    labels = await prometheus.series_async(["up"])

    assert sample.value == 7
    assert series.points == [(0, 7), (1, 7), (2, 7)]
    assert all(label_set["__name__"] == "up" for label_set in labels)


def test_backfilled_history_is_queryable_then_deletable(tmp_path: Path) -> None:
    now_seconds = int(time.time())
    server = PrometheusServer(workdir=tmp_path / "prometheus")
    server.backfill_openmetrics(history(now_seconds))  # before start: blocks are just there
    with server:
        (a,) = server.query_range(
            'lab_history_rps{pod="a"}',
            start_seconds=now_seconds - 7200,
            end_seconds=now_seconds - 3600,
            step_seconds=600,
        )
        assert [value for _, value in a.points] == [0, 10, 20, 30, 40, 50, 60]
        assert a.labels == {"__name__": "lab_history_rps", "namespace": "shop", "pod": "a"}

        server.delete_series(['lab_history_rps{pod="a"}'])
        remaining = server.series(
            ["lab_history_rps"], start_seconds=now_seconds - 8000, end_seconds=now_seconds
        )
        assert [labels["pod"] for labels in remaining] == ["b"]


def test_backfill_into_a_running_server_restarts_it_on_the_same_port(
    prometheus: PrometheusServer,
) -> None:
    now_seconds = int(time.time())
    port = prometheus.port

    prometheus.backfill_openmetrics(history(now_seconds))

    assert prometheus.port == port
    samples = prometheus.query("sum(lab_history_rps)", at_seconds=now_seconds - 3600)
    assert [sample.value for sample in samples] == [60 + 120]


def test_a_bad_backfill_is_reported(prometheus: PrometheusServer) -> None:
    with pytest.raises(PrometheusError, match="promtool backfill failed"):
        prometheus.backfill_openmetrics("this is not openmetrics\n")


def test_stop_ends_the_process_and_removes_its_temporary_directory() -> None:
    server = PrometheusServer()
    server.start()
    workdir, port = server.workdir, server.port
    assert (workdir / "data").is_dir()

    server.stop()

    assert not server.running
    assert not workdir.exists()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_waiting_for_an_unreachable_target_times_out(tmp_path: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{unused.getsockname()[1]}"  # bound, never listening
        with (
            PrometheusServer({"nothing": [address]}, workdir=tmp_path / "p") as server,
            pytest.raises(PrometheusError, match="targets not up"),
        ):
            server.wait_for_targets(timeout_seconds=1)


def test_a_missing_binary_points_at_make_system_deps() -> None:
    with pytest.raises(PrometheusError, match="make system-deps"):
        PrometheusServer(binary="/nonexistent/prometheus").start()
