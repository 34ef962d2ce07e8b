"""``hpa.kube.logs``: one logging setup for every role."""

from __future__ import annotations

import argparse
import io
import logging
from collections.abc import Iterator

import orjson
import pytest
import structlog

from hpa.kube.logs import add_log_flags, configure_logging, configure_logging_from_args


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    for handler in list(logging.getLogger().handlers):
        logging.getLogger().removeHandler(handler)


def test_json_lines_carry_level_event_timestamp_and_the_logger_name() -> None:
    out = io.StringIO()
    configure_logging("info", file=out)
    structlog.get_logger("hpa.app.controller").info("controller_starting", pid=1)
    structlog.get_logger().warning("unnamed")
    first, second = (orjson.loads(line) for line in out.getvalue().splitlines())
    assert first["logger"] == "hpa.app.controller"
    assert first["event"] == "controller_starting"
    assert first["level"] == "info"
    assert first["timestamp"].endswith("Z")
    assert first["pid"] == 1
    assert second["logger"] == "hpa"


def test_the_standard_library_logs_through_the_same_renderer() -> None:
    out = io.StringIO()
    configure_logging("warning", file=out)
    logging.getLogger("aiohttp.server").error("Error handling request")
    logging.getLogger("aiohttp.access").info("hidden below warning")
    [event] = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert event == {
        "event": "Error handling request",
        "level": "error",
        "logger": "aiohttp.server",
        "timestamp": event["timestamp"],
    }


def test_the_level_filters_and_console_lines_stay_one_line() -> None:
    out = io.StringIO()
    configure_logging("warning", log_format="console", file=out)
    log = structlog.get_logger("hpa.sim")
    log.info("hidden")
    log.error("invalid_input", error="a.yaml: line 1\nline 2")
    [line] = out.getvalue().splitlines()
    assert " ERROR   hpa.sim: invalid_input error='a.yaml: line 1\\nline 2'" in line


def test_unknown_levels_and_formats_are_refused() -> None:
    with pytest.raises(ValueError, match="--log-level: 'loud'"):
        configure_logging("loud")
    with pytest.raises(ValueError, match="--log-format: 'xml'"):
        configure_logging("info", log_format="xml")


def test_flags_default_per_role_and_configure_from_args() -> None:
    parser = argparse.ArgumentParser()
    add_log_flags(parser, default_level="error", default_format="console")
    args = parser.parse_args([])
    assert (args.log_level, args.log_format) == ("error", "console")
    out = io.StringIO()
    configure_logging_from_args(parser.parse_args(["--log-format=json"]), file=out)
    structlog.get_logger("x").error("shown")
    assert orjson.loads(out.getvalue())["event"] == "shown"
