"""Metric namers: discovery filters, API names, resource labels and the rendered PromQL.

Upstream counterparts: prometheus-adapter ``pkg/naming/metric_namer.go`` (``MetricNamer``,
``ReMatcher``, ``NamersFromConfig``), ``resource_converter.go`` (``ResourceConverter``,
``GroupNameSanitizer``), ``lbl_res.go`` (``labelGroupResExtractor``, compiled in
``adapter.rules.config``) and ``metrics_query.go`` (``MetricsQuery.Build`` / ``BuildExternal``).

Rendering is exactly upstream's for ordinary input (matchers in the order selector requirements,
namespace, resource; ``GroupBy`` is the resource label then the extra group-bys). Deliberate
deviations, all for safety (docs/adapter-rules.md):

- regexes built from object names and ``in``/``notin`` sets escape every metacharacter
  (``pod=~"a\\\\.b|c"``; upstream joins raw names);
- ``LabelValuesByName`` values are that escaped alternation, escaped again for a double-quoted
  PromQL string (upstream: the raw values joined with ``|``);
- a namespaced query always carries exactly one namespace matcher: a selector on the namespace
  label is refused (``NamespaceOverrideError``), an empty namespace is refused, and an external
  rule that is namespaced refuses to render without a namespace (upstream silently drops the
  matcher when the namespace is empty);
- an empty list of object names is refused (upstream renders ``pod=""``);
- selector keys must be Prometheus label names and not ``__``-prefixed; rendered series and
  resource labels are validated before they are put into the query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from adapter.rules.config import DiscoveryRule, ResourceMapping, rule_label
from adapter.rules.errors import (
    InvalidValueError,
    NamespaceOverrideError,
    RuleConfigError,
    RuleEvaluationError,
)
from adapter.rules.gotemplate import GoTemplate, StructValue
from adapter.rules.mapper import (
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUMES,
    GroupResource,
    RESTMapper,
    UnknownResourceError,
)
from adapter.rules.promql import (
    alternation,
    check_encodable,
    go_quote_body,
    is_valid_label_name,
    is_valid_metric_name,
    label_eq,
    label_matches,
)
from adapter.rules.selector import (
    Operator,
    QueryPart,
    Requirement,
    check_user_label,
    query_parts_from_selector,
    render_query_part,
)


def sanitize_group_name(group: str) -> str:
    """``GroupNameSanitizer``: ``.`` and ``-`` become ``_``."""
    return group.replace(".", "_").replace("-", "_")


@dataclass(frozen=True)
class Series:
    """``prom.Series``: a metric name and its label names/values (without ``__name__``)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)


class ResourceConverter:
    """``resourceConverter``: Prometheus labels ↔ Kubernetes group-resources for one rule."""

    def __init__(self, mapping: ResourceMapping, mapper: RESTMapper) -> None:
        """Raises ``UnknownResourceError`` (with the label as ``args[1]``) for a bad override."""
        self._mapper = mapper
        self._template: GoTemplate | None = mapping.label_template
        self._extractor = mapping.label_extractor
        self._label_to_resource: dict[str, GroupResource] = {}
        self._resource_to_label: dict[GroupResource, str] = {}
        for label, override in mapping.overrides.items():
            try:
                resource = mapper.resource_for(GroupResource(override.group, override.resource))
            except UnknownResourceError as exc:
                raise UnknownResourceError(
                    f"unable to normalize group-resource {override.resource}"
                    f"{'.' + override.group if override.group else ''}: {exc}",
                    label,
                ) from None
            self._label_to_resource[label] = resource
            self._resource_to_label[resource] = label

    def label_for_resource(self, resource: GroupResource) -> str:
        """``LabelForResource``: the override, or the label template rendered for ``resource``."""
        label = self._resource_to_label.get(resource)
        if label is not None:
            return label
        try:
            label = self._make_label_for_resource(resource)
        except (RuleEvaluationError, UnknownResourceError) as exc:
            raise RuleEvaluationError(
                f"unable to convert resource {resource} into label: {exc}"
            ) from None
        return label

    def _make_label_for_resource(self, resource: GroupResource) -> str:
        if self._template is None:
            raise RuleEvaluationError("no generic resource label form specified for this metric")
        singular = self._mapper.resource_singularizer(resource.resource)
        label = self._template.execute(
            StructValue(
                "schema.GroupResource",
                (("Group", sanitize_group_name(resource.group)), ("Resource", singular)),
            )
        )
        if not label:
            raise RuleEvaluationError("empty label produced by label template")
        if not is_valid_label_name(label):
            raise RuleEvaluationError(f"label template produced an invalid label name {label!r}")
        self._resource_to_label[resource] = label
        self._label_to_resource[label] = resource
        return label

    def resource_for_label(self, label: str) -> GroupResource | None:
        """The normalized group-resource a Prometheus label names, if any (override or template)."""
        resource = self._label_to_resource.get(label)
        if resource is not None or self._extractor is None:
            return resource
        extracted = self._extractor.group_resource_for_label(label)
        if extracted is None:
            return None
        try:
            resource = self._mapper.resource_for(GroupResource(*extracted))
        except UnknownResourceError:
            return None
        self._label_to_resource[label] = resource
        return resource

    def resources_for_series(self, series: Series) -> tuple[list[GroupResource], bool]:
        """``ResourcesForSeries``: the group-resources the series' labels name, and "namespaced".

        As upstream: "namespaced" is true as soon as one label is not a namespace, node or
        persistent-volume label (labels that name no resource count too).
        """
        resources: list[GroupResource] = []
        namespaced = False
        for label in sorted(series.labels):
            resource: GroupResource | None = self._label_to_resource.get(label)
            if resource is not None:
                resources.append(resource)
            elif self._extractor is not None:
                extracted = self._extractor.group_resource_for_label(label)
                if extracted is not None:
                    try:
                        resource = self._mapper.resource_for(GroupResource(*extracted))
                    except UnknownResourceError:
                        continue
                    resources.append(resource)
                    self._label_to_resource[label] = resource
            if resource not in (NAMESPACES, NODES, PERSISTENT_VOLUMES):
                namespaced = True
        return resources, namespaced


def _check_series_name(series: str) -> None:
    if series and not is_valid_metric_name(series):
        raise RuleEvaluationError(f"series name {series!r} is not a valid Prometheus metric name")


class ResourceLabeler(Protocol):
    """What a ``MetricsQuery`` needs from its converter (``ResourceConverter.LabelForResource``)."""

    def label_for_resource(self, resource: GroupResource) -> str: ...


@dataclass(frozen=True)
class _Rendered:
    exprs: list[str]
    values_by_name: dict[str, str]


class MetricsQuery:
    """``metricsQuery``: a compiled ``metricsQuery`` template and its resource converter."""

    def __init__(
        self, template: GoTemplate, converter: ResourceLabeler, *, namespaced: bool = True
    ) -> None:
        self.template = template
        self.converter = converter
        self.namespaced = namespaced

    def _user_parts(self, metric_selector: Iterable[Requirement]) -> list[QueryPart]:
        parts = query_parts_from_selector(metric_selector)
        for part in parts:
            check_user_label(part.label_name)
        return parts

    def _namespace_part(self, namespace: str, parts: Sequence[QueryPart]) -> QueryPart:
        if not namespace:
            raise InvalidValueError("namespace must not be empty")
        namespace_label = self.converter.label_for_resource(NAMESPACES)
        for part in parts:
            if part.label_name == namespace_label:
                raise NamespaceOverrideError(
                    f"label selector may not constrain {namespace_label!r}: the namespace of a "
                    "namespaced query comes from the request path"
                )
        return QueryPart(namespace_label, (namespace,), Operator.EQUALS)

    @staticmethod
    def _process(parts: Iterable[QueryPart]) -> _Rendered:
        exprs: list[str] = []
        values_by_name: dict[str, str] = {}
        for part in parts:
            expression, values = render_query_part(part)
            exprs.append(expression)
            values_by_name[part.label_name] = values
        return _Rendered(exprs, values_by_name)

    def _execute(
        self,
        series: str,
        rendered: _Rendered,
        group_by: str,
        group_by_slice: Sequence[str],
    ) -> str:
        query = self.template.execute(
            StructValue(
                "naming.queryTemplateArgs",
                (
                    ("Series", series),
                    ("LabelMatchers", ",".join(rendered.exprs)),
                    ("LabelValuesByName", dict(rendered.values_by_name)),
                    ("GroupBy", group_by),
                    ("GroupBySlice", list(group_by_slice)),
                ),
            )
        )
        if not query:
            raise RuleEvaluationError("empty query produced by metrics query template")
        return query

    def build(
        self,
        series: str,
        resource: GroupResource,
        *,
        namespace: str | None,
        names: Sequence[str],
        extra_group_by: Sequence[str] = (),
        metric_selector: Iterable[Requirement] = (),
    ) -> str:
        """``Build``: the query for ``names`` of ``resource`` (in ``namespace``, if namespaced)."""
        _check_series_name(series)
        parts = self._user_parts(metric_selector)
        namespace_label = None
        if namespace is not None:
            namespace_part = self._namespace_part(namespace, parts)
            namespace_label = namespace_part.label_name
            parts.append(namespace_part)
        rendered = self._process(parts)
        resource_label = self.converter.label_for_resource(resource)
        if resource_label == namespace_label:
            raise InvalidValueError(f"{resource} is not a namespaced resource")
        if not names:
            raise InvalidValueError("no resource names requested")
        for name in names:
            check_encodable(name)
        if len(names) > 1:
            rendered.exprs.append(label_matches(resource_label, alternation(names)))
        else:
            rendered.exprs.append(label_eq(resource_label, names[0]))
        rendered.values_by_name[resource_label] = go_quote_body(alternation(names))
        group_by = [resource_label, *extra_group_by]
        for label in extra_group_by:
            if not is_valid_label_name(label):
                raise RuleEvaluationError(f"group-by label {label!r} is not a valid label name")
        return self._execute(series, rendered, ",".join(group_by), group_by)

    def build_external(
        self,
        series: str,
        *,
        namespace: str | None,
        metric_selector: Iterable[Requirement] = (),
        group_by: str = "",
        group_by_slice: Sequence[str] = (),
    ) -> str:
        """``BuildExternal``: selector matchers, then the namespace matcher if namespaced."""
        _check_series_name(series)
        parts = self._user_parts(metric_selector)
        if self.namespaced:
            if namespace is None:
                raise InvalidValueError("a namespaced external rule needs the request's namespace")
            parts.append(self._namespace_part(namespace, parts))
        return self._execute(series, self._process(parts), group_by, group_by_slice)


class MetricNamer:
    """``metricNamer``: one compiled rule."""

    def __init__(self, rule: DiscoveryRule, resource_converter: ResourceConverter) -> None:
        self.rule = rule
        self.resource_converter = resource_converter
        self.metrics_query = MetricsQuery(
            rule.metrics_query_template, resource_converter, namespaced=rule.namespaced
        )

    @property
    def series_query(self) -> str:
        """``Selector``: the ``/api/v1/series`` selector for discovery."""
        return self.rule.series_query

    def series_matches(self, name: str) -> bool:
        """All ``seriesFilters``, then the implicit ``is: <name.matches>`` filter."""
        if not all(series_filter.matches(name) for series_filter in self.rule.series_filters):
            return False
        return not self.rule.name.matches or self.rule.name.regex.match_string(name)

    def filter_series(self, series: Iterable[Series]) -> list[Series]:
        """``FilterSeries``."""
        return [item for item in series if self.series_matches(item.name)]

    def metric_name_for_series(self, series: Series) -> str:
        """``MetricNameForSeries``: ``name.as`` expanded against ``name.matches``."""
        regex = self.rule.name.regex
        name = regex.expand_string(self.rule.name.effective_as, series.name)
        if name is None:
            raise RuleEvaluationError(
                f'series name "{series.name}" did not match expected pattern "{regex.source}"'
            )
        return name

    def query_for_series(
        self,
        series: str,
        resource: GroupResource,
        *,
        namespace: str | None,
        names: Sequence[str],
        metric_selector: Iterable[Requirement] = (),
    ) -> str:
        """``QueryForSeries``."""
        return self.metrics_query.build(
            series, resource, namespace=namespace, names=names, metric_selector=metric_selector
        )

    def query_for_external_series(
        self,
        series: str,
        *,
        namespace: str | None,
        metric_selector: Iterable[Requirement] = (),
    ) -> str:
        """``QueryForExternalSeries``."""
        return self.metrics_query.build_external(
            series, namespace=namespace, metric_selector=metric_selector
        )

    def label_for_resource(self, resource: GroupResource) -> str:
        return self.resource_converter.label_for_resource(resource)

    def resource_for_label(self, label: str) -> GroupResource | None:
        return self.resource_converter.resource_for_label(label)

    def resources_for_series(self, series: Series) -> tuple[list[GroupResource], bool]:
        return self.resource_converter.resources_for_series(series)


def resource_converter_for(
    mapping: ResourceMapping, mapper: RESTMapper, *, source: str, rule: str, field_prefix: str
) -> ResourceConverter:
    """``NewResourceConverter``, with override errors named like load errors."""
    try:
        return ResourceConverter(mapping, mapper)
    except UnknownResourceError as exc:
        label = exc.args[1] if len(exc.args) > 1 else ""
        raise RuleConfigError(
            str(exc.args[0]),
            source=source,
            rule=rule,
            field=f"{field_prefix}resources.overrides.{label}",
        ) from None


def namer_for_rule(
    rule: DiscoveryRule, mapper: RESTMapper, *, kind: str, index: int, source: str
) -> MetricNamer:
    """One rule of ``NamersFromConfig`` (``RuleConfigError`` naming it for a bad override)."""
    converter = resource_converter_for(
        rule.resources,
        mapper,
        source=source,
        rule=rule_label(kind, index, rule.series_query),
        field_prefix="",
    )
    return MetricNamer(rule, converter)


def namers_from_config(
    rules: Sequence[DiscoveryRule],
    mapper: RESTMapper,
    *,
    kind: str = "rules",
    source: str = "config",
) -> list[MetricNamer]:
    """``NamersFromConfig``: one namer per rule (``kind`` is ``rules`` or ``externalRules``)."""
    return [
        namer_for_rule(rule, mapper, kind=kind, index=index, source=source)
        for index, rule in enumerate(rules)
    ]
