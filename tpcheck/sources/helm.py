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
from bisect import bisect_right

from tpcheck.deferred import lazy_re
from tpcheck.sources.base import NOT_WRITTEN, SourceError, Span
from tpcheck.sources.helm_chart import chart_root, chart_values, values_locator, values_problem
from tpcheck.sources.helm_expr import (
    MISSING,
    UNKNOWN,
    Evaluator,
    scalar_text,
    shorten,
    split_pipes,
    truthy,
)
from tpcheck.sources.helm_scan import block_ends, only_actions, scan_actions, tokens
from tpcheck.sources.positions import LineIndex, Located, Pos

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

# Real templates are a few KB; every character's position is a tuple, and the YAML of a
# rendered template is composed again: 256 KiB reads in well under a second.
MAX_TEMPLATE_BYTES = 256 * 1024
_BLOCK_FUNCS = frozenset({"include", "template", "toYaml", "nindent", "indent", "tpl"})
_CONTROL = frozenset({"if", "else", "end", "range", "with", "define", "block", "break",
                      "continue"})
# ``nindent``/``indent`` widths past this are refused (one line, the template not read):
# ``nindent 400000000`` built a 3.5 GB line for a 300-byte template and ``nindent 10^29`` was
# an OverflowError (issue 28). Real charts indent a few dozen columns.
MAX_INDENT = 1024
MAX_RANGE_ITEMS = 256  # a range is unrolled over at most this many values items
PLACEHOLDER = lazy_re(r"\$\(_H([0-9]+)_*\)")


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


def render(path: str, text: str, values: Any = None, chart: str | None = None,
           values_error: str | None = None) -> Rendered | SourceError:
    """Neutralise the actions in ``text`` (see the module docstring)."""
    index = LineIndex(text)
    if len(text) > MAX_TEMPLATE_BYTES:
        return SourceError(path, 1, 1, f"template is over {MAX_TEMPLATE_BYTES} characters; "
                                       "not read")
    actions = scan_actions(text)
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
                     and only_actions(text, actions, k, line_end))
    r.run(actions, alone, block_ends(actions), 0, len(actions))
    if r.too_wide is not None:
        line, col = index.pos(r.too_wide[0])
        return SourceError(path, line, col, f"Helm template: {r.too_wide[1]} is wider than "
                                            f"tpcheck lays out ({MAX_INDENT:,} columns); not read")
    r.tail()
    out = Located("".join(r.chars), r.pos, Span(path, 1, 1, 1, 1), path)
    return Rendered(out, r.names, r.unresolved, chart, values_error, r.origins)


class _Renderer(Evaluator):
    def __init__(self, text: str, index: LineIndex, values: dict[str, Any] | None) -> None:
        self.text, self.index, self.values = text, index, values
        self.chars: list[str] = []
        self.pos: list[Pos] = []
        self.at = 0  # next character of ``text`` to copy
        self.stack: list[list[Any]] = []  # per open block: [branch active, a branch taken, dot]
        self.off = 0  # blocks on the stack whose current branch is not rendered
        self.vars: dict[str, Any] = {}  # $name := expression
        self.dot: Any = UNKNOWN  # ``.`` inside a range unrolled over values
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
        words = tokens(body.strip())
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
        words = tokens(body)
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
        text = scalar_text(value)
        if text is None or block:
            self.placeholder(self.text[a:b], a, b)
        else:
            # where a fix would write this value: the values.yaml keys, or None (computed)
            self.origins[self.index.pos(a)] = (self.path_of(words), self.index.pos(b))
            self.emit(text, a, b)

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
        pipes = split_pipes(words)
        indent: int | None = None
        target: Any = UNKNOWN
        for cmd in pipes:
            if cmd[0] == "toYaml" and len(cmd) == 2:
                target = self.term(cmd[1])
            elif cmd[0] == "toYaml" and len(cmd) == 1:
                continue
            elif cmd[0] in ("nindent", "indent") and len(cmd) == 2 and cmd[1].isdigit():
                if len(cmd[1]) > 4 or int(cmd[1]) > MAX_INDENT:
                    if self.too_wide is None:
                        self.too_wide = (a, f"{cmd[0]} {shorten(cmd[1])}")
                    return None
                indent = int(cmd[1])
            elif len(cmd) == 1 and target is UNKNOWN:
                target = self.term(cmd[0])
            else:
                return None
        if indent is None or not isinstance(target, (list, dict)) or not target:
            return None
        items = [scalar_text(v) for v in target] if isinstance(target, list) else [None]
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
            value = self.expr(rest) if self.active() else MISSING
            on = self.active() and (value is UNKNOWN or truthy(value))
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


__all__ = ["MAX_TEMPLATE_BYTES", "PLACEHOLDER", "Rendered", "chart_root", "chart_values",
           "is_template", "render", "values_locator", "values_problem"]
