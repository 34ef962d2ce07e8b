"""docs/configuration.md is what the Settings classes and their flags say today."""

from __future__ import annotations

import argparse

from hpa.controllers.settings import HorizontalControllerSettings
from tests.delivery.configref import (
    CONFIGURATION_DOC,
    attribute_docs,
    flag_table,
    render,
    subcommand,
)


def test_committed_reference_equals_a_fresh_render() -> None:
    assert CONFIGURATION_DOC.read_text() == render(), (
        "docs/configuration.md drifted from the Settings classes; run `make manifests` "
        "(python -m tests.delivery.configref) and commit"
    )


def test_every_flag_of_both_roles_is_listed() -> None:
    page = render()
    for role in ("controller", "adapter"):
        for action in subcommand(role)._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert f"`{action.option_strings[0]}`" in page


def test_field_documentation_comes_from_the_attribute_docstrings() -> None:
    docs = attribute_docs(HorizontalControllerSettings)
    assert "--horizontal-pod-autoscaler-sync-period" in docs["sync_period_seconds"]
    assert any(
        "sync-period" in row and "15s" in row for row in flag_table(subcommand("controller"))
    )
