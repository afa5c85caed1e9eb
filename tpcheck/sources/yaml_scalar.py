"""Map each character of a YAML scalar's value back to the file.

PyYAML gives a node's start and end marks, not where each character of its value came from.
Flow scalars fold line breaks into spaces, quoted ones decode escapes, block scalars strip
indentation and fold lines; this module redoes that folding with offsets attached, then checks
its result equals PyYAML's value. When it does not (an exotic scalar), every character falls
back to the node's own span, which is coarser but never wrong.
"""

from __future__ import annotations

from itertools import repeat

from tpcheck.deferred import lazy_re
from tpcheck.sources.base import Span
from tpcheck.sources.positions import Linear, LineIndex, Located, Pos, Runs

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
    "_": "\xa0", "L": "\u2028", "P": "\u2029",
}
_HEX = {"x": 2, "u": 4, "U": 8}
# Characters a flow scalar keeps as written in any style: no break, blank, quote or escape.
_RUN = lazy_re(r"[^\r\n \t'\"\\]+")


def node_span(node: Any, index: LineIndex, path: str) -> Span:
    """The node's own span (1-based, end exclusive)."""
    sm, em = node.start_mark, node.end_mark
    return Span(path, sm.line + 1, sm.column + 1, em.line + 1, em.column + 1)


def locate(node: Any, index: LineIndex, path: str) -> Located:
    """The scalar's value with one source position per character (see module doc)."""
    value: str = node.value
    sm, em = node.start_mark, node.end_mark
    fb = Span(path, sm.line + 1, sm.column + 1, em.line + 1, em.column + 1)  # node_span
    if index.ascii:  # LineIndex.offset_of, inlined: ~8,000 scalars a 1,000-file run
        n = len(index.text)
        s, e = min(sm.index, n), min(em.index, n)
    else:
        s, e = index.offset_of(sm), index.offset_of(em)
    style = node.style
    if sm.line == em.line and style in (None, "", "'", '"'):
        q = 1 if style in ("'", '"') else 0
        if index.text[s + q : e - q] == value:  # one line, nothing to decode
            return Located(value, Linear(fb.line, fb.column + q, len(value)), fb, path)
    chars: list[str] = []
    pos: list[Pos] = []
    try:
        if style in ("|", ">"):
            positions: Sequence[Pos] = _block(index, s, e, style, chars)
        elif style in ("'", '"'):
            _flow(index, s + 1, e - 1, style, chars, pos)
            positions = pos
        else:
            _flow(index, s, e, None, chars, pos)
            positions = pos
    except (IndexError, ValueError):
        return Located(value, (), fb, path)
    if "".join(chars) != value:
        return Located(value, (), fb, path)
    return Located(value, positions, fb, path)


def _flow(
    index: LineIndex, s: int, e: int, style: str | None, chars: list[str], pos: list[Pos]
) -> None:
    text = index.text
    line0, col0 = index.pos(s)
    state = [line0, s - col0 + 1, text.find("\n", s)]  # line, its start offset, next break

    def p(i: int) -> Pos:
        while state[2] != -1 and state[2] < i:
            state[0] += 1
            state[1] = state[2] + 1
            state[2] = text.find("\n", state[1])
        return (state[0], i - state[1] + 1)

    pending: list[tuple[str, int]] = []
    i = s
    while i < e:
        c = text[i]
        if c in "\r\n":
            breaks = 0
            first = i
            j = i
            while j < e and text[j] in " \t\r\n":
                if text[j] == "\n":
                    breaks += 1
                j += 1
            pending = []
            if breaks <= 1:
                chars.append(" ")
                pos.append(p(first))
            else:
                for _ in range(breaks - 1):
                    chars.append("\n")
                    pos.append(p(first))
            i = j
            continue
        if c in " \t":
            pending.append((c, i))
            i += 1
            continue
        for pc, pi in pending:
            chars.append(pc)
            pos.append(p(pi))
        pending = []
        if style == "'" and c == "'" and i + 1 < e and text[i + 1] == "'":
            chars.append("'")
            pos.append(p(i))
            i += 2
            continue
        if style == '"' and c == "\\":
            n = text[i + 1]
            if n in "\r\n":
                j = i + 1
                if text[j] == "\r" and j + 1 < e and text[j + 1] == "\n":
                    j += 1
                j += 1
                while j < e and text[j] in " \t":
                    j += 1
                i = j
                continue
            if n in _HEX:
                width = _HEX[n]
                chars.append(chr(int(text[i + 2 : i + 2 + width], 16)))
                pos.append(p(i))
                i += 2 + width
                continue
            chars.append(_ESCAPES[n])
            pos.append(p(i))
            i += 2
            continue
        m = _RUN.match(text, i, e)
        if m is None:
            chars.append(c)
            pos.append(p(i))
            i += 1
            continue
        # a run of ordinary characters: on one line, each one column on from the last
        j = m.end()
        chars.append(text[i:j])
        line, col = p(i)
        pos.extend(zip(repeat(line, j - i), range(col, col + j - i), strict=True))
        i = j
    for pc, pi in pending:
        chars.append(pc)
        pos.append(p(pi))


def _block_lines(index: LineIndex, s: int, e: int) -> tuple[str, list[tuple[int, str, bool]],
                                                            int] | None:
    """A block scalar's chomping indicator, its body's lines (line number, text without the
    break, whether a line break ends it) and their indentation; None for an empty body."""
    text = index.text
    nl = text.find("\n", s)
    if nl == -1 or nl >= e:
        return None
    header = text[s + 1 : nl].split("#", 1)[0].strip()
    chomp = "+" if "+" in header else "-" if "-" in header else ""
    lines: list[tuple[int, str, bool]] = []
    start = nl + 1
    if start < e:
        ln_no = index.pos(start)[0]
        parts = text[start:e].split("\n")
        ended = not parts[-1]  # the body ends with its line break: no line after it
        if ended:
            parts.pop()
        lines = [(no, part.rstrip("\r"), True) for no, part in enumerate(parts, ln_no)]
        if not ended:  # the last line is broken only when a break follows the node
            no, part, _ = lines[-1]
            lines[-1] = (no, part, text[e : e + 1] == "\n")
    for _, ln, _ in lines:
        if ln.strip():
            return chomp, lines, len(ln) - len(ln.lstrip(" "))
    return None


def _block(index: LineIndex, s: int, e: int, style: str, chars: list[str]) -> Runs:
    """Literal ``|`` and folded ``>`` bodies: indentation stripped, breaks kept or folded,
    chomped. ``chars`` gets pieces of text; the positions are a run per line and per break."""
    body = _block_lines(index, s, e)
    if body is None:
        return Runs()
    chomp, lines, indent = body
    body_c: list[str] = []
    append = body_c.append
    # Runs.add, inlined (a call per line and per break was a third of reading a block): the
    # runs' lists, the characters so far, and the place a run continuing the last would be at
    offs: list[int] = []
    rlines: list[int] = []
    rcols: list[int] = []
    n = 0
    last_line = -1  # no run yet
    next_col = 0
    folded = style == ">"
    prev_kind: str | None = None  # "normal" | "more" for the last content line
    empties: list[Pos] = []  # where the break ending each empty line sits
    last_break: Pos = (0, 0)
    last_broken = True  # the last content line ends with a break (not the end of the file)
    for no, ln, broken in lines:
        content = ln[indent:]
        if not content and not ln.strip():
            empties.append((no, len(ln) + 1))
            continue
        kind = "more" if content[:1] in (" ", "\t") else "normal"
        seps: Sequence[Pos]
        if prev_kind is None:
            seps = empties
        elif folded and prev_kind == "normal" and kind == "normal":
            seps = empties
            if not empties:  # folded between two normal lines: a space
                append(" ")
                q0, q1 = last_break
                if q0 != last_line or q1 != next_col:
                    offs.append(n)
                    rlines.append(q0)
                    rcols.append(q1)
                n += 1
                last_line, next_col = q0, q1 + 1
        else:
            seps = [last_break, *empties]
        for q0, q1 in seps:
            append("\n")
            if q0 != last_line or q1 != next_col:
                offs.append(n)
                rlines.append(q0)
                rcols.append(q1)
            n += 1
            last_line, next_col = q0, q1 + 1
        empties = []
        append(content)
        k = len(content)
        if k:
            col = indent + 1
            if no != last_line or col != next_col:
                offs.append(n)
                rlines.append(no)
                rcols.append(col)
            n += k
            last_line, next_col = no, col + k
        last_break = (no, len(ln) + 1)
        last_broken = broken
        prev_kind = kind
    if prev_kind is None:
        return Runs()
    # A body that ends the file without a line break has no final break to keep (YAML 1.2
    # §8.1.1.2: chomping applies to the final line break, and there is none).
    if chomp == "+":
        tail = [last_break, *empties] if last_broken else empties
    elif chomp == "" and last_broken:
        tail = [last_break]
    else:
        tail = []
    for q0, q1 in tail:
        append("\n")
        if q0 != last_line or q1 != next_col:
            offs.append(n)
            rlines.append(q0)
            rcols.append(q1)
        n += 1
        last_line, next_col = q0, q1 + 1
    body_p = Runs()
    body_p.offs, body_p.lines, body_p.cols, body_p.n = offs, rlines, rcols, n
    chars.extend(body_c)
    return body_p
