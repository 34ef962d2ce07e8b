"""Ours and prometheus-adapter side by side in the lab: the data, the pair, the comparison.

Both adapters serve the same rule file against the lab's Prometheus on direct HTTPS ports
(127.0.0.1), and are called the way kube-apiserver's aggregator calls them: its front-proxy client
certificate with ``X-Remote-User``/``X-Remote-Group`` of the lab's admin. Answers are compared as
JSON after sorting lists; fields that legitimately differ are dropped first (``IGNORED_FIELDS``):
``timestamp`` and ``metadata.creationTimestamp`` (the moment of the answer), ``windowSeconds`` and
``window`` (ours: the rule's window; prometheus-adapter: none for custom metrics and the configured
``window`` for resource metrics). Quantities are compared as numbers: equal within
``VALUE_TOLERANCE`` relative (values of counters sampled a few milliseconds apart; a test may
pass a larger one) or one milli-unit (prometheus-adapter truncates to milli-units, this adapter
rounds: docs/adapter-values.md, "milli conversion"), and no further.

The series are live (the lab's load model, other tests' namespaces in ``*`` lists), so the two
answers to one request are read a few milliseconds apart and may straddle a scrape, or a deleted
pod's last samples leaving a rate window. A request whose answers differ is read again, ours and
theirs in turn (``REREADS`` more reads), and it is equal when two consecutive reads agree: the data
moved between them, not the rule. A systematic difference never agrees and is still found.

A difference that is neither equal nor one of the documented deviations (``DEVIATIONS``, each
listed in docs/migrating-from-prometheus-adapter.md) fails the test that found it.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from tests.e2e.controller_lab import free_port
from tests.lab import prometheus_adapter
from tests.lab.lab import Lab
from tests.lab.pki import issue_certificate
from tests.lab.process import Component, wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
IGNORED_FIELDS = frozenset({"timestamp", "creationTimestamp", "windowSeconds", "window"})
VALUE_TOLERANCE = Decimal("0.02")
REREADS = 4
START_TIMEOUT_SECONDS = 90.0
MIGRATION_DOC = REPO_ROOT / "docs" / "migrating-from-prometheus-adapter.md"


# ---------------------------------------------------------------------------- comparison

_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "Ki": Decimal(1024),
    "Mi": Decimal(1024**2),
    "Gi": Decimal(1024**3),
    "Ti": Decimal(1024**4),
}


def quantity(text: str) -> Decimal | None:
    """A Kubernetes quantity as a number, or None when ``text`` is not one."""
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            number, factor = text[: -len(suffix)], _SUFFIXES[suffix]
            break
    else:
        number, factor = text, Decimal(1)
    try:
        return Decimal(number) * factor
    except InvalidOperation:
        return None


def strip(value: Any) -> Any:
    """Drop ``IGNORED_FIELDS`` everywhere and sort every list (by its items' JSON)."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in IGNORED_FIELDS}
    if isinstance(value, list):
        items = [strip(v) for v in value]
        return sorted(items, key=lambda item: json.dumps(_without_values(item), sort_keys=True))
    return value


def _without_values(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_values(v) for k, v in value.items() if k not in ("value", "usage")}
    if isinstance(value, list):
        return [_without_values(v) for v in value]
    return value


MILLI = Decimal("0.001")


def same(ours: Any, theirs: Any, tolerance: Decimal = VALUE_TOLERANCE) -> bool:
    """Equal after ``strip``; quantities within ``tolerance`` (relative) or a milli-unit."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(
            same(ours[k], theirs[k], tolerance) for k in ours
        )
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(
            same(a, b, tolerance) for a, b in zip(ours, theirs, strict=True)
        )
    if isinstance(ours, str) and isinstance(theirs, str) and ours != theirs:
        a, b = quantity(ours), quantity(theirs)
        if a is None or b is None:
            return False
        return abs(a - b) <= max(tolerance * max(abs(a), abs(b)), MILLI)
    return bool(ours == theirs)


@dataclass(frozen=True)
class Deviation:
    """A documented difference: ``applies`` tells it from the two answers; ``doc`` is a phrase
    docs/migrating-from-prometheus-adapter.md must contain."""

    name: str
    doc: str
    applies: Callable[[str, prometheus_adapter.Reply, prometheus_adapter.Reply], bool]


@dataclass
class Tally:
    compared: int = 0
    equal: int = 0
    reread: int = 0
    explained: dict[str, int] = field(default_factory=dict)
    unexplained: list[str] = field(default_factory=list)

    def line(self, what: str) -> str:
        explained = ", ".join(f"{k} {v}" for k, v in sorted(self.explained.items())) or "none"
        return (
            f"{what}: {self.compared} requests compared, {self.equal} equal "
            f"({self.reread} of them on a re-read), "
            f"{sum(self.explained.values())} documented deviations ({explained}), "
            f"{len(self.unexplained)} unexplained"
        )


def agree_on_reread(
    first: tuple[prometheus_adapter.Reply, prometheus_adapter.Reply],
    read_ours: Callable[[], prometheus_adapter.Reply],
    read_theirs: Callable[[], prometheus_adapter.Reply],
    agree: Callable[[prometheus_adapter.Reply, prometheus_adapter.Reply], bool],
    rereads: int = REREADS,
) -> int | None:
    """After a first (ours, theirs) that differ, read ours, theirs, ours, ... up to ``rereads``
    times, comparing each read with the one just before it. Returns how many re-reads it took
    for two consecutive reads to agree, or None when none did."""
    ours, theirs = first
    for count in range(1, rereads + 1):
        if count % 2:
            ours = read_ours()
        else:
            theirs = read_theirs()
        if agree(ours, theirs):
            return count
    return None


def describe(path: str, ours: prometheus_adapter.Reply, theirs: prometheus_adapter.Reply) -> str:
    return (
        f"GET {path}\n  ours   {ours.status} {json.dumps(strip(ours.body), sort_keys=True)}\n"
        f"  theirs {theirs.status} {json.dumps(strip(theirs.body), sort_keys=True)}"
    )


# ---------------------------------------------------------------------------- the pair


@dataclass
class Pair:
    lab: Lab
    ours_url: str
    theirs_url: str
    context: ssl.SSLContext
    deviations: tuple[Deviation, ...] = ()
    tolerance: Decimal = VALUE_TOLERANCE

    def get_both(self, path: str) -> tuple[prometheus_adapter.Reply, prometheus_adapter.Reply]:
        ours = prometheus_adapter.get(self.ours_url, path, context=self.context)
        theirs = prometheus_adapter.get(self.theirs_url, path, context=self.context)
        return ours, theirs

    def agree(self, ours: prometheus_adapter.Reply, theirs: prometheus_adapter.Reply) -> bool:
        return ours.status == theirs.status and same(
            strip(ours.body), strip(theirs.body), self.tolerance
        )

    def compare(self, paths: list[str], tally: Tally | None = None) -> Tally:
        tally = tally if tally is not None else Tally()
        for path in paths:
            ours, theirs = self.get_both(path)
            tally.compared += 1
            if self.agree(ours, theirs):
                tally.equal += 1
                continue
            rereads = agree_on_reread(
                (ours, theirs),
                lambda: prometheus_adapter.get(self.ours_url, path, context=self.context),  # noqa: B023
                lambda: prometheus_adapter.get(self.theirs_url, path, context=self.context),  # noqa: B023
                self.agree,
            )
            if rereads is not None:
                tally.equal += 1
                tally.reread += 1
                continue
            known = next((d for d in self.deviations if d.applies(path, ours, theirs)), None)
            if known is None:
                tally.unexplained.append(describe(path, ours, theirs))
            else:
                tally.explained[known.name] = tally.explained.get(known.name, 0) + 1
        return tally


def client_context(lab: Lab) -> ssl.SSLContext:
    return lab.front_proxy_tls()


def _serving_certificate(lab: Lab, work: Path) -> tuple[Path, Path]:
    pair = issue_certificate(
        lab.pki.ca,
        work / "serving",
        common_name="localhost",
        dns_names=("localhost",),
        ip_addresses=(HOST,),
        server=True,
    )
    return pair.cert_path, pair.key_path


def ours_argv(rules: Path, lab: Lab, port: int, cert: Path, key: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "hpa",
        "adapter",
        f"--config={rules}",
        f"--prometheus-url={lab.prometheus_url}",
        f"--bind-address={HOST}",
        f"--secure-port={port}",
        f"--tls-cert-file={cert}",
        f"--tls-private-key-file={key}",
        f"--kubeconfig={lab.kubeconfig}",
        "--metrics-relist-interval=2s",
    ]


@dataclass(frozen=True)
class _Started:
    ours: Component
    theirs: Component
    ours_url: str
    theirs_url: str


def _start_both(lab: Lab, work: Path, rules_text: str, *, label: str) -> _Started:
    """Ours and prometheus-adapter on ``rules_text``, each on its own port of ``HOST``."""
    work.mkdir(parents=True, exist_ok=True)
    rules = work / "config.yaml"
    rules.write_text(rules_text)
    cert, key = _serving_certificate(lab, work)
    ours_port, theirs_port = free_port(HOST), free_port(HOST)
    ours = lab.group.start(
        f"pad-ours-{label}", ours_argv(rules, lab, ours_port, cert, key), cwd=REPO_ROOT
    )
    config = prometheus_adapter.AdapterConfig(
        rules=rules,
        prometheus_url=lab.prometheus_url,
        kubeconfig=lab.kubeconfig,
        requestheader_ca=lab.pki.front_proxy_ca.pair.cert_path,
        tls_cert_file=cert,
        tls_private_key=key,
        port=theirs_port,
        bind_address=HOST,
    )
    theirs = prometheus_adapter.start(lab.group, config, name=f"pad-theirs-{label}")
    return _Started(ours, theirs, f"https://{HOST}:{ours_port}", f"https://{HOST}:{theirs_port}")


def _stop_both(lab: Lab, started: _Started) -> None:
    for component in (started.ours, started.theirs):
        if component.name in lab.group.components:
            lab.group.end(component.name)


@contextlib.contextmanager
def started_pair(
    lab: Lab,
    work: Path,
    rules_text: str,
    *,
    label: str,
    discovery_path: str | None = "/apis/custom.metrics.k8s.io/v1beta1",
    deviations: tuple[Deviation, ...] = (),
    tolerance: Decimal = VALUE_TOLERANCE,
) -> Iterator[Pair]:
    """Both adapters on ``rules_text``, ready (``discovery_path`` lists a resource, unless it is
    None), stopped on exit."""
    started = _start_both(lab, work, rules_text, label=label)
    pair = Pair(lab, started.ours_url, started.theirs_url, client_context(lab))
    pair.deviations = deviations
    pair.tolerance = tolerance
    try:
        for url in (pair.ours_url, pair.theirs_url):
            prometheus_adapter.wait_ready(
                url,
                context=pair.context,
                group=lab.group,
                discovery_path=discovery_path,
                timeout_seconds=START_TIMEOUT_SECONDS,
            )
        yield pair
    finally:
        _stop_both(lab, started)


def both_refuse(lab: Lab, work: Path, rules_text: str, *, label: str) -> tuple[str, str]:
    """Start both on a rule file they must refuse; returns their logs once both have exited (a
    failure if either is still serving after ``START_TIMEOUT_SECONDS``)."""
    started = _start_both(lab, work, rules_text, label=label)
    try:
        wait_until(
            lambda: started.ours.exited() is not None and started.theirs.exited() is not None,
            what="both adapters to refuse the rule file",
            timeout_seconds=START_TIMEOUT_SECONDS,
        )
        return started.ours.log_path.read_text(), started.theirs.log_path.read_text()
    finally:
        _stop_both(lab, started)


# ---------------------------------------------------------------------------- lab data


def put_series(lab: Lab, series: Sequence[Mapping[str, Any]]) -> None:
    from tests.lab.exporter import StaticSeries

    lab.exporter.set_series([StaticSeries.model_validate(one) for one in series])


def wait_for_series(lab: Lab, names: list[str], *, timeout_seconds: float = 60.0) -> None:
    """Until Prometheus has scraped a series of every name."""

    def scraped() -> bool:
        return all(lab.prometheus.series([name]) for name in names)

    wait_until(scraped, what=f"Prometheus series {names}", timeout_seconds=timeout_seconds)


def quote(selector: str) -> str:
    return urllib.parse.quote(selector, safe="")


def elapsed(started: float) -> float:
    return round(time.monotonic() - started, 1)


def migration_doc() -> str:
    return MIGRATION_DOC.read_text()


def fetch_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310
        return json.loads(response.read())
