"""What one batched evaluation costs Prometheus at fleet scale, for one or more Prometheus binaries
on the same TSDB block: the floor under the Prometheus CPU of ``bench.adapter --fleet``.

Run::

    .venv/bin/python -m bench.prometheus_cost                       # Debian's Prometheus
    .venv/bin/python -m bench.prometheus_cost --binary /usr/bin/prometheus --binary PATH

The block is the fleet benchmark's (``bench.fleet.write_openmetrics``: ``http_requests_total`` for
``--pods`` pods, 1,000 per namespace, a sample every 30 s), written once with Debian's ``promtool``
into ``--workdir`` (kept, so later runs reuse it). Each binary in turn serves it with no scrape
targets; for each query below this process sends ``--repeat`` evaluations at the same time
(``time=`` five minutes into the block) after one to warm up, and reads the server's CPU seconds
from ``/proc/<pid>/stat`` around them:

* ``value``: the batched value query ``hpa adapter`` renders for the fleet's rule
  (docs/adapter-values.md), one per renewal;
* ``probe``: the batched staleness probe, at most one per ``--staleness-probe-reuse``;
* ``select``: ``count(http_requests_total)``, reading every series and nothing else;
* ``per request``: one HPA's query on the per-request path (10 pods of one namespace), sent
  ``--repeat`` times 100.

Reported per binary: CPU milliseconds per query; what the per-request path costs for the whole
fleet (one query per HPA per 15 s); and what the adapter's default batched cadence
costs in cores: a renewal every 5.625 s (three quarters of ``--batch-max-age=7.5s``) and one
probe per 15 s, against a goal of 0.05 cores.

A newer Prometheus builds from the Go module proxy without its web UI, for instance::

    mkdir /tmp/prom && cd /tmp/prom && go mod init prom && \\
      go get github.com/prometheus/prometheus/cmd/prometheus@v0.316.0 && \\
      go build -tags remove_all_sd,netgo -o prometheus \\
        github.com/prometheus/prometheus/cmd/prometheus

Results: docs/performance.md ("Fleet scale").
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.parse
import urllib.request
from pathlib import Path

from bench.adapter import _prometheus_pid, process_cpu_seconds
from bench.fleet import HISTORY_SECONDS, Fleet, write_openmetrics

PODS_PER_HPA = 10
RENEWALS_PER_15_SECONDS = 15 / (0.75 * 7.5)
GOAL_CORES = 0.05
PER_REQUEST_FACTOR = 100


def queries() -> dict[str, str]:
    """The queries measured, by name (the batched ones as the adapter renders them)."""
    pods = "|".join(f"pod-{70 + i}" for i in range(PODS_PER_HPA))
    return {
        "value": 'sum(rate(http_requests_total{namespace!=""}[2m])) by (namespace,pod)',
        "probe": 'max by (namespace,pod) (timestamp(http_requests_total{namespace!=""}))',
        "select": "count(http_requests_total)",
        "per request": (
            f'sum(rate(http_requests_total{{namespace="ns-0",pod=~"{pods}"}}[2m])) by (pod)'
        ),
    }


def write_block(workdir: Path, pods: int) -> int:
    """The block in ``workdir/prometheus/data`` (once); returns its first sample's time."""
    from tests.lab.prometheus import PrometheusServer

    marker = workdir / "start"
    if marker.exists():
        return int(marker.read_text())
    workdir.mkdir(parents=True, exist_ok=True)
    start = int(time.time())
    source = workdir / "fleet.om"
    fleet = Fleet(pods=pods, hpas=pods // PODS_PER_HPA, metric_names=0, bulk_series=0)
    write_openmetrics(source, fleet, start=start, window_seconds=1200)
    PrometheusServer(workdir=workdir / "prometheus").backfill_openmetrics(source.read_text())
    source.unlink()
    marker.write_text(str(start))
    return start


def measure(binary: str, workdir: Path, *, at: int, repeat: int) -> dict[str, float]:
    """CPU milliseconds per query of each of :func:`queries` on ``binary``."""
    from tests.lab.prometheus import PrometheusServer

    server = PrometheusServer(workdir=workdir / "prometheus", binary=binary)
    server.start()
    costs: dict[str, float] = {}
    try:
        pid = _prometheus_pid(workdir / "prometheus")
        for name, promql in queries().items():
            url = f"{server.url}/api/v1/query?" + urllib.parse.urlencode(
                {"query": promql, "time": str(at)}
            )
            read(url)  # warm: the block's index and chunks in the page cache
            # a per-request query costs about a millisecond: enough of them to see it in ticks
            times = repeat * PER_REQUEST_FACTOR if name == "per request" else repeat
            before = process_cpu_seconds(pid)
            for _ in range(times):
                read(url)
            costs[name] = (process_cpu_seconds(pid) - before) / times * 1000
    finally:
        server.stop()
    return costs


def read(url: str) -> None:
    with urllib.request.urlopen(url, timeout=120) as answer:  # noqa: S310 - loopback
        body = json.loads(answer.read())
    if body.get("status") != "success":
        raise RuntimeError(f"{url}: {body}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--binary",
        action="append",
        help="a Prometheus binary (repeat for several; default /usr/bin/prometheus)",
    )
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5, help="evaluations per query")
    parser.add_argument(
        "--workdir", type=Path, default=Path("/tmp/hpa-bench-prometheus-cost"), help="block here"
    )
    args = parser.parse_args(argv)
    start = write_block(args.workdir, args.pods)
    at = start - HISTORY_SECONDS + 600
    print(f"{args.pods:,} pod series; CPU ms per query ({args.repeat} evaluations each)")
    print()
    print(
        "| binary | value | probe | select | per request | batched cadence, cores "
        "| per request at 10,000 HPAs, cores |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for binary in args.binary or ["/usr/bin/prometheus"]:
        costs = measure(binary, args.workdir, at=at, repeat=args.repeat)
        cores = (RENEWALS_PER_15_SECONDS * costs["value"] + costs["probe"]) / 1000 / 15
        verdict = "met" if cores <= GOAL_CORES else "MISSED"
        per_request = costs["per request"] / 1000 * args.pods / PODS_PER_HPA / 15
        print(
            f"| {binary} | {costs['value']:.0f} | {costs['probe']:.0f} | {costs['select']:.0f} "
            f"| {costs['per request']:.2f} | {cores:.3f} (goal <= {GOAL_CORES}: {verdict}) "
            f"| {per_request:.2f} |"
        )


if __name__ == "__main__":
    main()
