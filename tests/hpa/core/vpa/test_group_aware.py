"""The ``group-aware`` model: per-pod usage as a line in per-pod load, estimated at the HPA's
target load, with the plain model as fallback."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hpa.core.vpa.group_aware import (
    GroupAwareConfig,
    GroupSample,
    LoadKind,
    group_aware_estimate,
    load_headroom,
    weighted_percentile,
)

MB = 1_000_000.0
PLAIN = 999 * MB
NO_HEADROOM = GroupAwareConfig(load_percentile=0.0)
"""The headroom at the lowest ratio: the line at the target load clamped to the observed loads
(the tests of the line and of the fallbacks; the headroom has its own tests below)."""


def _memory(load: float) -> float:
    """100 MB per pod plus 50 MB per unit of per-pod load."""
    return 100 * MB + 50 * MB * load


def _metric_samples(loads: list[float], replicas: list[int]) -> list[GroupSample]:
    return [
        GroupSample(_memory(load), count, load) for load, count in zip(loads, replicas, strict=True)
    ]


LOADS = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 1.0, 2.0, 3.0, 4.0, 2.5]
REPLICAS = [12, 8, 6, 5, 4, 3, 3, 12, 6, 4, 3, 5]
INVERSE = [GroupSample(50.0 + 600.0 / r, r) for r in [2, 3, 4, 6, 2, 3, 4, 6, 12, 12]]

CASES = [
    # (case, samples, target load, used model, estimate (plain when falling back), reason part)
    (
        "a line in the HPA's metric",
        _metric_samples(LOADS, REPLICAS),
        2.0,
        True,
        _memory(2.0),
        "fit",
    ),
    (
        "a target above the observed loads",
        _metric_samples(LOADS, REPLICAS),
        9.0,
        True,
        _memory(4.0),
        "fit",
    ),
    (
        "a target below the observed loads",
        _metric_samples(LOADS, REPLICAS),
        0.1,
        True,
        _memory(1.0),
        "fit",
    ),
    ("1/replicas when the metric is unknown", INVERSE, 1 / 4, True, 200.0, "fit"),
    (
        "replicas never change",
        [GroupSample(_memory(x), 4, x) for x in LOADS],
        2.0,
        False,
        PLAIN,
        "too few distinct replica counts (1 < 3)",
    ),
    (
        "two replica counts",
        [GroupSample(_memory(x), 3 + i % 2, x) for i, x in enumerate(LOADS)],
        2.0,
        False,
        PLAIN,
        "too few distinct replica counts (2 < 3)",
    ),
    ("no HPA", _metric_samples(LOADS, REPLICAS), None, False, PLAIN, "no target load"),
    (
        "too few samples",
        _metric_samples(LOADS[:5], REPLICAS[:5]),
        2.0,
        False,
        PLAIN,
        "too few samples (5 < 10)",
    ),
    (
        "usage falls with load",
        [GroupSample(500 * MB - _memory(x), r, x) for x, r in zip(LOADS, REPLICAS, strict=True)],
        2.0,
        False,
        PLAIN,
        "usage falls as per-pod load rises",
    ),
    (
        "usage unrelated to load",
        [
            GroupSample(u * MB, r, x)
            for u, r, x in zip(
                [300, 100, 500, 120, 480, 90, 310, 100, 100, 300, 450, 510],
                REPLICAS,
                LOADS,
                strict=True,
            )
        ],
        2.0,
        False,
        PLAIN,
        "poor fit",
    ),
]


@pytest.mark.parametrize(
    ("samples", "target", "used", "expected", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_estimates(
    samples: list[GroupSample], target: float | None, used: bool, expected: float, reason: str
) -> None:
    estimate = group_aware_estimate(samples, target_load=target, plain=PLAIN, config=NO_HEADROOM)
    assert estimate.used_model is used
    assert estimate.value == pytest.approx(expected, rel=1e-9)
    assert reason in estimate.reason


def test_the_spread_at_a_load_is_added_as_a_percentile_of_the_residuals() -> None:
    samples = [
        GroupSample(_memory(x) + (20 * MB if i % 2 else 0.0), r, x)
        for i, (x, r) in enumerate(zip(LOADS, REPLICAS, strict=True))
    ]
    estimate = group_aware_estimate(samples, target_load=2.0, plain=PLAIN, config=NO_HEADROOM)
    assert estimate.used_model
    assert estimate.fit is not None
    assert estimate.residual is not None
    assert estimate.residual > 0
    assert estimate.value == pytest.approx(estimate.fit.at(2.0) + estimate.residual)


def test_samples_without_a_load_make_the_load_1_over_replicas() -> None:
    samples = [*INVERSE[:-1], GroupSample(INVERSE[-1].usage, 12, 7.0)]
    estimate = group_aware_estimate(samples, target_load=1 / 4, plain=PLAIN)
    assert estimate.load_kind is LoadKind.INVERSE_REPLICAS


def test_the_trace_says_which_model_answered() -> None:
    used = group_aware_estimate(_metric_samples(LOADS, REPLICAS), target_load=2.0, plain=PLAIN)
    text = used.trace("container app memory").render()
    assert "group-size model" in text
    assert "r squared: 1.0000" in text
    fallback = group_aware_estimate(INVERSE[:3], target_load=0.25, plain=PLAIN)
    assert "plain model (too few samples (3 < 10))" in fallback.trace("c").render()


def test_weighted_percentile_reads_cumulative_weight() -> None:
    assert weighted_percentile([3.0, 1.0, 2.0], [1.0, 1.0, 1.0], 0.5) == 2.0
    assert weighted_percentile([1.0, 2.0], [9.0, 1.0], 0.9) == 1.0
    assert weighted_percentile([1.0, 2.0], [9.0, 1.0], 0.95) == 2.0


def test_a_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="percentile"):
        GroupAwareConfig(percentile=1.5)


# ---------------------------------------------------------------- properties

_USAGE = st.floats(min_value=0, max_value=1e12, allow_nan=False)
_LOAD = st.floats(min_value=0, max_value=1e4, allow_nan=False)
_TARGET = st.one_of(st.none(), st.floats(min_value=-1e4, max_value=1e4, allow_nan=False))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_USAGE, st.one_of(st.none(), _LOAD)), min_size=0, max_size=40),
    st.integers(min_value=1, max_value=50),
    _TARGET,
    _USAGE,
)
def test_it_reduces_to_the_plain_model_when_replicas_never_change(
    rows: list[tuple[float, float | None]], replicas: int, target: float | None, plain: float
) -> None:
    samples = [GroupSample(usage, replicas, load) for usage, load in rows]
    estimate = group_aware_estimate(samples, target_load=target, plain=plain)
    assert not estimate.used_model
    assert estimate.value == plain


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(_USAGE, st.integers(min_value=1, max_value=30), _LOAD), min_size=10, max_size=60
    ),
    st.floats(min_value=0, max_value=1e4, allow_nan=False),
    st.booleans(),
)
def test_its_recommendation_at_the_target_load_is_within_the_observed_usage(
    rows: list[tuple[float, int, float]], target: float, use_metric: bool
) -> None:
    samples = [GroupSample(u, r, x if use_metric else None) for u, r, x in rows]
    estimate = group_aware_estimate(
        samples, target_load=target if use_metric else 1 / (1 + target), plain=-1.0
    )
    if estimate.used_model:
        usages = [u for u, _, _ in rows]
        assert min(usages) <= estimate.value <= max(usages)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=40), min_size=10, max_size=40).filter(
        lambda counts: len(set(counts)) >= 3
    ),
    st.floats(min_value=0, max_value=1e9, allow_nan=False),
    st.floats(min_value=0, max_value=1e9, allow_nan=False),
    st.integers(min_value=1, max_value=40),
)
def test_usage_linear_in_per_pod_load_is_recovered_at_the_target(
    counts: list[int], fixed: float, per_load: float, desired: int
) -> None:
    assume(per_load == 0 or per_load >= 1e-6 * fixed)  # a slope above float rounding
    samples = [GroupSample(fixed + per_load / r, r) for r in counts]
    estimate = group_aware_estimate(samples, target_load=1 / desired, plain=-1.0)
    assert estimate.used_model
    target = min(max(1 / desired, 1 / max(counts)), 1 / min(counts))
    assert estimate.value == pytest.approx(fixed + per_load * target, rel=1e-6, abs=1e-3)


# ---------------------------------------------------------------- headroom over the target load

HEADROOM_CASES = [
    # (case, (load, target) per sample, weights, percentile, headroom)
    ("no sample", [], [], 0.95, 1.0),
    ("every load at the target", [(3.0, 3.0)] * 20, [1.0] * 20, 0.95, 1.0),
    ("every load below the target: never below 1", [(1.0, 3.0)] * 20, [1.0] * 20, 0.95, 1.0),
    (
        "one load in twenty at twice the target: the 95th percentile is the target",
        [(3.0, 3.0)] * 19 + [(6.0, 3.0)],
        [1.0] * 20,
        0.95,
        1.0,
    ),
    (
        "two in twenty at twice the target: the 95th percentile is twice",
        [(3.0, 3.0)] * 18 + [(6.0, 3.0)] * 2,
        [1.0] * 20,
        0.95,
        2.0,
    ),
    (
        "weights count: one heavy overshoot",
        [(3.0, 3.0), (4.5, 3.0)],
        [1.0, 9.0],
        0.95,
        1.5,
    ),
    (
        "ratios to each sample's own target",
        [(2.0, 1.0), (4.0, 4.0), (6.0, 4.0)],
        [1.0, 1.0, 1.0],
        0.5,
        1.5,
    ),
    ("the 100th percentile is the largest ratio", [(3.0, 3.0), (3.6, 3.0)], [1.0, 1.0], 1.0, 1.2),
]


@pytest.mark.parametrize(
    ("loads", "weights", "percentile", "expected"),
    [case[1:] for case in HEADROOM_CASES],
    ids=[case[0] for case in HEADROOM_CASES],
)
def test_load_headroom(
    loads: list[tuple[float, float]], weights: list[float], percentile: float, expected: float
) -> None:
    assert load_headroom(loads, weights, percentile) == pytest.approx(expected)


def test_the_estimate_is_at_the_target_times_the_headroom() -> None:
    # loads 1.0 .. 4.0 at a target of 2.0: the 95th percentile of load / target is 2, so the
    # model provisions for a per-pod load of 4.0, the heaviest seen
    samples = _metric_samples(LOADS, REPLICAS)
    estimate = group_aware_estimate(samples, target_load=2.0, plain=PLAIN)
    assert estimate.used_model
    assert estimate.provision_load == pytest.approx(4.0)
    assert estimate.value == pytest.approx(_memory(4.0))
    # with the headroom at the median of the ratio, load 2.5 (ratio 1.25)
    median = group_aware_estimate(
        samples, target_load=2.0, plain=PLAIN, config=GroupAwareConfig(load_percentile=0.5)
    )
    assert median.provision_load == pytest.approx(2.5)
    assert median.value == pytest.approx(_memory(2.5))
    trace = dict(estimate.trace("container app memory").details)
    assert trace["provisioned load"] == "4"


def test_the_inverse_replicas_load_has_no_headroom() -> None:
    estimate = group_aware_estimate(INVERSE, target_load=1 / 6, plain=PLAIN)
    assert estimate.used_model
    assert estimate.provision_load == pytest.approx(1 / 6)


def test_a_load_percentile_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match="load_percentile"):
        GroupAwareConfig(load_percentile=1.5)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=1e4, allow_nan=False),
            st.floats(min_value=1e-3, max_value=1e4, allow_nan=False),
            st.floats(min_value=1e-3, max_value=1e3, allow_nan=False),
        ),
        min_size=1,
        max_size=40,
    ),
    st.floats(min_value=0, max_value=1),
    st.floats(min_value=0, max_value=1),
)
def test_the_headroom_is_at_least_1_and_grows_with_the_percentile(
    rows: list[tuple[float, float, float]], p: float, q: float
) -> None:
    loads = [(load, target) for load, target, _ in rows]
    weights = [w for *_, w in rows]
    low, high = sorted((p, q))
    h_low = load_headroom(loads, weights, low)
    h_high = load_headroom(loads, weights, high)
    assert 1.0 <= h_low <= h_high
    # never above the largest ratio, unless every ratio is below 1
    assert h_high <= max(1.0, max(load / target for load, target in loads))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=1, max_value=30), st.floats(min_value=0.1, max_value=10)),
        min_size=10,
        max_size=40,
    ).filter(lambda rows: len({r for r, _ in rows}) >= 3 and len({x for _, x in rows}) >= 2),
    st.floats(min_value=0.1, max_value=10),
)
def test_the_headroom_never_provisions_below_the_target_load(
    rows: list[tuple[int, float]], target: float
) -> None:
    # usage exactly linear in load: the estimate is the line at max(target, q95 of the loads)
    # clamped to the observed loads, so never below the line at the target (within the range)
    samples = [GroupSample(_memory(x), r, x) for r, x in rows]
    estimate = group_aware_estimate(samples, target_load=target, plain=-1.0)
    assert estimate.used_model
    assert estimate.provision_load is not None
    assert estimate.provision_load >= target
    loads = [x for _, x in rows]
    at_target = _memory(min(max(target, min(loads)), max(loads)))
    assert estimate.value >= at_target * (1 - 1e-9)
