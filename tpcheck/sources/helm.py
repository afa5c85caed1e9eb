"""Helm templates: ``{{ }}`` actions neutralised so the YAML around them can be read.

Nothing is executed: the template language is not run, only recognised. Each action becomes
one of three things, and every other character keeps its line and column:

- a reference to a values.yaml scalar (``{{ .Values.engine.tp }}``, ``{{ $app.tp | quote }}``,
  ``{{ .Values.tp | default 8 }}``) becomes that value, its characters placed on the action,
  so a finding underlines ``{{ .Values.engine.tp }}`` in the template;
- ``{{ toYaml .Values.args | nindent 10 }}`` alone on its line, where the value is a list of
  scalars, becomes that list (the ``args`` a values file carries);
- control actions (``if``/``else``/``end``/``range``/``with``/``define``, comments,
  ``$x := ...``) become blanks; other output actions (``include``, ``.Release.Name``, a value
  that is missing or not a scalar) become a placeholder of the same length, which the readers
  see as an unresolved ``$(...)`` expansion, so nothing is guessed from them.

``if``/``else`` picks the branch values.yaml selects when the condition is a plain value test
(``.Values.x``, ``not``, ``eq``/``ne`` with a literal), else the first branch; a ``define``
body is never rendered in place (``_helpers.tpl`` reads as empty). ``range`` and ``with``
bodies are read once, their ``.`` unresolved.
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_right

from tpcheck.deferred import lazy_re
from tpcheck.sources.base import MAX_BYTES, NOT_WRITTEN, SourceError, Span
from tpcheck.sources.positions import LineIndex, Located, Pos

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

_PLAIN_RUN = lazy_re(r"[^`\"}/]+")  # characters inside an action that need no care
# Real templates are a few KB; every character's position is a tuple, and the YAML of a
# rendered template is composed again: 256 KiB reads in well under a second.
MAX_TEMPLATE_BYTES = 256 * 1024
_TOKEN = lazy_re(r"`[^`]*`|\"(?:\\.|[^\"\\])*\"|[^\s|()]+|\||\(|\)")
_PATH = lazy_re(r"^(\$?[A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)$")
_SAFE = lazy_re(r"[A-Za-z0-9_./:@+=%~-]*")
_BLOCK_FUNCS = frozenset({"include", "template", "toYaml", "nindent", "indent", "tpl"})
_CONTROL = frozenset({"if", "else", "end", "range", "with", "define", "block", "break",
                      "continue"})
# ``nindent``/``indent`` widths past this are refused (one line, the template not read):
# ``nindent 400000000`` built a 3.5 GB line for a 300-byte template and ``nindent 10^29`` was
# an OverflowError (issue 28). Real charts indent a few dozen columns.
MAX_INDENT = 1024
# A number literal longer than this is kept as written, not made an int: int() refuses past
# 4,300 digits ("please report"); a plain manifest's 5,000-digit value is a TP003, so is this.
MAX_INT_DIGITS = 4000
MAX_RANGE_ITEMS = 256  # a range is unrolled over at most this many values items
MAX_CHART_DEPTH = 8  # folders walked up from a template to find Chart.yaml
PLACEHOLDER = lazy_re(r"\$\(_H([0-9]+)_*\)")

_MISSING = object()  # a values path that is not set
# Functions whose output is their input as written (a value set through them is fixed in place)
_PRINTS_AS_IS = frozenset({"quote", "squote", "toString", "int", "int64", "float64", "trim"})
_UNKNOWN = object()  # an expression tpcheck does not evaluate


class Rendered:
    """The template with its actions neutralised, and where each character came from."""

    def __init__(self, text: Located, actions: list[str], unresolved: int, chart: str | None,
                 values_error: str | None,
                 origins: dict[Pos, tuple[tuple[str, ...] | None, Pos]] | None = None) -> None:
        self.text = text
        self.actions = actions  # placeholder number -> the action as written
        self.unresolved = unresolved
        self.chart = chart
        self.values_error = values_error
        # (line, column) of an output action -> (the values.yaml keys its value is written
        # under, or None when it is computed; the (line, column) just past the action)
        self.origins = origins or {}

    def origin_spans(self, spans: Mapping[str, Span]) -> dict[str, Span]:
        """Where in values.yaml each field read from an action is written (a fix edits there,
        never the template expression); ``NOT_WRITTEN`` for a value an action computes (a
        ``default`` values.yaml does not override, a function of values); fields read from the
        template's own text are left out (a fix edits them in place)."""
        if not self.origins:
            return {}
        out: dict[str, Span] = {}
        find: Callable[[tuple[str, ...]], Span | None] | None = None
        for name, sp in spans.items():
            hit = self.origins.get((sp.line, sp.column))
            quoted = 0
            if hit is None:  # a quoted "{{ ... }}": the span starts at the quote
                hit, quoted = self.origins.get((sp.line, sp.column + 1)), 1
            if hit is None:
                continue
            keys, end = hit
            if (sp.end_line, sp.end_column - quoted) != end:
                out[name] = NOT_WRITTEN  # the action and text around it make one value
                continue
            if keys is None or self.chart is None:
                out[name] = NOT_WRITTEN
                continue
            if find is None:
                find = values_locator(self.chart)
            at = find(keys)
            if at is None:
                out[name] = NOT_WRITTEN
                continue
            if not os.path.isabs(sp.path):  # named as the template is (relative to here)
                at = Span(os.path.relpath(at.path), at.line, at.column, at.end_line, at.end_column)
            out[name] = at
        return out

    def restore(self, value: str) -> str:
        """``value`` with each placeholder put back as the action it stands for."""
        if "$(_H" not in value:
            return value
        return PLACEHOLDER.sub(lambda m: self._action(int(m.group(1))), value)

    def _action(self, k: int) -> str:
        return self.actions[k] if k < len(self.actions) else "{{ }}"


def is_template(path: str, text: str) -> bool:
    """A file Helm renders: a ``.tpl`` file, or one under a ``templates`` folder, with actions."""
    if "{{" not in text:
        return False
    low = path.replace("\\", "/").lower()
    return low.endswith(".tpl") or "/templates/" in f"/{low}"


def chart_root(path: str) -> str | None:
    """The folder holding ``Chart.yaml`` at or above the template's folder."""
    d = os.path.dirname(os.path.abspath(path))
    for _ in range(MAX_CHART_DEPTH):
        if os.path.isfile(os.path.join(d, "Chart.yaml")):
            return d
        up = os.path.dirname(d)
        if up == d:
            break
        d = up
    return None


_VALUES_CACHE: dict[tuple[str, int, int], tuple[Any, str | None]] = {}


def chart_values(root: str | None) -> tuple[Any, str | None]:
    """values.yaml of the chart (safe loading), or None when there is none (then every
    ``.Values`` reference is unknown, not missing), with an error saying why it was not used."""
    if root is None:
        return None, None
    path = os.path.join(root, "values.yaml")
    try:
        st = os.stat(path)
    except OSError:
        return None, None
    from tpcheck.sources.files import overlaid, read_capped

    key = (path, st.st_mtime_ns, st.st_size)
    fresh = overlaid(path)  # a fix being checked: the edited values, not the cached ones
    got = None if fresh else _VALUES_CACHE.get(key)
    if got is not None:
        return got
    from tpcheck.sources.pyyaml import yaml

    loader = _values_loader()

    result: tuple[Any, str | None]
    try:
        # read as every side file is: a FIFO hung the run, a link to /dev/zero read 3.7 GB
        text = read_capped(path, MAX_BYTES).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or e
        result = (None, f"{path} could not be read ({why}); values not used")
    else:
        try:
            data = yaml.load(text, Loader=loader)
            result = (data if isinstance(data, dict) else {}, None)
        except (yaml.YAMLError, RecursionError) as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            result = (None, f"{path} could not be read ({first}); values not used")
    if not fresh:
        _VALUES_CACHE[key] = result
    return result


def values_problem(root: str | None, values_error: str | None) -> SourceError | None:
    """The chart's values.yaml that could not be used, as an error naming that file (the lint
    gives it once however many templates read the chart): its launches are read without values,
    which must not pass as a clean run."""
    if root is None or not values_error:
        return None
    path = os.path.join(root, "values.yaml")
    return SourceError(path, 1, 1, values_error.removeprefix(f"{path} "))


def _shorten(digits: str) -> str:
    return digits if len(digits) <= 12 else f"{digits[:6]}…({len(digits):,} digits)"


def _values_loader() -> Any:
    """Safe loading only; an integer past int's conversion limit (4,300 digits) is kept as
    the text written, as a manifest's scalar is, instead of a ValueError ("please report")."""
    from tpcheck.sources.pyyaml import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class ValuesLoader(base):  # type: ignore[misc,valid-type]
        pass

    def construct_int(loader: Any, node: Any) -> Any:
        try:
            return loader.construct_yaml_int(node)
        except ValueError:
            return str(node.value)

    ValuesLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return ValuesLoader


def render(path: str, text: str, values: Any = None, chart: str | None = None,
           values_error: str | None = None) -> Rendered | SourceError:
    """Neutralise the actions in ``text`` (see the module docstring)."""
    index = LineIndex(text)
    if len(text) > MAX_TEMPLATE_BYTES:
        return SourceError(path, 1, 1, f"template is over {MAX_TEMPLATE_BYTES} characters; "
                                       "not read")
    actions = _scan(text)
    if isinstance(actions, int):
        line, col = index.pos(actions)
        return SourceError(path, line, col, "Helm template action is not closed ('}}' missing)")
    r = _Renderer(text, index, values if isinstance(values, dict) else None)
    starts = index.starts
    alone: list[bool] = []
    for k, (a, b, _) in enumerate(actions):
        line = bisect_right(starts, a)  # not rfind/find: a 1-MB line of actions is quadratic
        line_start = starts[line - 1]
        after = bisect_right(starts, b)
        line_end = starts[after] - 1 if after < len(starts) else len(text)
        alone.append(not text[line_start:a].strip()
                     and _only_actions(text, actions, k, line_end))
    r.run(actions, alone, _block_ends(actions), 0, len(actions))
    if r.too_wide is not None:
        line, col = index.pos(r.too_wide[0])
        return SourceError(path, line, col, f"Helm template: {r.too_wide[1]} is wider than "
                                            f"tpcheck lays out ({MAX_INDENT:,} columns); not read")
    r.tail()
    out = Located("".join(r.chars), r.pos, Span(path, 1, 1, 1, 1), path)
    return Rendered(out, r.names, r.unresolved, chart, values_error, r.origins)


def values_locator(root: str) -> Callable[[tuple[str, ...]], Span | None]:
    """A function from values.yaml keys to the span of the scalar written under them (inside
    its quotes, so an edit keeps them); None for a key path that is not a plain scalar."""
    from tpcheck.sources.files import read_capped
    from tpcheck.sources.pyyaml import yaml

    path = os.path.join(root, "values.yaml")
    try:
        text = read_capped(path, MAX_BYTES).decode("utf-8-sig")
        top = yaml.compose(text, Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return lambda keys: None

    def find(keys: tuple[str, ...]) -> Span | None:
        node = top
        for k in keys:
            if not isinstance(node, yaml.MappingNode):
                return None
            hits = [v for kn, v in node.value if getattr(kn, "value", None) == k]
            if len(hits) != 1:  # a key written twice: which one Helm takes is not guessed
                return None
            node = hits[0]
        if not isinstance(node, yaml.ScalarNode):
            return None
        a, b = node.start_mark, node.end_mark
        if a.line != b.line or node.style not in (None, "'", '"'):
            return None  # a block or multi-line scalar: not one token to replace
        q = 1 if node.style else 0
        return Span(path, a.line + 1, a.column + 1 + q, b.line + 1, b.column + 1 - q)

    return find


def _scan(text: str) -> list[tuple[int, int, str]] | int:
    """Every action as (start, end, body), or the offset of the first one never closed.

    One pass: a comment ends at ``*/``, a raw or quoted string may hold ``}}``; an action
    that is never closed stops the scan there (no quadratic retry from every ``{{``)."""
    out: list[tuple[int, int, str]] = []
    n = len(text)
    i = text.find("{{")
    while i != -1:
        j = i + 2
        if text.startswith("-", j) and j + 1 < n and text[j + 1].isspace():
            j += 1
        k = j
        while k < n and text[k] in " \t\r\n":
            k += 1
        if text.startswith("/*", k):
            c = text.find("*/", k + 2)
            if c == -1:
                return i
            e = text.find("}}", c + 2)
            if e == -1 or text[c + 2 : e].strip() not in ("", "-"):
                return i
            out.append((i, e + 2, "/*"))
            i = text.find("{{", e + 2)
            continue
        while True:
            if k >= n:
                return i
            ch = text[k]
            if ch == "`":
                c = text.find("`", k + 1)
                if c == -1:
                    return i
                k = c + 1
            elif ch == '"':
                k += 1
                while k < n and text[k] not in '"\n':
                    k += 2 if text[k] == "\\" else 1
                if k >= n or text[k] == "\n":
                    return i
                k += 1
            elif text.startswith("}}", k):
                break
            else:
                m = _PLAIN_RUN.match(text, k)
                k = m.end() if m else k + 1
        body = text[j:k]
        if body.endswith("-") and body[:-1][-1:].isspace():
            body = body[:-1]
        out.append((i, k + 2, body))
        i = text.find("{{", k + 2)
    return out


def _block_ends(actions: list[tuple[int, int, str]]) -> dict[int, int]:
    """Index of each ``range`` action -> index of its ``end`` (blocks nest)."""
    out: dict[int, int] = {}
    stack: list[tuple[int, str]] = []
    for k, (_, _, body) in enumerate(actions):
        head = body.split(None, 1)[0] if body.strip() else ""
        if head in ("if", "range", "with", "define", "block"):
            stack.append((k, head))
        elif head == "end" and stack:
            start, kind = stack.pop()
            if kind == "range":
                out[start] = k
    return out


def _only_actions(text: str, actions: list[tuple[int, int, str]], k: int, line_end: int) -> bool:
    """Whether nothing but blanks and further actions follows action ``k`` on its line."""
    at = actions[k][1]
    for i in range(k + 1, len(actions)):
        a, b, _ = actions[i]
        if a >= line_end:
            break
        if text[at:a].strip():
            return False
        at = b
    return not text[at:line_end].strip()


class _Renderer:
    def __init__(self, text: str, index: LineIndex, values: dict[str, Any] | None) -> None:
        self.text, self.index, self.values = text, index, values
        self.chars: list[str] = []
        self.pos: list[Pos] = []
        self.at = 0  # next character of ``text`` to copy
        self.stack: list[list[Any]] = []  # per open block: [branch active, a branch taken, dot]
        self.off = 0  # blocks on the stack whose current branch is not rendered
        self.vars: dict[str, Any] = {}  # $name := expression
        self.dot: Any = _UNKNOWN  # ``.`` inside a range unrolled over values
        # characters of range bodies that unrolling may add (nested ranges multiply)
        self.budget = 2 * MAX_TEMPLATE_BYTES
        self.names: list[str] = []
        self.unresolved = 0
        self.too_wide: tuple[int, str] | None = None  # (offset, "nindent N") past MAX_INDENT
        self.var_paths: dict[str, tuple[str, ...] | None] = {}  # $name := .Values.a.b
        self.origins: dict[Pos, tuple[tuple[str, ...] | None, Pos]] = {}  # see Rendered

    def active(self) -> bool:
        return self.off == 0

    def push(self, on: bool, taken: bool, dot: Any) -> None:
        self.stack.append([on, taken, dot])  # dot: ``.`` to restore at the block's end
        self.off += not on

    def switch(self, on: bool) -> None:
        top = self.stack[-1]
        self.off += (not on) - (not top[0])
        top[0] = on

    def copy(self, a: int, b: int, blank: bool) -> None:
        """Source characters ``a:b``, as written, or (``blank``) only their newlines, as a
        control action or a branch not taken renders nothing. Characters may be dropped:
        each one kept carries its own position, so nothing after it moves."""
        if a >= b:
            return
        if not blank:
            self.chars.append(self.text[a:b])
            self.pos.extend(self._positions(a, b))
            return
        i = self.text.find("\n", a, b)
        while i != -1:
            self.chars.append("\n")
            self.pos.append(self.index.pos(i))
            i = self.text.find("\n", i + 1, b)

    def trim_before(self) -> None:
        """``{{-``: the blanks before the action on its line are not rendered."""
        while self.chars and self.chars[-1]:
            last = self.chars[-1]
            kept = last.rstrip(" \t")
            if len(kept) == len(last):
                return
            del self.pos[len(self.pos) - (len(last) - len(kept)):]
            self.chars[-1] = kept
            if kept:
                return
            self.chars.pop()

    def _positions(self, a: int, b: int) -> list[Pos]:
        if a >= b:
            return []
        line, col = self.index.pos(a)
        out: list[Pos] = []
        for c in self.text[a:b]:
            out.append((line, col))
            if c == "\n":
                line, col = line + 1, 1
            else:
                col += 1
        return out

    def emit(self, value: str, a: int, b: int) -> None:
        """``value`` in place of source ``a:b``: first character on ``a``, last on ``b - 1``
        (inside the quotes ``quote`` adds, so the value read spans the whole action)."""
        ps = self._positions(a, b)
        n = len(value)
        if n >= 2 and value[0] == value[-1] and value[0] in "'\"":
            self.chars.append(value[0])
            self.pos.append(ps[0])
            self.emit(value[1:-1], a, b)
            self.chars.append(value[-1])
            self.pos.append(ps[-1])
            return
        self.chars.append(value)
        if n == 1:
            self.pos.append(ps[0])
            return
        self.pos.extend(ps[min(k, len(ps) - 1)] if k < n - 1 else ps[-1] for k in range(n))

    def tail(self) -> None:
        self.copy(self.at, len(self.text), not self.active())

    def run(self, actions: list[tuple[int, int, str]], alone: list[bool],
            ends: dict[int, int], lo: int, hi: int) -> None:
        """Actions ``lo:hi`` in order; a ``range`` over a values list is unrolled."""
        k = lo
        while k < hi:
            a, b, body = actions[k]
            items = self.range_items(body) if k in ends and self.active() else None
            cost = (actions[ends[k]][0] - b) * len(items) if items else 0
            if items is None or cost > self.budget:
                self.action(a, b, body, alone[k])
                k += 1
                continue
            self.budget -= cost
            self.copy(self.at, a, False)
            if self.text.startswith("{{-", a):
                self.trim_before()
            end = ends[k]
            saved = (self.dot, dict(self.vars))
            for key, item, _ in items[:MAX_RANGE_ITEMS]:
                self.dot = item
                if len(items[0][2]) == 2:
                    self.vars[items[0][2][0]], self.vars[items[0][2][1]] = key, item
                elif items[0][2]:
                    self.vars[items[0][2][0]] = item
                self.at = b
                self.run(actions, alone, ends, k + 1, end)
                self.copy(self.at, actions[end][0], not self.active())
                if self.text.startswith("{{-", actions[end][0]):
                    self.trim_before()
            self.dot, self.vars = saved
            self.at = actions[end][1]
            k = end + 1

    def range_items(self, body: str) -> list[tuple[Any, Any, list[str]]] | None:
        """``range [$k, $v :=] .Values.list`` over a non-empty values list or map: each
        (key, item, the variable names); None when it is not one (the body is read once)."""
        words = _tokens(body.strip())
        if words[:1] != ["range"]:
            return None
        rest = words[1:]
        names: list[str] = []
        if ":=" in rest:
            i = rest.index(":=")
            names = [w.rstrip(",") for w in rest[:i] if w.rstrip(",")]
            rest = rest[i + 1:]
        value = self.expr(rest)
        if isinstance(value, list) and value:
            return [(i, v, names) for i, v in enumerate(value)]
        if isinstance(value, dict) and value:
            return [(k, value[k], names) for k in sorted(value, key=str)]
        return None

    def action(self, a: int, b: int, body: str, alone: bool) -> None:
        self.copy(self.at, a, not self.active())
        if self.text.startswith("{{-", a):
            self.trim_before()
        self.at = b
        if self.text.startswith("-}}", b - 3):
            while self.at < len(self.text) and self.text[self.at] in " \t":
                self.at += 1  # ``-}}``: the blanks after it on its line are not rendered
        body = body.strip()
        words = _tokens(body)
        head = words[0] if words else ""
        if body.startswith("/*") or not words:
            self.copy(a, b, True)
            return
        if head in _CONTROL:
            self.control(head, words[1:])
            self.copy(a, b, True)
            return
        if len(words) >= 3 and words[0].startswith("$") and words[1] in (":=", "="):
            if self.active():
                self.vars[words[0]] = self.expr(words[2:])
                self.var_paths[words[0]] = self.path_of(words[2:], scalar=False)
            self.copy(a, b, True)
            return
        if not self.active():
            self.copy(a, b, True)
            return
        block = any(w in _BLOCK_FUNCS for w in words)
        if block and alone:
            listed = self.block_list(words, a, b)
            if listed is None:
                self.unresolved += 1
                self.copy(a, b, True)
            return
        value = self.expr(words)
        text = _scalar_text(value)
        if text is None or block:
            self.placeholder(self.text[a:b], a, b)
        else:
            # where a fix would write this value: the values.yaml keys, or None (computed)
            self.origins[self.index.pos(a)] = (self.path_of(words), self.index.pos(b))
            self.emit(text, a, b)

    def path_of(self, words: list[str], scalar: bool = True) -> tuple[str, ...] | None:
        """The values.yaml keys an output action's value is written under: a values path (or a
        variable set to one), through pipes that print it as it is (``quote``, ``int``, a
        ``default`` the value overrides); None for anything computed."""
        items = _nest(words)
        if items is None:
            return None
        cmds = _split_pipes(items)
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
        if value is _MISSING or (scalar and isinstance(value, (dict, list))):
            return None
        for cmd in cmds[1:]:
            head_fn = cmd[0] if isinstance(cmd[0], str) else ""
            if head_fn in _PRINTS_AS_IS and len(cmd) == 1:
                continue
            if head_fn in ("default", "required") and len(cmd) == 2 and _truthy(value):
                continue
            return None
        return keys

    def _at(self, keys: tuple[str, ...]) -> Any:
        node: Any = self.values
        for k in keys:
            if not isinstance(node, dict) or k not in node:
                return _MISSING
            node = node[k]
        return node

    def placeholder(self, written: str, a: int, b: int) -> None:
        """A same-length ``$(_H<k>__)``: the readers' unresolved expansion, numbered so the
        action can be put back in what a finding shows (``Rendered.restore``)."""
        k = len(self.names)
        self.names.append(written)
        self.unresolved += 1
        n = b - a
        tag = f"$(_H{k}"
        if n >= len(tag) + 1:
            ph = tag + "_" * (n - len(tag) - 1) + ")"
        else:  # too short to carry its number (an action is at least 5 characters)
            ph = "$(" + "_" * (n - 3) + ")"
        self.chars.append(ph)
        self.pos.extend(self._positions(a, b))

    def block_list(self, words: list[str], a: int, b: int) -> bool | None:
        """``toYaml LIST | nindent N`` (or ``LIST | toYaml | indent N``) as YAML lines."""
        pipes = _split_pipes(words)
        indent: int | None = None
        target: Any = _UNKNOWN
        for cmd in pipes:
            if cmd[0] == "toYaml" and len(cmd) == 2:
                target = self.term(cmd[1])
            elif cmd[0] == "toYaml" and len(cmd) == 1:
                continue
            elif cmd[0] in ("nindent", "indent") and len(cmd) == 2 and cmd[1].isdigit():
                if len(cmd[1]) > 4 or int(cmd[1]) > MAX_INDENT:
                    if self.too_wide is None:
                        self.too_wide = (a, f"{cmd[0]} {_shorten(cmd[1])}")
                    return None
                indent = int(cmd[1])
            elif len(cmd) == 1 and target is _UNKNOWN:
                target = self.term(cmd[0])
            else:
                return None
        if indent is None or not isinstance(target, (list, dict)) or not target:
            return None
        items = [_scalar_text(v) for v in target] if isinstance(target, list) else [None]
        if any(t is None for t in items):
            return self.block_yaml(target, indent, a, b)
        line_start = self.text.rfind("\n", 0, a) + 1
        # the action's own line holds the first item (nindent's leading newline dropped)
        self.trim_before()
        # each item's text spans the whole action, as a substituted scalar does
        for k, t in enumerate(items):
            assert t is not None
            lead = ("\n" if k else "") + " " * indent + "- \""
            self.chars.append(lead)
            self.pos.extend([self.index.pos(line_start)] * len(lead))
            self.emit(json.dumps(t)[1:-1], a, b)
            self.chars.append('"')
            self.pos.append(self.index.pos(b - 1))
        return True

    def block_yaml(self, target: Any, indent: int, a: int, b: int) -> bool | None:
        """A values map (``toYaml .Values.resources | nindent 12``) as YAML lines, every
        character placed on the action: the GPU limit a chart passes through is read."""
        from tpcheck.sources.pyyaml import yaml

        try:
            dumped = yaml.safe_dump(target, default_flow_style=False, sort_keys=False,
                                    width=1 << 20)
        except yaml.YAMLError:
            return None
        if len(dumped) > self.budget:
            return None
        self.budget -= len(dumped)
        self.trim_before()
        for k, line in enumerate(dumped.rstrip("\n").split("\n")):
            lead = ("\n" if k else "") + " " * indent
            self.chars.append(lead)
            self.pos.extend([self.index.pos(a)] * len(lead))
            if line:
                self.emit(line, a, b)
        return True

    def control(self, head: str, rest: list[str]) -> None:
        if head == "with":
            value = self.expr(rest) if self.active() else _MISSING
            on = self.active() and (value is _UNKNOWN or _truthy(value))
            self.push(on, on, self.dot)
            if on:
                self.dot = value  # ``.`` is the value inside the block (unknown if unknown)
        elif head == "if":
            on = self.active() and self.truth(rest) is not False
            self.push(on, on, self.dot)
        elif head in ("range", "block"):
            self.push(True, True, self.dot)
        elif head == "define":
            self.push(False, True, self.dot)
        elif head == "else" and self.stack:
            top = self.stack[-1]
            self.dot = top[2]  # ``with``'s value is not ``.`` in its else branch
            if top[1]:
                self.switch(False)
            elif rest[:1] == ["if"] or rest[:1] == ["with"]:
                on = self.off == 0 or (self.off == 1 and not top[0])
                on = on and self.truth(rest[1:]) is not False
                self.switch(on)
                top[1] = on
            else:
                self.switch(True)
                top[1] = True
        elif head == "end" and self.stack:
            top = self.stack.pop()
            self.off -= not top[0]
            self.dot = top[2]

    def truth(self, words: list[str]) -> bool | None:
        """True/False for a value test; None when it cannot be evaluated (first branch read)."""
        v = self.expr(words)
        return None if v is _UNKNOWN else _truthy(v)

    def expr(self, words: list[str]) -> Any:
        items = _nest(words)
        return _UNKNOWN if items is None else self.evaluate(items)

    def evaluate(self, items: list[Any]) -> Any:
        """A pipeline: each command gets the previous result as its last argument."""
        value: Any = _UNKNOWN
        for i, cmd in enumerate(_split_pipes(items)):
            if i == 0 and len(cmd) == 1:
                value = self.arg(cmd[0])
                continue
            head = cmd[0]
            if not isinstance(head, str):
                return _UNKNOWN
            args = [self.arg(x) for x in cmd[1:]]
            if i > 0:
                args.append(value)
            value = self.call(head, args)
            if value is _UNKNOWN:
                return _UNKNOWN
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
                if v is _UNKNOWN:
                    return _UNKNOWN
                if _truthy(v) is (head == "or"):
                    return v
            return args[-1]
        if any(v is _UNKNOWN for v in args):
            return _UNKNOWN
        if head in ("eq", "ne") and n == 2:
            x, y = (None if v is _MISSING else v for v in args)
            return (x == y) is (head == "eq")
        if head == "not" and n == 1:
            return not _truthy(args[0])
        if head == "empty" and n == 1:
            return not _truthy(args[0])
        if head in ("quote", "squote") and n == 1:
            s = _scalar_text(args[0])
            q = '"' if head == "quote" else "'"
            return _UNKNOWN if s is None else q + s.replace(q, "\\" + q) + q
        if head == "default" and n == 2:
            return args[1] if _truthy(args[1]) else args[0]
        if head in ("toString", "trim", "int", "int64", "float64") and n == 1:
            return args[0]
        if head == "required" and n == 2:
            return args[1]
        return _UNKNOWN

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
            return _UNKNOWN
        base, rest = m.group(1), m.group(2)
        keys = [k for k in rest.split(".") if k]
        node: Any
        if base in ("", "$") and keys[:1] == ["Values"]:
            if self.values is None:
                return _UNKNOWN  # no values.yaml: what the user passes is not known
            node, keys = self.values, keys[1:]
        elif base in self.vars:
            node = self.vars[base]
        elif base == "" and self.dot is not _UNKNOWN:
            node = self.dot  # inside a range over values: `.name` of the item
        else:
            return _UNKNOWN  # .Release, .Chart, ``.`` inside range/with, ...
        for k in keys:
            if node is _UNKNOWN:
                return _UNKNOWN
            if not isinstance(node, dict) or k not in node:
                return _MISSING
            node = node[k]
        return node


def _truthy(v: Any) -> bool:
    """Go template truth: false, 0, nil, an empty string, list or map are false."""
    return not (v is _MISSING or v is None or v is False or v == 0 or v in ("", [], {}))


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


def _tokens(body: str) -> list[str]:
    return _TOKEN.findall(body)


def _split_pipes(words: list[Any]) -> list[list[Any]]:
    out: list[list[Any]] = [[]]
    for w in words:
        if w == "|":
            out.append([])
        else:
            out[-1].append(w)
    return [c for c in out if c] or [[""]]


def _scalar_text(v: Any) -> str | None:
    """How Helm prints a scalar, when it can be dropped into YAML text as is."""
    if v is _MISSING or v is _UNKNOWN or v is None or isinstance(v, (list, dict)):
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
