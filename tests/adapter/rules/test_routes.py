"""The ``routes:`` section: metric-name patterns, their overlap, and its load errors."""

from __future__ import annotations

import pytest

from adapter.rules import RuleConfigError, load_rules
from adapter.rules.routes import MetricPattern, patterns_overlap


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("s0-*", "*", True),
        ("s0-*", "s1-*", False),
        ("s0-*", "*-queue", True),  # s0-queue
        ("a*", "*b", True),  # ab
        ("*x", "*y", False),
        ("x*", "y*", False),
        ("queue", "queue", True),
        ("queue", "queues", False),
        ("q*e", "qu*", True),
        ("*_total", "http_*_seconds", False),
        ("*a*", "*b*", True),
        ("a*b*c", "*d*", True),  # adbc
        ("abc", "a*d", False),
    ],
)
def test_two_patterns_overlap_when_some_name_matches_both(a: str, b: str, overlap: bool) -> None:
    assert patterns_overlap(a, b) is overlap
    assert patterns_overlap(b, a) is overlap


def test_a_pattern_matches_whole_names_with_star_as_any_run() -> None:
    pattern = MetricPattern.parse("s0-*.rps")
    assert pattern.matches("s0-web.rps")
    assert pattern.matches("s0-.rps")
    assert not pattern.matches("s0-webXrps")  # '.' is literal
    assert not pattern.matches("xs0-web.rps")


BACKENDS = """
  backends:
  - {name: keda, url: "https://keda.keda.svc"}
  - {name: legacy, url: "https://prometheus-adapter.monitoring.svc:443/prefix"}
"""


def load(routes: str) -> None:
    load_rules(f"rules: []\nroutes:\n{routes}", source="rules.yaml")


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        (
            BACKENDS
            + "  external.metrics.k8s.io:\n    metrics:\n"
            + "    - {backend: keda, names: ['s0-*']}\n"
            + "    - {backend: legacy, names: ['*-queue']}\n",
            "rules.yaml: routes.external.metrics.k8s.io.metrics[1].names: names matching both "
            "'s0-*' and '*-queue' would be owned by both backend 'keda' (metrics[0]) and backend "
            "'legacy': a metric name must have one owner",
        ),
        (
            BACKENDS + "  custom.metrics.k8s.io: {default: nope}\n",
            "rules.yaml: routes.custom.metrics.k8s.io.default: unknown backend 'nope'",
        ),
        (
            BACKENDS + "  external.metrics.k8s.io:\n    metrics: [{backend: kedaa, names: [x]}]\n",
            "routes.external.metrics.k8s.io.metrics[0].backend: unknown backend 'kedaa'",
        ),
        ("  backends: [{name: a}]\n", "rules.yaml: routes.backends[0].url: required"),
        ("  backends: [{name: A, url: 'http://a'}]\n", "routes.backends[0].name: must be"),
        ("  backends: [{name: a, url: 'ftp://a'}]\n", "routes.backends[0].url: must be http(s)"),
        (
            "  backends: [{name: a, url: 'http://a', timeout: 5x}]\n",
            'routes.backends[0].timeout: time: unknown unit "x" in duration "5x"',
        ),
        (
            "  backends: [{name: a, url: 'http://a', clientCertFile: /c}]\n",
            "clientCertFile and clientKeyFile go together",
        ),
        (
            "  backends: [{name: a, url: 'http://a'}, {name: a, url: 'http://b'}]\n",
            "routes.backends[1].name: 'a' is defined twice",
        ),
        (
            BACKENDS + "  external.metrics.k8s.io:\n    metrics: [{backend: keda, names: []}]\n",
            "names: must list at least one metric-name pattern",
        ),
        (
            BACKENDS + "  external.metrics.k8s.io:\n    metrics: [{backend: keda, names: [a/b]}]\n",
            "names[0]: metric pattern 'a/b' must be a non-empty metric name",
        ),
        ("  discoveryInterval: 0s\n", "routes.discoveryInterval: must be a positive"),
        ("  backend: []\n", "routes.backend: unknown field"),
    ],
)
def test_a_bad_routes_section_is_one_error_naming_the_field(routes: str, message: str) -> None:
    with pytest.raises(RuleConfigError) as caught:
        load(routes)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_same_backend_may_own_overlapping_patterns_and_be_the_default() -> None:
    config = load_rules(
        "routes:\n"
        + BACKENDS
        + "  external.metrics.k8s.io:\n    default: legacy\n    metrics:\n"
        + "    - {backend: keda, names: ['s0-*']}\n    - {backend: keda, names: ['*']}\n",
        source="rules.yaml",
    )
    assert config.routes is not None
    assert config.routes.external.owner("s0-a") == "keda"
    assert config.routes.custom.owner("anything") is None
    assert config.routes.backends[1].timeout_seconds == 10.0
