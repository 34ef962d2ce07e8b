"""The ``crane`` recommender, case by case, with the arithmetic of Crane's algorithm by hand.

Crane (gocrane/crane ``pkg/prediction/percentile``, ``pkg/recommendation/recommender/resource``):
a plain histogram with linear buckets (CPU 0.1 core wide up to 100 cores, memory 104857600 bytes =
100 MiB wide up to 104857600000), every sample weighted by ``max(1e-5, value)``; the estimate is
``percentile(p) * (1 + margin) / targetUtilization`` where ``percentile`` is the END of the bucket
where the cumulative weight reaches ``p`` of the total (the START of the open last bucket);
CPU is then ``int64(cores * 1000)`` millicores and memory ``int64(bytes)``, both truncated.
Defaults: p = 0.99, margin 0.15, utilization 1.0. Bucket ``b`` of CPU starts at ``b * 0.1`` in
floating point, so ``0.4 * 1.15 * 1000`` is 459.99999999999994 and truncates to 459: the
truncation is Crane's (``int64(v * 1000)``), kept exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hpa.core.vpa.amount import Resources
from hpa.core.vpa.crane import (
    DEFAULT_SPECIFICATIONS,
    CraneConfig,
    CraneContainerState,
    Specification,
    crane_recommend,
    get_normalized_resource,
    parse_specifications,
)
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND

MI = 2**20
GI = 2**30
HOUR = 3600 * NANOSECONDS_PER_SECOND
NOW = 1_767_225_600 * NANOSECONDS_PER_SECOND
DEFAULTS = CraneConfig()


@dataclass(frozen=True)
class Case:
    cpu: list[tuple[int, int]]  # (samples, millicores)
    memory: list[tuple[int, int]]  # (samples, bytes)
    expected: Resources | None
    config: CraneConfig = DEFAULTS
    oom: tuple[int, int] | None = None  # (hours ago, bytes)


STEADY_CPU = [(60, 350)]  # bucket 3 = [0.3, 0.4) cores
STEADY_MEMORY = [(60, 300 * MI)]  # 314572800 // 104857600 = bucket 3 = [300Mi, 400Mi)
# Memory of the steady cases: end of bucket 3 = 4 * 104857600 = 419430400;
# 419430400 * 1.15 = 482344959.99999994 -> 482344959.
STEADY_MEMORY_BYTES = 482344959

CASES = {
    "steady usage: end of the bucket plus 15 %": Case(
        # 0.4 * 1.15 = 0.45999999999999996 cores -> x1000 = 459.99999999999994 -> 459m
        STEADY_CPU,
        STEADY_MEMORY,
        Resources(cpu=459, memory=STEADY_MEMORY_BYTES),
    ),
    "one core": Case(
        # 1000m is bucket 10 = [1.0, 1.1); end 11 * 0.1 = 1.1 (1.1000000000000001);
        # 1.1 * 1.15 * 1000 = 1265.0 -> 1265m
        [(30, 1000)],
        STEADY_MEMORY,
        Resources(cpu=1265, memory=STEADY_MEMORY_BYTES),
    ),
    "a rare spike reaches p99 because samples weigh their value": Case(
        # 99 x 200m weigh 99 * 0.2 = 19.8, 1 x 2000m weighs 2.0; total 21.8,
        # p99 threshold 0.99 * 21.8 = 21.582 > 19.8: the scan reaches bucket 20 = [2.0, 2.1),
        # end 21 * 0.1 = 2.1; 2.1 * 1.15 * 1000 = 2415.0 -> 2415m
        [(99, 200), (1, 2000)],
        STEADY_MEMORY,
        Resources(cpu=2415, memory=STEADY_MEMORY_BYTES),
    ),
    "a rarer spike stays under p99": Case(
        # 999 x 200m weigh 199.8, total 201.8, threshold 199.782 <= 199.8: bucket 2 = [0.2, 0.3)
        # ends the scan; end 3 * 0.1 = 0.30000000000000004; x1.15 x1000 = 345.00000000000006
        # -> 345m
        [(999, 200), (1, 2000)],
        STEADY_MEMORY,
        Resources(cpu=345, memory=STEADY_MEMORY_BYTES),
    ),
    "target utilization 0.8 divides": Case(
        # 0.4 * 1.15 / 0.8 = 0.575 -> 575.0 -> 575m;
        # memory 419430400 * 1.15 = 482344959.99999994, / 0.8 = 602931199.9999999 -> 602931199
        STEADY_CPU,
        STEADY_MEMORY,
        Resources(cpu=575, memory=602931199),
        CraneConfig(cpu_target_utilization=0.8, mem_target_utilization=0.8),
    ),
    "no margin": Case(
        # 0.4 * (1 + 0) / 1 * 1000 = 400.0 -> 400m; memory 419430400
        STEADY_CPU,
        STEADY_MEMORY,
        Resources(cpu=400, memory=419430400),
        CraneConfig(cpu_request_margin_fraction=0.0, mem_request_margin_fraction=0.0),
    ),
    "median weighted by value": Case(
        # p = 0.5: 50 x 100m weigh 5, 50 x 900m weigh 45, threshold 25 > 5: bucket 9 = [0.9, 1.0)
        # (the last non-empty one); end 10 * 0.1 = 1.0; 1.0 * 1.15 * 1000 = 1150.0 -> 1150m
        [(50, 100), (50, 900)],
        STEADY_MEMORY,
        Resources(cpu=1150, memory=482344959),
        CraneConfig(cpu_request_percentile=0.5),
    ),
    "idle container: one bucket is the minimum": Case(
        # usage 0 weighs max(1e-5, 0) = 1e-5 >= epsilon 1e-10: bucket 0, end 0.1;
        # 0.1 * 1.15 * 1000 = 114.99999999999999 -> 114m
        [(60, 0)],
        STEADY_MEMORY,
        Resources(cpu=114, memory=STEADY_MEMORY_BYTES),
    ),
    "recent OOM raises memory": Case(
        # OOM at 1 GiB 24 h ago (< 168 h): max(1073741824 + 104857600, 1073741824 * 1.2)
        # = max(1178599424, 1288490188.8 -> 1288490188) = 1288490188 > 482344959
        STEADY_CPU,
        STEADY_MEMORY,
        Resources(cpu=459, memory=1288490188),
        oom=(24, GI),
    ),
    "OOM older than the OOM history is ignored": Case(
        STEADY_CPU, STEADY_MEMORY, Resources(cpu=459, memory=STEADY_MEMORY_BYTES), oom=(169, GI)
    ),
    "small OOM below the estimate changes nothing": Case(
        # max(200Mi + 100Mi, 200Mi * 1.2) = max(314572800, 251658240) = 314572800 < 482344959
        STEADY_CPU,
        STEADY_MEMORY,
        Resources(cpu=459, memory=STEADY_MEMORY_BYTES),
        oom=(1, 200 * MI),
    ),
    "OOM protection off": Case(
        STEADY_CPU,
        STEADY_MEMORY,
        Resources(cpu=459, memory=STEADY_MEMORY_BYTES),
        CraneConfig(oom_protection=False),
        oom=(1, GI),
    ),
    "specification: the smallest that fits both": Case(
        # 459m -> 0.459 cores: the first CPU >= 0.459 is 0.5; 482344959 / 2**30 = 0.449 GiB
        # <= 0.5: spec 0.5c0.5g -> "0.50" = 500m, "0.50Gi" = 536870912
        STEADY_CPU,
        STEADY_MEMORY,
        Resources(cpu=500, memory=536870912),
        CraneConfig(specification=True),
    ),
    "specification: memory moves the CPU up": Case(
        # cpu 200m -> bucket 2, end 0.30000000000000004 -> 345m; memory 3 GiB = bucket 30,
        # end 31 * 104857600 = 3250585600; x1.15 = 3738173439.9999995 -> 3738173439 = 3.48 GiB;
        # 0.5-core specs stop at 1 GiB, so the next CPU, 1 core: 1c4g -> 1000m, 4Gi
        [(60, 200)],
        [(60, 3 * GI)],
        Resources(cpu=1000, memory=4 * GI),
        CraneConfig(specification=True),
    ),
    "specification: past the last memory bucket": Case(
        # 300 GiB is past 104857600000: the open last bucket 1000 returns its START,
        # 1000 * 104857600 = 104857600000; x1.15 = 120586239999.99998 -> 120586239999 = 112.3 GiB;
        # the first spec with CPU >= 0.459 and memory >= 112.3 GiB is 16c128g
        STEADY_CPU,
        [(10, 300 * GI)],
        Resources(cpu=16000, memory=128 * GI),
        CraneConfig(specification=True),
    ),
    "specification: nothing that large keeps the estimate": Case(
        # 150 cores is past 100: last bucket start 1000 * 0.1 = 100.0; x1.15 x1000 =
        # 114999.99999999999 -> 114999m; no spec has 115 cores: (0, 0), the estimate stays
        [(10, 150_000)],
        STEADY_MEMORY,
        Resources(cpu=114999, memory=STEADY_MEMORY_BYTES),
        CraneConfig(specification=True),
    ),
    "no CPU samples: no recommendation": Case([], STEADY_MEMORY, None),
    "no memory samples: no recommendation": Case(STEADY_CPU, [], None),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_crane_recommendation(case: Case) -> None:
    state = CraneContainerState(case.config)
    t = NOW - 7 * 24 * HOUR
    for count, millicores in case.cpu:
        for _ in range(count):
            state.add_cpu_sample(t, millicores)
            t += 60 * NANOSECONDS_PER_SECOND
    for count, num_bytes in case.memory:
        for _ in range(count):
            state.add_memory_sample(t, num_bytes)
            t += 60 * NANOSECONDS_PER_SECOND
    if case.oom is not None:
        hours_ago, num_bytes = case.oom
        state.record_oom(NOW - hours_ago * HOUR, num_bytes)
    result = crane_recommend(state, case.config, now_ns=NOW, container_name="app")
    assert result.target == case.expected
    assert result.explanation.render().startswith("[")


def test_explanation_says_what_moved_the_memory() -> None:
    state = CraneContainerState(CraneConfig())
    state.add_cpu_sample(NOW, 350)
    state.add_memory_sample(NOW, 300 * MI)
    state.record_oom(NOW - HOUR, GI)
    text = crane_recommend(state, CraneConfig(), now_ns=NOW, container_name="app").explanation
    assert "app memory raised for an OOM kill: 1288490188" in text.render()


def test_specifications_parse_and_sort() -> None:
    assert parse_specifications("2c4g,0.5c1g,0.5c0.5g") == (
        Specification(0.5, 0.5),
        Specification(0.5, 1.0),
        Specification(2.0, 4.0),
    )
    assert len(DEFAULT_SPECIFICATIONS) == 29
    assert DEFAULT_SPECIFICATIONS[0] == Specification(0.25, 0.25)
    assert DEFAULT_SPECIFICATIONS[-1] == Specification(64.0, 256.0)
    with pytest.raises(ValueError, match=r"^specification 1c format error$"):
        parse_specifications("1c")


def test_normalized_resource_without_a_fit_is_zero() -> None:
    assert get_normalized_resource(200_000, GI, DEFAULT_SPECIFICATIONS) == (0, 0)
    assert get_normalized_resource(250, GI // 4, DEFAULT_SPECIFICATIONS) == (250, GI // 4)
