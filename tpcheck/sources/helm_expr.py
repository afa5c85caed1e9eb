"""What an action's pipeline evaluates to against values.yaml, and where its value is written."""

from __future__ import annotations

import json
import re

from tpcheck.deferred import lazy_re

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


_PATH = lazy_re(r"^(\$?[A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)$")
_SAFE = lazy_re(r"[A-Za-z0-9_./:@+=%~-]*")


# A number literal longer than this is kept as written, not made an int: int() refuses past
# 4,300 digits ("please report"); a plain manifest's 5,000-digit value is a TP003, so is this.
MAX_INT_DIGITS = 4000


MISSING = object()  # a values path that is not set
# Functions whose output is their input as written (a value set through them is fixed in place)
_PRINTS_AS_IS = frozenset({"quote", "squote", "toString", "int", "int64", "float64", "trim"})
UNKNOWN = object()  # an expression tpcheck does not evaluate


def shorten(digits: str) -> str:
    return digits if len(digits) <= 12 else f"{digits[:6]}…({len(digits):,} digits)"


class Evaluator:
    """The renderer's evaluation of value paths, tests and pipelines (mixed into the renderer)."""

    values: dict[str, Any] | None
    vars: dict[str, Any]
    dot: Any
    var_paths: dict[str, tuple[str, ...] | None]

    def path_of(self, words: list[str], scalar: bool = True) -> tuple[str, ...] | None:
        """The values.yaml keys an output action's value is written under: a values path (or a
        variable set to one), through pipes that print it as it is (``quote``, ``int``, a
        ``default`` the value overrides); None for anything computed."""
        items = _nest(words)
        if items is None:
            return None
        cmds = split_pipes(items)
        first = cmds[0]
        if len(first) != 1 or not isinstance(first[0], str):
            return None
        m = _PATH.match(first[0])
        if m is None:
            return None
        base, keys = m.group(1), tuple(k for k in m.group(2).split(".") if k)
        if base in ("", "$") and keys[:1] == ("Values",):
            keys = keys[1:]
        elif self.var_paths.get(base) is not None:
            head = self.var_paths[base]
            assert head is not None
            if self._at(head) is not self.vars.get(base):  # rebound by a range
                return None
            keys = head + keys
        else:
            return None
        value = self._at(keys)
        if value is MISSING or (scalar and isinstance(value, (dict, list))):
            return None
        for cmd in cmds[1:]:
            head_fn = cmd[0] if isinstance(cmd[0], str) else ""
            if head_fn in _PRINTS_AS_IS and len(cmd) == 1:
                continue
            if head_fn in ("default", "required") and len(cmd) == 2 and truthy(value):
                continue
            return None
        return keys

    def _at(self, keys: tuple[str, ...]) -> Any:
        node: Any = self.values
        for k in keys:
            if not isinstance(node, dict) or k not in node:
                return MISSING
            node = node[k]
        return node

    def truth(self, words: list[str]) -> bool | None:
        """True/False for a value test; None when it cannot be evaluated (first branch read)."""
        v = self.expr(words)
        return None if v is UNKNOWN else truthy(v)

    def expr(self, words: list[str]) -> Any:
        items = _nest(words)
        return UNKNOWN if items is None else self.evaluate(items)

    def evaluate(self, items: list[Any]) -> Any:
        """A pipeline: each command gets the previous result as its last argument."""
        value: Any = UNKNOWN
        for i, cmd in enumerate(split_pipes(items)):
            if i == 0 and len(cmd) == 1:
                value = self.arg(cmd[0])
                continue
            head = cmd[0]
            if not isinstance(head, str):
                return UNKNOWN
            args = [self.arg(x) for x in cmd[1:]]
            if i > 0:
                args.append(value)
            value = self.call(head, args)
            if value is UNKNOWN:
                return UNKNOWN
        return value

    def arg(self, x: Any) -> Any:
        return self.evaluate(x) if isinstance(x, list) else self.term(x)

    def call(self, head: str, args: list[Any]) -> Any:
        """The few template functions values flow through; anything else is unknown."""
        n = len(args)
        if head in ("and", "or") and n >= 1:
            # Go: `and` gives the first empty argument, else the last; `or` the first
            # non-empty one, else the last. An unknown argument before the answer: unknown.
            for v in args:
                if v is UNKNOWN:
                    return UNKNOWN
                if truthy(v) is (head == "or"):
                    return v
            return args[-1]
        if any(v is UNKNOWN for v in args):
            return UNKNOWN
        if head in ("eq", "ne") and n == 2:
            x, y = (None if v is MISSING else v for v in args)
            return (x == y) is (head == "eq")
        if head == "not" and n == 1:
            return not truthy(args[0])
        if head == "empty" and n == 1:
            return not truthy(args[0])
        if head in ("quote", "squote") and n == 1:
            s = scalar_text(args[0])
            q = '"' if head == "quote" else "'"
            return UNKNOWN if s is None else q + s.replace(q, "\\" + q) + q
        if head == "default" and n == 2:
            return args[1] if truthy(args[1]) else args[0]
        if head in ("toString", "trim", "int", "int64", "float64") and n == 1:
            return args[0]
        if head == "required" and n == 2:
            return args[1]
        return UNKNOWN

    def term(self, w: str) -> Any:
        if w[:1] in ('"', "`"):
            return w[1:-1] if w[:1] == "`" else _unquote(w)
        if re.fullmatch(r"-?\d+", w):
            return int(w) if len(w) <= MAX_INT_DIGITS else w
        if w in ("true", "false"):
            return w == "true"
        if w == ".":
            return self.dot
        m = _PATH.match(w)
        if m is None:
            return UNKNOWN
        base, rest = m.group(1), m.group(2)
        keys = [k for k in rest.split(".") if k]
        node: Any
        if base in ("", "$") and keys[:1] == ["Values"]:
            if self.values is None:
                return UNKNOWN  # no values.yaml: what the user passes is not known
            node, keys = self.values, keys[1:]
        elif base in self.vars:
            node = self.vars[base]
        elif base == "" and self.dot is not UNKNOWN:
            node = self.dot  # inside a range over values: `.name` of the item
        else:
            return UNKNOWN  # .Release, .Chart, ``.`` inside range/with, ...
        for k in keys:
            if node is UNKNOWN:
                return UNKNOWN
            if not isinstance(node, dict) or k not in node:
                return MISSING
            node = node[k]
        return node

def truthy(v: Any) -> bool:
    """Go template truth: false, 0, nil, an empty string, list or map are false."""
    return not (v is MISSING or v is None or v is False or v == 0 or v in ("", [], {}))


def _nest(words: list[str]) -> list[Any] | None:
    """Tokens with each parenthesised group as a nested list; None when unbalanced."""
    stack: list[list[Any]] = [[]]
    for w in words:
        if w == "(":
            stack.append([])
        elif w == ")":
            if len(stack) == 1:
                return None
            inner = stack.pop()
            stack[-1].append(inner)
        else:
            stack[-1].append(w)
    return stack[0] if len(stack) == 1 else None


def _unquote(w: str) -> str:
    try:
        v = json.loads(w)
    except ValueError:
        return w[1:-1]
    return v if isinstance(v, str) else w[1:-1]


def split_pipes(words: list[Any]) -> list[list[Any]]:
    out: list[list[Any]] = [[]]
    for w in words:
        if w == "|":
            out.append([])
        else:
            out[-1].append(w)
    return [c for c in out if c] or [[""]]


def scalar_text(v: Any) -> str | None:
    """How Helm prints a scalar, when it can be dropped into YAML text as is."""
    if v is MISSING or v is UNKNOWN or v is None or isinstance(v, (list, dict)):
        return None
    if isinstance(v, bool):
        s = "true" if v else "false"
    elif isinstance(v, float) and v.is_integer():
        s = str(int(v))
    else:
        s = str(v)
    if s.startswith(("'", '"')) and s.endswith(s[0]) and len(s) >= 2:
        return s  # already quoted by ``quote``
    if "\n" in s or not _SAFE.fullmatch(s):
        return None
    return s
