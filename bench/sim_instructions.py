"""Instructions per simulated reconcile, counted by callgrind: a measure that the machine's load
does not move (CPU seconds move by 10 to 20 % on a shared machine).

Run ``.venv/bin/python -m bench.sim_instructions`` (needs ``valgrind``; about 90 s). It runs
``python -m bench.sim`` under ``valgrind --tool=callgrind`` for ``--short`` and ``--long`` days
and divides the difference in instructions by the reconciles in between, so interpreter start-up
and imports cancel out. The default window is the trace's first hours (night: 2 to 4 pods per
HPA); ``--short 0.5 --long 0.6`` measures the afternoon peak (up to 27 pods per HPA), where per-pod
work weighs more. Results: docs/performance.md.
"""

from __future__ import annotations

import argparse
import shutil

from bench.callgrind import module_instructions

RECONCILES_PER_DAY = 3 * 86400 / 15  # the bench's three HPAs, a sync every 15 s


def instructions(days: float) -> int:
    """Instructions of one ``python -m bench.sim --days DAYS`` run under callgrind."""
    return module_instructions("bench.sim", "--days", f"{days:g}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=float, default=0.01, help="days of the short run")
    parser.add_argument("--long", type=float, default=0.06, help="days of the long run")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    reconciles = round((args.long - args.short) * RECONCILES_PER_DAY)
    short, long = instructions(args.short), instructions(args.long)
    print(f"instructions per reconcile  {(long - short) / reconciles:,.0f}")
    print(f"  ({long:,} - {short:,}) / {reconciles:,} reconciles")


if __name__ == "__main__":
    main()
