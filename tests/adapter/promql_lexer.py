"""A small, strict PromQL tokenizer for checking rendered queries (test-only, independent code).

It knows just enough PromQL for the rule templates under test: identifiers (metric, label,
function and keyword names), numbers and durations, single/double-quoted strings (decoded with
Go's ``strconv.Unquote`` rules, which Prometheus applies), operators and punctuation. Anything
else (a comment ``#``, a backtick, a raw control character or a raw U+FFFD inside a string, an
unknown escape, an unterminated string) is an error: a correctly escaped query never contains one.

``literal_alternation`` parses a regex that must be nothing but escaped literals joined by ``|``.
"""

from __future__ import annotations

from dataclasses import dataclass

IDENT = "ident"
STRING = "string"
NUMBER = "number"
OP = "op"
PUNCT = "punct"

_OPERATORS = ("=~", "!~", "!=", "==", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "%", "^")
_PUNCTUATION = "(){}[],"
_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_HEX = "0123456789abcdefABCDEF"
# What Go's regexp.QuoteMeta escapes, and therefore all a literal regex may contain escaped.
_REGEX_META = "\\.+*?()|[]{}^$"


class LexError(ValueError):
    pass


@dataclass(frozen=True)
class Token:
    kind: str
    value: str


def _decode_string(text: str, start: int) -> tuple[str, int]:
    quote = text[start]
    out: list[str] = []
    pos = start + 1
    while True:
        if pos >= len(text):
            raise LexError(f"unterminated string at {start}")
        char = text[pos]
        if char == quote:
            return "".join(out), pos + 1
        if ord(char) < 0x20 or ord(char) == 0x7F:
            raise LexError(f"raw control character {char!r} inside a string at {pos}")
        if char == "\ufffd":  # Prometheus's lexString: utf8.RuneError is "invalid UTF-8 rune"
            raise LexError(f"invalid UTF-8 rune inside a string at {pos}")
        if char != "\\":
            out.append(char)
            pos += 1
            continue
        esc = text[pos + 1 : pos + 2]
        pos += 2
        if esc in _SIMPLE:
            out.append(_SIMPLE[esc])
        elif esc == quote:
            out.append(esc)
        elif esc in ("x", "u", "U"):
            size = {"x": 2, "u": 4, "U": 8}[esc]
            digits = text[pos : pos + size]
            if len(digits) != size or any(c not in _HEX for c in digits):
                raise LexError(f"bad \\{esc} escape at {pos}")
            code = int(digits, 16)
            if esc != "x" and (code > 0x10FFFF or 0xD800 <= code <= 0xDFFF):
                raise LexError(f"invalid code point escape at {pos}")
            out.append(chr(code))
            pos += size
        elif esc and esc in "01234567":
            digits = text[pos - 1 : pos + 2]
            if len(digits) != 3 or any(c not in "01234567" for c in digits):
                raise LexError(f"bad octal escape at {pos}")
            out.append(chr(int(digits, 8)))
            pos += 2
        else:
            raise LexError(f"unknown escape \\{esc} at {pos}")


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char in " \t\n\r":
            pos += 1
        elif char in "\"'":
            value, pos = _decode_string(text, pos)
            tokens.append(Token(STRING, value))
        elif char.isascii() and (char.isalpha() or char in "_:"):
            end = pos
            while (
                end < len(text)
                and text[end].isascii()
                and (text[end].isalnum() or text[end] in "_:")
            ):
                end += 1
            tokens.append(Token(IDENT, text[pos:end]))
            pos = end
        elif char.isascii() and char.isdigit():
            end = pos
            while (
                end < len(text)
                and text[end].isascii()
                and (text[end].isalnum() or text[end] == ".")
            ):
                end += 1
            tokens.append(Token(NUMBER, text[pos:end]))
            pos = end
        elif char in _PUNCTUATION:
            tokens.append(Token(PUNCT, char))
            pos += 1
        else:
            for operator in _OPERATORS:
                if text.startswith(operator, pos):
                    tokens.append(Token(OP, operator))
                    pos += len(operator)
                    break
            else:
                raise LexError(f"unexpected character {char!r} at {pos}")
    return tokens


def literal_alternation(regex: str) -> list[str]:
    """The literals of ``lit1|lit2|...`` where every regex metacharacter is escaped."""
    alternatives: list[str] = []
    current: list[str] = []
    pos = 0
    while pos < len(regex):
        char = regex[pos]
        if char == "\\":
            nxt = regex[pos + 1 : pos + 2]
            if nxt == "" or nxt not in _REGEX_META:
                raise LexError(f"regex escape \\{nxt} is not an escaped metacharacter")
            current.append(nxt)
            pos += 2
        elif char == "|":
            alternatives.append("".join(current))
            current = []
            pos += 1
        elif char in _REGEX_META:
            raise LexError(f"unescaped regex metacharacter {char!r} at {pos}")
        else:
            current.append(char)
            pos += 1
    alternatives.append("".join(current))
    return alternatives
