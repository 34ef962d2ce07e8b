"""Kubernetes label selectors, and their safe conversion to PromQL label matchers.

Upstream counterparts: ``k8s.io/apimachinery/pkg/labels/selector.go`` (``Parse``: lexer, parser,
grammar errors, key/value validation, requirements sorted by key, values as a sorted set) and
prometheus-adapter ``pkg/naming/metrics_query.go`` (``processQueryParts``, ``selectMatcher``,
``selectTargetValue``: ``=``/``==`` → ``=``, ``!=`` → ``!=``, ``in`` → ``=~``, ``notin`` → ``!~``,
several values joined with ``|``, ``exists`` → ``!=""``, ``!key`` → ``=""``, ``gt``/``lt`` refused).

Deliberate deviations (docs/adapter-rules.md), all to make the rendered query safe:

- regex values are escaped with ``regexp.QuoteMeta`` (upstream passes a single ``in`` value through
  as a raw regex, and joins several raw values): ``a in (x.y)`` becomes ``a=~"x\\\\.y"``;
- keys must also be valid Prometheus label names (``app.kubernetes.io/name`` is refused with a 400
  instead of producing a query Prometheus rejects), and ``__``-prefixed keys are reserved;
- a selector longer than ``MAX_SELECTOR_BYTES`` or a set of more than ``MAX_SET_VALUES`` values is
  refused before anything is parsed further or sent;
- a NUL byte ends a Go selector silently; here it is a grammar error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from adapter.rules.errors import (
    InvalidLabelNameError,
    InvalidSelectorError,
    MalformedQueryError,
    SelectorTooLargeError,
    TooManyValuesError,
    UnsupportedOperatorError,
)
from adapter.rules.promql import (
    alternation,
    check_encodable,
    go_quote_body,
    is_valid_label_name,
    label_eq,
    label_matches,
    label_neq,
    label_not_matches,
)

MAX_SELECTOR_BYTES = 4096
MAX_SET_VALUES = 100


class Operator(StrEnum):
    """``selection.Operator``."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


@dataclass(frozen=True)
class Requirement:
    """One ``key op values`` term. ``values`` is sorted and de-duplicated (``sets.String.List``)."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
        return cls(key, operator, tuple(sorted(set(values))))


# ----------------------------------------------------------------------------------- validation

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_QUALIFIED_NAME_FMT}')"
)
_DNS1123_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)


def _is_qualified_name(value: str) -> list[str]:
    """``validation.IsQualifiedName`` messages (empty when valid)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if _DNS1123_SUBDOMAIN_RE.fullmatch(prefix) is None:
                errs.append(
                    "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                    "alphanumeric characters, '-' or '.', and must start and end with an "
                    "alphanumeric character (e.g. 'example.com', regex used for validation is "
                    f"'{_DNS1123_SUBDOMAIN_FMT}')"
                )
    else:
        return [
            "a qualified name " + _QUALIFIED_NAME_MSG + " with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if _QUALIFIED_NAME_RE.fullmatch(name) is None:
        errs.append("name part " + _QUALIFIED_NAME_MSG)
    return errs


def _is_valid_label_value(value: str) -> list[str]:
    """``validation.IsValidLabelValue`` messages (empty when valid)."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if _LABEL_VALUE_RE.fullmatch(value) is None:
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
            f"or 'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE_FMT}')"
        )
    return errs


def _invalid(path: str, value: str, details: list[str]) -> str:
    return f"{path}: Invalid value: {go_quote_text(value)}: {'; '.join(details)}"


def go_quote_text(value: str) -> str:
    return '"' + go_quote_body(value) + '"'


# ----------------------------------------------------------------------------------- lexer

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


def _lex(selector: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    pos = 0
    length = len(selector)
    while True:
        while pos < length and selector[pos] in _WHITESPACE:
            pos += 1
        if pos >= length:
            items.append((_EOS, ""))
            return items
        char = selector[pos]
        if char in _SPECIAL:
            buffer = ""
            last: tuple[str, str] | None = None
            while pos < length and selector[pos] in _SPECIAL:
                buffer += selector[pos]
                if buffer in _TOKENS:
                    last = (_TOKENS[buffer], buffer)
                    pos += 1
                elif last is not None:
                    break
                else:
                    pos += 1
            if last is None:
                items.append((_ERROR, f"error expected: keyword found '{buffer}'"))
            else:
                items.append(last)
            continue
        start = pos
        while pos < length and selector[pos] not in _SPECIAL and selector[pos] not in _WHITESPACE:
            pos += 1
        word = selector[start:pos]
        items.append((_TOKENS.get(word, _IDENT), word))


# ----------------------------------------------------------------------------------- parser

_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"


class _Parser:
    def __init__(self, selector: str) -> None:
        self.items = _lex(selector)
        self.position = 0

    def lookahead(self, values: bool) -> tuple[str, str]:
        tok, lit = self.items[self.position]
        if values and tok in ("In", "NotIn"):
            tok = _IDENT
        return tok, lit

    def consume(self, values: bool) -> tuple[str, str]:
        tok, lit = self.lookahead(values)
        self.position += 1
        return tok, lit

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok in (_IDENT, "DoesNotExist"):
                try:
                    requirements.append(self.parse_requirement())
                except _RequirementError as exc:
                    raise InvalidSelectorError(f"unable to parse requirement: {exc}") from None
                tok, lit = self.consume(True)
                if tok == _EOS:
                    return requirements
                if tok == "Comma":
                    tok2, lit2 = self.lookahead(True)
                    if tok2 not in (_IDENT, "DoesNotExist"):
                        raise InvalidSelectorError(
                            f"found '{lit2}', expected: identifier after ','"
                        )
                else:
                    raise InvalidSelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _EOS:
                return requirements
            else:
                raise InvalidSelectorError(
                    f"found '{lit}', expected: !, identifier, or 'end of string'"
                )

    def parse_requirement(self) -> Requirement:
        key, operator = self.parse_key_and_infer_operator()
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
            return _new_requirement(key, operator, ())
        operator = self.parse_operator()
        if operator in (Operator.IN, Operator.NOT_IN):
            values = self.parse_values()
        else:
            values = self.parse_exact_value()
        return _new_requirement(key, operator, tuple(sorted(values)))

    def parse_key_and_infer_operator(self) -> tuple[str, Operator | None]:
        operator: Operator | None = None
        tok, literal = self.consume(True)
        if tok == "DoesNotExist":
            operator = Operator.DOES_NOT_EXIST
            tok, literal = self.consume(True)
        if tok != _IDENT:
            raise _RequirementError(f"found '{literal}', expected: identifier")
        errs = _is_qualified_name(literal)
        if errs:
            raise _RequirementError(_invalid("", literal, errs))
        nxt, _ = self.lookahead(True)
        if nxt in (_EOS, "Comma") and operator is not Operator.DOES_NOT_EXIST:
            operator = Operator.EXISTS
        return literal, operator

    def parse_operator(self) -> Operator:
        tok, lit = self.consume(False)
        operators = {
            "In": Operator.IN,
            "Equals": Operator.EQUALS,
            "DoubleEquals": Operator.DOUBLE_EQUALS,
            "GreaterThan": Operator.GREATER_THAN,
            "LessThan": Operator.LESS_THAN,
            "NotIn": Operator.NOT_IN,
            "NotEquals": Operator.NOT_EQUALS,
        }
        if tok not in operators:
            raise _RequirementError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return operators[tok]

    def parse_values(self) -> set[str]:
        tok, lit = self.consume(True)
        if tok != "OpenPar":
            raise _RequirementError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok in (_IDENT, "Comma"):
            values = self.parse_identifiers_list()
            if self.consume(True)[0] != "ClosedPar":
                raise _RequirementError(f"found '{lit}', expected: ')'")
            return values
        if tok == "ClosedPar":
            self.consume(True)
            return {""}
        raise _RequirementError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume(True)
            if tok == _IDENT:
                values.add(lit)
                _check_set_size(values)
                tok2, lit2 = self.lookahead(True)
                if tok2 == "Comma":
                    continue
                if tok2 == "ClosedPar":
                    return values
                raise _RequirementError(f"found '{lit2}', expected: ',' or ')'")
            if tok == "Comma":
                if not values:
                    values.add("")
                tok2, _ = self.lookahead(True)
                if tok2 == "ClosedPar":
                    values.add("")
                    return values
                if tok2 == "Comma":
                    values.add("")
                continue
            raise _RequirementError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        tok, _ = self.lookahead(True)
        if tok in (_EOS, "Comma"):
            return {""}
        tok, lit = self.consume(True)
        if tok == _IDENT:
            return {lit}
        raise _RequirementError(f"found '{lit}', expected: identifier")


class _RequirementError(Exception):
    pass


def _check_set_size(values: Sequence[str] | set[str]) -> None:
    if len(values) > MAX_SET_VALUES:
        raise TooManyValuesError(
            f"label selector set has more than {MAX_SET_VALUES} values; refusing to query"
        )


def _new_requirement(key: str, operator: Operator, values: tuple[str, ...]) -> Requirement:
    """``labels.NewRequirement`` validation."""
    errs: list[str] = []
    if operator in (Operator.IN, Operator.NOT_IN) and not values:
        errs.append(
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        )
    if (
        operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS)
        and len(values) != 1
    ):
        errs.append("values: Invalid value: exact-match compatibility requires one single value")
    if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        for index, value in enumerate(values):
            if re.fullmatch(r"[+-]?[0-9]+", value) is None:
                errs.append(
                    f"values[{index}]: Invalid value: {go_quote_text(value)}: for 'Gt', 'Lt' "
                    "operators, the value must be an integer"
                )
    for index, value in enumerate(values):
        details = _is_valid_label_value(value)
        if details:
            errs.append(_invalid(f"values[{index}][{key}]", value, details))
    if errs:
        raise _RequirementError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    return Requirement(key, operator, values)


def parse_selector(selector: str) -> tuple[Requirement, ...]:
    """``labels.Parse``: requirements sorted by key. The empty selector selects everything.

    Raises ``SelectorTooLargeError``, ``TooManyValuesError`` or ``InvalidSelectorError``.
    """
    size = len(selector.encode("utf-8", "surrogatepass"))
    if size > MAX_SELECTOR_BYTES:
        raise SelectorTooLargeError(
            f"label selector is {size} bytes, more than the {MAX_SELECTOR_BYTES} allowed"
        )
    if "\x00" in selector:
        raise InvalidSelectorError("label selector contains a NUL character")
    requirements = _Parser(selector).parse()
    requirements.sort(key=lambda requirement: requirement.key)
    return tuple(requirements)


def format_selector(requirements: Iterable[Requirement]) -> str:
    """``internalSelector.String``."""
    parts: list[str] = []
    for requirement in requirements:
        key, operator, values = requirement.key, requirement.operator, requirement.values
        if operator is Operator.DOES_NOT_EXIST:
            parts.append("!" + key)
        elif operator is Operator.EXISTS:
            parts.append(key)
        elif operator in (Operator.IN, Operator.NOT_IN):
            parts.append(f"{key} {operator.value} ({','.join(values)})")
        else:
            symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(
                operator, operator.value
            )
            parts.append(f"{key}{symbol}{','.join(values)}")
    return ",".join(parts)


# ----------------------------------------------------------------------------------- PromQL


@dataclass(frozen=True)
class QueryPart:
    """``queryPart``: one label constraint on its way to a PromQL matcher."""

    label_name: str
    values: tuple[str, ...]
    operator: Operator


def query_parts_from_selector(requirements: Iterable[Requirement]) -> list[QueryPart]:
    """``createQueryPartsFromSelector``: one part per requirement, values sorted."""
    return [
        QueryPart(requirement.key, tuple(sorted(set(requirement.values))), requirement.operator)
        for requirement in requirements
    ]


def check_user_label(name: str) -> None:
    """Keys that come from a caller must be plain, non-reserved Prometheus label names."""
    if not name:
        raise InvalidLabelNameError("label not specified")
    if not is_valid_label_name(name):
        raise InvalidLabelNameError(
            f"label selector key {name!r} is not a valid Prometheus label name "
            "(must match [a-zA-Z_][a-zA-Z0-9_]*)"
        )
    if name.startswith("__"):
        raise InvalidLabelNameError(f"label selector key {name!r} is reserved")


_REGEX_OPERATORS = {
    Operator.EQUALS: label_matches,
    Operator.DOUBLE_EQUALS: label_matches,
    Operator.IN: label_matches,
    Operator.EXISTS: label_matches,
    Operator.NOT_EQUALS: label_not_matches,
    Operator.DOES_NOT_EXIST: label_not_matches,
    Operator.NOT_IN: label_not_matches,
}


def render_query_part(part: QueryPart) -> tuple[str, str]:
    """``selectMatcher`` + ``selectTargetValue``: (matcher expression, LabelValuesByName entry).

    The LabelValuesByName entry is the values' escaped alternation, itself escaped for use inside
    a double-quoted PromQL string (``"<<index .LabelValuesByName "pod">>"``).
    """
    operator, values, label = part.operator, part.values, part.label_name
    if not label:
        raise InvalidLabelNameError("label not specified")
    if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        raise UnsupportedOperatorError("operator not supported by prometheus")
    _check_set_size(values)
    for value in values:
        check_encodable(value)
    if not values:
        if operator is Operator.EXISTS:
            expression = label_neq(label, "")
        elif operator is Operator.DOES_NOT_EXIST:
            expression = label_eq(label, "")
        else:
            raise MalformedQueryError("operator requires values")
    elif operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        raise MalformedQueryError("operator does not support values")
    elif len(values) == 1 and operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS):
        expression = label_eq(label, values[0])
    elif len(values) == 1 and operator is Operator.NOT_EQUALS:
        expression = label_neq(label, values[0])
    else:
        expression = _REGEX_OPERATORS[operator](label, alternation(values))
    return expression, go_quote_body(alternation(values))
