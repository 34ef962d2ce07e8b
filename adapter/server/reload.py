"""The current providers, rebuilt from the rule file on change or SIGHUP without dropping requests.

Upstream counterpart: none (prometheus-adapter reads ``--config`` once; a change needs a restart).
The pattern is Prometheus's ``--web.enable-lifecycle``/SIGHUP reload with
``prometheus_config_last_reload_successful`` and ``..._success_timestamp_seconds``.

How: a reload reads the file, compiles the rules (``RuleConfigError`` → failure) and builds new
providers on a fresh metrics registry, relists them once (``RelistError`` → failure), then swaps
the reference. What else the file configures (its ``routes:`` section, ``adapter.server.router``)
is checked against the relisted providers by the ``adopt`` hook and put in service in the same
step, so routes and rules always come from one file. Requests read ``current`` once and finish on
the providers they started with; the Prometheus client is shared and stays open. A failed reload
keeps the previous providers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry

from adapter.providers import MetricProviders, RelistError
from adapter.rules import RuleConfig, RuleConfigError, load_rules
from adapter.server.ports import Clock
from adapter.server.telemetry import ProviderCollector, ServerMetrics

log = structlog.get_logger(__name__)

BuildProviders = Callable[[RuleConfig, CollectorRegistry], MetricProviders]
Adopt = Callable[[RuleConfig, MetricProviders | None], Callable[[], None]]
"""Checks what else a rule file configures (its ``routes``) against the new providers (None at
start, before the first relist): raises ``RuleConfigError`` to refuse the file, or returns the
step that puts it in service, run together with the swap of the providers."""


async def sleep_unless(event: asyncio.Event, clock: Clock, seconds: float) -> None:
    """Sleep ``seconds`` on ``clock``, or less if ``event`` is set meanwhile (not cleared)."""
    waiter = asyncio.ensure_future(event.wait())
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiter, sleeper):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class ReloadError(Exception):
    pass


class ReloadingMetrics:
    """``MetricsSource``: ``current`` is the providers of the last rule file that loaded."""

    def __init__(
        self,
        config_path: Path,
        build: BuildProviders,
        *,
        registry: CollectorRegistry,
        server_metrics: ServerMetrics,
        clock: Clock,
        check_interval_seconds: float = 10.0,
        before_load: Callable[[], Awaitable[None]] | None = None,
        adopt: Adopt | None = None,
    ) -> None:
        """``before_load`` runs before each reload compiles the file (the server re-reads API
        discovery there, so a rule naming a CRD installed since the last load resolves)."""
        self.config_path = config_path
        self._build = build
        self._adopt = adopt
        self._server_metrics = server_metrics
        self._clock = clock
        self._check_interval_seconds = check_interval_seconds
        self._before_load = before_load
        self._current: MetricProviders | None = None
        self._provider_registry: CollectorRegistry | None = None
        self._digest = b""
        self._stamp: tuple[int, int, int] | None = None
        self._requested = asyncio.Event()
        self.attempts = 0  # reloads tried (initial load included), successful or not
        self._attempted = asyncio.Condition()
        registry.register(ProviderCollector(lambda: self._provider_registry))

    @property
    def current(self) -> MetricProviders:
        if self._current is None:
            raise RuntimeError("no rule file loaded yet")
        return self._current

    @property
    def ready(self) -> bool:
        return self._current is not None and self._current.relister.ready

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.config_path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _compile(self) -> tuple[RuleConfig, MetricProviders, CollectorRegistry, bytes]:
        text = self.config_path.read_text()
        config = load_rules(text, source=str(self.config_path))
        for warning in config.warnings:
            log.warning("rule_file_warning", warning=warning)
        registry = CollectorRegistry()
        digest = hashlib.sha256(text.encode()).digest()
        return config, self._build(config, registry), registry, digest

    def load_initial(self) -> None:
        """Load the rule file at start (raises ``RuleConfigError``/``OSError``: the process
        should not start with a broken file). The first relist is ``relist_forever``'s."""
        self.attempts += 1
        self._stamp = self._stat()
        try:
            config, providers, registry, digest = self._compile()
            install = self._adopt(config, None) if self._adopt is not None else None
        except (OSError, RuleConfigError):
            self._record(success=False)
            raise
        if install is not None:
            install()
        self._current, self._provider_registry, self._digest = providers, registry, digest
        self._record(success=True)

    async def wait_attempts(self, count: int) -> None:
        """Wait until ``count`` (re)loads have been tried (the watcher runs them in the
        background)."""
        async with self._attempted:
            await self._attempted.wait_for(lambda: self.attempts >= count)

    async def _notify(self) -> None:
        async with self._attempted:
            self._attempted.notify_all()

    def _record(self, *, success: bool) -> None:
        metrics = self._server_metrics
        metrics.config_reloads.labels("success" if success else "failure").inc()
        metrics.config_last_reload_successful.set(1 if success else 0)
        if success:
            metrics.config_last_reload_success_timestamp.set(self._clock.now().timestamp())

    def request_reload(self) -> None:
        """Ask for a reload (the SIGHUP handler)."""
        self._requested.set()

    async def reload(self, *, force: bool = False) -> bool:
        """Reload now. True when new providers are being served; False when the file did not
        change (unless ``force``) or the reload failed (the old providers stay)."""
        self.attempts += 1
        self._stamp = self._stat()
        if self._before_load is not None:
            try:
                await self._before_load()
            except Exception as error:  # noqa: BLE001 - the last discovery still answers
                log.warning("before_load_failed", error=str(error))
        try:
            config, providers, registry, digest = self._compile()
        except (OSError, RuleConfigError) as error:
            log.error("config_reload_failed", path=str(self.config_path), error=str(error))
            self._record(success=False)
            return False
        if digest == self._digest and not force:
            return False
        try:
            await providers.relister.relist()
            install = self._adopt(config, providers) if self._adopt is not None else None
        except (RelistError, RuleConfigError) as error:
            log.error("config_reload_failed", path=str(self.config_path), error=str(error))
            self._record(success=False)
            return False
        if install is not None:
            install()
        self._current, self._provider_registry, self._digest = providers, registry, digest
        self._record(success=True)
        log.info("config_reloaded", path=str(self.config_path))
        return True

    async def watch(self) -> None:
        """Reload when the file's (inode, size, mtime) changes or a reload is requested."""
        while True:
            await sleep_unless(self._requested, self._clock, self._check_interval_seconds)
            requested = self._requested.is_set()
            self._requested.clear()
            if requested or self._stat() != self._stamp:
                await self.reload(force=requested)
                await self._notify()

    async def relist_forever(self) -> None:
        """Relist the current providers every interval (``MetricRelister.run`` for whichever
        providers are current)."""
        while True:
            providers = self.current
            with contextlib.suppress(RelistError):  # logged and counted by the relister
                await providers.relister.relist()
            await self._clock.sleep(providers.relister.relist_interval_seconds)
