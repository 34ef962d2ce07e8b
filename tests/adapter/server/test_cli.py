"""``hpa adapter``: flags to Settings, --prometheus-auth-config, and the whole process wired
(informers, relist, TLS, front-proxy authentication from the ConfigMap, SAR) against fakes."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import structlog
import yaml

from adapter.server.cli import prometheus_connection, serve
from adapter.server.settings import Settings, settings_from_args
from hpa.cli import build_parser
from hpa.kube.logs import configure_logging
from hpa.kube.runtime import EventLoop, run
from tests.adapter.providers.scenario import (
    EVAL_SECONDS,
    RULES,
    SERIES_BY_MATCH,
    Tables,
    merged_parts,
)
from tests.adapter.server.tlsserver import client_context, configmap_for, create_test_pki
from tests.fakes.kubeauth import FakeKubeAuth
from tests.fakes.prometheus import FakePrometheus


def test_flags_reuse_upstream_names_and_build_frozen_settings(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        [
            "adapter",
            "--config=/etc/adapter/config.yaml",
            "--prometheus-url=http://prometheus:9090",
            "--metrics-relist-interval=1m",
            "--metrics-max-age=5m30s",
            "--secure-port=6443",
            "--tls-cert-file=/certs/tls.crt",
            "--tls-private-key-file=/certs/tls.key",
            "--client-ca-file=/certs/ca.crt",
            "--requestheader-client-ca-file=/certs/fp.crt",
            "--requestheader-allowed-names=front-proxy-client,aggregator",
            "--lister-kubeconfig=/kube/config",
            "--prometheus-header=X-Scope-OrgID=tenant-a",
            "--authorization-webhook-cache-ttl=5s",
            "--max-sample-age=30s",
            "--staleness-probe-reuse=0s",
        ]
    )
    settings = settings_from_args(args)
    assert settings.max_sample_age_seconds == 30.0
    assert settings.staleness_probe_reuse_seconds == 0.0
    assert settings.config == Path("/etc/adapter/config.yaml")
    assert settings.metrics_relist_interval_seconds == 60.0
    assert settings.metrics_max_age_seconds == 330.0
    assert settings.requestheader_allowed_names == ("front-proxy-client", "aggregator")
    assert settings.kubeconfig == Path("/kube/config")
    assert settings.prometheus_headers == (("X-Scope-OrgID", "tenant-a"),)
    assert settings.authorization_cache_ttl_seconds == 5.0
    assert settings.always_allow_paths == ("/healthz", "/readyz", "/livez")
    with pytest.raises(AttributeError):
        settings.secure_port = 1  # type: ignore[misc]
    alias = build_parser().parse_args(["adapter", "--config=c", "--kubeconfig=/k"])
    assert settings_from_args(alias).kubeconfig == Path("/k")
    assert settings_from_args(alias).max_sample_age_seconds == 60.0  # 2 x a 30 s scrape
    assert settings_from_args(alias).staleness_probe_reuse_seconds == 1.0
    assert settings_from_args(alias).event_loop == "uvloop"
    on_asyncio = build_parser().parse_args(["adapter", "--config=c", "--event-loop=asyncio"])
    assert settings_from_args(on_asyncio).event_loop == "asyncio"
    explain = build_parser().parse_args(["adapter", "explain", "/apis/x", "--config=c"])
    assert explain.path == "/apis/x"
    assert explain.handler.__name__ == "main_explain"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "--config is required"),
        (["--config=c", "--authorization-webhook-cache-ttl=1m"], "(0, 10]"),
        (["--config=c", "--tls-cert-file=a"], "go together"),
    ],
)
def test_invalid_settings_are_refused(flags: list[str], message: str) -> None:
    args = build_parser().parse_args(["adapter", *flags])
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("]", r"\]")):
        settings_from_args(args)


def test_logs_are_json_lines_at_the_chosen_level() -> None:
    out = io.StringIO()
    configure_logging("info", file=out)
    try:
        logger = structlog.get_logger("adapter.test")
        logger.debug("hidden", detail=1)
        logger.info("config_reloaded", path="/etc/config.yaml")
    finally:
        structlog.reset_defaults()
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    event = orjson.loads(lines[0])
    assert event["event"] == "config_reloaded"
    assert event["path"] == "/etc/config.yaml"
    assert event["level"] == "info"
    assert event["timestamp"].endswith("Z")


def test_main_exits_2_on_invalid_settings() -> None:
    from hpa.cli import main

    assert main(["adapter"]) == 2


@pytest.mark.parametrize(
    "flag",
    [
        "--prometheus-header=X-Scope-OrgID=tenant-a\r\nX-Injected: 1",
        "--prometheus-header=X-Scope-OrgID=tenant-a\nX-Injected: 1",
        "--prometheus-header=X-Scope-OrgID=tenant\x00a",
        "--prometheus-header=X Scope=tenant-a",
    ],
)
def test_prometheus_header_with_cr_lf_or_a_bad_name_is_refused_at_start_up(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["adapter", "--config=/etc/adapter/config.yaml", flag])
    assert exited.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --prometheus-header: " in error
    assert "Traceback" not in error


def test_duration_flags_fail_with_go_s_message_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["adapter", "--metrics-relist-interval=10 minutes"])
    error = orjson.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert error["error"] == (
        'argument --metrics-relist-interval: time: unknown unit " minutes" in duration "10 minutes"'
    )


def test_prometheus_auth_config_is_a_kubeconfig(tmp_path: Path) -> None:
    auth = tmp_path / "auth.yaml"
    auth.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "prom", "cluster": {"certificate-authority": "/ca.crt", "server": "x"}}
                ],
                "users": [{"name": "u", "user": {"tokenFile": "/var/run/token"}}],
                "contexts": [{"name": "c", "context": {"cluster": "prom", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    connection = prometheus_connection(
        Settings(config=Path("c"), prometheus_url="https://p:9090", prometheus_auth_config=auth)
    )
    assert connection.tls is not None
    assert connection.tls.ca_file == Path("/ca.crt")
    assert connection.bearer_token_file == Path("/var/run/token")
    inline = tmp_path / "inline.yaml"
    inline.write_text(
        yaml.safe_dump(
            {
                "users": [{"name": "u", "user": {"token": "secret"}}],
                "contexts": [{"name": "c", "context": {"user": "u"}}],
                "current-context": "c",
            }
        )
    )
    with pytest.raises(ValueError, match="tokenFile"):
        prometheus_connection(Settings(config=Path("c"), prometheus_auth_config=inline))


def _kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "users": [{"name": "adapter", "user": {"token": "adapter-token"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "adapter"}}],
                "current-context": "fake",
            }
        )
    )
    return path


def _pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns1", "labels": labels, "resourceVersion": "1"}
    }


async def _eventually(check: Callable[[], Any], *, attempts: int = 600) -> Any:
    """Poll a real running server (its relist and watch are real I/O, not fake time)."""
    for _ in range(attempts):
        result = await check()
        if result is not None:
            return result
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


@pytest.mark.parametrize(
    ("max_sample_age_seconds", "event_loop"),
    [(60.0, "uvloop"), (0.0, "uvloop"), (60.0, "asyncio")],
)
def test_the_adapter_process_serves_through_front_proxy_authentication(
    tmp_path: Path, max_sample_age_seconds: float, event_loop: EventLoop
) -> None:
    """... on either event loop (``--event-loop``), and ``--max-sample-age`` reaches the
    providers: 0 sends the bare value query, else the value query merged with its staleness
    probe."""
    run(
        _serves_through_front_proxy_authentication(tmp_path, max_sample_age_seconds),
        event_loop=event_loop,
    )


async def _serves_through_front_proxy_authentication(
    tmp_path: Path, max_sample_age_seconds: float
) -> None:
    pki = create_test_pki(tmp_path / "pki")
    config = tmp_path / "config.yaml"
    config.write_text(RULES)
    tables = Tables(values={"web-1": "4"}, ages={"web-1": 1.0})
    async with (
        FakePrometheus(
            series_by_match=dict(SERIES_BY_MATCH),
            responder=tables.respond,
            eval_time_seconds=EVAL_SECONDS,
        ) as prometheus,
        FakeKubeAuth(
            configmap=configmap_for(pki),
            pods=[_pod("web-1", {"app": "web"}), _pod("web-2", {"app": "web"})],
        ) as kube,
    ):
        kube.sar_rule = lambda spec: (spec["user"] == "system:kube-controller-manager", "")
        settings = Settings(
            config=config,
            secure_port=0,
            bind_address="127.0.0.1",
            tls_cert_file=pki.serving.cert_path,
            tls_private_key_file=pki.serving.key_path,
            kubeconfig=_kubeconfig(tmp_path / "kubeconfig", kube.url),
            prometheus_url=prometheus.url,
            config_check_interval_seconds=3600.0,  # only SIGHUP can reload within the test
            max_sample_age_seconds=max_sample_age_seconds,
        )
        stop = asyncio.Event()
        port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(settings, stop=stop, started=port.set_result))
        try:
            url = f"https://127.0.0.1:{await asyncio.wait_for(port, 10)}"
            headers = {"X-Remote-User": "system:kube-controller-manager"}
            ssl = client_context(pki, pki.front_proxy_client)
            async with aiohttp.ClientSession() as http:

                async def ready() -> bool | None:
                    async with http.get(url + "/readyz", ssl=ssl) as r:
                        return True if r.status == 200 else None

                async def values() -> Any:
                    async with http.get(
                        url + "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/"
                        "http_requests_per_second",
                        params={"labelSelector": "app=web"},
                        headers=headers,
                        ssl=ssl,
                    ) as r:
                        return orjson.loads(await r.read()) if r.status == 200 else None

                await _eventually(ready)
                body = await _eventually(values)
                async with http.get(url + "/metrics", headers=headers, ssl=ssl) as r:
                    metrics_text = await r.text()
                async with http.get(
                    url + "/apis", headers={"X-Remote-User": "mallory"}, ssl=ssl
                ) as r:
                    refused = r.status

                config.write_text(RULES.replace('as: "${1}_per_second"', 'as: "${1}_rate"'))
                os.kill(os.getpid(), signal.SIGHUP)

                async def renamed() -> Any:
                    async with http.get(
                        url + "/apis/custom.metrics.k8s.io/v1beta2", headers=headers, ssl=ssl
                    ) as r:
                        names = [x["name"] for x in orjson.loads(await r.read())["resources"]]
                        return names if "pods/http_requests_rate" in names else None

                renamed_names = await _eventually(renamed)
        finally:
            stop.set()
            await asyncio.wait_for(task, 10)
    assert [(i["describedObject"]["name"], i["value"]) for i in body["items"]] == [("web-1", "4")]
    assert "apiserver_request_duration_seconds_bucket" in metrics_text
    assert 'subresource="http_requests_per_second"' in metrics_text
    assert "prometheus_adapter_relists_total" in metrics_text
    assert "hpa_adapter_config_last_reload_successful 1.0" in metrics_text
    assert refused == 403
    value_queries = [q for q in prometheus.queries() if "http_requests_total{" in q]
    assert value_queries
    merged = [merged_parts(q) is not None for q in value_queries]
    assert all(merged) if max_sample_age_seconds else not any(merged)
    assert kube.configmap_reads >= 1
    assert "pods/http_requests_per_second" not in renamed_names  # SIGHUP reloaded the rules


def test_the_serving_process_freezes_its_start_up_heap_and_collects_less_often() -> None:
    """``hpa adapter`` tunes the collector once it listens (process-wide, so restored here)."""
    import gc

    from adapter.server.cli import GC_YOUNG_THRESHOLD, tune_garbage_collector

    before = gc.get_threshold()
    try:
        tune_garbage_collector()
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
