"""Kubernetes label selectors: the string form and ``metav1.LabelSelector``, parsed and matched.

Upstream counterparts: ``k8s.io/apimachinery/pkg/labels/selector.go`` (``Parse``,
``Requirement.Matches``, ``internalSelector.String``) and
``k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go`` (``LabelSelectorAsSelector``).

This module is pure (stdlib only, no I/O) and sits in ``hpa.kube`` because the informers index by
it; the adapter's ``adapter/rules/selector.py`` renders PromQL matchers and is a different thing.

Deliberate deviations: errors are one ``SelectorError`` (a ``ValueError``) with upstream's message
wording where it matters; a ``nil`` ``LabelSelector`` becomes ``NOTHING`` (matches no object) and
an empty one ``EVERYTHING`` exactly as upstream; ``String()`` keeps requirements sorted by key
and values sorted, as upstream's ``NewRequirement`` and ``Add`` do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class SelectorError(ValueError):
    """A selector that upstream's parser or ``LabelSelectorAsSelector`` would reject."""


class Operator(StrEnum):
    """``selection.Operator`` values, spelled as upstream."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def validate_label_key(key: str) -> None:
    """``validation.IsQualifiedName``: optional DNS-subdomain prefix, then a 63-char name."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise SelectorError(f"invalid label key {key!r}: prefix must be a DNS subdomain")
    if not name or len(name) > 63 or not _NAME.match(name):
        raise SelectorError(f"invalid label key {key!r}: name part must be a qualified name")


def validate_label_value(value: str) -> None:
    """``validation.IsValidLabelValue``: empty, or at most 63 name characters."""
    if value and (len(value) > 63 or not _NAME.match(value)):
        raise SelectorError(f"invalid label value: {value!r}")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key op values`` term; ``values`` is sorted like upstream's ``NewRequirement``."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def build(cls, key: str, operator: Operator, values: Sequence[str] = ()) -> Requirement:
        """``labels.NewRequirement``: validate the key, the value count and each value."""
        validate_label_key(key)
        if operator in (Operator.IN, Operator.NOT_IN) and not values:
            raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
        if operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS) and (
            len(values) != 1
        ):
            raise SelectorError("exact-match compatibility requires one single value")
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
            raise SelectorError("values set must be empty for exists and does not exist")
        if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
            if len(values) != 1:
                raise SelectorError("for 'Gt', 'Lt' operators, exactly one value is required")
            if not _INTEGER.match(values[0]):
                raise SelectorError("for 'Gt', 'Lt' operators, the value must be an integer")
        else:
            for value in values:
                validate_label_value(value)
        return cls(key=key, operator=operator, values=tuple(sorted(set(values))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches``: NotIn and != match objects that lack the key."""
        present = self.key in labels
        match self.operator:
            case Operator.IN | Operator.EQUALS | Operator.DOUBLE_EQUALS:
                return present and labels[self.key] in self.values
            case Operator.NOT_IN | Operator.NOT_EQUALS:
                return not present or labels[self.key] not in self.values
            case Operator.EXISTS:
                return present
            case Operator.DOES_NOT_EXIST:
                return not present
            case Operator.GREATER_THAN | Operator.LESS_THAN:
                if not present or not _INTEGER.match(labels[self.key]):
                    return False
                label_value = int(labels[self.key])
                bound = int(self.values[0])
                if self.operator is Operator.GREATER_THAN:
                    return label_value > bound
                return label_value < bound

    def to_string(self) -> str:
        """``Requirement.String``."""
        match self.operator:
            case Operator.EXISTS:
                return self.key
            case Operator.DOES_NOT_EXIST:
                return f"!{self.key}"
            case Operator.IN | Operator.NOT_IN:
                return f"{self.key} {self.operator.value} ({','.join(self.values)})"
            case Operator.GREATER_THAN:
                return f"{self.key}>{self.values[0]}"
            case Operator.LESS_THAN:
                return f"{self.key}<{self.values[0]}"
            case _:
                return f"{self.key}{self.operator.value}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; ``matches_nothing`` models upstream's ``labels.Nothing()``."""

    requirements: tuple[Requirement, ...] = ()
    matches_nothing: bool = False

    @property
    def is_empty(self) -> bool:
        """``Selector.Empty``: true for ``EVERYTHING`` (no requirement, matches all)."""
        return not self.requirements and not self.matches_nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.matches_nothing:
            return False
        for requirement in self.requirements:  # noqa: SIM110 - no generator per call
            if not requirement.matches(labels):
                return False
        return True

    def equality_terms(self) -> dict[str, str]:
        """``key=value`` terms (Equals, ==, single-valued In) an index can look up directly."""
        terms: dict[str, str] = {}
        for requirement in self.requirements:
            if (
                requirement.operator
                in (
                    Operator.EQUALS,
                    Operator.DOUBLE_EQUALS,
                    Operator.IN,
                )
                and len(requirement.values) == 1
            ):
                terms[requirement.key] = requirement.values[0]
        return terms

    def to_string(self) -> str:
        """``internalSelector.String``: the form the API server takes as ``labelSelector``."""
        return ",".join(requirement.to_string() for requirement in self.requirements)


EVERYTHING = Selector()
NOTHING = Selector(matches_nothing=True)


def build_selector(requirements: Sequence[Requirement]) -> Selector:
    """A selector whose requirements are sorted by key (stable), as ``internalSelector.Add``."""
    return Selector(requirements=tuple(sorted(requirements, key=lambda r: r.key)))


def selector_from_labels(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: one Equals requirement per label."""
    return build_selector([Requirement.build(k, Operator.EQUALS, [v]) for k, v in labels.items()])


_LABEL_SELECTOR_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def selector_from_label_selector(label_selector: Mapping[str, Any] | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: ``None`` matches nothing, ``{}`` matches everything."""
    if label_selector is None:
        return NOTHING
    match_labels = label_selector.get("matchLabels") or {}
    match_expressions = label_selector.get("matchExpressions") or []
    if not match_labels and not match_expressions:
        return EVERYTHING
    requirements = [Requirement.build(k, Operator.EQUALS, [v]) for k, v in match_labels.items()]
    for expression in match_expressions:
        operator_name = expression.get("operator", "")
        operator = _LABEL_SELECTOR_OPERATORS.get(operator_name)
        if operator is None:
            raise SelectorError(f"{operator_name!r} is not a valid label selector operator")
        requirements.append(
            Requirement.build(expression.get("key", ""), operator, expression.get("values") or [])
        )
    return build_selector(requirements)


# ---------------------------------------------------------------- the string form

_SPECIAL = "!=(),<>"
_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|<|>|[^\s!=(),<>]+)")


def _tokenize(text: str) -> list[str]:
    lexemes: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        found = _TOKEN.match(text, position)
        if found is None:  # pragma: no cover - the pattern accepts every character class
            raise SelectorError(f"unable to parse requirement: {text[position:]!r}")
        lexemes.append(found.group(1))
        position = found.end()
    return lexemes


def _is_identifier(lexeme: str | None) -> bool:
    return lexeme is not None and lexeme[0] not in _SPECIAL


class _Parser:
    def __init__(self, text: str) -> None:
        self.lexemes = _tokenize(text)
        self.position = 0

    def peek(self) -> str | None:
        return self.lexemes[self.position] if self.position < len(self.lexemes) else None

    def take(self) -> str | None:
        lexeme = self.peek()
        self.position += 1
        return lexeme

    def expect_identifier(self, what: str) -> str:
        lexeme = self.take()
        if not _is_identifier(lexeme) or lexeme in ("in", "notin"):
            raise SelectorError(f"found {lexeme!r}, expected: {what}")
        assert lexeme is not None
        return lexeme

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        if self.peek() is None:
            return requirements
        while True:
            requirements.append(self.requirement())
            lexeme = self.take()
            if lexeme is None:
                return requirements
            if lexeme != ",":
                raise SelectorError(f"found {lexeme!r}, expected: ',' or 'end of string'")
            if self.peek() is None:
                raise SelectorError("found 'end of string', expected: identifier after ','")

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            key = self.expect_identifier("identifier after '!'")
            if self.peek() not in (None, ","):
                raise SelectorError(f"found {self.peek()!r}, expected: ',' or 'end of string'")
            return Requirement.build(key, Operator.DOES_NOT_EXIST)
        key = self.expect_identifier("identifier")
        lexeme = self.peek()
        if lexeme in (None, ","):
            return Requirement.build(key, Operator.EXISTS)
        self.take()
        operators = {
            "=": Operator.EQUALS,
            "==": Operator.DOUBLE_EQUALS,
            "!=": Operator.NOT_EQUALS,
            ">": Operator.GREATER_THAN,
            "<": Operator.LESS_THAN,
        }
        if lexeme in operators:
            value = self.peek()
            if _is_identifier(value) and value not in ("in", "notin"):
                self.take()
                assert value is not None
                return Requirement.build(key, operators[lexeme], [value])
            if value in (None, ",") and lexeme in ("=", "==", "!="):
                return Requirement.build(key, operators[lexeme], [""])
            raise SelectorError(f"found {value!r}, expected: identifier")
        if lexeme in ("in", "notin"):
            return Requirement.build(
                key, Operator.IN if lexeme == "in" else Operator.NOT_IN, self.value_set()
            )
        raise SelectorError(f"found {lexeme!r}, expected: in, notin, =, ==, !=, gt, lt")

    def value_set(self) -> list[str]:
        if self.take() != "(":
            raise SelectorError("found non-'(', expected: '('")
        values: list[str] = []
        expect_value = True
        while True:
            lexeme = self.take()
            if lexeme is None:
                raise SelectorError("found 'end of string', expected: ')'")
            if lexeme == ")":
                if expect_value and values:
                    values.append("")  # "a in (x,)" keeps an empty value, as upstream
                return values
            if lexeme == ",":
                if expect_value:
                    values.append("")
                expect_value = True
                continue
            if not _is_identifier(lexeme) or not expect_value:
                raise SelectorError(f"found {lexeme!r}, expected: ',', ')' or identifier")
            values.append(lexeme)
            expect_value = False


def parse_selector(text: str) -> Selector:
    """``labels.Parse``: the string form (``a=b,c in (d,e),!f,g``); empty matches everything."""
    return build_selector(_Parser(text).parse())
