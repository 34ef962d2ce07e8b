"""Which VPA controls a pod (``GetMatchingVPA``, ``Stronger``, ``PodMatchesVPA``, ``GetUpdateMode``
of VPA v1.8.1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hpa.core.selector import parse_selector
from hpa.core.vpa.matching import (
    ControllerKey,
    VpaTarget,
    get_update_mode,
    matching_vpa,
    stronger,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WEB = ControllerKey("ns", "Deployment", "web", "apps/v1")
LABELS = {"app": "web"}


def vpa(
    name: str,
    *,
    age: int = 0,
    mode: str | None = None,
    boost: bool = False,
    target: ControllerKey = WEB,
    selector: str | None = "app=web",
    namespace: str = "ns",
) -> VpaTarget:
    return VpaTarget(
        namespace=namespace,
        name=name,
        created=T0 + timedelta(seconds=age),
        target=target,
        update_mode=mode,
        has_startup_boost=boost,
        selector=None if selector is None else parse_selector(selector),
    )


@pytest.mark.parametrize(
    ("mode", "expected"),
    [(None, "Recreate"), ("", "Recreate"), ("Off", "Off"), ("InPlace", "InPlace")],
)
def test_get_update_mode(mode: str | None, expected: str) -> None:
    assert get_update_mode(mode) == expected


def test_stronger_is_the_older_then_the_smaller_name() -> None:
    assert stronger(vpa("b", age=0), vpa("a", age=1))
    assert not stronger(vpa("a", age=1), vpa("b", age=0))
    assert stronger(vpa("a"), vpa("b"))
    assert not stronger(vpa("b"), vpa("a"))
    assert stronger(vpa("a"), None)


CASES = {
    "one vpa": ([vpa("v")], "v"),
    "the older of two": ([vpa("new", age=5), vpa("old", age=1)], "old"),
    "off is skipped": ([vpa("off", mode="Off"), vpa("later", age=3)], "later"),
    "off with a startup boost still matches": ([vpa("off", mode="Off", boost=True)], "off"),
    "another target": ([vpa("v", target=ControllerKey("ns", "Deployment", "api"))], None),
    "the api version does not count": (
        [vpa("v", target=ControllerKey("ns", "Deployment", "web", "apps/v1beta2"))],
        "v",
    ),
    "selector does not match": ([vpa("v", selector="app=db")], None),
    "no selector could be read": ([vpa("v", selector=None)], None),
    "another namespace": ([vpa("v", namespace="other")], None),
    "no vpas": ([], None),
}


@pytest.mark.parametrize(("vpas", "expected"), CASES.values(), ids=CASES.keys())
def test_matching_vpa(vpas: list[VpaTarget], expected: str | None) -> None:
    chosen = matching_vpa("ns", LABELS, WEB, vpas)
    assert (chosen.name if chosen else None) == expected


def test_a_pod_without_a_parent_matches_nothing() -> None:
    assert matching_vpa("ns", LABELS, None, [vpa("v")]) is None


def test_the_updater_and_recommender_keep_off_vpas() -> None:
    chosen = matching_vpa("ns", LABELS, WEB, [vpa("off", mode="Off")], skip_off=False)
    assert chosen is not None
