"""``hpa adapter check-config``: every error on its own line naming the rule and the field, the
likely mistakes prometheus-adapter accepts as warnings, and what each rule discovers in a real
Prometheus with the PromQL of a sample request."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapter.rules import DiscoveryRESTMapper
from adapter.rules.check import check_rules
from hpa.cli import build_parser
from tests.adapter.server.test_restmapper import APPS, BRANDS, CORE
from tests.lab.prometheus import PrometheusServer

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared" / "data" / "prometheus-adapter"
PEER_DOCS = REPO.parent / "shared" / "peers" / "prometheus-adapter" / "docs"
RULE_FILES = sorted(
    [
        *SHARED.glob("*.yaml"),
        *(REPO / "tests" / "e2e" / "prometheus_adapter_rules").glob("*.yaml"),
        *PEER_DOCS.glob("*.yaml"),
    ]
)


def _run(*args: str) -> tuple[int, list[str]]:
    lines: list[str] = []
    parsed = build_parser().parse_args(["adapter", "check-config", *args])
    code = parsed.handler(parsed, write=lambda text: lines.extend(text.splitlines()))
    return code, lines


def test_the_rule_files_in_use_have_no_error() -> None:
    assert len(RULE_FILES) >= 8
    for path in RULE_FILES:
        code, lines = _run(str(path))
        assert code == 0, (path, lines)
        assert not [line for line in lines if line.startswith("error:")], lines
        assert lines[-1].startswith("0 error(s)")


def test_the_sample_config_warns_of_what_prometheus_adapter_would_refuse_or_ignore() -> None:
    code, lines = _run(str(SHARED / "sample-config.yaml"))
    warnings = [line for line in lines if line.startswith("warning:")]
    assert code == 0
    assert any("line 30: double-quoted value" in line for line in warnings), warnings
    assert any(
        "rules[3] (seriesQuery 'cheddar{sharp=\"true\"}'): resources.overrides.brand: "
        "brand.cheese.io is not a built-in resource" in line
        for line in warnings
    ), warnings
    assert any("metricsQuery: uses neither <<.LabelMatchers>>" in line for line in warnings)


def test_the_configmap_of_the_deploy_manifests_is_read_through_its_data() -> None:
    code, lines = _run(str(SHARED / "deploy-config-map.yaml"))
    assert code == 0
    assert lines[0].endswith(
        "deploy-config-map.yaml[config.yaml]: 0 rules, 0 externalRules, resourceRules: yes"
    )


BAD = """\
rules:
- seriesQuery: 'http_requests_total{namespace!=""}'
  name: {matches: '(unclosed'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'up'
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.Nope>>)'
externalRules:
- seriesQuery: 'queue_depth'
  seriesFilters: [{is: 'a', isNot: 'b'}]
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""


def test_every_error_is_one_line_naming_the_rule_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    code, lines = _run(str(path))
    errors = [line for line in lines if line.startswith("error:")]
    assert code == 1
    assert errors[0] == (
        f"error: {path}: rules[0] (seriesQuery 'http_requests_total{{namespace!=\"\"}}'): "
        "name.matches: error parsing regexp: missing closing ): `(unclosed`"
    )
    assert errors[1].startswith(f"error: {path}: rules[1] (seriesQuery 'up'): metricsQuery: ")
    assert "Nope" in errors[1]
    assert errors[2].startswith(
        f"error: {path}: externalRules[0] (seriesQuery 'queue_depth'): seriesFilters[0]: "
        "cannot have both an `is`"
    )
    assert len(errors) == 3
    assert lines[-1] == "3 error(s), 0 warning(s)"


def test_against_a_cluster_an_unknown_resource_is_an_error_naming_rule_and_resource() -> None:
    text = (SHARED / "sample-config.yaml").read_text()
    without = DiscoveryRESTMapper.from_resource_lists([("v1", CORE), ("apps/v1", APPS)])
    check = check_rules(text, source="sample.yaml", mapper=without)
    assert [str(error) for error in check.errors] == [
        "sample.yaml: rules[3] (seriesQuery 'cheddar{sharp=\"true\"}'): "
        "resources.overrides.brand: unable to normalize group-resource brand.cheese.io: "
        "no matches for brand.cheese.io"
    ]
    with_crd = DiscoveryRESTMapper.from_resource_lists(
        [("v1", CORE), ("apps/v1", APPS), ("cheese.io/v1", BRANDS)]
    )
    assert check_rules(text, source="sample.yaml", mapper=with_crd).errors == ()


PROMETHEUS_RULES = """\
rules:
- seriesQuery: '{__name__=~"^http_requests_.*",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: '^(.*)_total$', as: '${1}_per_second'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: 'broken{'
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_depth{namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""


def test_with_prometheus_each_rule_lists_its_metrics_and_a_sample_query(tmp_path: Path) -> None:
    now = int(time.time())
    samples = [
        "# TYPE http_requests_total counter",
        *(
            f'http_requests_total{{namespace="shop",pod="web-1"}} {i * 10} {now - 120 + i * 5}'
            for i in range(24)
        ),
        "# TYPE queue_depth gauge",
        *(f'queue_depth{{namespace="jobs",queue="q1"}} 7 {now - 120 + i * 5}' for i in range(24)),
        "# EOF",
    ]
    path = tmp_path / "rules.yaml"
    path.write_text(PROMETHEUS_RULES)
    with PrometheusServer() as prometheus:
        prometheus.backfill_openmetrics("\n".join(samples) + "\n")
        code, lines = _run(str(path), "--prometheus", prometheus.url)
    source = str(path)
    assert code == 1, lines
    assert any(
        line.startswith(f"error: {source}: rules[1] (seriesQuery 'broken{{'): seriesQuery: ")
        for line in lines
    ), lines
    first = lines.index(
        f"{source}: rules[0] (seriesQuery "
        '\'{__name__=~"^http_requests_.*",namespace!="",pod!=""}\'): '
        "1 series, 1 after the filters"
    )
    assert lines[first + 1 : first + 3] == [
        "  namespaces/http_requests_per_second: "
        'sum(rate(http_requests_total{namespace="shop"}[2m])) by (namespace)',
        "  pods/http_requests_per_second(namespaced): "
        'sum(rate(http_requests_total{namespace="shop",pod="web-1"}[2m])) by (pod)',
    ]
    external = lines.index(
        f"{source}: externalRules[0] (seriesQuery 'queue_depth{{namespace!=\"\"}}'): "
        "1 series, 1 after the filters"
    )
    assert lines[external + 1] == '  queue_depth: sum(queue_depth{namespace="jobs"})'


@pytest.mark.parametrize("missing", ["/nonexistent-rules.yaml"])
def test_a_missing_file_is_exit_2(missing: str) -> None:
    code, lines = _run(missing)
    assert code == 2
    assert lines == []
