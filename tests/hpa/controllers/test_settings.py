"""Settings of the horizontal controller: upstream flag names, units and defaults."""

from __future__ import annotations

import argparse

import pytest

from hpa.controllers.settings import HorizontalControllerSettings, add_flags, from_args


def parse(*argv: str) -> HorizontalControllerSettings:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return from_args(parser.parse_args(argv))


def test_defaults_are_upstream_s() -> None:
    settings = parse()
    assert settings == HorizontalControllerSettings()
    assert settings.sync_period_seconds == 15.0
    assert settings.tolerance == 0.1
    assert settings.downscale_stabilization_seconds == 300.0
    assert settings.cpu_initialization_period_seconds == 300.0
    assert settings.initial_readiness_delay_seconds == 30.0
    assert settings.concurrent_syncs == 5
    assert (settings.kube_api_qps, settings.kube_api_burst) == (20.0, 30)
    assert settings.dry_run is False


def test_upstream_flags_take_go_durations() -> None:
    settings = parse(
        "--horizontal-pod-autoscaler-sync-period=30s",
        "--horizontal-pod-autoscaler-tolerance=0.2",
        "--horizontal-pod-autoscaler-downscale-stabilization=10m0s",
        "--horizontal-pod-autoscaler-cpu-initialization-period=2m",
        "--horizontal-pod-autoscaler-initial-readiness-delay=10s",
        "--concurrent-horizontal-pod-autoscaler-syncs=12",
        "--kube-api-qps=50",
        "--kube-api-burst=100",
        "--horizontal-pod-autoscaler-metric-timeout=1500ms",
        "--horizontal-pod-autoscaler-status-value-tolerance=0",
        "--horizontal-pod-autoscaler-scale-to-zero=false",
        "--dry-run",
    )
    assert settings.sync_period_seconds == 30.0
    assert settings.tolerance == 0.2
    assert settings.downscale_stabilization_seconds == 600.0
    assert settings.cpu_initialization_period_seconds == 120.0
    assert settings.initial_readiness_delay_seconds == 10.0
    assert settings.concurrent_syncs == 12
    assert (settings.kube_api_qps, settings.kube_api_burst) == (50.0, 100)
    assert settings.metric_timeout_seconds == 1.5
    assert settings.status_value_tolerance == 0.0
    assert settings.scale_to_zero_enabled is False
    assert settings.dry_run is True
    core = settings.horizontal
    assert (core.tolerance, core.downscale_stabilization_seconds) == (0.2, 600)
    assert core.scale_to_zero_enabled is False


def test_a_bad_duration_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--horizontal-pod-autoscaler-sync-period=15")
    assert 'missing unit in duration "15"' in capsys.readouterr().err


@pytest.mark.parametrize(
    "field", ["sync_period_seconds", "concurrent_syncs", "metric_timeout_seconds"]
)
def test_out_of_range_values_are_refused(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        HorizontalControllerSettings(**{field: 0})  # type: ignore[arg-type]


def test_resize_aware_utilization_is_on_by_default_and_can_be_upstream_s() -> None:
    assert parse().horizontal.resize_aware_utilization is True
    upstream = parse("--horizontal-pod-autoscaler-resize-aware-utilization=false")
    assert upstream.horizontal.resize_aware_utilization is False


def test_shared_resource_metrics_reads_are_on_by_default_and_can_be_upstream_s() -> None:
    assert parse().shared_resource_metrics_reads is True
    upstream = parse("--horizontal-pod-autoscaler-shared-resource-metrics-reads=false")
    assert upstream.shared_resource_metrics_reads is False
