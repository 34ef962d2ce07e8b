"""PromQL lexical pieces: string quoting, regex escaping, label and metric name grammar.

Upstream counterparts: prometheus-adapter ``pkg/client/helpers.go`` (``LabelEq``, ``LabelNeq``,
``LabelMatches``, ``LabelNotMatches``, which format values with Go's ``%q``), Go's
``strconv.Quote`` and ``regexp.QuoteMeta``, and Prometheus ``model.LabelName.IsValid`` /
``model.IsValidMetricName`` (the classic, pre-UTF-8 grammar).

``go_quote`` reproduces ``strconv.Quote`` byte for byte, so rendered queries equal upstream's;
Prometheus unquotes string literals with the same escape set, so any value round-trips.
Deliberate deviations: U+FFFD is written ``\\ufffd``: ``strconv.Quote`` prints it raw, but
Prometheus's lexer takes a raw U+FFFD for an invalid UTF-8 rune and fails the query (a 500 where
the caller's input is at fault); the escape spells the same string. Python strings may hold lone
surrogates, which Go strings cannot; they are
refused with ``InvalidValueError`` instead of being sent. "Printable" follows Python's Unicode
database, which can lag Go's by a version: a character new in Go's tables is escaped here
(``\\u...``) where Go prints it raw; both spell the same string.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from adapter.rules.errors import InvalidLabelNameError, InvalidValueError

LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
METRIC_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")

_SIMPLE_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}
# regexp.QuoteMeta escapes exactly these bytes.
_REGEX_SPECIALS = frozenset("\\.+*?()|[]{}^$")


def is_go_printable(char: str) -> bool:
    """``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and ASCII space."""
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def check_encodable(value: str) -> None:
    """Refuse strings that are not valid Unicode scalar sequences (lone surrogates)."""
    for char in value:
        if 0xD800 <= ord(char) <= 0xDFFF:
            raise InvalidValueError(f"value {value!r} is not valid UTF-8 (lone surrogate)")


def go_quote_body(value: str) -> str:
    """``strconv.Quote`` without the surrounding double quotes."""
    check_encodable(value)
    out: list[str] = []
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char == "\ufffd":  # Prometheus's lexer reads a raw U+FFFD as an invalid UTF-8 rune
            out.append("\\ufffd")
        elif is_go_printable(char):
            out.append(char)
        elif char in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[char])
        else:
            code = ord(char)
            if code < 0x20 or code == 0x7F:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    return "".join(out)


def go_quote(value: str) -> str:
    """``strconv.Quote``: a double-quoted Go (and PromQL) string literal for ``value``."""
    return '"' + go_quote_body(value) + '"'


def quote_meta(value: str) -> str:
    """``regexp.QuoteMeta``: a regex matching exactly ``value``."""
    check_encodable(value)
    return "".join("\\" + char if char in _REGEX_SPECIALS else char for char in value)


def alternation(values: Iterable[str]) -> str:
    """A regex matching exactly one of ``values`` (each fully escaped), joined with ``|``.

    Prometheus anchors label regexes as ``^(?:...)$``, so the alternation needs no group.
    """
    return "|".join(quote_meta(value) for value in values)


def is_valid_label_name(name: str) -> bool:
    return LABEL_NAME_RE.fullmatch(name) is not None


def is_valid_metric_name(name: str) -> bool:
    return METRIC_NAME_RE.fullmatch(name) is not None


def check_label_name(name: str) -> str:
    if not is_valid_label_name(name):
        raise InvalidLabelNameError(
            f"label name {name!r} is not a valid Prometheus label name "
            f"(must match {LABEL_NAME_RE.pattern!r})"
        )
    return name


def label_eq(label: str, value: str) -> str:
    """``LabelEq``: ``label="value"``."""
    return f"{check_label_name(label)}={go_quote(value)}"


def label_neq(label: str, value: str) -> str:
    """``LabelNeq``: ``label!="value"``."""
    return f"{check_label_name(label)}!={go_quote(value)}"


def label_matches(label: str, regex: str) -> str:
    """``LabelMatches``: ``label=~"regex"``."""
    return f"{check_label_name(label)}=~{go_quote(regex)}"


def label_not_matches(label: str, regex: str) -> str:
    """``LabelNotMatches``: ``label!~"regex"``."""
    return f"{check_label_name(label)}!~{go_quote(regex)}"
