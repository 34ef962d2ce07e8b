"""A soak: ``hpa controller`` and ``hpa adapter`` against the lab under a changing load, with API
faults, for a long time; are memory, file descriptors and threads flat?

Run::

    .venv/bin/python -m bench.soak --minutes 30 --fault-rate 0.05

The lab starts (control plane, kwok, Prometheus, the exporter); ``--workloads`` Deployments
(default 20) each get an HPA on their offered load (External metric, 10 requests/s per replica,
scale-down window 0 s), and every minute each workload's load moves to a new value drawn from a
seeded random walk between 5 and 80 requests/s. The adapter serves the metrics APIs through the
aggregation layer; the controller reaches kube-apiserver through the fault proxy of
``tests/faults/proxy.py``, which answers ``--fault-rate`` of its requests with 409, 429, 500, 503,
410 on watches, or a closed connection.

Every ``--sample-seconds`` the script reads each process's resident set (``VmRSS``), open file
descriptors (``/proc/PID/fd``) and threads (``Threads``). At the end it prints, per process, the
least-squares slope per hour of each series over the run after the first ``--warmup-minutes``,
and the first and last values. The goal is an RSS slope below 1 MB per hour. Slopes are
machine-independent enough to compare; absolute RSS is not asserted.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.controller_lab import (
    adapter_rules,
    deployment_manifest,
    hpa_manifest,
    offered_load_metric,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.faults.proxy import FaultProxy
from tests.lab.controlplane import ControlPlaneConfig
from tests.lab.lab import Lab, LabConfig
from tests.lab.load_model import WorkloadProfile
from tests.lab.pki import issue_certificate

NAMESPACE = "soak"
USER = "hpa-controller-soak"


@dataclass
class Series:
    times: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    fds: list[float] = field(default_factory=list)
    threads: list[float] = field(default_factory=list)


def read_process(pid: int) -> tuple[float, int, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss_kb = int(fields["VmRSS"].split()[0])
    threads = int(fields["Threads"].strip())
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    return rss_kb / 1024, fds, threads


def slope_per_hour(times: list[float], values: list[float]) -> float:
    """The least-squares slope of ``values`` over ``times`` (seconds), per hour."""
    n = len(times)
    if n < 2:
        return 0.0
    mean_t, mean_v = sum(times) / n, sum(values) / n
    var = sum((t - mean_t) ** 2 for t in times)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (v - mean_v) for t, v in zip(times, values, strict=True))
    return cov / var * 3600


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--warmup-minutes", type=float, default=5)
    parser.add_argument("--fault-rate", type=float, default=0.05)
    parser.add_argument("--workloads", type=int, default=20)
    parser.add_argument("--sample-seconds", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    config = LabConfig(control_plane=ControlPlaneConfig(node_count=3))
    with Lab(config) as lab:
        work = lab.work_dir / "soak"
        work.mkdir()
        lab.kubectl("create", "namespace", NAMESPACE)
        adapter = start_adapter(lab, work, rules=adapter_rules(window_seconds=5))
        client = issue_certificate(
            lab.pki.ca,
            work / USER,
            common_name=USER,
            organizations=("system:masters",),
            client=True,
        )
        proxy = FaultProxy(lab, user=USER, client=client, work=work, seed=args.seed)
        kubeconfig = proxy.start()
        names = [f"w{i:02d}" for i in range(args.workloads)]
        loads = {name: rng.uniform(5, 80) for name in names}
        for name in names:
            lab.add_workload(
                WorkloadProfile(NAMESPACE, name, {"app": name}), rps=round(loads[name], 1)
            )
            lab.apply(
                [
                    deployment_manifest(name, NAMESPACE, replicas=1),
                    hpa_manifest(
                        name,
                        NAMESPACE,
                        min_replicas=1,
                        max_replicas=10,
                        metrics=[offered_load_metric(name, "10")],
                        behavior={"scaleDown": {"stabilizationWindowSeconds": 0}},
                    ),
                ]
            )
        controller = start_controller(
            lab, USER, kubeconfig=kubeconfig, flags=["--horizontal-pod-autoscaler-sync-period=5s"]
        )
        proxy.set_rate(args.fault_rate)
        processes = {"controller": controller.process.pid, "adapter": adapter.process.pid}
        series = {name: Series() for name in processes}
        started = time.monotonic()
        end = started + args.minutes * 60
        next_load = started
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_load:
                for name in names:
                    loads[name] = min(80.0, max(5.0, loads[name] * rng.uniform(0.6, 1.6)))
                    lab.set_load(NAMESPACE, name, round(loads[name], 1))
                next_load = now + 60
            for name, pid in processes.items():
                rss, fds, threads = read_process(pid)
                s = series[name]
                s.times.append(now - started)
                s.rss_mb.append(rss)
                s.fds.append(fds)
                s.threads.append(threads)
            lab.group.check_alive()
            time.sleep(args.sample_seconds)
        print(
            f"bench.soak: {args.minutes:g} min, {args.workloads} HPAs, API faults at "
            f"{args.fault_rate:.0%} ({proxy.describe()}); slopes after {args.warmup_minutes:g} "
            "min of warm-up"
        )
        warm = args.warmup_minutes * 60
        for name, s in series.items():
            keep = [i for i, t in enumerate(s.times) if t >= warm]
            times = [s.times[i] for i in keep]
            for label, values, unit in (
                ("RSS", s.rss_mb, "MB"),
                ("open fds", s.fds, ""),
                ("threads", s.threads, ""),
            ):
                kept = [values[i] for i in keep]
                print(
                    f"  {name:10} {label:8} {values[0]:8.1f} -> {values[-1]:8.1f} {unit:2} "
                    f"slope {slope_per_hour(times, kept):+8.2f} {unit}/h"
                )
        lab.group.end(controller.name)
        proxy.stop()
        stop_adapter(lab, adapter)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
