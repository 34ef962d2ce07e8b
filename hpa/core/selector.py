"""Kubernetes label selectors: the string form and ``metav1.LabelSelector``, parsed and matched.

Upstream counterparts: ``k8s.io/apimachinery/pkg/labels/selector.go`` (``Parse``: its lexer,
parser and grammar errors; ``NewRequirement``; ``Requirement.Matches``; ``internalSelector.String``)
and ``k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go`` (``LabelSelectorAsSelector``).

This is the one selector of both packages: the informers index and match by it, the controller
reads ``Scale.status.selector`` with it, and the adapter parses ``labelSelector`` and
``metricLabelSelector`` with it before rendering PromQL matchers (``adapter/rules/selector.py``).

Deliberate deviations: errors are one ``SelectorError`` (a ``ValueError``) carrying upstream's
message; a NUL byte is a grammar error (Go's lexer reads it as the end of the string and drops
the rest silently); a ``nil`` ``LabelSelector`` becomes ``NOTHING`` (matches no object) and an
empty one ``EVERYTHING``, as upstream; requirements are sorted by key and values are a sorted set,
as upstream's ``NewRequirement`` and ``Add`` keep them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from hpa.core.names import is_qualified_name, is_valid_label_value

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "Operator",
    "Requirement",
    "Selector",
    "SelectorError",
    "build_selector",
    "format_selector",
    "parse_selector",
    "selector_from_label_selector",
    "selector_from_labels",
]


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


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _go_quote(value: str) -> str:
    """``%q`` of the plain values a selector error shows (printable ASCII as is)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _invalid(path: str, value: str, details: list[str]) -> str:
    """``field.Invalid(path, value, detail).Error()``."""
    return f"{path}: Invalid value: {_go_quote(value)}: {'; '.join(details)}"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key op values`` term; ``values`` is a sorted set like upstream's ``NewRequirement``."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
        """A requirement with ``values`` as a sorted set, not validated."""
        return cls(key, operator, tuple(sorted(set(values))))

    @classmethod
    def build(cls, key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
        """``labels.NewRequirement``: validate the key, the value count and each value."""
        vals = tuple(sorted(set(values)))
        key_errors = is_qualified_name(key)
        if key_errors:
            raise SelectorError(_invalid("key", key, key_errors))
        errors: list[str] = []
        if operator in (Operator.IN, Operator.NOT_IN) and not vals:
            errors.append(
                "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
            )
        if (
            operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS)
            and len(vals) != 1
        ):
            errors.append(
                "values: Invalid value: exact-match compatibility requires one single value"
            )
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and vals:
            errors.append(
                "values: Invalid value: values set must be empty for exists and does not exist"
            )
        if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
            if len(vals) != 1:
                errors.append(
                    "values: Invalid value: for 'Gt', 'Lt' operators, exactly one value is required"
                )
            for index, value in enumerate(vals):
                if _INTEGER.fullmatch(value) is None:
                    errors.append(
                        f"values[{index}]: Invalid value: {_go_quote(value)}: for 'Gt', 'Lt' "
                        "operators, the value must be an integer"
                    )
        for index, value in enumerate(vals):
            details = is_valid_label_value(value)
            if details:
                errors.append(_invalid(f"values[{index}][{key}]", value, details))
        if errors:
            raise SelectorError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return cls(key, operator, vals)

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
                if not present or _INTEGER.fullmatch(labels[self.key]) is None:
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
                return f"{self.key}>{','.join(self.values)}"
            case Operator.LESS_THAN:
                return f"{self.key}<{','.join(self.values)}"
            case _:
                return f"{self.key}{self.operator.value}{','.join(self.values)}"


def format_selector(requirements: Iterable[Requirement]) -> str:
    """``internalSelector.String``: the form the API server takes as ``labelSelector``."""
    return ",".join(requirement.to_string() for requirement in requirements)


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
                requirement.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN)
                and len(requirement.values) == 1
            ):
                terms[requirement.key] = requirement.values[0]
        return terms

    def to_string(self) -> str:
        """``internalSelector.String``."""
        return format_selector(self.requirements)


EVERYTHING = Selector()
NOTHING = Selector(matches_nothing=True)


def build_selector(requirements: Iterable[Requirement]) -> Selector:
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
            raise SelectorError(f'"{operator_name}" is not a valid label selector operator')
        requirements.append(
            Requirement.build(expression.get("key", ""), operator, expression.get("values") or [])
        )
    return build_selector(requirements)


# ---------------------------------------------------------------- the string form: lexer

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKENS = {
    ")": "ClosedPar",
    ",": "Comma",
    "!": "DoesNotExist",
    "==": "DoubleEquals",
    "=": "Equals",
    ">": "GreaterThan",
    "in": "In",
    "<": "LessThan",
    "!=": "NotEquals",
    "notin": "NotIn",
    "(": "OpenPar",
}
_IDENT = "Identifier"
_EOS = "EndOfString"
_ERROR = "Error"


def _lex(text: str) -> list[tuple[str, str]]:
    """``Lexer.Lex`` to the end: (kind, literal) pairs ending with ``EndOfString``."""
    items: list[tuple[str, str]] = []
    pos = 0
    length = len(text)
    while True:
        while pos < length and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= length:
            items.append((_EOS, ""))
            return items
        if text[pos] in _SPECIAL:
            buffer = ""
            last: tuple[str, str] | None = None
            while pos < length and text[pos] in _SPECIAL:
                buffer += text[pos]
                if buffer in _TOKENS:
                    last = (_TOKENS[buffer], buffer)
                    pos += 1
                elif last is not None:
                    break
                else:
                    pos += 1
            items.append(last if last is not None else (_ERROR, buffer))
            continue
        start = pos
        while pos < length and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        items.append((_TOKENS.get(word, _IDENT), word))


# ---------------------------------------------------------------- the string form: parser

_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_OPERATOR_TOKENS = {
    "In": Operator.IN,
    "Equals": Operator.EQUALS,
    "DoubleEquals": Operator.DOUBLE_EQUALS,
    "GreaterThan": Operator.GREATER_THAN,
    "LessThan": Operator.LESS_THAN,
    "NotIn": Operator.NOT_IN,
    "NotEquals": Operator.NOT_EQUALS,
}


class _RequirementError(Exception):
    pass


class _Parser:
    """``Parser``: ``parse``, ``parseRequirement``, ``parseKeyAndInferOperator``, ..."""

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values: bool) -> tuple[str, str]:
        kind, literal = self.items[self.position]
        if values and kind in ("In", "NotIn"):
            kind = _IDENT
        return kind, literal

    def consume(self, values: bool) -> tuple[str, str]:
        found = self.lookahead(values)
        self.position += 1
        return found

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, literal = self.lookahead(True)
            if kind in (_IDENT, "DoesNotExist"):
                try:
                    requirements.append(self.parse_requirement())
                except _RequirementError as error:
                    raise SelectorError(f"unable to parse requirement: {error}") from None
                kind, literal = self.consume(True)
                if kind == _EOS:
                    return requirements
                if kind != "Comma":
                    raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
                after, after_literal = self.lookahead(True)
                if after not in (_IDENT, "DoesNotExist"):
                    raise SelectorError(f"found '{after_literal}', expected: identifier after ','")
            elif kind == _EOS:
                return requirements
            else:
                raise SelectorError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'"
                )

    def parse_requirement(self) -> Requirement:
        key, operator = self.parse_key_and_infer_operator()
        if operator is not None:
            return self.new_requirement(key, operator, ())
        operator = self.parse_operator()
        if operator in (Operator.IN, Operator.NOT_IN):
            values = self.parse_values()
        else:
            values = self.parse_exact_value()
        return self.new_requirement(key, operator, values)

    @staticmethod
    def new_requirement(key: str, operator: Operator, values: Iterable[str]) -> Requirement:
        try:
            return Requirement.build(key, operator, values)
        except SelectorError as error:
            raise _RequirementError(str(error)) from None

    def parse_key_and_infer_operator(self) -> tuple[str, Operator | None]:
        operator: Operator | None = None
        kind, literal = self.consume(True)
        if kind == "DoesNotExist":
            operator = Operator.DOES_NOT_EXIST
            kind, literal = self.consume(True)
        if kind != _IDENT:
            raise _RequirementError(f"found '{literal}', expected: identifier")
        errors = is_qualified_name(literal)
        if errors:
            raise _RequirementError(_invalid("", literal, errors))
        following, _ = self.lookahead(True)
        if following in (_EOS, "Comma") and operator is not Operator.DOES_NOT_EXIST:
            operator = Operator.EXISTS
        return literal, operator

    def parse_operator(self) -> Operator:
        kind, literal = self.consume(False)
        if kind not in _OPERATOR_TOKENS:
            raise _RequirementError(f"found '{literal}', expected: {_BINARY_OPERATORS}")
        return _OPERATOR_TOKENS[kind]

    def parse_values(self) -> set[str]:
        kind, literal = self.consume(True)
        if kind != "OpenPar":
            raise _RequirementError(f"found '{literal}' expected: '('")
        kind, literal = self.lookahead(True)
        if kind in (_IDENT, "Comma"):
            values = self.parse_identifiers_list()
            if self.consume(True)[0] != "ClosedPar":
                raise _RequirementError(f"found '{literal}', expected: ')'")
            return values
        if kind == "ClosedPar":  # "x in ()" and "x notin ()" hold the empty value
            self.consume(True)
            return {""}
        raise _RequirementError(f"found '{literal}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            kind, literal = self.consume(True)
            if kind == _IDENT:
                values.add(literal)
                following, following_literal = self.lookahead(True)
                if following == "Comma":
                    continue
                if following == "ClosedPar":
                    return values
                raise _RequirementError(f"found '{following_literal}', expected: ',' or ')'")
            if kind == "Comma":
                if not values:
                    values.add("")
                following, _ = self.lookahead(True)
                if following == "ClosedPar":
                    values.add("")
                    return values
                if following == "Comma":
                    values.add("")
                continue
            raise _RequirementError(f"found '{literal}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        kind, _ = self.lookahead(True)
        if kind in (_EOS, "Comma"):
            return {""}
        kind, literal = self.consume(True)
        if kind == _IDENT:
            return {literal}
        raise _RequirementError(f"found '{literal}', expected: identifier")


def parse_selector(text: str) -> Selector:
    """``labels.Parse``: the string form (``a=b,c in (d,e),!f,g``); empty matches everything."""
    if "\x00" in text:
        raise SelectorError("label selector contains a NUL character")
    return build_selector(_Parser(text).parse())
