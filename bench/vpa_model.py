"""The VPA recommendation model at scale: memory per state, ingest rate, recommendation time.

Run::

    .venv/bin/python -m bench.vpa_model --states 10000 --hours 192

Each of ``--states`` containers has its own aggregate container state (``hpa.core.vpa``) and a
``ContainerState`` feeding it, as the recommender keeps them. The workload is synthetic and
deterministic: container ``i`` uses a base of 50 m to 2 cores and 64 MiB to 4 GiB (spread
log-uniformly over the containers), times a diurnal factor ``1 + 0.5 sin(2 pi h / 24)``, times a
per-sample jitter of +-20 % (CPU) or +-5 % (memory). One CPU sample and one memory sample per
container per hour for ``--hours`` hours (192 = 8 days, the history bootstrap's default).

* **ingest**: samples (CPU and memory, each counted) per CPU-second of this process
  (``time.process_time`` around the feeding loop; each hour's numbers are generated before it);
  goal >= 300,000;
* **memory per aggregate container state**: ``tracemalloc``'s traced bytes after the same ingest
  in a fresh set of states, with the ``ContainerState`` objects dropped, divided by the number of
  states; goal <= 3 KB (upstream's Go structures take about 2.8 KB);
* **recommendation**: CPU-seconds to compute the recommendation of every container (one VPA per
  container, upstream's default chains, the explanation recorded but not rendered); goal <= 1 s
  for 10,000; the time to render every explanation is reported beside it.

With ``--instructions`` it reports instead what callgrind counts, which the machine's load does
not move (CPU seconds move by 20 to 40 % on a shared machine; needs ``valgrind``, about two
minutes): instructions per ingested sample (the difference between ``--states 500`` runs of 24 and
48 hours, less the same difference for only generating the numbers, divided by the samples in
between) and per container recommendation (the difference
between one and three passes over 500 containers, divided by 1,000).

Only ratios and CPU times are reported, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import math
import shutil
import sys
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass

from bench.callgrind import module_instructions
from hpa.core.vpa.aggregation import AggregateContainerState, ContainerState
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.recommender import create_pod_resource_recommender, recommend

HOUR_NS = 3600 * NANOSECONDS_PER_SECOND
START_NS = 1_767_225_600 * NANOSECONDS_PER_SECOND  # 2026-01-01T00:00:00Z
MIB = 2**20


@dataclass(frozen=True)
class Result:
    states: int
    hours: int
    samples: int
    ingest_cpu_seconds: float
    bytes_per_state: float
    recommend_cpu_seconds: float
    render_cpu_seconds: float


def _jitter(seed: int) -> float:
    """A deterministic value in [-1, 1) from an integer (an LCG step)."""
    return ((seed * 6364136223846793005 + 1442695040888963407) % 2**64) / 2**63 - 1.0


def hourly_usage(states: int, hour: int) -> tuple[list[int], list[int]]:
    """Every container's CPU (millicores) and memory (bytes) usage in ``hour``."""
    diurnal = 1.0 + 0.5 * math.sin(2 * math.pi * hour / 24)
    cpu, memory = [], []
    for i in range(states):
        noise = _jitter(hour * states + i)
        cpu.append(int(50 * math.exp(math.log(40) * i / states) * diurnal * (1.0 + 0.2 * noise)))
        memory.append(
            int(64 * MIB * math.exp(math.log(64) * i / states) * diurnal * (1.0 + 0.05 * noise))
        )
    return cpu, memory


def ingest(containers: Sequence[ContainerState], hours: int) -> tuple[int, float]:
    """Feed ``hours`` hourly CPU and memory samples to every container; return the count and the
    CPU seconds spent feeding them (generating the numbers is not counted)."""
    count = 0
    seconds = 0.0
    for hour in range(hours):
        t = START_NS + hour * HOUR_NS
        cpu, memory = hourly_usage(len(containers), hour)
        started = time.process_time()
        for container, cpu_millicores, memory_bytes in zip(containers, cpu, memory, strict=True):
            container.add_cpu_sample(t, cpu_millicores)
            container.add_memory_sample(t, memory_bytes)
        seconds += time.process_time() - started
        count += 2 * len(containers)
    return count, seconds


def build(states: int) -> tuple[list[AggregateContainerState], list[ContainerState]]:
    aggregates = [AggregateContainerState(creation_time_ns=START_NS) for _ in range(states)]
    return aggregates, [ContainerState(a) for a in aggregates]


def measure(args: argparse.Namespace) -> Result:
    aggregates, containers = build(args.states)
    gc.collect()
    samples, ingest_seconds = ingest(containers, args.hours)

    recommender = create_pod_resource_recommender()
    started = time.process_time()
    results = [recommend({"app": state}, recommender=recommender) for state in aggregates]
    recommend_seconds = time.process_time() - started
    started = time.process_time()
    for result in results:
        result.explanation.render()
    render_seconds = time.process_time() - started
    del results, aggregates, containers
    gc.collect()

    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    aggregates, containers = build(args.states)
    ingest(containers, args.hours)
    del containers
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    return Result(
        states=args.states,
        hours=args.hours,
        samples=samples,
        ingest_cpu_seconds=ingest_seconds,
        bytes_per_state=(traced - sys.getsizeof(aggregates)) / args.states,
        recommend_cpu_seconds=recommend_seconds,
        render_cpu_seconds=render_seconds,
    )


def run_phase(args: argparse.Namespace) -> None:
    """One workload for callgrind: ingest, or ingest then ``--repeat`` recommendation passes."""
    if args.phase == "generate":
        for hour in range(args.hours):
            hourly_usage(args.states, hour)
        return
    aggregates, containers = build(args.states)
    ingest(containers, args.hours)
    if args.phase == "recommend":
        recommender = create_pod_resource_recommender()
        for _ in range(args.repeat):
            for state in aggregates:
                recommend({"app": state}, recommender=recommender)


def instructions(*arguments: str) -> int:
    """Instructions of one ``python -m bench.vpa_model ARGUMENTS`` run under callgrind."""
    return module_instructions("bench.vpa_model", *arguments)


def count_instructions() -> str:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    short = instructions("--phase", "ingest", "--states", "500", "--hours", "24")
    long = instructions("--phase", "ingest", "--states", "500", "--hours", "48")
    generated_short = instructions("--phase", "generate", "--states", "500", "--hours", "24")
    generated_long = instructions("--phase", "generate", "--states", "500", "--hours", "48")
    generation = generated_long - generated_short
    once = instructions("--phase", "recommend", "--states", "500", "--hours", "24")
    thrice = instructions(
        "--phase", "recommend", "--states", "500", "--hours", "24", "--repeat", "3"
    )
    samples = 500 * 24 * 2
    return "\n".join(
        [
            "$ python -m bench.vpa_model --instructions",
            f"instructions per ingested sample: {(long - short - generation) / samples:,.0f} "
            f"(({long:,} - {short:,} - {generation:,} generating the numbers) / {samples:,} "
            "samples)",
            f"instructions per container recommendation: {(thrice - once) / 1000:,.0f} "
            f"(({thrice:,} - {once:,}) / 1,000 recommendations)",
        ]
    )


def render(result: Result, *, command: str) -> str:
    rate = result.samples / result.ingest_cpu_seconds
    return "\n".join(
        [
            f"$ {command}",
            f"states: {result.states}, hours of history: {result.hours}, samples: {result.samples}",
            f"ingest: {rate:,.0f} samples per CPU-second "
            f"({result.ingest_cpu_seconds:.2f} CPU-s; goal >= 300,000)",
            f"memory per aggregate container state: {result.bytes_per_state:,.0f} bytes "
            "(goal <= 3,072)",
            f"recommendation for {result.states} containers: "
            f"{result.recommend_cpu_seconds:.3f} CPU-s (goal <= 1 s for 10,000); "
            f"rendering every explanation: {result.render_cpu_seconds:.3f} CPU-s",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.vpa_model", description=__doc__)
    parser.add_argument("--states", type=int, default=10_000, help="containers (default 10000)")
    parser.add_argument(
        "--hours", type=int, default=192, help="hours of hourly samples (default 192 = 8 days)"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions with callgrind instead of timing (needs valgrind)",
    )
    parser.add_argument(
        "--phase",
        choices=["all", "generate", "ingest", "recommend"],
        default="all",
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--repeat", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.states < 1 or args.hours < 1:
        parser.error("--states and --hours must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.instructions:
        print(count_instructions())
        return
    if args.phase != "all":
        run_phase(args)
        return
    command = "python -m bench.vpa_model " + " ".join(sys.argv[1:] if argv is None else argv)
    print(render(measure(args), command=command.strip()))


if __name__ == "__main__":
    main()
