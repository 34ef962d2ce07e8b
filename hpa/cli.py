"""The ``hpa`` command line.

One console script with a subcommand per role. Each role registers its subcommand here with a
function that adds its flags and a function that runs it; flags reuse upstream names.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hpa import __version__

DESCRIPTION = """\
hpa: a Kubernetes autoscaling stack.

A HorizontalPodAutoscaler controller for autoscaling/v2 objects, a Prometheus-backed metrics
adapter, a vertical autoscaler, and an offline simulator that replays load in virtual time.
"""


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
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
    """``hpa vpa admission``: the vertical autoscaler's parts (``hpa.app.webhook``)."""
    from hpa.app import webhook

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
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    handler = getattr(args, "handler", None)
    if handler is None:  # a subcommand without a handler is a programming error
        parser.error(f"command {args.command!r} has no handler")
    result: int = handler(args)
    return result
