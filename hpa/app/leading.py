"""What every leader-elected role shares: its ``--leader-elect*`` flags, running a job only while
the Lease is held, and the guard every task of a role's ``TaskGroup`` runs under.

Upstream counterpart: client-go ``tools/leaderelection`` as kube-controller-manager and the VPA
recommender use it (``--leader-elect``, ``--leader-elect-lease-duration`` 15s,
``--leader-elect-renew-deadline`` 10s, ``--leader-elect-retry-period`` 2s,
``--leader-elect-resource-namespace``, ``--leader-elect-resource-name``; losing the Lease ends
the process).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import ssl
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from aiohttp import web

from hpa.app.signals import StopSignals
from hpa.controllers.settings import duration_flag, switch_flag
from hpa.kube.client import KubeClient
from hpa.kube.clock import Clock
from hpa.kube.leader import KubeLeaseStore, LeaderElectionSettings, LeaderElector
from hpa.kube.logs import INPUT_ERRORS
from hpa.kube.serving import TLSSite

__all__ = [
    "LeaderElectionFlags",
    "LeaseLostError",
    "add_leader_election_flags",
    "build_elector",
    "guarded",
    "leader_election_from_args",
    "role_main",
    "run_role",
    "run_tasks",
    "run_while_leading",
    "serve",
]

log = structlog.get_logger("hpa.app.leading")


class LeaseLostError(Exception):
    """The Lease was lost; the process ends (like kube-controller-manager)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionFlags:
    """A role's ``--leader-elect*`` flags."""

    leader_elect: bool = True
    """``--leader-elect``: act only while holding the Lease."""
    lease_duration_seconds: int = 15
    """``--leader-elect-lease-duration`` (15s)."""
    renew_deadline_seconds: float = 10.0
    """``--leader-elect-renew-deadline`` (10s)."""
    retry_period_seconds: float = 2.0
    """``--leader-elect-retry-period`` (2s)."""
    resource_namespace: str = "kube-system"
    """``--leader-elect-resource-namespace``."""
    resource_name: str = ""
    """``--leader-elect-resource-name``: the Lease, one per role."""


def add_leader_election_flags(
    group: argparse._ArgumentGroup | argparse.ArgumentParser, defaults: LeaderElectionFlags
) -> None:
    d = defaults
    group.add_argument(
        "--leader-elect",
        type=switch_flag,
        default=d.leader_elect,
        metavar="BOOL",
        help=f"act only while holding the Lease (default {str(d.leader_elect).lower()})",
    )
    group.add_argument(
        "--leader-elect-lease-duration",
        type=duration_flag,
        default=float(d.lease_duration_seconds),
        metavar="DURATION",
        help="Lease duration (default 15s)",
    )
    group.add_argument(
        "--leader-elect-renew-deadline",
        type=duration_flag,
        default=d.renew_deadline_seconds,
        metavar="DURATION",
        help="how long the leader retries renewing before it stops (default 10s)",
    )
    group.add_argument(
        "--leader-elect-retry-period",
        type=duration_flag,
        default=d.retry_period_seconds,
        metavar="DURATION",
        help="pause between Lease attempts (default 2s)",
    )
    group.add_argument(
        "--leader-elect-resource-namespace",
        default=d.resource_namespace,
        help=f"namespace of the Lease (default {d.resource_namespace})",
    )
    group.add_argument(
        "--leader-elect-resource-name",
        default=d.resource_name,
        help=f"name of the Lease (default {d.resource_name})",
    )


def leader_election_from_args(args: argparse.Namespace) -> LeaderElectionFlags:
    return LeaderElectionFlags(
        leader_elect=args.leader_elect,
        lease_duration_seconds=int(args.leader_elect_lease_duration),
        renew_deadline_seconds=args.leader_elect_renew_deadline,
        retry_period_seconds=args.leader_elect_retry_period,
        resource_namespace=args.leader_elect_resource_namespace,
        resource_name=args.leader_elect_resource_name,
    )


def build_elector(
    flags: LeaderElectionFlags, client: KubeClient, *, clock: Clock, identity: str | None = None
) -> LeaderElector | None:
    """The elector for ``flags`` (None with ``--leader-elect=false``)."""
    if not flags.leader_elect:
        return None
    return LeaderElector(
        KubeLeaseStore(client, flags.resource_namespace, flags.resource_name),
        LeaderElectionSettings(
            identity=identity or f"{socket.gethostname()}_{uuid.uuid4()}",
            lease_duration_seconds=flags.lease_duration_seconds,
            renew_deadline_seconds=flags.renew_deadline_seconds,
            retry_period_seconds=flags.retry_period_seconds,
        ),
        clock=clock,
    )


async def _first_of(task: asyncio.Task[None], waiting: Coroutine[Any, Any, Any]) -> None:
    other = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait({task, other}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        other.cancel()
        await asyncio.gather(other, return_exceptions=True)


def _log_unexpected_exit(task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("task_exited_unexpectedly", task=task.get_name(), error=repr(error))


async def run_while_leading(
    elector: LeaderElector | None, job: Callable[[], Awaitable[None]], *, name: str
) -> None:
    """Run ``job`` (as task ``name``) once the Lease is held, until it ends or the Lease is lost
    (``LeaseLostError``); without an elector, just run it."""
    if elector is None:
        await job()
        return
    election = asyncio.create_task(elector.run(), name="leader-election")
    election.add_done_callback(_log_unexpected_exit)
    try:
        await _first_of(election, elector.leading.wait())
        if election.done():
            raise LeaseLostError("leader election ended before the Lease was acquired")
        working = asyncio.create_task(_as_none(job), name=name)
        try:
            await asyncio.wait({election, working}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            working.cancel()
            await asyncio.gather(working, return_exceptions=True)
        if election.done():
            raise LeaseLostError(f"{elector.settings.identity} lost the Lease")
    finally:
        election.cancel()
        await asyncio.gather(election, return_exceptions=True)


async def _as_none(job: Callable[[], Awaitable[None]]) -> None:
    await job()


async def guarded(name: str, job: Callable[[], Awaitable[None]], *, quiet: bool = False) -> None:
    """Run ``job``; log an unexpected exit (returning, unless ``quiet``, or raising), never
    swallow cancellation."""
    try:
        await job()
    except asyncio.CancelledError:
        raise
    except Exception as error:
        log.error("task_failed", task=name, error=repr(error))
        raise
    if not quiet:
        log.warning("task_exited", task=name)


async def serve(
    app: web.Application, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None
) -> None:
    """Serve ``app`` on ``host:port`` (all interfaces when ``host`` is empty) until cancelled."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site: web.BaseSite
        if ssl_context is None:
            site = web.TCPSite(runner, host or None, port)
        else:
            site = TLSSite(runner, host, port, ssl_context=ssl_context)
        await site.start()
        log.info("listening", host=host or "*", port=port, tls=ssl_context is not None)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


async def run_role(
    role: str, run: Callable[[], Awaitable[None]], *, starting: Mapping[str, Any] | None = None
) -> int:
    """Run a role's ``run`` until SIGTERM/SIGINT (exit 0) or a lost Lease (exit 1). The
    ``<role>_starting`` line (with ``starting``'s fields) is logged once the signal handlers are
    in place, so a supervisor that stops the process after that line always gets a clean stop."""
    signals = StopSignals()
    log.info(f"{role}_starting", **(starting or {}))
    lost_lease = False
    try:
        try:
            await run()
        except* LeaseLostError as group:
            lost_lease = True
            log.error(f"{role}_lost_lease", error=str(group.exceptions[0]))
    except asyncio.CancelledError:
        if not signals.requested:
            raise
        log.info(f"{role}_stopped")
    return 1 if lost_lease else 0


S = TypeVar("S")


def role_main(
    args: argparse.Namespace,
    settings_from_args: Callable[[argparse.Namespace], S],
    run: Callable[[S], Coroutine[Any, Any, int]],
) -> int:
    """A role's subcommand handler: its settings, then ``run`` until it stops. A mistake in the
    flags or in the files they name (kubeconfig, rule file, certificates) is one
    ``invalid_input`` line and exit 2."""
    try:
        return asyncio.run(run(settings_from_args(args)))
    except INPUT_ERRORS as error:
        log.error("invalid_input", error=str(error))
        return 2


async def run_tasks(jobs: Sequence[tuple[str, Callable[[], Awaitable[None]]]]) -> None:
    """One ``TaskGroup`` running every named job under :func:`guarded`."""
    async with asyncio.TaskGroup() as group:
        for name, job in jobs:
            group.create_task(guarded(name, job), name=name)
