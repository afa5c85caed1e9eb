"""How the tokenizer builds a word from pieces of its source, and places it only when asked."""

from __future__ import annotations

from collections.abc import Sequence

from tpcheck.sources.base import Span
from tpcheck.sources.positions import Located, Pos
from tpcheck.sources.words import Derived


class Source:
    """The text being tokenized; ``pos(i)`` is where its character ``i`` sits in the file."""

    __slots__ = ("fb", "loc", "n", "positions")

    def __init__(self, loc: Located) -> None:
        self.loc = loc
        self.n = len(loc.value)
        self.positions = loc.positions  # one per character, or none: all on the fallback span
        self.fb = loc.fallback

    def pos(self, i: int) -> Pos:
        ps = self.positions
        if ps and i < self.n:
            return ps[i]
        if ps and self.n:
            last = ps[self.n - 1]
            return (last[0], last[1] + 1)
        return (self.fb.line, self.fb.column)


# A piece of a word: (start, end) offsets in the source, or (expanded value, offset of the
# expansion) for a variable's value.
Seg = tuple["int | Located", int]


class Recipe:
    """How to place a word: pieces of the source (offset ranges) and expanded values, and the
    offsets of its first and last written characters."""

    __slots__ = ("a", "after", "e", "segs", "src")

    def __init__(self, src: Source, segs: list[Seg], a: int, e: int, after: bool) -> None:
        self.src, self.segs, self.a, self.e, self.after = src, segs, a, e, after

    def raw_span(self) -> Span:
        p, q = self.src.pos(self.a), self.src.pos(self.e)
        end_col = q[1] + 1 if self.after else q[1]
        return Span(self.src.loc.path, p[0], p[1], q[0], end_col)

    def located(self, value: str, raw: Span) -> Located:
        src = self.src
        ps = src.positions
        if not ps:
            return Located(value, (), raw, src.loc.path)
        segs = self.segs
        positions: Sequence[Pos]
        if len(segs) == 1 and isinstance(segs[0][0], int):
            positions = ps[segs[0][0] : segs[0][1]]  # most words: one piece of the source
        else:  # several pieces, or none (an empty "" word)
            out: list[Pos] = []
            for x, y in segs:
                if isinstance(x, int):
                    out.extend(ps[x:y])
                else:  # an expanded value: where it was assigned, else at the expansion
                    out.extend(x.positions or [src.pos(y)] * len(x.value))
            positions = out
        if len(positions) != len(value):
            positions = ()
        return Located(value, positions, raw, src.loc.path)


class Builder:
    """The word being read: its text so far and how to place it (see ``Recipe``)."""

    __slots__ = ("a", "after", "chars", "derived", "e", "expanded", "n_derived", "pieces",
                 "segs", "started", "unresolved", "var_span")

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.segs: list[Seg] = []
        self.unresolved = False
        self.started = False
        self.a = 0  # offset of the first written character
        self.e = 0  # offset of the last one (``after``: the span ends past it)
        self.after = True
        self.pieces = 0
        self.var_span: Span | None = None
        self.expanded = 0  # characters added by expansion (MAX_WORD_CHARS)
        self.derived: Derived | None = None  # the one worked-out value in the word, if any
        self.n_derived = 0

    def src(self, s: str, i: int, j: int) -> None:
        """Characters ``s[i:j]`` of the source, at their own places."""
        self.chars.append(s[i:j])
        segs = self.segs
        if segs and isinstance(segs[-1][0], int) and segs[-1][1] == i:
            segs[-1] = (segs[-1][0], j)  # continues the last piece
        else:
            segs.append((i, j))

    def expansion(self, val: Located, at: int, derived: Derived | None = None) -> None:
        """An expanded value, placed where it was assigned (else at the expansion, ``at``);
        ``derived`` when it was worked out (two in one word: neither is said)."""
        if derived is not None:
            self.derived = derived if self.n_derived == 0 else None
            self.n_derived += 1
        self.chars.append(val.value)
        self.segs.append((val, at))

    def mark(self, a: int, e: int, after: bool = True) -> None:
        if not self.started:
            self.a = a
            self.started = True
        self.e, self.after = e, after


__all__ = ["Builder", "Recipe", "Seg", "Source"]
