"""POSIX shell arithmetic ``$(( … ))`` over integers, evaluated without a shell.

Wide expert-parallel guides write the layout as arithmetic over variables the manifest defines
(``--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))``); reading it is what lets the
memory rules see those layouts at all. Only the part of the language a launch line uses is
read: integer constants (decimal, ``0x`` hex, leading-``0`` octal), ``+ - * / %``, unary
``+``/``-``, parentheses, and variables written ``NAME``, ``$NAME``, ``${NAME}`` or
``${NAME:-default}``. Anything else (comparisons, shifts, assignment, ``++``, the ternary, a
command substitution), a variable tpcheck does not know or whose value is not an integer
constant, division by zero and a result outside the shell's signed 64-bit range make the
whole expression unknown (None): the caller keeps it as written, as before.

The evaluator is a recursive-descent parser with a depth bound and a length bound, so a
hostile expression costs linear time and never raises (POSIX XCU 2.6.4 Arithmetic Expansion;
the shell's integer is C's ``signed long``, whose ``/`` and ``%`` truncate toward zero).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tpcheck.deferred import lazy_re
from tpcheck.record import record

MAX_TEXT = 4096  # characters between $(( and )): a real launch line uses a few dozen
MAX_DEPTH = 64  # nested parentheses and unary signs
INT_MAX = 2**63 - 1
INT_MIN = -(2**63)

_TOKEN = lazy_re(
    r"""\s*(?:
      (?P<num>0[xX][0-9A-Fa-f]+|[0-9]+)
    | \$\{(?P<bname>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}
    | \$(?P<dname>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>[-+*/%()])
    )""",
    re.X,
)
_INT = lazy_re(r"\s*([-+]?)\s*(0[xX][0-9A-Fa-f]+|[0-9]+)\s*")


@record
class Arith:
    """An evaluated expression: its value and the variables it read, in order of first use."""

    value: int
    names: tuple[str, ...]


def constant(text: str) -> int | None:
    """An integer constant as the shell reads one (``010`` is octal 8, ``08`` is an error)."""
    m = _INT.fullmatch(text)
    if m is None:
        return None
    sign, digits = m.groups()
    if len(digits) > 24:
        return None  # past any 64-bit constant; int() on a huge string is not free
    if digits[:2] in ("0x", "0X"):
        n = int(digits, 16)
    elif len(digits) > 1 and digits[0] == "0":
        if not digits.isdigit() or "8" in digits or "9" in digits:
            return None
        n = int(digits, 8)
    else:
        n = int(digits)
    n = -n if sign == "-" else n
    return n if INT_MIN <= n <= INT_MAX else None


def evaluate(text: str, lookup: Callable[[str], str | None],
             per_pod: frozenset[str] = frozenset()) -> Arith | None:
    """The value of ``text`` (what is between ``$((`` and ``))``), or None when unknown.

    ``lookup(name)`` is the variable's value as written, or None when tpcheck does not know it
    (unset here may be set by the image: never read as the shell's 0). ``per_pod`` names are
    set by the orchestrator to a value that differs between pods (``LWS_WORKER_INDEX``): known
    to be set, so a ``:-`` default never applies, yet unknown."""
    if len(text) > MAX_TEXT:
        return None
    tokens: list[tuple[str, str, str | None]] = []  # (kind, text, default)
    pos, n = 0, len(text)
    while True:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip():
                return None  # a character outside the subset
            break
        pos = m.end()
        if m.group("num") is not None:
            tokens.append(("num", m.group("num"), None))
        elif m.group("op") is not None:
            op = m.group("op")
            if op in "+-" and text.startswith(op, pos):
                return None  # ++/-- increment a variable in bash: not two signs
            tokens.append(("op", op, None))
        else:
            name = m.group("bname") or m.group("dname") or m.group("name")
            tokens.append(("var", name, m.group("default")))
        if pos >= n:
            break
    return _Parser(tokens, lookup, per_pod).run()


class _Unknown(Exception):
    """The expression has no value tpcheck can know (caught in ``run``, never escapes)."""


class _Parser:
    __slots__ = ("depth", "i", "lookup", "names", "per_pod", "tokens")

    def __init__(self, tokens: list[tuple[str, str, str | None]],
                 lookup: Callable[[str], str | None], per_pod: frozenset[str]) -> None:
        self.tokens, self.lookup, self.per_pod = tokens, lookup, per_pod
        self.i = 0
        self.depth = 0
        self.names: dict[str, None] = {}

    def run(self) -> Arith | None:
        try:
            value = self.expr()
            if self.i != len(self.tokens):
                return None  # something left over: `2 3`, `(1))`
        except _Unknown:
            return None
        return Arith(value, tuple(self.names))

    def peek(self) -> str | None:
        if self.i < len(self.tokens) and self.tokens[self.i][0] == "op":
            return self.tokens[self.i][1]
        return None

    def expr(self) -> int:
        v = self.term()
        while (op := self.peek()) in ("+", "-"):
            self.i += 1
            r = self.term()
            v = _bounded(v + r if op == "+" else v - r)
        return v

    def term(self) -> int:
        v = self.unary()
        while (op := self.peek()) in ("*", "/", "%"):
            self.i += 1
            r = self.unary()
            if op == "*":
                v = _bounded(v * r)
                continue
            if r == 0:
                raise _Unknown  # the shell stops with "division by 0"
            q = _bounded(abs(v) // abs(r) * (1 if (v < 0) == (r < 0) else -1))
            v = q if op == "/" else v - r * q
        return v

    def unary(self) -> int:
        op = self.peek()
        if op in ("+", "-"):
            self.enter()
            self.i += 1
            v = self.unary()
            self.depth -= 1
            return _bounded(-v) if op == "-" else v
        return self.primary()

    def primary(self) -> int:
        if self.i >= len(self.tokens):
            raise _Unknown  # `1 +` ends too soon
        kind, text, default = self.tokens[self.i]
        self.i += 1
        if kind == "num":
            v = constant(text)
            if v is None:
                raise _Unknown
            return v
        if kind == "var":
            return self.variable(text, default)
        if text != "(":
            raise _Unknown
        self.enter()
        v = self.expr()
        if self.peek() != ")":
            raise _Unknown
        self.i += 1
        self.depth -= 1
        return v

    def variable(self, name: str, default: str | None) -> int:
        raw = self.lookup(name)
        if raw is None and name in self.per_pod:
            raise _Unknown
        if raw is None or (default is not None and raw == ""):
            if default is None:
                raise _Unknown
            raw = default  # ${NAME:-default}: the default's own text
        else:
            self.names.setdefault(name, None)
        v = constant(raw) if raw.strip() else None
        if v is None:
            raise _Unknown  # an unset, empty or non-integer value: not a number we know
        return v

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Unknown


def _bounded(v: int) -> int:
    if not INT_MIN <= v <= INT_MAX:
        raise _Unknown  # the shell wraps silently; a wrapped size is no size
    return v
