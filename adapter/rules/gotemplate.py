"""The subset of Go ``text/template`` that prometheus-adapter rule files use, with ``<<``/``>>``.

Upstream counterpart: Go ``text/template`` (``parse/lex.go``, ``parse/parse.go``, ``exec.go``,
``funcs.go``) as called by prometheus-adapter ``pkg/naming/metrics_query.go``
(``template.New("metrics-query").Delims("<<", ">>")``) and ``resource_converter.go``.

Supported: text; actions with ``<<-``/``->>`` trim markers; comments ``<</* */>>``; fields and field
chains (``.Series``, ``.LabelValuesByName.pod``), ``.``, ``$``, variables (``$x :=``, ``$x =``,
``range $i, $e :=``); string, raw string, char, number, ``true``/``false``/``nil`` literals;
parenthesised pipelines and ``|`` pipelines; ``if``/``else if``/``else``/``end``,
``range``/``else``/``end``, ``with``/``else``/``end``; the builtins ``and``, ``or``, ``not``,
``len``, ``index``, ``print``, ``printf``, ``println``, ``eq``, ``ne``, ``lt``, ``le``, ``gt``,
``ge``.
Values print as Go's ``fmt`` ``%v`` does (``[a b]`` for slices, ``map[k:v]`` sorted for maps,
``<no value>`` for a missing map key).

Templates are parsed once (at rule load) and executed many times.

Deliberate deviations (docs/adapter-rules.md): a template is type-checked when it is parsed, so an
unknown field (``<<.Seres>>``), a field on a string, or ``range`` over a string fails at load time
naming the rule, where Go fails on the first request. ``define``/``template``/``block``/``break``/
``continue`` and the builtins ``html``, ``js``, ``urlquery``, ``slice``, ``call`` are refused at
load.
``printf`` supports the verbs ``%v %s %d %q %x %%`` without flags or widths.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Union

from adapter.rules.errors import RuleEvaluationError, TemplateError
from adapter.rules.promql import go_quote

LEFT_DELIM = "<<"
RIGHT_DELIM = ">>"
_SPACE = " \t\r\n"


# ----------------------------------------------------------------------------------- types


class Kind(StrEnum):
    STRING = "string"
    INT = "int"
    FLOAT = "float64"
    BOOL = "bool"
    LIST = "[]string"
    MAP = "map[string]string"
    STRUCT = "struct"
    ANY = "interface {}"


@dataclass(frozen=True)
class TypeSpec:
    """A static type for the template's data, enough to check field access at load time."""

    kind: Kind
    name: str = ""
    fields: tuple[tuple[str, TypeSpec], ...] = ()

    def field_type(self, field_name: str) -> TypeSpec | None:
        for name, spec in self.fields:
            if name == field_name:
                return spec
        return None

    def __str__(self) -> str:
        return self.name or self.kind.value


STRING = TypeSpec(Kind.STRING)
INT = TypeSpec(Kind.INT)
BOOL = TypeSpec(Kind.BOOL)
ANY = TypeSpec(Kind.ANY)
STRING_LIST = TypeSpec(Kind.LIST)
STRING_MAP = TypeSpec(Kind.MAP)


@dataclass(frozen=True)
class StructValue:
    """A Go struct value: fields in declaration order."""

    type_name: str
    fields: tuple[tuple[str, Value], ...]

    def get(self, name: str) -> tuple[bool, Value]:
        for key, value in self.fields:
            if key == name:
                return True, value
        return False, None


Value = Union[str, int, float, bool, None, list["Value"], dict[str, "Value"], StructValue]  # noqa: UP007


class _Missing:
    """The invalid reflect.Value: a missing map key via field access, prints ``<no value>``."""

    def __repr__(self) -> str:
        return "<no value>"


MISSING = _Missing()
RuntimeValue = Union[Value, _Missing]  # noqa: UP007


# ----------------------------------------------------------------------------------- lexer


class Tok(StrEnum):
    TEXT = "text"
    LEFT = "left"
    RIGHT = "right"
    IDENT = "identifier"
    FIELD = "field"
    DOT = "."
    VARIABLE = "variable"
    STRING = "string"
    RAW_STRING = "raw string"
    CHAR = "char"
    NUMBER = "number"
    BOOL = "bool"
    NIL = "nil"
    PIPE = "|"
    LPAREN = "("
    RPAREN = ")"
    DECLARE = ":="
    ASSIGN = "="
    COMMA = ","
    EOF = "EOF"


_KEYWORDS = frozenset(
    {"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"}
)


@dataclass(frozen=True)
class Token:
    kind: Tok
    value: str
    line: int
    space_before: bool = False


class _Lexer:
    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.pos = 0
        self.tokens: list[Token] = []

    def fail(self, message: str) -> TemplateError:
        line = self.text.count("\n", 0, self.pos) + 1
        return TemplateError(f"template: {self.name}:{line}: {message}")

    def line(self) -> int:
        return self.text.count("\n", 0, self.pos) + 1

    def emit(self, kind: Tok, value: str, *, space_before: bool = False) -> None:
        self.tokens.append(Token(kind, value, self.line(), space_before))

    def run(self) -> list[Token]:
        text = self.text
        trim_next = False
        while self.pos <= len(text):
            start = text.find(LEFT_DELIM, self.pos)
            chunk = text[self.pos :] if start < 0 else text[self.pos : start]
            if trim_next:
                chunk = chunk.lstrip(_SPACE)
                trim_next = False
            after = start + len(LEFT_DELIM)
            trim_left = (
                start >= 0
                and text[after : after + 1] == "-"
                and (text[after + 1 : after + 2] in tuple(_SPACE))
            )
            if trim_left:
                chunk = chunk.rstrip(_SPACE)
            if chunk:
                self.tokens.append(Token(Tok.TEXT, chunk, self.line()))
            if start < 0:
                break
            self.pos = after + (2 if trim_left else 0)
            trim_next = self.action()
        self.emit(Tok.EOF, "")
        return self.tokens

    def at_right(self) -> tuple[bool, bool]:
        """(at the right delimiter, with a trim marker)."""
        rest = self.text[self.pos :]
        if rest.startswith(RIGHT_DELIM):
            return True, False
        if len(rest) >= 2 and rest[0] in _SPACE and rest[1:].startswith("-" + RIGHT_DELIM):
            return True, True
        return False, False

    def action(self) -> bool:
        text = self.text
        if text.startswith("/*", self.pos):
            end = text.find("*/", self.pos + 2)
            if end < 0:
                raise self.fail("unclosed comment")
            self.pos = end + 2
            at, trim = self.at_right()
            if not at:
                raise self.fail("comment ends before closing delimiter")
            self.pos += len(RIGHT_DELIM) + (2 if trim else 0)
            return trim
        self.emit(Tok.LEFT, LEFT_DELIM)
        space = False
        paren_depth = 0
        while True:
            at, trim = self.at_right()
            if at and paren_depth == 0:
                self.pos += len(RIGHT_DELIM) + (2 if trim else 0)
                self.emit(Tok.RIGHT, RIGHT_DELIM)
                return trim
            if self.pos >= len(text):
                raise self.fail("unclosed action")
            char = text[self.pos]
            if char in _SPACE:
                if char == "\n":
                    raise self.fail("unclosed action (newline in action)")
                self.pos += 1
                space = True
                continue
            if at:
                raise self.fail(f"unclosed left paren before {RIGHT_DELIM}")
            start = self.pos
            if char == "|":
                self.pos += 1
                self.emit(Tok.PIPE, "|", space_before=space)
            elif char == "(":
                self.pos += 1
                paren_depth += 1
                self.emit(Tok.LPAREN, "(", space_before=space)
            elif char == ")":
                self.pos += 1
                paren_depth -= 1
                if paren_depth < 0:
                    raise self.fail("unexpected right paren")
                self.emit(Tok.RPAREN, ")", space_before=space)
            elif char == ",":
                self.pos += 1
                self.emit(Tok.COMMA, ",", space_before=space)
            elif text.startswith(":=", start):
                self.pos += 2
                self.emit(Tok.DECLARE, ":=", space_before=space)
            elif char == "=":
                self.pos += 1
                self.emit(Tok.ASSIGN, "=", space_before=space)
            elif char == '"':
                self.emit(Tok.STRING, self.quoted('"'), space_before=space)
            elif char == "'":
                self.emit(Tok.CHAR, self.quoted("'"), space_before=space)
            elif char == "`":
                end = text.find("`", start + 1)
                if end < 0:
                    raise self.fail("unterminated raw quoted string")
                self.pos = end + 1
                self.emit(Tok.RAW_STRING, text[start + 1 : end], space_before=space)
            elif char == "$":
                self.pos += 1
                self.pos = self.word_end(self.pos)
                self.emit(Tok.VARIABLE, text[start : self.pos], space_before=space)
            elif char == ".":
                nxt = text[start + 1 : start + 2]
                if nxt and (nxt.isalnum() or nxt == "_"):
                    self.pos = self.word_end(start + 1)
                    self.emit(Tok.FIELD, text[start : self.pos], space_before=space)
                elif nxt.isdigit():
                    self.emit(Tok.NUMBER, self.number(), space_before=space)
                else:
                    self.pos += 1
                    self.emit(Tok.DOT, ".", space_before=space)
            elif char.isdigit() or (char in "+-" and text[start + 1 : start + 2].isdigit()):
                self.emit(Tok.NUMBER, self.number(), space_before=space)
            elif char.isalpha() or char == "_":
                self.pos = self.word_end(start)
                word = text[start : self.pos]
                if word in ("true", "false"):
                    self.emit(Tok.BOOL, word, space_before=space)
                elif word == "nil":
                    self.emit(Tok.NIL, word, space_before=space)
                else:
                    self.emit(Tok.IDENT, word, space_before=space)
            else:
                raise self.fail(f"unrecognized character in action: {char!r}")
            space = False

    def word_end(self, pos: int) -> int:
        text = self.text
        while pos < len(text) and (text[pos].isalnum() or text[pos] == "_"):
            pos += 1
        return pos

    def number(self) -> str:
        text = self.text
        start = self.pos
        pos = start
        if text[pos] in "+-":
            pos += 1
        while pos < len(text) and (text[pos].isalnum() or text[pos] in "._+-"):
            if text[pos] in "+-" and text[pos - 1] not in "eEpP":
                break
            pos += 1
        self.pos = pos
        return text[start:pos]

    def quoted(self, quote: str) -> str:
        text = self.text
        pos = self.pos + 1
        while True:
            if pos >= len(text) or text[pos] == "\n":
                raise self.fail("unterminated quoted string")
            if text[pos] == "\\":
                pos += 2
                continue
            if text[pos] == quote:
                break
            pos += 1
        raw = text[self.pos : pos + 1]
        self.pos = pos + 1
        return raw


def _unquote(raw: str, fail: Callable[[str], TemplateError]) -> str:
    """Go's ``strconv.Unquote`` for a double- or single-quoted literal."""
    body = raw[1:-1]
    out: list[str] = []
    index = 0
    simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
    while index < len(body):
        char = body[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        index += 1
        esc = body[index : index + 1]
        index += 1
        if esc in simple:
            out.append(simple[esc])
        elif esc in ("\\", '"', "'"):
            if esc != raw[0] and esc != "\\":
                raise fail(f"invalid syntax in quoted string {raw}")
            out.append(esc)
        elif esc in ("x", "u", "U"):
            size = {"x": 2, "u": 4, "U": 8}[esc]
            digits = body[index : index + size]
            if len(digits) != size or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise fail(f"invalid syntax in quoted string {raw}")
            index += size
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise fail(f"invalid syntax in quoted string {raw}")
            out.append(chr(code))
        elif esc and esc in "01234567":
            digits = body[index - 1 : index + 2]
            if len(digits) != 3 or not all(c in "01234567" for c in digits):
                raise fail(f"invalid syntax in quoted string {raw}")
            index += 2
            out.append(chr(int(digits, 8)))
        else:
            raise fail(f"invalid syntax in quoted string {raw}")
    return "".join(out)


# ----------------------------------------------------------------------------------- AST


@dataclass(frozen=True)
class TextNode:
    text: str


@dataclass(frozen=True)
class FieldNode:
    names: tuple[str, ...]


@dataclass(frozen=True)
class VariableNode:
    name: str
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class DotNode:
    pass


@dataclass(frozen=True)
class IdentifierNode:
    name: str


@dataclass(frozen=True)
class LiteralNode:
    value: Value


@dataclass(frozen=True)
class ChainNode:
    node: PipeNode
    names: tuple[str, ...]


@dataclass(frozen=True)
class CommandNode:
    args: tuple[Node, ...]


@dataclass(frozen=True)
class PipeNode:
    decl: tuple[str, ...]
    is_assign: bool
    cmds: tuple[CommandNode, ...]
    line: int


@dataclass(frozen=True)
class ActionNode:
    pipe: PipeNode


@dataclass(frozen=True)
class BranchNode:
    keyword: str  # "if", "range", "with"
    pipe: PipeNode
    body: tuple[Node, ...]
    else_body: tuple[Node, ...]


Node = Union[  # noqa: UP007
    TextNode,
    FieldNode,
    VariableNode,
    DotNode,
    IdentifierNode,
    LiteralNode,
    ChainNode,
    CommandNode,
    PipeNode,
    ActionNode,
    BranchNode,
]

BUILTINS = frozenset(
    {"and", "or", "not", "len", "index", "print", "printf", "println"}
    | {"eq", "ne", "lt", "le", "gt", "ge"}
)
_GO_BUILTINS_UNSUPPORTED = frozenset({"html", "js", "urlquery", "slice", "call"})


class _Parser:
    def __init__(self, tokens: list[Token], name: str) -> None:
        self.tokens = tokens
        self.name = name
        self.pos = 0
        self.vars: list[str] = ["$"]

    def fail(self, message: str, token: Token | None = None) -> TemplateError:
        line = (token or self.peek()).line
        return TemplateError(f"template: {self.name}:{line}: {message}")

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.peek()
        self.pos += 1
        return token

    def parse(self) -> tuple[Node, ...]:
        nodes, stop = self.item_list(top=True)
        if stop != "EOF":
            raise self.fail(f"unexpected {{{{{stop}}}}}")
        return nodes

    def item_list(self, *, top: bool = False) -> tuple[tuple[Node, ...], str]:
        """Items until ``end``/``else`` (returned as the stop word) or EOF."""
        nodes: list[Node] = []
        while True:
            token = self.peek()
            if token.kind is Tok.EOF:
                if not top:
                    raise self.fail("unexpected EOF")
                return tuple(nodes), "EOF"
            if token.kind is Tok.TEXT:
                self.next()
                nodes.append(TextNode(token.value))
                continue
            self.next()  # LEFT
            head = self.peek()
            if head.kind is Tok.IDENT and head.value in _KEYWORDS:
                word = head.value
                if word in ("end", "else"):
                    if top:
                        raise self.fail(f"unexpected {{{{{word}}}}}", head)
                    self.next()
                    return tuple(nodes), word
                if word in ("if", "range", "with"):
                    self.next()
                    nodes.append(self.branch(word))
                    continue
                raise self.fail(f"{{{{{word}}}}} is not supported by this adapter", head)
            pipe = self.pipeline("command", end=Tok.RIGHT)
            nodes.append(ActionNode(pipe))

    def branch(self, keyword: str) -> BranchNode:
        saved_vars = len(self.vars)
        pipe = self.pipeline(keyword, end=Tok.RIGHT)
        body, stop = self.item_list()
        else_body: tuple[Node, ...] = ()
        if stop == "else":
            nxt = self.peek()
            if keyword == "if" and nxt.kind is Tok.IDENT and nxt.value == "if":
                # {{else if ...}}: an if nested in the else branch, sharing our {{end}}.
                self.next()
                else_body = (self.branch("if"),)
            else:
                if self.next().kind is not Tok.RIGHT:
                    raise self.fail(f"unexpected {nxt.value!r} in else")
                else_body, stop = self.item_list()
                if stop != "end":
                    raise self.fail("expected end; found {{else}}")
                self.expect_right()
        else:
            self.expect_right()
        del self.vars[saved_vars:]
        return BranchNode(keyword, pipe, body, else_body)

    def expect_right(self) -> None:
        token = self.next()
        if token.kind is not Tok.RIGHT:
            raise self.fail(f"unexpected {token.value!r} in end", token)

    def pipeline(self, context: str, *, end: Tok) -> PipeNode:
        line = self.peek().line
        decl: list[str] = []
        is_assign = False
        if self.peek().kind is Tok.VARIABLE:
            nxt = self.peek(1)
            if nxt.kind in (Tok.DECLARE, Tok.ASSIGN):
                name = self.next().value
                is_assign = self.next().kind is Tok.ASSIGN
                decl.append(name)
            elif nxt.kind is Tok.COMMA and context == "range":
                first = self.next().value
                self.next()
                second = self.next()
                operator = self.next()
                if second.kind is not Tok.VARIABLE or operator.kind not in (
                    Tok.DECLARE,
                    Tok.ASSIGN,
                ):
                    raise self.fail("too many declarations in range")
                is_assign = operator.kind is Tok.ASSIGN
                decl.extend((first, second.value))
        for name in decl:
            if is_assign:
                if name not in self.vars:
                    raise self.fail(f"undefined variable {name!r}")
            else:
                self.vars.append(name)
        cmds: list[CommandNode] = []
        while True:
            token = self.peek()
            if token.kind is end:
                self.next()
                break
            if token.kind is Tok.EOF:
                raise self.fail(f"unclosed action in {context}")
            cmds.append(self.command(end))
            if self.peek().kind is Tok.PIPE:
                self.next()
                if self.peek().kind is end:
                    raise self.fail("missing command after |")
        if not cmds:
            raise self.fail(f"missing value for {context}")
        for index, cmd in enumerate(cmds[1:], start=2):
            if isinstance(cmd.args[0], LiteralNode | DotNode):
                raise self.fail(f"non executable command in pipeline stage {index}")
        return PipeNode(tuple(decl), is_assign, tuple(cmds), line)

    def command(self, end: Tok) -> CommandNode:
        args: list[Node] = []
        while True:
            token = self.peek()
            if token.kind in (Tok.PIPE, end) or (token.kind is Tok.RPAREN and end is Tok.RPAREN):
                break
            if args and not token.space_before and token.kind is not Tok.LPAREN:
                raise self.fail(f"missing space before {token.value!r}", token)
            args.append(self.operand())
        if not args:
            raise self.fail("empty command")
        if isinstance(args[0], LiteralNode) and args[0].value is None:
            raise self.fail("nil is not a command")
        return CommandNode(tuple(args))

    def field_chain(self) -> tuple[str, ...]:
        names: list[str] = []
        while self.peek().kind is Tok.FIELD and not self.peek().space_before:
            names.append(self.next().value[1:])
        return tuple(names)

    def operand(self) -> Node:
        token = self.next()
        if token.kind is Tok.FIELD:
            return FieldNode((token.value[1:], *self.field_chain()))
        if token.kind is Tok.VARIABLE:
            if token.value not in self.vars:
                raise self.fail(f"undefined variable {token.value!r}", token)
            return VariableNode(token.value, self.field_chain())
        if token.kind is Tok.DOT:
            if self.peek().kind is Tok.FIELD and not self.peek().space_before:
                raise self.fail("unexpected . after term", token)
            return DotNode()
        if token.kind is Tok.IDENT:
            if token.value in _KEYWORDS:
                raise self.fail(f"unexpected <{token.value}> in command", token)
            if token.value in _GO_BUILTINS_UNSUPPORTED:
                raise self.fail(f"function {token.value!r} is not supported by this adapter", token)
            if token.value not in BUILTINS:
                raise self.fail(f'function "{token.value}" not defined', token)
            return IdentifierNode(token.value)
        if token.kind is Tok.LPAREN:
            pipe = self.pipeline("parenthesized pipeline", end=Tok.RPAREN)
            names = self.field_chain()
            return ChainNode(pipe, names)
        if token.kind in (Tok.STRING, Tok.CHAR):
            text = _unquote(token.value, lambda m: self.fail(m, token))
            if token.kind is Tok.CHAR:
                if len(text) != 1:
                    raise self.fail(f"malformed character constant: {token.value}", token)
                return LiteralNode(ord(text))
            return LiteralNode(text)
        if token.kind is Tok.RAW_STRING:
            return LiteralNode(token.value)
        if token.kind is Tok.BOOL:
            return LiteralNode(token.value == "true")
        if token.kind is Tok.NIL:
            return LiteralNode(None)
        if token.kind is Tok.NUMBER:
            return LiteralNode(self.parse_number(token))
        raise self.fail(f"unexpected {token.value!r} in operand", token)

    def parse_number(self, token: Token) -> int | float:
        text = token.value.replace("_", "")
        try:
            return int(text, 0)
        except ValueError:
            pass
        try:
            value = float(text)
        except ValueError:
            raise self.fail(f"illegal number syntax: {token.value!r}", token) from None
        return int(value) if value.is_integer() and "." not in text and "e" not in text else value


# ----------------------------------------------------------------------------------- checker


class _Checker:
    """Load-time type check: fields exist, ranges iterate over collections."""

    def __init__(self, name: str, root: TypeSpec) -> None:
        self.name = name
        self.root = root

    def fail(self, message: str, line: int) -> TemplateError:
        return TemplateError(f"template: {self.name}:{line}: {message}")

    def check_list(self, nodes: Sequence[Node], dot: TypeSpec, env: dict[str, TypeSpec]) -> None:
        for node in nodes:
            if isinstance(node, ActionNode):
                self.check_pipe(node.pipe, dot, env)
            elif isinstance(node, BranchNode):
                inner_env = dict(env)
                pipe_type = self.check_pipe(node.pipe, dot, inner_env, declare=False)
                body_dot = dot
                if node.keyword == "range":
                    key_type, elem_type = self.range_types(pipe_type, node.pipe.line)
                    if len(node.pipe.decl) == 2:
                        inner_env[node.pipe.decl[0]] = key_type
                        inner_env[node.pipe.decl[1]] = elem_type
                    elif node.pipe.decl:
                        inner_env[node.pipe.decl[0]] = elem_type
                    body_dot = elem_type
                else:
                    for name in node.pipe.decl:
                        inner_env[name] = pipe_type
                    if node.keyword == "with":
                        body_dot = pipe_type
                self.check_list(node.body, body_dot, inner_env)
                else_env = dict(env)
                for name in node.pipe.decl:
                    else_env[name] = pipe_type
                self.check_list(node.else_body, dot, else_env)

    def range_types(self, spec: TypeSpec, line: int) -> tuple[TypeSpec, TypeSpec]:
        if spec.kind is Kind.LIST:
            return INT, STRING
        if spec.kind is Kind.MAP:
            return STRING, STRING
        if spec.kind is Kind.ANY:
            return ANY, ANY
        raise self.fail(f"range can't iterate over {spec}", line)

    def check_pipe(
        self, pipe: PipeNode, dot: TypeSpec, env: dict[str, TypeSpec], *, declare: bool = True
    ) -> TypeSpec:
        result = ANY
        for index, cmd in enumerate(pipe.cmds):
            result = self.check_command(cmd, dot, env, pipe.line, has_final=index > 0)
        if declare:
            for name in pipe.decl:
                env[name] = result
        return result

    def check_command(
        self,
        cmd: CommandNode,
        dot: TypeSpec,
        env: dict[str, TypeSpec],
        line: int,
        *,
        has_final: bool,
    ) -> TypeSpec:
        first = cmd.args[0]
        arg_types = [self.check_arg(arg, dot, env, line) for arg in cmd.args[1:]]
        if isinstance(first, IdentifierNode):
            return self.function_type(first.name, arg_types)
        if len(cmd.args) > 1 or has_final:
            if isinstance(first, FieldNode | VariableNode | ChainNode):
                raise self.fail("field or variable has arguments but cannot be invoked", line)
            raise self.fail(f"can't give argument to non-function {first}", line)
        return self.check_arg(first, dot, env, line)

    def function_type(self, name: str, args: list[TypeSpec]) -> TypeSpec:
        if name == "len":
            return INT
        if name in ("print", "printf", "println"):
            return STRING
        if name in ("not", "eq", "ne", "lt", "le", "gt", "ge"):
            return BOOL
        if name == "index" and args:
            spec = args[0]
            for _ in args[1:]:
                spec = STRING if spec.kind in (Kind.MAP, Kind.LIST) else ANY
            return spec
        return ANY

    def check_arg(self, node: Node, dot: TypeSpec, env: dict[str, TypeSpec], line: int) -> TypeSpec:
        if isinstance(node, DotNode):
            return dot
        if isinstance(node, FieldNode):
            return self.field_type(dot, node.names, line)
        if isinstance(node, VariableNode):
            base = self.root if node.name == "$" else env.get(node.name, ANY)
            return self.field_type(base, node.names, line)
        if isinstance(node, ChainNode):
            base = self.check_pipe(node.node, dot, dict(env))
            return self.field_type(base, node.names, line)
        if isinstance(node, IdentifierNode):
            return self.function_type(node.name, [])
        if isinstance(node, LiteralNode):
            value = node.value
            if isinstance(value, bool):
                return BOOL
            if isinstance(value, int):
                return INT
            if isinstance(value, str):
                return STRING
            return ANY
        return ANY

    def field_type(self, spec: TypeSpec, names: Sequence[str], line: int) -> TypeSpec:
        for name in names:
            if spec.kind is Kind.STRUCT:
                found = spec.field_type(name)
                if found is None:
                    raise self.fail(f"can't evaluate field {name} in type {spec}", line)
                spec = found
            elif spec.kind is Kind.MAP:
                spec = STRING
            elif spec.kind is Kind.ANY:
                spec = ANY
            else:
                raise self.fail(f"can't evaluate field {name} in type {spec}", line)
        return spec


# ----------------------------------------------------------------------------------- exec


def format_value(value: RuntimeValue) -> str:
    """``fmt`` ``%v`` for the values a template can hold."""
    if isinstance(value, _Missing):
        return "<no value>"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _format_float(value)
    if isinstance(value, list):
        return "[" + " ".join(format_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = " ".join(f"{key}:{format_value(value[key])}" for key in sorted(value))
        return "map[" + items + "]"
    return "{" + " ".join(format_value(item) for _, item in value.fields) + "}"


def _format_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    if "e" in text:
        mantissa, _, exponent = text.partition("e")
        sign = "-" if exponent.startswith("-") else "+"
        digits = exponent.lstrip("+-").rjust(2, "0")
        mantissa = mantissa.removesuffix(".0")
        return f"{mantissa}e{sign}{digits}"
    if abs(value) >= 1e21:
        return f"{value:e}"
    return text.removesuffix(".0")


def truth(value: RuntimeValue) -> bool:
    """Go's ``truth``: the zero value of its type is false."""
    if isinstance(value, _Missing) or value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str | list | dict):
        return len(value) > 0
    if isinstance(value, int | float):
        return value != 0
    return True


class _ExecError(Exception):
    pass


def _printf(args: list[RuntimeValue]) -> str:
    if not args or not isinstance(args[0], str):
        raise _ExecError("printf: format must be a string")
    fmt, rest = args[0], list(args[1:])
    out: list[str] = []
    index = 0
    arg_index = 0
    while index < len(fmt):
        char = fmt[index]
        if char != "%":
            out.append(char)
            index += 1
            continue
        verb = fmt[index + 1 : index + 2]
        index += 2
        if verb == "%":
            out.append("%")
            continue
        if verb not in ("v", "s", "d", "q", "x"):
            raise _ExecError(f"printf: verb %{verb} is not supported by this adapter")
        if arg_index >= len(rest):
            out.append(f"%!{verb}(MISSING)")
            continue
        arg = rest[arg_index]
        arg_index += 1
        if verb == "q" and isinstance(arg, str):
            out.append(go_quote(arg))
        elif verb == "x" and isinstance(arg, str):
            out.append(arg.encode().hex())
        elif verb == "x" and isinstance(arg, int) and not isinstance(arg, bool):
            out.append(format(arg, "x"))
        elif verb == "d" and not (isinstance(arg, int) and not isinstance(arg, bool)):
            out.append(f"%!d({format_value(arg)})")
        else:
            out.append(format_value(arg))
    if arg_index < len(rest):
        extra = ", ".join(format_value(arg) for arg in rest[arg_index:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _sprint(args: list[RuntimeValue]) -> str:
    out: list[str] = []
    for index, arg in enumerate(args):
        if index > 0 and not isinstance(arg, str) and not isinstance(args[index - 1], str):
            out.append(" ")
        out.append(format_value(arg))
    return "".join(out)


def _compare_key(value: RuntimeValue) -> tuple[str, object]:
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int | float):
        return "number", value
    if isinstance(value, str):
        return "string", value
    raise _ExecError(f"invalid type for comparison: {format_value(value)}")


def _call(name: str, args: list[RuntimeValue]) -> RuntimeValue:
    if name == "and":
        for arg in args:
            if not truth(arg):
                return arg
        return args[-1] if args else None
    if name == "or":
        for arg in args:
            if truth(arg):
                return arg
        return args[-1] if args else None
    if name == "not":
        if len(args) != 1:
            raise _ExecError(f"wrong number of args for not: want 1 got {len(args)}")
        return not truth(args[0])
    if name == "len":
        if len(args) != 1:
            raise _ExecError(f"wrong number of args for len: want 1 got {len(args)}")
        item = args[0]
        if isinstance(item, str):
            return len(item.encode())
        if isinstance(item, list | dict):
            return len(item)
        raise _ExecError(f"len of type {format_value(item)}")
    if name == "index":
        if not args:
            raise _ExecError("wrong number of args for index: want at least 1 got 0")
        item = args[0]
        for key in args[1:]:
            if isinstance(item, dict):
                if not isinstance(key, str):
                    raise _ExecError("index of map with non-string key")
                item = item.get(key, "")
            elif isinstance(item, list | str):
                if not isinstance(key, int) or isinstance(key, bool):
                    raise _ExecError("cannot index slice/array with non-integer")
                seq: list[Value] | bytes = item if isinstance(item, list) else item.encode()
                if not 0 <= key < len(seq):
                    raise _ExecError(f"index out of range: {key}")
                item = seq[key]
            else:
                raise _ExecError(f"can't index item of type {format_value(item)}")
        return item
    if name == "print":
        return _sprint(args)
    if name == "println":
        return " ".join(format_value(arg) for arg in args) + "\n"
    if name == "printf":
        return _printf(args)
    if name in ("eq", "ne"):
        if len(args) < 2:
            raise _ExecError(f"missing argument for comparison ({name})")
        if name == "ne" and len(args) != 2:
            raise _ExecError("wrong number of args for ne: want 2")
        first_key = _compare_key(args[0])
        equal = False
        for other in args[1:]:
            other_key = _compare_key(other)
            if other_key[0] != first_key[0]:
                raise _ExecError("incompatible types for comparison")
            equal = equal or other_key[1] == first_key[1]
        return equal if name == "eq" else not equal
    if len(args) != 2:
        raise _ExecError(f"wrong number of args for {name}: want 2 got {len(args)}")
    left, right = _compare_key(args[0]), _compare_key(args[1])
    if left[0] != right[0] or left[0] == "bool":
        raise _ExecError("incompatible types for comparison")
    lhs, rhs = left[1], right[1]
    assert isinstance(lhs, str | int | float)
    assert isinstance(rhs, str | int | float)
    if name == "lt":
        return lhs < rhs  # type: ignore[operator]
    if name == "le":
        return lhs <= rhs  # type: ignore[operator]
    if name == "gt":
        return lhs > rhs  # type: ignore[operator]
    return lhs >= rhs  # type: ignore[operator]


@dataclass
class _State:
    root: Value
    out: list[str] = field(default_factory=list)
    vars: list[tuple[str, RuntimeValue]] = field(default_factory=list)

    def lookup(self, name: str) -> RuntimeValue:
        for var_name, value in reversed(self.vars):
            if var_name == name:
                return value
        raise _ExecError(f"undefined variable: {name}")

    def assign(self, name: str, value: RuntimeValue) -> None:
        for index in range(len(self.vars) - 1, -1, -1):
            if self.vars[index][0] == name:
                self.vars[index] = (name, value)
                return
        raise _ExecError(f"undefined variable: {name}")


def _field(value: RuntimeValue, names: Sequence[str]) -> RuntimeValue:
    for name in names:
        if isinstance(value, StructValue):
            found, value = value.get(name)
            if not found:
                raise _ExecError(f"can't evaluate field {name} in type {value}")
        elif isinstance(value, dict):
            value = value.get(name, MISSING)
        elif value is None or isinstance(value, _Missing):
            raise _ExecError(f"nil pointer evaluating {name}")
        else:
            raise _ExecError(f"can't evaluate field {name} in type {format_value(value)}")
    return value


class _Executor:
    def __init__(self, state: _State) -> None:
        self.state = state

    def walk(self, nodes: Sequence[Node], dot: RuntimeValue) -> None:
        state = self.state
        for node in nodes:
            if isinstance(node, TextNode):
                state.out.append(node.text)
            elif isinstance(node, ActionNode):
                value = self.pipe(node.pipe, dot)
                if not node.pipe.decl:
                    state.out.append(format_value(value))
            elif isinstance(node, BranchNode):
                mark = len(state.vars)
                if node.keyword == "range":
                    self.range(node, dot)
                else:
                    value = self.pipe(node.pipe, dot)
                    if truth(value):
                        self.walk(node.body, value if node.keyword == "with" else dot)
                    else:
                        self.walk(node.else_body, dot)
                del state.vars[mark:]

    def range(self, node: BranchNode, dot: RuntimeValue) -> None:
        value = self.pipe(node.pipe, dot, declare=False)
        items: list[tuple[Value, Value]]
        if isinstance(value, list):
            items = list(enumerate(value))
        elif isinstance(value, dict):
            items = [(key, value[key]) for key in sorted(value)]
        elif value is None or isinstance(value, _Missing):
            items = []
        else:
            raise _ExecError(f"range can't iterate over {format_value(value)}")
        if not items:
            self.walk(node.else_body, dot)
            return
        decl = node.pipe.decl
        for key, elem in items:
            mark = len(self.state.vars)
            if len(decl) == 2:
                self.bind(decl[0], key, assign=node.pipe.is_assign)
                self.bind(decl[1], elem, assign=node.pipe.is_assign)
            elif decl:
                self.bind(decl[0], elem, assign=node.pipe.is_assign)
            self.walk(node.body, elem)
            if not node.pipe.is_assign:
                del self.state.vars[mark:]

    def bind(self, name: str, value: RuntimeValue, *, assign: bool) -> None:
        if assign:
            self.state.assign(name, value)
        else:
            self.state.vars.append((name, value))

    def pipe(self, pipe: PipeNode, dot: RuntimeValue, *, declare: bool = True) -> RuntimeValue:
        value: RuntimeValue = MISSING
        for index, cmd in enumerate(pipe.cmds):
            value = self.command(cmd, dot, value, has_final=index > 0)
        if declare:
            for name in pipe.decl:
                self.bind(name, value, assign=pipe.is_assign)
        return value

    def command(
        self, cmd: CommandNode, dot: RuntimeValue, final: RuntimeValue, *, has_final: bool
    ) -> RuntimeValue:
        first = cmd.args[0]
        if isinstance(first, IdentifierNode):
            args = [self.arg(arg, dot) for arg in cmd.args[1:]]
            if has_final:
                args.append(final)
            return _call(first.name, args)
        return self.arg(first, dot)

    def arg(self, node: Node, dot: RuntimeValue) -> RuntimeValue:
        if isinstance(node, DotNode):
            return dot
        if isinstance(node, FieldNode):
            return _field(dot, node.names)
        if isinstance(node, VariableNode):
            base = self.state.root if node.name == "$" else self.state.lookup(node.name)
            return _field(base, node.names)
        if isinstance(node, ChainNode):
            return _field(self.pipe(node.node, dot), node.names)
        if isinstance(node, IdentifierNode):
            return _call(node.name, [])
        if isinstance(node, LiteralNode):
            return node.value
        raise _ExecError(f"can't evaluate {node}")


@dataclass(frozen=True)
class GoTemplate:
    """A parsed, type-checked template. ``execute`` is pure and may be called concurrently."""

    name: str
    source: str
    nodes: tuple[Node, ...]
    root: TypeSpec

    def execute(self, data: StructValue) -> str:
        state = _State(root=data)
        try:
            _Executor(state).walk(self.nodes, data)
        except _ExecError as exc:
            raise RuleEvaluationError(f"template: {self.name}: {exc}") from exc
        return "".join(state.out)


def parse_template(source: str, *, name: str, root: TypeSpec) -> GoTemplate:
    """``template.New(name).Delims("<<", ">>").Parse(source)``, type-checked against ``root``."""
    tokens = _Lexer(source, name).run()
    nodes = _Parser(tokens, name).parse()
    _Checker(name, root).check_list(nodes, root, {"$": root})
    return GoTemplate(name=name, source=source, nodes=nodes, root=root)


def struct_type(name: str, fields: Mapping[str, TypeSpec]) -> TypeSpec:
    return TypeSpec(Kind.STRUCT, name=name, fields=tuple(fields.items()))
