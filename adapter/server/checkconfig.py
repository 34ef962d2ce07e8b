"""``hpa adapter check-config FILE``: check a prometheus-adapter rule file before migrating.

Prints one line per error (``error: FILE: rules[3] (seriesQuery '...'): field: reason``) and per
warning, and exits 1 when there is an error (a file that prometheus-adapter or ``hpa adapter``
would refuse to start with), 0 otherwise. ``FILE`` may be the rule file itself or a ConfigMap
manifest holding it (every ``data`` key is checked). With ``--kubeconfig`` resources are resolved
through the cluster's API discovery (CRDs included) and an unknown one is an error; without it
the built-in kinds answer and an unknown override resource is a warning.

With ``--prometheus URL`` each discovery rule's ``seriesQuery`` is listed (as the relist does,
over ``--metrics-max-age``) and the metrics it discovers are printed with the PromQL of a sample
request: for custom metrics, the first series' object (and namespace); for external metrics, the
first series' namespace; for ``resourceRules``, a pod and a node found in the series. A
``seriesQuery`` that Prometheus refuses is an error (prometheus-adapter's relist would fail).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog
import yaml

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.prometheus.errors import PrometheusError
from adapter.rules import (
    NAMESPACES,
    CustomMetricInfo,
    ExternalSeriesRegistry,
    MetricNamer,
    RESTMapper,
    Series,
    SeriesRegistry,
)
from adapter.rules.check import RuleCheck, check_rules, offline_mapper
from adapter.rules.config import rule_label
from adapter.rules.errors import BadQueryError, RuleEvaluationError
from adapter.server.restmapper import RegeneratingRESTMapper
from hpa.core.duration import parse_duration_seconds
from hpa.kube.client import ClientSettings, aclose_quietly, load_client
from hpa.kube.clock import SystemClock
from hpa.kube.logs import INPUT_ERRORS

Write = Callable[[str], None]
log = structlog.get_logger(__name__)


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def rule_documents(path: Path) -> list[tuple[str, str]]:
    """(source, text) of the rule files in ``path``: the file itself, or each ``data`` entry of
    a ConfigMap manifest (``FILE[config.yaml]``)."""
    text = path.read_text()
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        document = None
    if isinstance(document, dict) and document.get("kind") == "ConfigMap":
        data = document.get("data") or {}
        if not isinstance(data, dict) or not data:
            raise ValueError(f"{path}: a ConfigMap without data holds no rule file")
        return [(f"{path}[{key}]", str(value)) for key, value in data.items()]
    return [(str(path), text)]


def _sample_custom(
    namer: MetricNamer, found: Sequence[Series], mapper: RESTMapper
) -> list[tuple[CustomMetricInfo, str]]:
    """(metric, PromQL) for the first series of every metric the rule serves."""
    registry = SeriesRegistry.from_series([found], [namer], mapper)
    out = []
    for info in registry.list_all_metrics():
        entry = registry.info[info]
        label = namer.label_for_resource(info.group_resource)
        namespace_label = namer.label_for_resource(NAMESPACES) if info.namespaced else ""
        sample = next(
            (s for s in found if s.name == entry.series_name and s.labels.get(label)), None
        )
        if sample is None:
            continue
        namespace = sample.labels.get(namespace_label) if info.namespaced else None
        try:
            query = registry.query_for_metric(
                info, namespace=namespace, names=[sample.labels[label]]
            )
        except (BadQueryError, RuleEvaluationError) as error:
            query = f"(no query: {error})"
        out.append((info, query or "(no query)"))
    return out


def _sample_external(namer: MetricNamer, found: Sequence[Series]) -> list[tuple[str, str]]:
    registry = ExternalSeriesRegistry.from_series([found], [namer])
    out = []
    namespace_label = ""
    if namer.rule.namespaced:
        try:
            namespace_label = namer.label_for_resource(NAMESPACES)
        except RuleEvaluationError:
            namespace_label = ""
    for metric in registry.list_all_metrics():
        series_name = registry.info[metric].series_name
        sample = next((s for s in found if s.name == series_name), None)
        namespace = (sample.labels.get(namespace_label) if sample else None) or "default"
        try:
            query = registry.query_for_metric(metric, namespace=namespace)
        except (BadQueryError, RuleEvaluationError) as error:
            query = f"(no query: {error})"
        out.append((metric, query or "(no query)"))
    return out


async def _discover(
    check: RuleCheck,
    client: PrometheusClient,
    mapper: RESTMapper,
    *,
    source: str,
    max_age_seconds: float,
    report: Report,
) -> None:
    now = SystemClock().now().timestamp()
    rules = [("rules", index, namer) for index, namer in check.custom] + [
        ("externalRules", index, namer) for index, namer in check.external
    ]
    for kind, index, namer in rules:
        where = f"{source}: {rule_label(kind, index, namer.series_query)}"
        try:
            listed = await client.series([namer.series_query], start_seconds=now - max_age_seconds)
        except PrometheusError as error:
            report.errors.append(f"{where}: seriesQuery: Prometheus refused it: {error.message}")
            continue
        found = namer.filter_series(listed)
        report.lines.append(f"{where}: {len(listed)} series, {len(found)} after the filters")
        if kind == "rules":
            for info, query in _sample_custom(namer, found, mapper):
                report.lines.append(f"  {info}: {query}")
        else:
            for metric, query in _sample_external(namer, found):
                report.lines.append(f"  {metric}: {query}")
    if check.resource is not None:
        queries = check.resource
        report.lines.append(
            f"{source}: resourceRules.cpu (pod default/example-0): "
            f"{queries.cpu.build_container_query(['example-0'], namespace='default')}"
        )
        report.lines.append(
            f"{source}: resourceRules.memory (node example-node): "
            f"{queries.memory.build_node_query(['example-node'])}"
        )


async def check_file(
    path: Path,
    *,
    prometheus_url: str | None = None,
    kubeconfig: Path | None = None,
    max_age_seconds: float = 600.0,
) -> Report:
    report = Report()
    mapper: RegeneratingRESTMapper | None = None
    kube = None
    if kubeconfig is not None:
        kube = await load_client(
            ClientSettings(kubeconfig_path=str(kubeconfig), user_agent="hpa-adapter-check-config")
        )
    try:
        if kube is not None:
            mapper = RegeneratingRESTMapper(kube, clock=SystemClock())
            try:
                await mapper.regenerate()
            except Exception as error:  # noqa: BLE001 - one line, like any input mistake
                raise OSError(f"{kubeconfig}: API discovery failed: {error}") from None
        for source, text in rule_documents(path):
            check = check_rules(text, source=source, mapper=mapper)
            report.errors.extend(str(error) for error in check.errors)
            report.warnings.extend(check.warnings)
            if check.config is not None:
                config = check.config
                report.lines.append(
                    f"{source}: {len(config.rules)} rules, {len(config.external_rules)} "
                    f"externalRules, resourceRules: "
                    f"{'yes' if config.resource_rules is not None else 'no'}"
                )
            if prometheus_url is None or check.config is None:
                continue
            async with PrometheusClient(PrometheusConnection(prometheus_url)) as client:
                resolved: RESTMapper = mapper if mapper is not None else _offline(check, source)
                await _discover(
                    check,
                    client,
                    resolved,
                    source=source,
                    max_age_seconds=max_age_seconds,
                    report=report,
                )
    finally:
        if kube is not None:
            await aclose_quietly(kube)
    return report


def _offline(check: RuleCheck, source: str) -> RESTMapper:
    assert check.config is not None
    return offline_mapper(check.config, source=source)[0]


def add_check_config_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "check-config",
        help="check a prometheus-adapter rule file (errors, likely mistakes, what it discovers)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("file", type=Path, help="the rule file, or a ConfigMap manifest with it")
    parser.add_argument("--prometheus", metavar="URL", help="list what each rule discovers")
    parser.add_argument("--kubeconfig", type=Path, help="resolve resources by API discovery")
    parser.add_argument(
        "--metrics-max-age", type=parse_duration_seconds, default=600.0, help="series lookback"
    )
    parser.set_defaults(handler=main_check_config)


def main_check_config(args: argparse.Namespace, *, write: Write | None = None) -> int:
    """Exit 1 when the file has errors, 2 when it cannot be read (one ``invalid_input`` log
    line, like every role's input mistakes), else 0."""
    out = write or sys.stdout.write
    try:
        if not args.file.is_file():
            raise OSError(f"{args.file}: no such rule file")
        report = asyncio.run(
            check_file(
                args.file,
                prometheus_url=args.prometheus,
                kubeconfig=args.kubeconfig,
                max_age_seconds=args.metrics_max_age,
            )
        )
    except INPUT_ERRORS as error:
        log.error("invalid_input", error=str(error))
        return 2
    for line in report.errors:
        out(f"error: {line}\n")
    for line in report.warnings:
        out(f"warning: {line}\n")
    for line in report.lines:
        out(f"{line}\n")
    out(f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)\n")
    return 1 if report.errors else 0
