"""The fault-injection scenarios of ``tests/faults`` at full length.

Run::

    .venv/bin/python -m bench.faults            # about two hours in the lab
    .venv/bin/python -m bench.faults -k "paused or killed"

It runs ``pytest tests/faults`` with ``HPA_FAULTS_LONG=1``, which sets the lengths of the
reliability table in ``docs/reliability.md``: 20 % API faults for 10 minutes; Prometheus down for
60 s while the load falls, 20 times, with a 0 s scale-down stabilization window; Prometheus
misbehaving in each of its seven ways five times; kube-apiserver and etcd restarted ten times each;
the leader paused (SIGSTOP past its 10 s Lease, then SIGCONT) 20 times and killed (SIGKILL) 50
times; TCP faults from toxiproxy (a latency spike, a mild latency, a timeout, a half-open
connection, resets, connections cut after 64 bytes, 1 KB/s) on each of the four paths (the
controller's and the adapter's to kube-apiserver and to Prometheus), three times each
(``HPA_FAULTS_TCP_REPEATS`` sets how often; ``HPA_FAULTS_TCP_ONLY=PATH:FAULT,...`` with
``-k api_server_and`` or ``-k own_prometheus`` runs only those rounds, e.g.
``controller-apiserver:half-open``). The scenarios, their invariants and their assertions
are the tests' own (one implementation); this script only runs them and prints the figures each
test reports, and on a failure the assertion. ``make test`` runs the short version (the same tests:
two outages, three Prometheus modes, one pause, two kills, one partition, one kube-apiserver
restart, 45 s of API faults, three TCP faults).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIGURE_PREFIXES = (
    "API faults at",
    "Prometheus outages",
    "Prometheus misbehaving",
    "kube-apiserver and etcd",
    "leader paused",
    "leader killed",
    "leader partitioned",
    "TCP faults",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.faults", description=__doc__.split("\n")[0]
    )
    parser.add_argument("-k", default="", help="run only the scenarios matching this pytest -k")
    args = parser.parse_args(argv)
    command = [sys.executable, "-m", "pytest", "tests/faults", "-p", "no:cacheprovider", "-v"]
    if args.k:
        command += ["-k", args.k]
    started = time.monotonic()
    result = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, "HPA_FAULTS_LONG": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    figures = [line for line in result.stdout.splitlines() if line.startswith(FIGURE_PREFIXES)]
    outcome = [
        line for line in result.stdout.splitlines() if " passed" in line or " failed" in line
    ]
    print(f"bench.faults: {time.monotonic() - started:.0f} s, exit {result.returncode}")
    for line in figures + outcome[-1:]:
        print(line)
    if result.returncode != 0:
        failures = [line for line in result.stdout.splitlines() if line.startswith("E   ")]
        print("\n".join(failures[:20]) or result.stdout[-6000:], file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
