"""The exporter's load model: exact integration, the split over Ready pods, steps and ramps."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.lab.load_model import (
    LoadModel,
    LoadRamp,
    PodSample,
    PodState,
    WorkloadKey,
    WorkloadProfile,
)

NS = "shop"
KEY = WorkloadKey(NS, "web")
LABELS = {"app": "web"}


class ManualClock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self, now_seconds: float = 1000.0) -> None:
        self.now_seconds = now_seconds

    def __call__(self) -> float:
        return self.now_seconds

    def advance(self, seconds: float) -> None:
        self.now_seconds += seconds


def web_profile(**overrides: int) -> WorkloadProfile:
    values: dict[str, Any] = {
        "cpu_per_request_milli": 20,
        "base_cpu_milli": 100,
        "base_memory_bytes": 50_000_000,
        "memory_per_rps_bytes": 1_000_000,
    }
    values.update(overrides)
    return WorkloadProfile(namespace=NS, workload="web", selector=LABELS, **values)


def pod(name: str, *, ready: bool = True, phase: str = "Running", **labels: str) -> PodState:
    return PodState(
        namespace=NS,
        name=name,
        labels=labels or LABELS,
        containers=("app", "sidecar"),
        phase=phase,
        ready=ready,
    )


def by_pod(samples: list[PodSample]) -> dict[str, PodSample]:
    return {sample.pod: sample for sample in samples}


def test_load_is_split_evenly_over_ready_pods_only() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=30)
    model.replace_pods(KEY, [pod("a"), pod("b"), pod("c", ready=False)])

    clock.advance(10)
    samples = by_pod(model.sample())

    assert samples["a"].http_requests == 150
    assert samples["b"].http_requests == 150
    assert samples["c"].http_requests == 0
    # CPU: base 0.1 core for every Running pod, plus 15 rps * 20 ms for the serving ones.
    assert samples["a"].cpu_usage_seconds == Fraction(10 * (100 + 15 * 20), 1000)
    assert samples["c"].cpu_usage_seconds == 1
    # Memory: base plus 1 MB per rps of the pod's share.
    assert samples["a"].memory_working_set_bytes == 50_000_000 + 15 * 1_000_000
    assert samples["c"].memory_working_set_bytes == 50_000_000


def test_pending_pods_and_other_workloads_pods_have_no_series() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=10)
    model.replace_pods(
        KEY,
        [pod("a"), pod("pending", phase="Pending"), pod("other", app="db")],
    )
    clock.advance(1)

    assert [sample.pod for sample in model.sample()] == ["a"]
    assert model.sample()[0].http_requests == 10


def test_a_deleted_pod_disappears_and_its_share_goes_to_the_rest() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=20)
    model.replace_pods(KEY, [pod("a"), pod("b")])
    clock.advance(5)
    model.delete_pod(KEY, "b")
    clock.advance(5)

    samples = by_pod(model.sample())

    assert set(samples) == {"a"}
    assert samples["a"].http_requests == 5 * 10 + 5 * 20


def test_a_terminating_pod_keeps_its_series_but_gets_no_load() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=20)
    model.replace_pods(KEY, [pod("a"), pod("b")])
    terminating = PodState(
        namespace=NS, name="b", labels=LABELS, containers=("app",), deleting=True
    )
    model.upsert_pod(KEY, terminating)
    clock.advance(2)

    samples = by_pod(model.sample())

    assert samples["a"].http_requests == 40
    assert samples["b"].http_requests == 0
    assert not samples["b"].serving


def test_a_relabelled_pod_leaves_the_workload() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=20)
    model.replace_pods(KEY, [pod("a"), pod("b")])
    model.upsert_pod(KEY, pod("b", app="debug"))

    assert [sample.pod for sample in model.sample()] == ["a"]


def test_a_recreated_pod_starts_its_counters_again() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=10)
    first = PodState(namespace=NS, name="web-0", labels=LABELS, containers=("app",), uid="1")
    model.upsert_pod(KEY, first)
    clock.advance(10)
    second = PodState(namespace=NS, name="web-0", labels=LABELS, containers=("app",), uid="2")
    model.replace_pods(KEY, [second])
    clock.advance(1)

    assert model.sample()[0].http_requests == 10


def test_a_ramp_integrates_to_the_trapezoid() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=10)
    model.replace_pods(KEY, [pod("a")])
    model.set_load(NS, "web", 30, ramp_seconds=10)

    clock.advance(5)
    assert model.load(NS, "web") == 20
    clock.advance(10)

    assert model.load(NS, "web") == 30
    assert model.target_load(NS, "web") == 30
    # 10 s from 10 to 30 rps (200 requests), then 5 s at 30 rps.
    assert model.sample()[0].http_requests == 200 + 150


def test_load_with_no_ready_pod_is_dropped() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=10)
    model.replace_pods(KEY, [pod("a", ready=False)])
    clock.advance(10)
    model.upsert_pod(KEY, pod("a"))
    clock.advance(1)

    assert model.sample()[0].http_requests == 10


def test_float_rps_are_taken_as_their_decimal_value() -> None:
    clock = ManualClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=0.1)
    model.replace_pods(KEY, [pod("a")])
    clock.advance(30)

    assert model.sample()[0].http_requests == 3


@pytest.mark.parametrize(
    ("rps", "ramp_seconds"),
    [(-1, 0), (1, -1)],
)
def test_negative_load_or_ramp_is_refused(rps: int, ramp_seconds: int) -> None:
    model = LoadModel(ManualClock())
    model.add_workload(web_profile())
    with pytest.raises(ValueError, match="must not be negative"):
        model.set_load(NS, "web", rps, ramp_seconds=ramp_seconds)


def test_unknown_workload_is_a_key_error() -> None:
    model = LoadModel(ManualClock())
    with pytest.raises(KeyError, match="shop/nope"):
        model.set_load(NS, "nope", 1)


def test_a_profile_needs_a_selector() -> None:
    with pytest.raises(ValueError, match="selector"):
        WorkloadProfile(namespace=NS, workload="web", selector={})


# ---------------------------------------------------------------- properties

# A step in a random scenario: (seconds to wait, action, argument).
actions = st.one_of(
    st.tuples(st.just("set_load"), st.integers(0, 500), st.integers(0, 20)),
    st.tuples(st.just("add_pod"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("delete_pod"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("set_ready"), st.integers(0, 5), st.booleans()),
)
scenarios = st.lists(
    st.tuples(st.fractions(min_value=0, max_value=20, max_denominator=1000), actions),
    max_size=30,
)


def apply(model: LoadModel, action: tuple[str, int, bool | int]) -> None:
    kind, number, argument = action
    if kind == "set_load":
        model.set_load(NS, "web", number, ramp_seconds=int(argument))
    elif kind in ("add_pod", "set_ready"):
        model.upsert_pod(KEY, pod(f"p{number}", ready=bool(argument)))
    else:
        model.delete_pod(KEY, f"p{number}")


class FractionClock:
    def __init__(self) -> None:
        self.now_seconds = Fraction(0)

    def __call__(self) -> float:
        # LoadModel converts with Fraction(); exact binary floats keep the test exact.
        return float(self.now_seconds)


@settings(max_examples=100, deadline=None)
@given(scenario=scenarios)
def test_counters_never_go_backwards_for_a_pod_that_stays(
    scenario: list[tuple[Fraction, tuple[str, int, bool | int]]],
) -> None:
    clock = FractionClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=100)
    previous = by_pod(model.sample())
    for wait_seconds, action in scenario:
        clock.now_seconds += Fraction(int(wait_seconds * 1024), 1024)
        apply(model, action)
        current = by_pod(model.sample())
        for name, sample in current.items():
            if name in previous:
                assert sample.http_requests >= previous[name].http_requests
                assert sample.cpu_usage_seconds >= previous[name].cpu_usage_seconds
        previous = current


GRID = 8  # times and ramps are whole 1/8 s, so a ramp's kink falls on the grid


def midpoint_requests(ramp: LoadRamp, start_seconds: Fraction, cells: int) -> Fraction:
    """Requests offered in `cells` grid cells from `start_seconds`, by the midpoint rule.

    The load is linear inside each cell (kinks are on the grid), so the midpoint rule is exact:
    an independent check of `LoadRamp.requests_between`.
    """
    return sum(
        (ramp.rps_at(start_seconds + (k + Fraction(1, 2)) / GRID) / GRID for k in range(cells)),
        Fraction(0),
    )


@settings(max_examples=100, deadline=None)
@given(
    ready=st.lists(st.booleans(), min_size=1, max_size=6).filter(any),
    steps=st.lists(
        st.tuples(
            st.integers(1, 64),  # wait before the step, in grid cells
            st.integers(0, 1000),  # target rps
            st.integers(0, 80),  # ramp, in grid cells
        ),
        max_size=15,
    ),
    tail=st.integers(0, 64),
)
def test_requests_served_equal_the_integral_of_the_offered_load(
    ready: list[bool], steps: list[tuple[int, int, int]], tail: int
) -> None:
    clock = FractionClock()
    model = LoadModel(clock)
    model.add_workload(web_profile(), rps=7)
    model.replace_pods(KEY, [pod(f"p{i}", ready=r) for i, r in enumerate(ready)])
    expected_requests = Fraction(0)
    ramp = LoadRamp(Fraction(0), Fraction(7), Fraction(7))
    for wait, target_rps, ramp_cells in [*steps, (tail, 0, 0)]:
        expected_requests += midpoint_requests(ramp, clock.now_seconds, wait)
        clock.now_seconds += Fraction(wait, GRID)
        model.set_load(NS, "web", target_rps, ramp_seconds=Fraction(ramp_cells, GRID))
        ramp = LoadRamp(
            clock.now_seconds,
            ramp.rps_at(clock.now_seconds),
            Fraction(target_rps),
            Fraction(ramp_cells, GRID),
        )

    samples = model.sample()
    serving = [sample for sample in samples if sample.serving]

    assert sum((sample.http_requests for sample in samples), Fraction(0)) == expected_requests
    # Split evenly: every serving pod served the same amount, the others nothing.
    assert {sample.http_requests for sample in serving} == {expected_requests / len(serving)}
    assert all(sample.http_requests == 0 for sample in samples if not sample.serving)
    # CPU: base for the elapsed time plus the served requests times the CPU per request.
    for sample in serving:
        assert sample.cpu_usage_seconds == (
            Fraction(100, 1000) * clock.now_seconds + sample.http_requests * Fraction(20, 1000)
        )
