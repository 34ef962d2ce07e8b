"""``hpa adapter check-config``'s pure half: every error of a rule file, and its likely mistakes.

Upstream counterpart: what prometheus-adapter does with the file at start-up
(``config.FromFile``, then ``NamersFromConfig`` for ``rules`` and ``externalRules`` and
``resprov.NewProvider`` for ``resourceRules``): any error there stops the process. Here every
error is collected, one per rule and field, instead of the first one only.

Warnings are what prometheus-adapter loads without a word but that cannot work as meant: a
discovery rule whose series name no Kubernetes object, a ``metricsQuery`` that ignores the
requested objects (no ``<<.LabelMatchers>>``/``<<.LabelValuesByName>>``) or cannot tell them
apart (a custom rule without ``<<.GroupBy>>``), invalid YAML it refuses but ``hpa adapter`` reads
(the sample config's inner quotes), and, without a cluster to ask, an override naming a resource
that is not built in (a CRD: the cluster must serve it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from adapter.rules.config import DiscoveryRule, RuleConfig, check_rule_file, rule_label
from adapter.rules.errors import RuleConfigError
from adapter.rules.mapper import (
    GroupResource,
    ResourceEntry,
    RESTMapper,
    StaticRESTMapper,
    UnknownResourceError,
    guess_plural,
)
from adapter.rules.naming import MetricNamer, namer_for_rule
from adapter.rules.resource import ResourceQueries

_USES_MATCHERS = re.compile(r"\.(LabelMatchers|LabelValuesByName)\b")
_USES_GROUP_BY = re.compile(r"\.(GroupBy|GroupBySlice)\b")


@dataclass(frozen=True)
class RuleCheck:
    """The outcome for one file: the compiled namers of the rules that loaded (index, namer)."""

    config: RuleConfig | None
    errors: tuple[RuleConfigError, ...]
    warnings: tuple[str, ...]
    custom: tuple[tuple[int, MetricNamer], ...] = ()
    external: tuple[tuple[int, MetricNamer], ...] = ()
    resource: ResourceQueries | None = None


def offline_mapper(config: RuleConfig, *, source: str) -> tuple[StaticRESTMapper, list[str]]:
    """The built-in kinds plus every override resource they do not know (a guessed namespaced
    entry each), and one warning per such resource."""
    builtin = StaticRESTMapper.builtin()
    extra: list[ResourceEntry] = []
    warnings: list[str] = []
    for kind, rules in (("rules", config.rules), ("externalRules", config.external_rules)):
        for index, rule in enumerate(rules):
            for label, override in rule.resources.overrides.items():
                wanted = GroupResource(override.group, override.resource)
                try:
                    builtin.resource_for(wanted)
                    continue
                except UnknownResourceError:
                    pass
                name = override.resource.lower()
                plural, singular = (name, name[:-1]) if name.endswith("s") else guess_plural(name)
                if any(e.group == override.group and e.plural == plural for e in extra):
                    continue
                extra.append(ResourceEntry(override.group, plural, singular, True))
                warnings.append(
                    f"{source}: {rule_label(kind, index, rule.series_query)}: "
                    f"resources.overrides.{label}: {wanted} is not a built-in resource; the "
                    "cluster must serve it (a CRD) or prometheus-adapter refuses the file "
                    "(check against a cluster with --kubeconfig)"
                )
    return StaticRESTMapper((*builtin.entries, *extra)), warnings


def _rule_warnings(kind: str, index: int, rule: DiscoveryRule, *, source: str) -> list[str]:
    where = f"{source}: {rule_label(kind, index, rule.series_query)}"
    out = []
    mapping = rule.resources
    if kind == "rules" and mapping.label_template is None and not mapping.overrides:
        out.append(
            f"{where}: resources: neither a template nor overrides, so no series names a "
            "Kubernetes object and the rule serves no metric"
        )
    if not _USES_MATCHERS.search(rule.metrics_query):
        out.append(
            f"{where}: metricsQuery: uses neither <<.LabelMatchers>> nor <<.LabelValuesByName>>, "
            "so the query ignores the requested objects and namespace"
        )
    if kind == "rules" and not _USES_GROUP_BY.search(rule.metrics_query):
        out.append(
            f"{where}: metricsQuery: does not use <<.GroupBy>>, so values are matched to objects "
            "only if the query keeps the resource label itself"
        )
    return out


def _namers(
    kind: str, rules: Sequence[DiscoveryRule], mapper: RESTMapper, *, source: str
) -> tuple[list[tuple[int, MetricNamer]], list[RuleConfigError]]:
    namers: list[tuple[int, MetricNamer]] = []
    errors: list[RuleConfigError] = []
    for index, rule in enumerate(rules):
        try:
            namers.append(
                (index, namer_for_rule(rule, mapper, kind=kind, index=index, source=source))
            )
        except RuleConfigError as error:
            errors.append(error)
    return namers, errors


def check_rules(text: str, *, source: str, mapper: RESTMapper | None = None) -> RuleCheck:
    """Every load error and warning of a rule file. ``mapper`` is the cluster's (discovery);
    without one, the built-in kinds answer and unknown override resources are warnings."""
    loaded = check_rule_file(text, source=source)
    config = loaded.config
    if config is None:
        return RuleCheck(None, loaded.errors, tuple(f"{source}: {w}" for w in loaded.warnings))
    warnings = [f"{source}: {warning}" for warning in loaded.warnings]
    if mapper is None:
        mapper, guessed = offline_mapper(config, source=source)
        warnings.extend(guessed)
    custom, errors = _namers("rules", config.rules, mapper, source=source)
    external, external_errors = _namers(
        "externalRules", config.external_rules, mapper, source=source
    )
    errors.extend(external_errors)
    for index, rule in enumerate(config.rules):
        warnings.extend(_rule_warnings("rules", index, rule, source=source))
    for index, rule in enumerate(config.external_rules):
        warnings.extend(_rule_warnings("externalRules", index, rule, source=source))
    resource = None
    if config.resource_rules is not None:
        try:
            resource = ResourceQueries.from_config(config.resource_rules, mapper, source=source)
        except RuleConfigError as error:
            errors.append(error)
    return RuleCheck(
        config,
        tuple(errors),
        tuple(warnings),
        custom=tuple(custom),
        external=tuple(external),
        resource=resource,
    )
