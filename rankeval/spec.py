"""Measure-spec grammar: text → :class:`MeasureSpec` (syntax only, no measure lookup).

Grammar (a scanner and a recursive-descent parser; no ``eval``, no ``ast``)::

    specs  := spec (WS+ spec)*
    spec   := NAME [params] ['@' at] [params]
    at     := value | IDENT '=' value            # nDCG@10 ; hTBG@h=3h
    params := '(' IDENT '=' value (',' IDENT '=' value)* ')'
    NAME   := [A-Za-z_][A-Za-z0-9_.-]*           # allows nCS-DCG, P.5, ndcg_cut.10
    IDENT  := NAME
    value  := NUMBER [unit] | IDENT | STRING     # unit: s, m, h (durations) or %
    NUMBER := [+-]? digits ['.' digits] [('e'|'E') [+-]? digits]  |  [+-]? '.' digits ...
    STRING := "..." | '...'                      # backslash escapes \\ \" \'

Errors are :class:`~rankeval.errors.SpecError` with the column of the offending character.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass, field

from rankeval.errors import SpecError

__all__ = ["MeasureSpec", "Value", "format_value_text", "number_text", "parse_spec", "parse_specs"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_UNITS = ("s", "m", "h", "%")


@dataclass(frozen=True)
class Value:
    """A literal value in a spec.

    Attributes:
        kind: ``"number"``, ``"ident"`` or ``"string"``.
        text: The value as written (without quotes for strings, unescaped).
        column: 1-based column of the value in the spec text.
        number: The numeric value (numbers only), before any unit is applied.
        unit: ``"s"``, ``"m"``, ``"h"``, ``"%"`` or ``None``.
    """

    kind: str
    text: str
    column: int = field(compare=False)
    number: float | None = None
    unit: str | None = None


@dataclass(frozen=True)
class MeasureSpec:
    """The syntax tree of one measure spec.

    Attributes:
        name: The measure name as written.
        text: The full text the spec was parsed from (for error messages).
        column: 1-based column of the name within ``text``.
        at: ``(key, value)`` from the ``@`` part; ``key`` is ``None`` for ``@value``.
        params: ``(key, value)`` pairs from the parenthesised lists, in order.
    """

    name: str
    text: str = field(compare=False)
    column: int = field(compare=False)
    at: tuple[str | None, Value] | None = None
    params: tuple[tuple[str, Value], ...] = ()

    def error(self, message: str, column: int | None = None) -> SpecError:
        """Build a :class:`SpecError` pointing into this spec's text."""
        return SpecError(message, source="measure spec", column=column or self.column, text=self.text)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # -- scanner helpers -------------------------------------------------
    def error(self, message: str, pos: int | None = None) -> SpecError:
        column = (self.pos if pos is None else pos) + 1
        return SpecError(message, source="measure spec", column=column, text=self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def describe_here(self) -> str:
        ch = self.peek()
        return "end of spec" if ch == "" else repr(ch)

    def expect(self, ch: str, what: str) -> None:
        if self.peek() != ch:
            raise self.error(f"expected {what}, found {self.describe_here()}")
        self.pos += 1

    def name(self, what: str) -> tuple[str, int]:
        m = _NAME.match(self.text, self.pos)
        if not m:
            raise self.error(f"expected {what}, found {self.describe_here()}")
        self.pos = m.end()
        return m.group(), m.start() + 1

    # -- grammar ---------------------------------------------------------
    def value(self) -> Value:
        start = self.pos
        ch = self.peek()
        if ch in ("'", '"'):
            return self.string(ch)
        m = _NUMBER.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            unit = None
            if self.peek() in _UNITS and self.peek() != "":
                unit = self.peek()
                self.pos += 1
            nxt = self.peek()
            if nxt and (nxt.isalnum() or nxt in "_."):
                raise self.error(f"unexpected {nxt!r} after number (units are s, m, h and %)", self.pos)
            return Value("number", self.text[start : self.pos], start + 1, float(m.group()), unit)
        if _NAME.match(self.text, self.pos):
            text, col = self.name("a value")
            return Value("ident", text, col)
        raise self.error(f"expected a value (number, word or quoted string), found {self.describe_here()}")

    def string(self, quote: str) -> Value:
        start = self.pos
        self.pos += 1
        out: list[str] = []
        while True:
            ch = self.peek()
            if ch == "":
                raise self.error(f"unterminated string (missing closing {quote})", start)
            self.pos += 1
            if ch == quote:
                return Value("string", "".join(out), start + 1)
            if ch == "\\":
                esc = self.peek()
                if esc == "":
                    raise self.error("unterminated string (backslash at end)", start)
                out.append(esc)
                self.pos += 1
            else:
                out.append(ch)

    def params(self, into: list[tuple[str, Value]]) -> None:
        self.expect("(", "'('")
        while True:
            self.skip_ws()
            key, _ = self.name("a parameter name")
            self.skip_ws()
            self.expect("=", f"'=' after parameter {key!r}")
            self.skip_ws()
            into.append((key, self.value()))
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect(")", "',' or ')'")
            return

    def spec(self) -> MeasureSpec:
        name, column = self.name("a measure name")
        params: list[tuple[str, Value]] = []
        at: tuple[str | None, Value] | None = None
        if self.peek() == "(":
            self.params(params)
        if self.peek() == "@":
            self.pos += 1
            m = _NAME.match(self.text, self.pos)
            if m and self.text[m.end() : m.end() + 1] == "=":
                key, _ = self.name("a parameter name")
                self.pos += 1
                at = (key, self.value())
            else:
                at = (None, self.value())
            if self.peek() == "(":
                if params:
                    raise self.error("parameters given twice: use one '(...)' list")
                self.params(params)
        return MeasureSpec(name, self.text, column, at, tuple(params))

    def specs(self) -> list[MeasureSpec]:
        out: list[MeasureSpec] = []
        self.skip_ws()
        if self.peek() == "":
            raise self.error("empty measure spec")
        while self.peek() != "":
            start = self.pos
            spec = self.spec()
            end = self.pos
            if self.peek() != "" and not self.peek().isspace():
                raise self.error(f"unexpected {self.describe_here()} in measure spec")
            # keep only this spec's own text so later errors point into it
            out.append(_rebase(spec, self.text[start:end], start))
            self.skip_ws()
        return out


def _rebase(spec: MeasureSpec, text: str, offset: int) -> MeasureSpec:
    """Re-anchor a spec parsed from a longer string onto its own text."""
    if offset == 0 and text == spec.text:
        return spec

    def mv(v: Value) -> Value:
        return Value(v.kind, v.text, v.column - offset, v.number, v.unit)

    at = None if spec.at is None else (spec.at[0], mv(spec.at[1]))
    params = tuple((k, mv(v)) for k, v in spec.params)
    return MeasureSpec(spec.name, text, spec.column - offset, at, params)


def parse_spec(text: str) -> MeasureSpec:
    """Parse exactly one measure spec.

    Raises:
        SpecError: on a syntax error, with the column of the offending character.
    """
    specs = parse_specs(text)
    if len(specs) != 1:
        raise SpecError(f"expected one measure spec, found {len(specs)}", source="measure spec", text=text)
    return specs[0]


def parse_specs(text: str) -> list[MeasureSpec]:
    """Parse one or more whitespace-separated measure specs (``"AP nDCG@10"``)."""
    return _Parser(text).specs()


_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def number_text(x: float | numbers.Real) -> str:
    """Spec text of a number: an int as is, a whole float without ``.0`` (``3``), any other
    float as its shortest round-tripping ``repr`` (``0.30000000000000004``, ``1e-300``)."""
    if isinstance(x, numbers.Integral):
        return str(int(x))
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def format_value_text(text: str) -> str:
    """Write a string value so that it parses back to itself (bare word or quoted; ``none``
    is quoted, so that it stays a string where ``None`` is also allowed)."""
    if (_BARE.match(text) and text not in ("none", "None")) or _NUMBER.fullmatch(text) is not None:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
