"""The prometheus-adapter rule language: rule file, naming, and safe PromQL rendering.

Upstream counterpart: prometheus-adapter ``pkg/config``, ``pkg/naming`` and the query-building
halves of ``pkg/custom-provider``, ``pkg/external-provider`` and ``pkg/resourceprovider``.
Pure: no I/O.

Typical use (providers and server)::

    config = load_rules(text, source="/etc/adapter/config.yaml")      # RuleConfigError
    mapper = StaticRESTMapper.builtin()                                # or discovery-backed
    namers = namers_from_config(config.rules, mapper, source=...)
    # relist: for each namer, GET /api/v1/series?match[]=namer.series_query
    registry = SeriesRegistry.from_series([namer.filter_series(found) ...], namers, mapper)
    selector = parse_metric_selector(request.query["metricLabelSelector"])   # BadQueryError -> 400
    query = registry.query_for_metric(info, namespace=ns, names=pod_names, metric_selector=selector)

See docs/adapter-rules.md for compatibility notes and deliberate deviations.
"""

from adapter.rules.config import (
    DiscoveryRule,
    ResourceRule,
    ResourceRules,
    RuleConfig,
    load_rules,
    parse_duration_milliseconds,
)
from adapter.rules.errors import (
    BadQueryError,
    GoRegexError,
    InvalidLabelNameError,
    InvalidSelectorError,
    InvalidValueError,
    MalformedQueryError,
    NamespaceOverrideError,
    RuleConfigError,
    RuleEvaluationError,
    SelectorTooLargeError,
    TemplateError,
    TooManyValuesError,
    UnsupportedOperatorError,
)
from adapter.rules.mapper import (
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUMES,
    PODS,
    DiscoveryRESTMapper,
    GroupResource,
    ResourceEntry,
    RESTMapper,
    StaticRESTMapper,
    UnknownResourceError,
)
from adapter.rules.naming import (
    MetricNamer,
    MetricsQuery,
    ResourceConverter,
    Series,
    namers_from_config,
)
from adapter.rules.registry import CustomMetricInfo, ExternalSeriesRegistry, SeriesRegistry
from adapter.rules.resource import ResourceQueries, ResourceQuery
from adapter.rules.selector import (
    MAX_SELECTOR_BYTES,
    MAX_SET_VALUES,
    Operator,
    Requirement,
    format_selector,
    parse_metric_selector,
)

__all__ = [
    "MAX_SELECTOR_BYTES",
    "MAX_SET_VALUES",
    "NAMESPACES",
    "NODES",
    "PERSISTENT_VOLUMES",
    "PODS",
    "BadQueryError",
    "CustomMetricInfo",
    "DiscoveryRESTMapper",
    "DiscoveryRule",
    "ExternalSeriesRegistry",
    "GoRegexError",
    "GroupResource",
    "InvalidLabelNameError",
    "InvalidSelectorError",
    "InvalidValueError",
    "MalformedQueryError",
    "MetricNamer",
    "MetricsQuery",
    "NamespaceOverrideError",
    "Operator",
    "RESTMapper",
    "Requirement",
    "ResourceConverter",
    "ResourceEntry",
    "ResourceQueries",
    "ResourceQuery",
    "ResourceRule",
    "ResourceRules",
    "RuleConfig",
    "RuleConfigError",
    "RuleEvaluationError",
    "SelectorTooLargeError",
    "Series",
    "SeriesRegistry",
    "StaticRESTMapper",
    "TemplateError",
    "TooManyValuesError",
    "UnknownResourceError",
    "UnsupportedOperatorError",
    "format_selector",
    "load_rules",
    "namers_from_config",
    "parse_duration_milliseconds",
    "parse_metric_selector",
]
