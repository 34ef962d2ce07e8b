"""The rule file: a prometheus-adapter ``config.yaml``, validated and compiled at load time.

Upstream counterparts: prometheus-adapter ``pkg/config/config.go`` (schema) and
``pkg/config/loader.go`` (``FromYAML`` = ``yaml.UnmarshalStrict`` with gopkg.in/yaml.v2), plus the
load-time parts of ``pkg/naming`` (``NewReMatcher``, ``NamersFromConfig``' ``as`` default,
``NewResourceConverter``' label template, ``NewMetricsQuery``' template parse).

Decoding follows yaml.v2's strict mode: unknown fields and duplicate keys are errors; a ``null``
leaves the Go zero value; a string field takes any scalar's text (``seriesQuery: 1.50`` is
``"1.50"``, as yaml.v2 does); ``namespaced`` takes only a YAML boolean.

Everything that can be checked without a cluster is checked here, and the error names the rule
(``rules[3] (seriesQuery '...')``) and the field (``name.matches``). Checks that need the REST
mapper (normalizing ``overrides`` group-resources) run when namers are built
(``adapter.rules.naming.namers_from_config``) and raise the same ``RuleConfigError``.

Deliberate deviations (docs/adapter-rules.md): an empty ``seriesQuery``, ``metricsQuery``,
``containerQuery`` or ``nodeQuery``, an override label that is not a Prometheus label name, and
template field errors are load-time errors here, where upstream loads the file and fails per query.
``labelValueReplacements`` (a fork-only field, not in upstream master) is unknown and refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from yaml.constructor import SafeConstructor

from adapter.rules.errors import GoRegexError, RuleConfigError, TemplateError
from adapter.rules.goregex import GoRegexp, compile_go_regex
from adapter.rules.gotemplate import (
    STRING,
    STRING_LIST,
    STRING_MAP,
    GoTemplate,
    StructValue,
    parse_template,
    struct_type,
)
from adapter.rules.promql import is_valid_label_name
from adapter.rules.routes import MetricPattern, example_overlap, patterns_overlap
from hpa.core.duration import parse_duration_seconds

QUERY_TEMPLATE_ARGS = struct_type(
    "naming.queryTemplateArgs",
    {
        "Series": STRING,
        "LabelMatchers": STRING,
        "LabelValuesByName": STRING_MAP,
        "GroupBy": STRING,
        "GroupBySlice": STRING_LIST,
    },
)
GROUP_RESOURCE_ARGS = struct_type("schema.GroupResource", {"Group": STRING, "Resource": STRING})


class _FieldError(ValueError):
    """Raised inside validators: ``field`` is relative to the model being validated."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


# ----------------------------------------------------------------------------------- YAML


class _YamlScalar(str):
    """A scalar's text as yaml.v2 would store it in a string field, and its resolved value."""

    resolved: object

    def __new__(cls, text: str, resolved: object) -> _YamlScalar:
        scalar = super().__new__(cls, text)
        scalar.resolved = resolved
        return scalar


def _to_tree(node: yaml.Node, constructor: SafeConstructor, source: str) -> object:
    if isinstance(node, yaml.MappingNode):
        out: dict[str, object] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise RuleConfigError(
                    f"line {key_node.start_mark.line + 1}: mapping keys must be scalars",
                    source=source,
                )
            key = str(key_node.value)
            if key in out:
                raise RuleConfigError(
                    f"line {key_node.start_mark.line + 1}: key {key!r} already set in map",
                    source=source,
                )
            out[key] = _to_tree(value_node, constructor, source)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_to_tree(item, constructor, source) for item in node.value]
    assert isinstance(node, yaml.ScalarNode)
    resolved = constructor.construct_object(node)
    if resolved is None:
        return None
    return _YamlScalar(str(node.value), resolved)


# `key: "...inner "quoted" text..."` on one line: invalid YAML that prometheus-adapter's own
# docs/sample-config.yaml contains (kubernetes-sigs/prometheus-adapter#697).
_INNER_QUOTES_LINE = re.compile(r'^(\s*(?:-\s+)?[A-Za-z][A-Za-z0-9]*:[ \t]+)"(.*)"([ \t]*)$')


def _repair_inner_quotes(text: str) -> tuple[str, list[int]]:
    """Re-quote ``key: "a"b"c"`` lines as ``key: 'a"b"c'``; returns (text, repaired line numbers).

    Only lines whose double-quoted value holds an unescaped ``"`` and no backslash are touched
    (without backslashes both quotings mean the same characters). Used only when the document does
    not parse as YAML at all, so it never changes the meaning of a valid file.
    """
    lines = text.split("\n")
    repaired: list[int] = []
    for index, line in enumerate(lines):
        match = _INNER_QUOTES_LINE.match(line)
        if match is None:
            continue
        body = match.group(2)
        if '"' not in body or "\\" in body:
            continue
        lines[index] = match.group(1) + "'" + body.replace("'", "''") + "'" + match.group(3)
        repaired.append(index + 1)
    return "\n".join(lines), repaired


def _load_yaml(text: str, source: str) -> tuple[object, tuple[str, ...]]:
    warnings: tuple[str, ...] = ()
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        repaired_text, lines = _repair_inner_quotes(text)
        try:
            node = yaml.compose(repaired_text, Loader=yaml.SafeLoader) if lines else None
        except yaml.YAMLError:
            lines = []
        if not lines:
            raise RuleConfigError(
                f"unable to parse metrics discovery config: {exc}", source=source
            ) from None
        warnings = tuple(
            f"line {line}: double-quoted value contains unescaped double quotes, which is not "
            "valid YAML (prometheus-adapter refuses it, kubernetes-sigs/prometheus-adapter#697); "
            "read as if single-quoted"
            for line in lines
        )
    if node is None:
        return {}, warnings
    return _to_tree(node, SafeConstructor(), source), warnings


# ----------------------------------------------------------------------------------- models


class _GoModel(BaseModel):
    """yaml.v2 strict decoding: unknown fields refused, ``null`` means the zero value."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, validate_default=False)
    _bool_fields: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _go_zero_values(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        out: dict[str, object] = {}
        for key, value in data.items():
            if value is None:
                continue
            if isinstance(value, _YamlScalar):
                value = value.resolved if key in cls._bool_fields else str(value)
            out[key] = value
        return out


def _compile_regex(field: str, pattern: str) -> GoRegexp:
    try:
        return compile_go_regex(pattern)
    except GoRegexError as exc:
        raise _FieldError(field, str(exc)) from None


class RegexFilter(_GoModel):
    """``RegexFilter``: exactly one of ``is`` / ``isNot``."""

    is_: StrictStr = Field("", alias="is")
    is_not: StrictStr = Field("", alias="isNot")
    _regex: GoRegexp | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _compile(self) -> RegexFilter:
        if self.is_ and self.is_not:
            raise _FieldError(
                "",
                f'cannot have both an `is` ("{self.is_}") and `isNot` ("{self.is_not}") '
                "expression in a single filter",
            )
        if not self.is_ and not self.is_not:
            raise _FieldError("", "must have either an `is` or `isNot` expression in a filter")
        field = "is" if self.is_ else "isNot"
        self._regex = _compile_regex(field, self.is_ or self.is_not)
        return self

    @property
    def regex(self) -> GoRegexp:
        assert self._regex is not None
        return self._regex

    @property
    def positive(self) -> bool:
        return bool(self.is_)

    def matches(self, value: str) -> bool:
        """``ReMatcher.Matches``."""
        return self.regex.match_string(value) == self.positive


class GroupResourceConfig(_GoModel):
    group: StrictStr = ""
    resource: StrictStr = ""


@dataclass(frozen=True)
class LabelExtractor:
    """``labelGroupResExtractor``: the label template turned into an anchored regex."""

    regex: GoRegexp

    def group_resource_for_label(self, label: str) -> tuple[str, str] | None:
        match = self.regex.python.search(label)
        if match is None:
            return None
        group = match.group("group") if "group" in self.regex.python.groupindex else ""
        return group or "", match.group("resource") or ""


class ResourceMapping(_GoModel):
    template: StrictStr = ""
    overrides: dict[str, GroupResourceConfig] = Field(default_factory=dict)
    namespaced: StrictBool | None = None
    _bool_fields: ClassVar[frozenset[str]] = frozenset({"namespaced"})
    _template: GoTemplate | None = PrivateAttr(None)
    _extractor: LabelExtractor | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _compile(self) -> ResourceMapping:
        for label in self.overrides:
            if not is_valid_label_name(label):
                raise _FieldError(
                    f"overrides.{label}",
                    "override label is not a valid Prometheus label name",
                )
        if not self.template:
            return self
        try:
            template = parse_template(
                self.template, name="resource-label", root=GROUP_RESOURCE_ARGS
            )
        except TemplateError as exc:
            raise _FieldError("template", f"unable to parse label template: {exc}") from None
        rendered = template.execute(
            StructValue(
                "schema.GroupResource",
                (("Group", "(?P<group>.+?)"), ("Resource", "(?P<resource>.+?)")),
            )
        )
        if not rendered:
            raise _FieldError(
                "template", "unable to convert label template to matcher: empty template"
            )
        try:
            regex = compile_go_regex("^" + rendered + "$")
        except GoRegexError as exc:
            raise _FieldError(
                "template", f"unable to convert label template to matcher: {exc}"
            ) from None
        if "resource" not in regex.python.groupindex:
            raise _FieldError(
                "template", "must include at least `<<.Resource>>` in the label template"
            )
        self._template = template
        self._extractor = LabelExtractor(regex)
        return self

    @property
    def label_template(self) -> GoTemplate | None:
        return self._template

    @property
    def label_extractor(self) -> LabelExtractor | None:
        return self._extractor


class NameMapping(_GoModel):
    matches: StrictStr = ""
    as_: StrictStr = Field("", alias="as")
    _regex: GoRegexp | None = PrivateAttr(None)
    _as: str = PrivateAttr("")

    @model_validator(mode="after")
    def _compile(self) -> NameMapping:
        self._regex = _compile_regex("matches", self.matches or ".*")
        name_as = self.as_
        if not name_as:
            groups = self._regex.subexp_count
            if groups == 0:
                name_as = "$0"
            elif groups == 1:
                name_as = "$1"
            else:
                raise _FieldError(
                    "as",
                    f"must specify an 'as' value for name matcher \"{self.matches}\" "
                    f"(it has {groups} capture groups)",
                )
        self._as = name_as
        return self

    @property
    def regex(self) -> GoRegexp:
        assert self._regex is not None
        return self._regex

    @property
    def effective_as(self) -> str:
        """``as`` after upstream's default: ``$0`` with no capture group, ``$1`` with one."""
        return self._as


def _parse_query_template(field: str, source: str) -> GoTemplate:
    if not source.strip():
        raise _FieldError(field, "must not be empty (the query would render to nothing)")
    try:
        return parse_template(source, name="metrics-query", root=QUERY_TEMPLATE_ARGS)
    except TemplateError as exc:
        raise _FieldError(field, f"unable to parse metrics query template: {exc}") from None


class DiscoveryRule(_GoModel):
    series_query: StrictStr = Field("", alias="seriesQuery")
    series_filters: list[RegexFilter] = Field(default_factory=list, alias="seriesFilters")
    resources: ResourceMapping = Field(default_factory=ResourceMapping)
    name: NameMapping = Field(default_factory=NameMapping)
    metrics_query: StrictStr = Field("", alias="metricsQuery")
    _metrics_query: GoTemplate | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _compile(self) -> DiscoveryRule:
        if not self.series_query.strip():
            raise _FieldError("seriesQuery", "must not be empty")
        self._metrics_query = _parse_query_template("metricsQuery", self.metrics_query)
        return self

    @property
    def metrics_query_template(self) -> GoTemplate:
        assert self._metrics_query is not None
        return self._metrics_query

    @property
    def namespaced(self) -> bool:
        """Queries are namespaced unless ``resources.namespaced: false`` (external rules)."""
        return self.resources.namespaced is not False


class ResourceRule(_GoModel):
    container_query: StrictStr = Field("", alias="containerQuery")
    node_query: StrictStr = Field("", alias="nodeQuery")
    resources: ResourceMapping = Field(default_factory=ResourceMapping)
    container_label: StrictStr = Field("", alias="containerLabel")
    _container: GoTemplate | None = PrivateAttr(None)
    _node: GoTemplate | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _compile(self) -> ResourceRule:
        self._container = _parse_query_template("containerQuery", self.container_query)
        self._node = _parse_query_template("nodeQuery", self.node_query)
        if not is_valid_label_name(self.container_label):
            raise _FieldError("containerLabel", "must be a valid Prometheus label name")
        return self

    @property
    def container_query_template(self) -> GoTemplate:
        assert self._container is not None
        return self._container

    @property
    def node_query_template(self) -> GoTemplate:
        assert self._node is not None
        return self._node


_DURATION_RE = re.compile(
    r"(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?"
)
_DURATION_UNITS_MS = (
    365 * 24 * 3600 * 1000,
    7 * 24 * 3600 * 1000,
    24 * 3600 * 1000,
    3600 * 1000,
    60 * 1000,
    1000,
    1,
)


def parse_duration_milliseconds(text: str) -> int:
    """Prometheus ``model.ParseDuration`` in milliseconds (``5m`` → 300000)."""
    if text == "0":
        return 0
    if text == "":
        raise ValueError("empty duration string")
    match = _DURATION_RE.fullmatch(text)
    if match is None:
        raise ValueError(f'not a valid duration string: "{text}"')
    total = 0
    for index, unit in enumerate(_DURATION_UNITS_MS):
        amount = match.group(2 * index + 2)
        if amount:
            total += int(amount) * unit
    return total


class ResourceRules(_GoModel):
    """``ResourceRules``. ``cpu`` and ``memory`` are required: an absent one has empty queries."""

    cpu: ResourceRule
    memory: ResourceRule
    window: StrictStr = "0"

    @field_validator("window")
    @classmethod
    def _check_window(cls, value: str) -> str:
        try:
            parse_duration_milliseconds(value)
        except ValueError as exc:
            raise _FieldError("", str(exc)) from None
        return value

    @property
    def window_milliseconds(self) -> int:
        """The window reported by the resource metrics API, in milliseconds."""
        return parse_duration_milliseconds(self.window)


# ----------------------------------------------------------------------------------- routes

ROUTED_GROUPS = ("custom.metrics.k8s.io", "external.metrics.k8s.io")
_BACKEND_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class RouteBackend(_GoModel):
    """One upstream metrics API server (``routes.backends[]``): where it is and how this adapter
    proves its own identity to it (a client certificate or a bearer token file)."""

    name: StrictStr
    url: StrictStr
    ca_file: StrictStr = Field("", alias="caFile")
    client_cert_file: StrictStr = Field("", alias="clientCertFile")
    client_key_file: StrictStr = Field("", alias="clientKeyFile")
    token_file: StrictStr = Field("", alias="tokenFile")
    insecure_skip_tls_verify: StrictBool = Field(False, alias="insecureSkipTLSVerify")
    timeout: StrictStr = "10s"
    _bool_fields: ClassVar[frozenset[str]] = frozenset({"insecureSkipTLSVerify"})

    @model_validator(mode="after")
    def _check(self) -> RouteBackend:
        if _BACKEND_NAME.fullmatch(self.name) is None:
            raise _FieldError("name", "must be a lower-case DNS label (a-z, 0-9, '-')")
        if not re.match(r"https?://[^/?#]+", self.url) or re.search(r"[?#]", self.url):
            raise _FieldError("url", f"must be http(s)://host[:port][/prefix], got {self.url!r}")
        if bool(self.client_cert_file) != bool(self.client_key_file):
            raise _FieldError("clientCertFile", "clientCertFile and clientKeyFile go together")
        if self.token_file and self.client_cert_file:
            raise _FieldError("tokenFile", "use either a client certificate or a token, not both")
        if self.timeout_seconds <= 0:
            raise _FieldError("timeout", "must be a positive Go duration (10s)")
        return self

    @property
    def timeout_seconds(self) -> float:
        try:
            return parse_duration_seconds(self.timeout)
        except ValueError as exc:
            raise _FieldError("timeout", str(exc)) from None


class MetricRoute(_GoModel):
    """``names`` (metric-name patterns) of one API group are served by ``backend``."""

    backend: StrictStr
    names: list[StrictStr]
    _patterns: tuple[MetricPattern, ...] = PrivateAttr(())

    @model_validator(mode="after")
    def _compile(self) -> MetricRoute:
        if not self.names:
            raise _FieldError("names", "must list at least one metric-name pattern")
        patterns = []
        for index, text in enumerate(self.names):
            try:
                patterns.append(MetricPattern.parse(text))
            except ValueError as exc:
                raise _FieldError(f"names[{index}]", str(exc)) from None
        self._patterns = tuple(patterns)
        return self

    @property
    def patterns(self) -> tuple[MetricPattern, ...]:
        return self._patterns

    def matches(self, metric: str) -> bool:
        return any(pattern.matches(metric) for pattern in self._patterns)


class GroupRoutes(_GoModel):
    """The routes of one API group: explicit patterns, and the ``default`` backend of every name
    that no pattern and no rule of this file claims."""

    metrics: list[MetricRoute] = Field(default_factory=list)
    default: StrictStr = ""

    @model_validator(mode="after")
    def _disjoint(self) -> GroupRoutes:
        for i, first in enumerate(self.metrics):
            for j in range(i + 1, len(self.metrics)):
                second = self.metrics[j]
                if first.backend == second.backend:
                    continue
                for a in first.names:
                    for b in second.names:
                        if patterns_overlap(a, b):
                            raise _FieldError(
                                f"metrics[{j}].names",
                                f"{example_overlap(a, b)} would be owned by both backend "
                                f"{first.backend!r} (metrics[{i}]) and backend "
                                f"{second.backend!r}: a metric name must have one owner",
                            )
        return self

    def owner(self, metric: str) -> str | None:
        """The backend whose pattern matches ``metric`` (patterns are disjoint)."""
        for route in self.metrics:
            if route.matches(metric):
                return route.backend
        return None


class RoutesConfig(_GoModel):
    """The ``routes:`` section: metrics this adapter forwards to other metrics API servers."""

    backends: list[RouteBackend] = Field(default_factory=list)
    custom: GroupRoutes = Field(default_factory=GroupRoutes, alias="custom.metrics.k8s.io")
    external: GroupRoutes = Field(default_factory=GroupRoutes, alias="external.metrics.k8s.io")
    discovery_interval: StrictStr = Field("30s", alias="discoveryInterval")

    @model_validator(mode="after")
    def _references(self) -> RoutesConfig:
        names: set[str] = set()
        for index, backend in enumerate(self.backends):
            if backend.name in names:
                raise _FieldError(f"backends[{index}].name", f"{backend.name!r} is defined twice")
            names.add(backend.name)
        for group, routes in zip(ROUTED_GROUPS, (self.custom, self.external), strict=True):
            if routes.default and routes.default not in names:
                raise _FieldError(f"{group}.default", f"unknown backend {routes.default!r}")
            for index, route in enumerate(routes.metrics):
                if route.backend not in names:
                    raise _FieldError(
                        f"{group}.metrics[{index}].backend", f"unknown backend {route.backend!r}"
                    )
        try:
            seconds = parse_duration_seconds(self.discovery_interval)
        except ValueError as exc:
            raise _FieldError("discoveryInterval", str(exc)) from None
        if seconds <= 0:
            raise _FieldError("discoveryInterval", "must be a positive Go duration (30s)")
        return self

    @property
    def discovery_interval_seconds(self) -> float:
        return parse_duration_seconds(self.discovery_interval)

    def group(self, group: str) -> GroupRoutes | None:
        """The routes of an API group (None for a group that is never routed)."""
        if group == ROUTED_GROUPS[0]:
            return self.custom
        if group == ROUTED_GROUPS[1]:
            return self.external
        return None


class RuleConfig(_GoModel):
    """``MetricsDiscoveryConfig``, plus this adapter's ``routes`` section."""

    rules: list[DiscoveryRule] = Field(default_factory=list)
    resource_rules: ResourceRules | None = Field(None, alias="resourceRules")
    external_rules: list[DiscoveryRule] = Field(default_factory=list, alias="externalRules")
    routes: RoutesConfig | None = None
    _warnings: tuple[str, ...] = PrivateAttr(())

    @property
    def warnings(self) -> tuple[str, ...]:
        """Problems tolerated while loading (the server should log them)."""
        return self._warnings


# ----------------------------------------------------------------------------------- loading

_RULE_LISTS = ("rules", "externalRules")
_ERROR_TEXT = {
    "extra_forbidden": "unknown field (rule files are decoded strictly, like yaml.UnmarshalStrict)",
    "string_type": "must be a string",
    "bool_type": "must be a boolean (true or false)",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "missing": "required (resource metrics need both cpu and memory queries)",
}


def rule_label(kind: str, index: int, series_query: str) -> str:
    """How errors name a rule: ``rules[3] (seriesQuery '...')``."""
    if len(series_query) > 80:
        series_query = series_query[:77] + "..."
    return f"{kind}[{index}] (seriesQuery '{series_query}')"


def _describe_rule(tree: object, kind: str, index: int) -> str:
    series_query = ""
    if isinstance(tree, Mapping):
        rules = tree.get(kind)
        if isinstance(rules, list) and index < len(rules) and isinstance(rules[index], Mapping):
            value = rules[index].get("seriesQuery")
            series_query = str(value) if value is not None else ""
    return rule_label(kind, index, series_query)


def _path(parts: list[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def _config_errors(exc: ValidationError, tree: object, source: str) -> list[RuleConfigError]:
    """Every error of a failed validation, each naming the rule and the field."""
    out = []
    for error in exc.errors():
        loc: list[str | int] = list(error["loc"])
        reason = _ERROR_TEXT.get(error["type"], error["msg"])
        if loc[:1] == ["routes"] and error["type"] == "missing":
            reason = "required"
        ctx_error = error.get("ctx", {}).get("error")
        if isinstance(ctx_error, _FieldError):
            reason = ctx_error.reason
            if ctx_error.field:
                loc.extend(ctx_error.field.split("."))
        rule = ""
        if len(loc) >= 2 and loc[0] in _RULE_LISTS and isinstance(loc[1], int):
            rule = _describe_rule(tree, str(loc[0]), loc[1])
            loc = loc[2:]
        elif len(loc) >= 2 and loc[0] == "resourceRules" and loc[1] in ("cpu", "memory"):
            rule = f"resourceRules.{loc[1]}"
            loc = loc[2:]
        out.append(RuleConfigError(reason, source=source, rule=rule, field=_path(loc)))
    return out


def _config_error(exc: ValidationError, tree: object, source: str) -> RuleConfigError:
    errors = _config_errors(exc, tree, source)
    first = errors[0]
    if len(errors) > 1:
        more = len(errors) - 1
        return RuleConfigError(
            first.reason + f" (and {more} more error{'s' if more > 1 else ''})",
            source=source,
            rule=first.rule,
            field=first.field,
        )
    return first


@dataclass(frozen=True)
class RuleFileCheck:
    """What loading a rule file found: the config (None when it did not load), every error
    and the tolerated problems."""

    config: RuleConfig | None
    errors: tuple[RuleConfigError, ...]
    warnings: tuple[str, ...]


def check_rule_file(text: str, *, source: str) -> RuleFileCheck:
    """``load_rules`` that collects every schema error instead of raising the first."""
    try:
        tree, warnings = _load_yaml(text, source)
    except RuleConfigError as error:
        return RuleFileCheck(None, (error,), ())
    if not isinstance(tree, Mapping):
        not_mapping = RuleConfigError("the rule file must be a YAML mapping", source=source)
        return RuleFileCheck(None, (not_mapping,), warnings)
    try:
        config = RuleConfig.model_validate(tree)
    except ValidationError as exc:
        return RuleFileCheck(None, tuple(_config_errors(exc, tree, source)), warnings)
    config._warnings = warnings
    return RuleFileCheck(config, (), warnings)


def load_rules(text: str, *, source: str) -> RuleConfig:
    """Load a prometheus-adapter rule file (the ``config.yaml`` of its ConfigMap).

    Raises ``RuleConfigError`` whose message names ``source``, the rule and the field.
    """
    tree, warnings = _load_yaml(text, source)
    if not isinstance(tree, Mapping):
        raise RuleConfigError("the rule file must be a YAML mapping", source=source)
    try:
        config = RuleConfig.model_validate(tree)
    except ValidationError as exc:
        raise _config_error(exc, tree, source) from None
    config._warnings = warnings
    return config
