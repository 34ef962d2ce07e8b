"""``hpa vpa recommender`` beside upstream's VPA recommender v1.8.1: the same pods, the same
``metrics.k8s.io``, a scripted load, then target, lowerBound and upperBound compared.

Run::

    flock /tmp/hpa-bench.lock .venv/bin/python -m bench.vpa_side_by_side

The lab (``tests.lab``: kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok
nodes, Prometheus, the workload exporter) runs one Deployment of ``--pods`` kwok pods;
``hpa adapter`` serves ``metrics.k8s.io`` from the exporter's cAdvisor-shaped series (a 30 s
rate window). Two VPAs select the Deployment: ``upstream`` (no ``spec.recommenders``: upstream's
``default`` recommender, ``tests/lab/vpa_upstream.py``, built from the Go module proxy and
cached) and ``ours`` (``spec.recommenders: [{name: hpa}]``: ``hpa vpa recommender
--recommender-name=hpa``). Both run with the same ``--recommender-interval`` and pod minimums
(10m, 10 MB, below the amounts, so the model's numbers are compared and not the floors).

The load (requests/s to the whole Deployment; each pod uses 20m + 10m per request/s of its share,
and 64 MiB + 2 MiB per request/s of its share) follows ``STEPS`` over ``--minutes`` (15): steady,
a ramp up, a step down, a ramp up again. Every ``--snapshot-seconds`` both recommendations are
printed; at the end both recommenders are stopped and every bound is compared: they agree when
they differ by at most one histogram bucket (5 % of the larger) plus the rounding (1m of cpu,
1 byte of memory). A bound that differs only because the two recommenders took their samples at
different moments is reported as such: each recommender's figure is then what our model
computes from that recommender's own checkpoint (its histograms, sample count and span), so the
model agrees and the samples differ.

Exit status 0 when every bound agrees (or differs only by that timing), 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from tests.e2e.controller_lab import adapter_rules, start_adapter
from tests.e2e.vpa_recommender_lab import LoadStep, SideBySideConfig, run_side_by_side
from tests.lab.lab import Lab, LabConfig

NAMESPACE = "side-by-side"
WINDOW_SECONDS = 30
STEPS = (
    LoadStep(0, 15),
    LoadStep(180, 45, ramp_seconds=60),
    LoadStep(420, 24),
    LoadStep(600, 36, ramp_seconds=120),
)
"""The scripted load over 15 minutes (later steps scale with ``--minutes``)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.vpa_side_by_side")
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--interval-seconds", type=int, default=10)
    parser.add_argument("--pods", type=int, default=3)
    parser.add_argument("--snapshot-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    scale = args.minutes / 15.0
    steps = tuple(
        LoadStep(step.at_seconds * scale, step.rps, step.ramp_seconds * scale) for step in STEPS
    )
    config = SideBySideConfig(
        namespace=NAMESPACE,
        steps=steps,
        duration_seconds=args.minutes * 60,
        interval_seconds=args.interval_seconds,
        pods=args.pods,
        snapshot_every_seconds=args.snapshot_seconds,
        window_seconds=WINDOW_SECONDS,
    )
    started = time.monotonic()

    def progress(text: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    with Lab(LabConfig()) as lab:
        progress("lab up; starting hpa adapter")
        work = lab.work_dir / "side-by-side"
        work.mkdir(exist_ok=True)
        start_adapter(lab, work, rules=adapter_rules(window_seconds=WINDOW_SECONDS))
        progress(f"load steps {[(s.at_seconds, s.rps, s.ramp_seconds) for s in steps]}")
        comparison = run_side_by_side(lab, config, progress=progress)
    command = "python -m bench.vpa_side_by_side " + " ".join(argv or sys.argv[1:])
    print(f"$ {command.strip()}")
    print(
        f"{args.pods} pods, --recommender-interval={args.interval_seconds}s for both, "
        f"{args.minutes:g} minutes of load"
    )
    print(comparison.report())
    if comparison.agree:
        print("verdict: every bound agrees within one bucket (5 %) plus rounding")
        return 0
    if comparison.agree_or_timing:
        print("verdict: agree, except bounds that differ only by the recommenders' timing")
        return 0
    print("verdict: DIFFER")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
