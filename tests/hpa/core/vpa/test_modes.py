"""The updater's modes and the per-resource modes extension (kubernetes/autoscaler#7937)."""

from __future__ import annotations

import pytest

from hpa.core.vpa.modes import (
    RESOURCE_UPDATE_MODES_ANNOTATION,
    UpdatePlan,
    parse_resource_update_modes,
    update_plan,
)

ANN = RESOURCE_UPDATE_MODES_ANNOTATION
BOTH = frozenset({"cpu", "memory"})

# name: (VPA mode, annotation or None, plan)
PLANS = {
    "unset is Recreate": (None, None, UpdatePlan("Recreate", BOTH)),
    "empty is Recreate": ("", None, UpdatePlan("Recreate", BOTH)),
    "Auto behaves as Recreate": ("Auto", None, UpdatePlan("Recreate", BOTH)),
    "Recreate": ("Recreate", None, UpdatePlan("Recreate", BOTH)),
    "InPlaceOrRecreate": ("InPlaceOrRecreate", None, UpdatePlan("InPlaceOrRecreate", BOTH)),
    "InPlace": ("InPlace", None, UpdatePlan("InPlace", BOTH)),
    "Off changes no running pod": ("Off", None, UpdatePlan(None, frozenset())),
    "Initial changes no running pod": ("Initial", None, UpdatePlan(None, frozenset())),
    "memory Initial: cpu alone is updated": (
        "Recreate",
        "memory=Initial",
        UpdatePlan("Recreate", frozenset({"cpu"})),
    ),
    "cpu Off, memory InPlace under an Off VPA": (
        "Off",
        "memory=InPlace",
        UpdatePlan("InPlace", frozenset({"memory"})),
    ),
    "the least disruptive mode wins": (
        "Recreate",
        "cpu=InPlace",
        UpdatePlan("InPlace", BOTH),
    ),
    "InPlaceOrRecreate beside Auto": (
        "Auto",
        "memory=InPlaceOrRecreate",
        UpdatePlan("InPlaceOrRecreate", BOTH),
    ),
    "every resource Off": ("Recreate", "cpu=Off, memory=Initial", UpdatePlan(None, frozenset())),
    "a bad annotation is reported and ignored": (
        "InPlace",
        "gpu=Off",
        UpdatePlan("InPlace", BOTH, f"{ANN}: unknown resource 'gpu' (cpu or memory)"),
    ),
}


@pytest.mark.parametrize(("mode", "annotation", "want"), PLANS.values(), ids=PLANS.keys())
def test_update_plan(mode: str | None, annotation: str | None, want: UpdatePlan) -> None:
    annotations = {} if annotation is None else {ANN: annotation}
    assert update_plan(mode, annotations) == want


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("cpu", "'cpu' is not resource=mode"),
        ("cpu=Sometimes", "unknown mode 'Sometimes'"),
        ("cpu=Off,cpu=InPlace", "cpu is listed twice"),
    ],
)
def test_parse_refuses(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_resource_update_modes(text)


def test_parse_tolerates_spaces_and_empty_items() -> None:
    assert parse_resource_update_modes(" cpu = InPlace , ,memory=Off ") == {
        "cpu": "InPlace",
        "memory": "Off",
    }
