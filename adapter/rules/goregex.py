"""Go RE2 regular expressions on Python's ``re``, and Go's ``Regexp.ExpandString``.

Upstream counterpart: Go's ``regexp`` / ``regexp/syntax`` as used by prometheus-adapter for
``name.matches``, ``seriesFilters`` and the label regex derived from ``resources.template``, and
``regexp.(*Regexp).expand`` for ``name.as`` (``$1``, ``${1}``, ``$name``, ``$$``).

The translation keeps RE2 semantics where Python differs:

- ``$`` without ``(?m)`` is end of text (Python's ``$`` also matches before a final newline): it
  becomes ``\\Z``; ``\\z`` becomes ``\\Z``;
- ``\\d``, ``\\w``, ``\\b`` are ASCII (compiled with ``re.ASCII``); ``\\s`` is ``[\\t\\n\\f\\r ]``;
- ``{`` that does not start a valid repeat is a literal (``x{,3}`` is literal in Go);
- octal escapes ``\\123`` become ``\\x``/``\\u`` escapes (Python would read ``\\12`` as a
  backreference); ``\\x{10FFFF}`` and ``\\Q...\\E`` are expanded;
- POSIX classes ``[[:alpha:]]`` are expanded to their ASCII ranges;
- ``(?<name>...)`` becomes ``(?P<name>...)``.

Constructs Go rejects are rejected (lookarounds, backreferences, possessive/nested repetition,
``(?#...)``, ``(?>...)``, unknown escapes, repeat counts over 1000).

Deliberate deviations (docs/adapter-rules.md): Unicode classes ``\\pL``/``\\p{Greek}``,
negated POSIX classes ``[[:^alpha:]]``, ``\\S``/``\\W``/``\\D`` inside brackets, the ``U``
(ungreedy) flag and flag groups ``(?i)`` anywhere but the start of the pattern are refused with
``GoRegexError`` rather than approximated. ``(?i)`` folds ASCII case only.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from adapter.rules.errors import GoRegexError

_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_SIMPLE_ESCAPES = frozenset("aftnrv")
_PERL_CLASSES = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_REPEAT_RE = re.compile(r"\{(\d+)(,(\d*))?\}")
_MAX_REPEAT = 1000


def _error(message: str, pattern: str) -> GoRegexError:
    return GoRegexError(f"error parsing regexp: {message}: `{pattern}`")


def _char_escape(code: int) -> str:
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


@dataclass
class _Translator:
    pattern: str
    pos: int = 0

    def fail(self, message: str) -> GoRegexError:
        return _error(message, self.pattern)

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.pattern[index] if index < len(self.pattern) else ""

    def translate(self) -> tuple[str, str]:
        """Returns (python pattern, global flags)."""
        out: list[str] = []
        global_flags = ""
        # Stack of "multiline" state per open group.
        multiline_stack = [False]
        # Whether the last emitted item can take a repetition operator.
        can_repeat = False
        last_was_repeat = False
        pattern = self.pattern
        if pattern.startswith("(?"):
            match = re.match(r"\(\?([a-zA-Z]+)\)", pattern)
            if match:
                global_flags = match.group(1)
                self._check_flags(global_flags)
                multiline_stack[0] = "m" in global_flags
                self.pos = match.end()
        while self.pos < len(pattern):
            char = pattern[self.pos]
            if char == "\\":
                out.append(self._escape(in_class=False))
                can_repeat, last_was_repeat = True, False
            elif char == "[":
                out.append(self._char_class())
                can_repeat, last_was_repeat = True, False
            elif char == "(":
                text, multiline = self._group_open(multiline_stack[-1])
                out.append(text)
                multiline_stack.append(multiline)
                can_repeat, last_was_repeat = False, False
            elif char == ")":
                if len(multiline_stack) == 1:
                    raise self.fail("unexpected )")
                multiline_stack.pop()
                out.append(")")
                self.pos += 1
                can_repeat, last_was_repeat = True, False
            elif char in "*+?":
                if last_was_repeat:
                    raise self.fail(f"invalid nested repetition operator: `{out[-1]}{char}`")
                if not can_repeat:
                    raise self.fail(f"missing argument to repetition operator: `{char}`")
                self.pos += 1
                text = char
                if self.peek() == "?":
                    text += "?"
                    self.pos += 1
                out.append(text)
                can_repeat, last_was_repeat = False, True
            elif char == "{":
                match = _REPEAT_RE.match(pattern, self.pos)
                if match is None:
                    out.append("\\{")
                    self.pos += 1
                    can_repeat, last_was_repeat = True, False
                    continue
                low = int(match.group(1))
                high = match.group(3)
                if low > _MAX_REPEAT or (high and int(high) > _MAX_REPEAT):
                    raise self.fail(f"invalid repeat count: `{match.group(0)}`")
                if high and int(high) < low:
                    raise self.fail(f"invalid repeat count: `{match.group(0)}`")
                if last_was_repeat:
                    raise self.fail(f"invalid nested repetition operator: `{match.group(0)}`")
                if not can_repeat:
                    raise self.fail(f"missing argument to repetition operator: `{match.group(0)}`")
                self.pos = match.end()
                text = match.group(0)
                if self.peek() == "?":
                    text += "?"
                    self.pos += 1
                out.append(text)
                can_repeat, last_was_repeat = False, True
            elif char == "|":
                out.append("|")
                self.pos += 1
                can_repeat, last_was_repeat = False, False
            elif char == "$":
                out.append("$" if multiline_stack[-1] else "\\Z")
                self.pos += 1
                can_repeat, last_was_repeat = True, False
            elif char == "^":
                out.append("^")
                self.pos += 1
                can_repeat, last_was_repeat = True, False
            elif char in "#&~ \t\n\r\f\v":
                out.append(re.escape(char))
                self.pos += 1
                can_repeat, last_was_repeat = True, False
            else:
                out.append(char)
                self.pos += 1
                can_repeat, last_was_repeat = True, False
        if len(multiline_stack) != 1:
            raise self.fail("missing closing )")
        return "".join(out), global_flags

    def _check_flags(self, flags: str) -> None:
        for flag in flags.replace("-", ""):
            if flag == "U":
                raise self.fail("the ungreedy flag (?U) is not supported by this adapter")
            if flag not in "ims":
                raise self.fail(f"invalid or unsupported Perl syntax: `(?{flags}`")

    def _group_open(self, multiline: bool) -> tuple[str, bool]:
        pattern = self.pattern
        if self.peek(1) != "?":
            self.pos += 1
            return "(", multiline
        rest = pattern[self.pos + 2 :]
        for prefix in ("P<", "<"):
            if rest.startswith(prefix) and not rest.startswith(("<=", "<!")):
                match = re.match(r"([A-Za-z0-9_]+)>", rest[len(prefix) :])
                if match is None:
                    raise self.fail(f"invalid named capture: `(?{rest[: len(prefix) + 8]}`")
                self.pos += 2 + len(prefix) + match.end()
                return f"(?P<{match.group(1)}>", multiline
        match = re.match(r"([a-zA-Z-]*)(:|\))", rest)
        if match is None or (match.group(2) == ")" and not match.group(1)):
            raise self.fail(f"invalid or unsupported Perl syntax: `(?{rest[:1]}`")
        flags = match.group(1)
        self._check_flags(flags)
        if match.group(2) == ")":
            raise self.fail(
                f"flag group `(?{flags})` is only supported at the start of the pattern "
                "(use the scoped form `(?flags:...)`)"
            )
        self.pos += 2 + match.end()
        on, _, off = flags.partition("-")
        if "m" in on:
            multiline = True
        if "m" in off:
            multiline = False
        return f"(?{flags}:", multiline

    def _char_class(self) -> str:
        pattern = self.pattern
        self.pos += 1
        out = ["["]
        if self.peek() == "^":
            out.append("^")
            self.pos += 1
        first = True
        while True:
            if self.pos >= len(pattern):
                raise self.fail(f"missing closing ]: `{pattern}`")
            char = pattern[self.pos]
            if char == "]" and not first:
                self.pos += 1
                out.append("]")
                return "".join(out)
            first = False
            if char == "[" and self.peek(1) == ":":
                end = pattern.find(":]", self.pos + 2)
                name = pattern[self.pos + 2 : end] if end >= 0 else ""
                if name in _POSIX_CLASSES:
                    out.append(_POSIX_CLASSES[name])
                    self.pos = end + 2
                    continue
                if name.startswith("^") and name[1:] in _POSIX_CLASSES:
                    raise self.fail(f"negated POSIX class [:{name}:] is not supported")
                out.append("\\[")
                self.pos += 1
            elif char == "\\":
                out.append(self._escape(in_class=True))
            elif char in "[&~|" or (char == "-" and out[-1] == "-"):
                # Python warns about (future) set operations on [, &&, ~~, || and --.
                out.append("\\" + char)
                self.pos += 1
            elif char == "]":
                out.append("\\]")
                self.pos += 1
            else:
                out.append(char)
                self.pos += 1

    def _escape(self, *, in_class: bool) -> str:
        pattern = self.pattern
        nxt = self.peek(1)
        if nxt == "":
            raise self.fail("trailing backslash at end of expression")
        self.pos += 2
        if nxt in _SIMPLE_ESCAPES:
            return "\\" + nxt
        if nxt in "dws":
            return _PERL_CLASSES[nxt] if in_class else f"[{_PERL_CLASSES[nxt]}]"
        if nxt in "DWS":
            if in_class:
                raise self.fail(f"\\{nxt} inside a character class is not supported")
            return f"[^{_PERL_CLASSES[nxt.lower()]}]"
        if not in_class and nxt in "AbB":
            return "\\" + nxt
        if not in_class and nxt == "z":
            return "\\Z"
        if nxt in "pP":
            raise self.fail(f"Unicode class escape \\{nxt} is not supported")
        if nxt == "Q":
            end = pattern.find("\\E", self.pos)
            literal = pattern[self.pos :] if end < 0 else pattern[self.pos : end]
            self.pos = len(pattern) if end < 0 else end + 2
            return "".join(_char_escape(ord(c)) if in_class else re.escape(c) for c in literal)
        if nxt == "x":
            if self.peek() == "{":
                end = pattern.find("}", self.pos)
                digits = pattern[self.pos + 1 : end] if end >= 0 else ""
                if not digits or not all(c in "0123456789abcdefABCDEF" for c in digits):
                    raise self.fail("invalid escape sequence: `\\x{`")
                code = int(digits, 16)
                if code > 0x10FFFF:
                    raise self.fail("invalid escape sequence: `\\x{`")
                self.pos = end + 1
                return _char_escape(code)
            digits = pattern[self.pos : self.pos + 2]
            if len(digits) != 2 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise self.fail("invalid escape sequence: `\\x`")
            self.pos += 2
            return _char_escape(int(digits, 16))
        if nxt in "01234567":
            if nxt != "0" and not ("0" <= self.peek() <= "7"):
                raise self.fail(f"invalid escape sequence: `\\{nxt}` (backreferences unsupported)")
            digits = nxt
            while len(digits) < 3 and "0" <= self.peek() <= "7":
                digits += self.peek()
                self.pos += 1
            return _char_escape(int(digits, 8))
        if nxt.isascii() and not nxt.isalnum():
            return "\\" + nxt
        raise self.fail(f"invalid escape sequence: `\\{nxt}`")


@dataclass(frozen=True)
class GoRegexp:
    """A compiled Go regular expression: ``source`` as written, ``python`` as run."""

    source: str
    python: re.Pattern[str]

    @property
    def subexp_count(self) -> int:
        """``NumSubexp``: number of capture groups (``len(SubexpNames()) - 1``)."""
        return self.python.groups

    def match_string(self, text: str) -> bool:
        """``MatchString``: unanchored search."""
        return self.python.search(text) is not None

    def expand_string(self, template: str, text: str) -> str | None:
        """``FindStringSubmatchIndex`` + ``ExpandString``; ``None`` when there is no match."""
        match = self.python.search(text)
        if match is None:
            return None
        return expand(template, match)


def compile_go_regex(pattern: str) -> GoRegexp:
    """``regexp.Compile`` with RE2 syntax and semantics (see the module docstring)."""
    translated, flags = _Translator(pattern).translate()
    re_flags = re.ASCII
    if "i" in flags:
        re_flags |= re.IGNORECASE
    if "m" in flags:
        re_flags |= re.MULTILINE
    if "s" in flags:
        re_flags |= re.DOTALL
    try:
        compiled = re.compile(translated, re_flags)
    except re.error as exc:
        raise _error(str(exc), pattern) from exc
    return GoRegexp(source=pattern, python=compiled)


def _is_name_char(char: str) -> bool:
    return char == "_" or unicodedata.category(char)[0] == "L" or unicodedata.category(char) == "Nd"


def _extract(template: str) -> tuple[str, int, str] | None:
    """Go's ``extract``: the ``$name``/``${name}`` after a ``$``; (name, number or -1, rest)."""
    if not template:
        return None
    brace = template[0] == "{"
    text = template[1:] if brace else template
    index = 0
    while index < len(text) and _is_name_char(text[index]):
        index += 1
    if index == 0:
        return None
    name = text[:index]
    if brace:
        if index >= len(text) or text[index] != "}":
            return None
        index += 1
    number = -1
    if name.isascii() and name.isdigit() and not (name[0] == "0" and len(name) > 1):
        number = int(name) if len(name) <= 8 else -1
    return name, number, text[index:]


def expand(template: str, match: re.Match[str]) -> str:
    """Go's ``Regexp.expand``: ``$1``, ``${1}``, ``$name``, ``$$``; unknown groups expand to ""."""
    out: list[str] = []
    groupindex = match.re.groupindex
    while template:
        before, sep, after = template.partition("$")
        if not sep:
            break
        out.append(before)
        template = after
        if template.startswith("$"):
            out.append("$")
            template = template[1:]
            continue
        extracted = _extract(template)
        if extracted is None:
            out.append("$")
            continue
        name, number, template = extracted
        if number >= 0:
            if number <= match.re.groups and match.group(number) is not None:
                out.append(match.group(number))
        elif name in groupindex and match.group(name) is not None:
            out.append(match.group(name))
    out.append(template)
    return "".join(out)
