"""Process logging: structlog events as JSON lines (or a console line) on stderr, for every role.

Upstream counterpart: ``k8s.io/component-base/logs`` (``--logging-format=json|text``, ``-v``):
every kube component logs through one configured backend from its first line. Ours is structlog:
``configure_logging`` is called once by the command line before a role's handler runs (so a
settings error is already a JSON line), and the standard library's ``logging`` (aiohttp, asyncio)
goes through the same renderer, so every line on stderr has one shape.

Each line carries ``timestamp`` (RFC 3339, UTC), ``level``, ``logger`` (the name given to
``structlog.get_logger``) and ``event``, plus the event's bound keys.

Deliberate deviations: ``--log-format``/``--log-level`` instead of klog's ``--logging-format`` and
``-v``; the levels are debug, info, warning and error.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, Final, Literal, TextIO

import structlog

__all__ = [
    "INPUT_ERRORS",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "LogFormat",
    "LogLevel",
    "add_log_flags",
    "configure_logging",
    "configure_logging_from_args",
]

LogLevel = Literal["debug", "info", "warning", "error"]
LogFormat = Literal["json", "console"]
LOG_LEVELS: Final[tuple[LogLevel, ...]] = ("debug", "info", "warning", "error")
LOG_FORMATS: Final[tuple[LogFormat, ...]] = ("json", "console")
INPUT_ERRORS: Final = (ValueError, OSError)
"""What a role's ``main`` reports as a mistake in its input, as one ``invalid_input`` event naming
it and exit code 2: a bad value (``ValueError``: flags, durations, manifests, rule files,
kubeconfigs) or a file that cannot be read (``OSError``). Anything else is a bug: ``hpa.cli.main``
logs it with its traceback and exits 1."""
DEFAULT_LOGGER_NAME: Final = "hpa"
"""The ``logger`` of an event whose logger was made without a name."""


class _NamedPrintLogger(structlog.PrintLogger):
    """structlog's print logger with the name ``structlog.get_logger(name)`` was called with."""

    def __init__(self, file: TextIO, name: str) -> None:
        super().__init__(file)
        self.name = name


class _NamedPrintLoggerFactory:
    def __init__(self, file: TextIO | None) -> None:
        self._file = file

    def __call__(self, *args: Any) -> _NamedPrintLogger:
        name = str(args[0]) if args and args[0] else DEFAULT_LOGGER_NAME
        # resolved at call time, so a test's redirected stderr is honoured
        return _NamedPrintLogger(self._file or sys.stderr, name)


class _StreamHandler(logging.Handler):
    """The standard library's records, rendered by structlog, on ``file`` or on the stderr of
    the moment (so a test's redirected stderr is honoured, and a closed one never written)."""

    def __init__(self, file: TextIO | None) -> None:
        super().__init__()
        self._file = file

    def emit(self, record: logging.LogRecord) -> None:
        try:
            (self._file or sys.stderr).write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must never raise into the caller
            self.handleError(record)


def _add_logger_name(
    logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    record = event_dict.get("_record")
    name = record.name if record is not None else getattr(logger, "name", DEFAULT_LOGGER_NAME)
    event_dict.setdefault("logger", name)
    return event_dict


def _console_line(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> str:
    """``<timestamp> <level> <logger>: <event> key=value ...``: one line for a terminal."""
    fields = dict(event_dict)
    head = (
        f"{fields.pop('timestamp', '')} {str(fields.pop('level', '')).upper():<7} "
        f"{fields.pop('logger', '')}: {fields.pop('event', '')}"
    )
    rest = " ".join(f"{key}={_console_value(value)}" for key, value in fields.items())
    return f"{head} {rest}".rstrip()


def _console_value(value: Any) -> str:
    """A value as itself, or quoted (``repr``: a newline becomes ``\\n``) when it has spaces."""
    text = str(value)
    return repr(text) if any(c.isspace() for c in text) or not text else text


def _shared_processors() -> list[Any]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
    ]


def _renderer(log_format: str) -> list[Any]:
    if log_format == "json":
        return [structlog.processors.JSONRenderer()]
    if log_format == "console":
        return [_console_line]
    raise ValueError(f"--log-format: {log_format!r} is not one of {', '.join(LOG_FORMATS)}")


def _level_number(level: str) -> int:
    if level not in LOG_LEVELS:
        raise ValueError(f"--log-level: {level!r} is not one of {', '.join(LOG_LEVELS)}")
    return logging.getLevelNamesMapping()[level.upper()]


def configure_logging(
    level: str = "info", *, log_format: str = "json", file: TextIO | None = None
) -> None:
    """Log every event at ``level`` and above to ``file`` (default: stderr) in ``log_format``;
    the standard library's ``logging`` records go through the same renderer. Called once per
    process (by ``hpa.cli.main``), and by tests that read the lines."""
    number = _level_number(level)
    renderer = _renderer(log_format)
    shared = _shared_processors()
    structlog.configure(
        processors=[*shared, *renderer],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        logger_factory=_NamedPrintLoggerFactory(file),
        cache_logger_on_first_use=False,
    )
    handler = _StreamHandler(file)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(number, logging.INFO))  # libraries' debug chatter stays out


def add_log_flags(
    parser: argparse.ArgumentParser | Any,
    *,
    default_level: LogLevel = "info",
    default_format: LogFormat = "json",
) -> None:
    """``--log-level`` and ``--log-format`` on a role's parser (or argument group); servers keep
    the JSON default, command-line tools pass ``default_format="console"``."""
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=default_level,
        help=f"log events at this level and above (default {default_level})",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=default_format,
        help=f"json lines or one console line per event (default {default_format})",
    )


def configure_logging_from_args(
    args: argparse.Namespace | Mapping[str, Any], *, file: TextIO | None = None
) -> None:
    """:func:`configure_logging` from parsed ``--log-level``/``--log-format`` (JSON at ``info``
    for a command without them)."""
    values = vars(args) if isinstance(args, argparse.Namespace) else args
    configure_logging(
        str(values.get("log_level") or "info"),
        log_format=str(values.get("log_format") or "json"),
        file=file,
    )
