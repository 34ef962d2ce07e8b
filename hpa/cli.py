"""The ``hpa`` command line.

One console script with a subcommand per role. Each role registers its subcommand here with a
function that adds its flags and a function that runs it; flags reuse upstream names.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

import structlog

from hpa import __version__
from hpa.kube.logs import configure_logging, configure_logging_from_args
from hpa.kube.runtime import map_large_blocks

log = structlog.get_logger("hpa.cli")

DESCRIPTION = """\
hpa: a Kubernetes autoscaling stack.

A HorizontalPodAutoscaler controller for autoscaling/v2 objects, a Prometheus-backed metrics
adapter, a vertical autoscaler, and an offline simulator that replays load in virtual time.
"""


class CommandParser(argparse.ArgumentParser):
    """A parser whose mistakes (an unknown flag, a bad value) are one log line and exit 2: JSON
    for a server command (its ``--log-format`` default), a console line otherwise."""

    def error(self, message: str) -> NoReturn:
        configure_logging(log_format=str(self.get_default("log_format") or "console"))
        log.error("invalid_arguments", command=self.prog, error=message, help=f"{self.prog} -h")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every registered subcommand."""
    parser: argparse.ArgumentParser = CommandParser(
        prog="hpa",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hpa {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_controller_command(commands)
    _add_explain_command(commands)
    _add_adapter_command(commands)
    _add_vpa_commands(commands)
    _add_simulator_commands(commands)
    _add_test_command(commands)
    return parser


def _add_controller_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hpa controller``: the horizontal controller (``hpa.app.controller``)."""
    from hpa.app import controller

    parser = commands.add_parser(
        "controller",
        help="run the HorizontalPodAutoscaler controller",
        description="Reconcile autoscaling/v2 HorizontalPodAutoscalers (upstream flag names).",
    )
    controller.add_flags(parser)
    parser.set_defaults(handler=controller.main)


def _add_explain_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hpa explain NAMESPACE/NAME``: one HPA's decision, explained (``hpa.app.explain``)."""
    from hpa.app import explain

    explain.add_command(commands)


def _add_adapter_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hpa adapter``: the metrics API server (``adapter.server.cli``)."""
    from adapter.server import cli as adapter_cli

    adapter_cli.add_command(commands)


def _add_vpa_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hpa vpa admission``, ``hpa vpa recommender`` and ``hpa vpa updater``: the vertical
    autoscaler's parts (``hpa.app.webhook``, ``hpa.app.recommender``, ``hpa.app.updater``)."""
    from hpa.app import recommender, updater, webhook

    vpa = commands.add_parser(
        "vpa",
        help="run a part of the vertical pod autoscaler",
        description="The vertical pod autoscaler (autoscaling.k8s.io/v1 VerticalPodAutoscalers).",
    )
    parts = vpa.add_subparsers(dest="vpa_command", metavar="PART", required=True)
    admission = parts.add_parser(
        "admission",
        help="serve the admission webhook that sets new pods' requests",
        description=(
            "Serve the mutating admission webhook: new pods of a VPA-managed workload get the "
            "VPA's capped recommendation as requests (upstream flag names)."
        ),
    )
    webhook.add_flags(admission)
    admission.set_defaults(handler=webhook.main)
    recommender_parser = parts.add_parser(
        "recommender",
        help="compute VPA recommendations from live usage, history and OOM kills",
        description=(
            "Run the VPA recommender: recommendations and conditions in each VPA's status, "
            "checkpoints, aware of the HPAs (upstream flag names)."
        ),
    )
    recommender.add_flags(recommender_parser)
    recommender_parser.set_defaults(handler=recommender.main)
    updater_part = parts.add_parser(
        "updater",
        help="apply VPA recommendations to running pods by eviction or in-place resize",
        description=(
            "Run the VPA updater: pods whose requests are far from their VPA's recommendation "
            "are resized in place or evicted, within the eviction tolerance, PodDisruptionBudgets "
            "and the cluster's free capacity (upstream flag names)."
        ),
    )
    updater.add_flags(updater_part)
    updater_part.set_defaults(handler=updater.main)


def _add_simulator_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hpa simulate`` and ``hpa demo``: the simulator (``hpa.sim.commands``)."""
    from hpa.sim import commands as simulator

    simulator.add_simulate_parser(commands)
    simulator.add_demo_parser(commands)


def _add_test_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hpa test PATH...``: declarative HPA test cases (``hpa.testing.command``)."""
    from hpa.testing import command as test_command

    test_command.add_test_parser(commands)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the process exit code."""
    map_large_blocks()  # a long-running role's resident set follows its live blocks
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    configure_logging_from_args(args)
    if extras:  # the root parser finds them; the chosen command's log format reports them
        command = " ".join(
            ["hpa", *(w for w in (args.command, getattr(args, "vpa_command", None)) if w)]
        )
        log.error(
            "invalid_arguments",
            command=command,
            error=f"unrecognized arguments: {' '.join(extras)}",
            help=f"{command} -h",
        )
        return 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    handler = getattr(args, "handler", None)
    if handler is None:  # a subcommand without a handler is a programming error
        parser.error(f"command {args.command!r} has no handler")
    try:
        result: int = handler(args)
    except Exception:  # a role's own mistakes are one line from its main; this is a bug
        log.exception("command_failed", command=args.command)
        return 1
    return result
