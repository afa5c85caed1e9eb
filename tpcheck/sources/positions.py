"""Text that remembers where each character came from.

A command read out of a YAML scalar, a Python string or a shell file is tokenized as a plain
string, but every character keeps its 1-based (line, column) in the original file, so a value
found anywhere inside (an ``sh -c`` string folded over three lines, say) is underlined at its
true place.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate, repeat

from tpcheck.record import record
from tpcheck.sources.base import Span

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

Pos = tuple[int, int]
_COUNTED_ASKS = 8  # LineIndex.pos: past these, the line starts are built (bisect is O(log n))


class LineIndex:
    """Offset → (line, column) for one file, both 1-based.

    Line starts are worked out on first use: in an ASCII text a YAML mark's ``index`` is
    already the offset (``offset_of``), so a manifest whose values all sit on one line each
    never needs them."""

    __slots__ = ("_asks", "_starts", "ascii", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()
        self._starts: list[int] | None = None
        self._asks = 0  # ``pos`` answered by counting, before the line starts are built

    @property
    def starts(self) -> list[int]:
        """Offset of each line's start."""
        if self._starts is None:
            # running sum of (line length + 1), all in C
            starts = list(accumulate(map((1).__add__, map(len, self.text.split("\n"))),
                                     initial=0))
            starts.pop()
            self._starts = starts
        return self._starts

    def offset_of(self, mark: Any) -> int:
        """A YAML mark's offset in the text (clamped to its end)."""
        n = len(self.text)
        if self.ascii:
            off: int = mark.index  # a character is a byte: libyaml's count is the offset
        else:
            starts = self.starts
            if mark.line >= len(starts):
                return n
            off = starts[mark.line] + mark.column
        return off if off < n else n

    def pos(self, offset: int) -> Pos:
        if self._starts is None and self._asks < _COUNTED_ASKS and offset >= 0:
            # the first few asked by counting the breaks before it (C scans of the text):
            # most YAML files ask one or two (a block scalar's first line), and building the
            # starts splits the whole text (~a third of reading a block scalar)
            self._asks += 1
            text = self.text
            return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)
        line = bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def offset(self, line: int, column: int) -> int:
        """Inverse of ``pos`` (line and column 1-based); a line past the last (the end mark of
        a block node in a text without a final newline) is the end of the text."""
        starts = self.starts
        if line > len(starts):
            return len(self.text)
        start: int = starts[line - 1]
        return start + column - 1


class Linear(Sequence[Pos]):
    """Positions of characters laid out on one line, without building a list."""

    __slots__ = ("col", "line", "n")

    def __init__(self, line: int, col: int, n: int) -> None:
        self.line, self.col, self.n = line, col, n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Pos]:
        return zip(repeat(self.line, self.n), range(self.col, self.col + self.n), strict=True)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self.n)
            if step != 1:
                return [self[k] for k in range(start, stop, step)]
            return Linear(self.line, self.col + start, max(0, stop - start))
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return (self.line, self.col + i)

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        line, col = value
        k = col - self.col
        if line != self.line or not 0 <= k < self.n:
            raise ValueError(value)
        return int(k)


class Runs(Sequence[Pos]):
    """Positions laid out as runs of consecutive columns, one or a few runs per source line.

    A block scalar or a recovered manifest is thousands of characters over a few dozen lines:
    this costs three ints per run where a list costs a tuple per character (building those
    tuples was a tenth of reading a manifest). Build with ``add``; read like the list it
    stands for.
    """

    __slots__ = ("cols", "lines", "n", "offs")

    def __init__(self) -> None:
        self.offs: list[int] = []  # offset in the value where each run starts
        self.lines: list[int] = []
        self.cols: list[int] = []
        self.n = 0

    def add(self, line: int, col: int, k: int) -> None:
        """Append ``k`` characters at ``line``, ``col``, ``col + 1``, ..."""
        if k <= 0:
            return
        if self.offs and self.lines[-1] == line and self.cols[-1] + self.n - self.offs[-1] == col:
            self.n += k  # continues the last run
            return
        self.offs.append(self.n)
        self.lines.append(line)
        self.cols.append(col)
        self.n += k

    def _end(self, k: int) -> int:
        return self.offs[k + 1] if k + 1 < len(self.offs) else self.n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Pos]:
        for k, line in enumerate(self.lines):
            col = self.cols[k]
            yield from zip(repeat(line), range(col, col + self._end(k) - self.offs[k]))

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self.n)
            if step != 1:
                return [self[k] for k in range(start, stop, step)]
            if stop <= start:
                return ()
            offs = self.offs
            k0 = bisect_right(offs, start) - 1
            k1 = bisect_right(offs, stop - 1) - 1
            if k0 == k1:
                return Linear(self.lines[k0], self.cols[k0] + start - offs[k0], stop - start)
            out = Runs()
            out.offs = [0, *(o - start for o in offs[k0 + 1 : k1 + 1])]
            out.lines = self.lines[k0 : k1 + 1]
            out.cols = [self.cols[k0] + start - offs[k0], *self.cols[k0 + 1 : k1 + 1]]
            out.n = stop - start
            return out
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        k = bisect_right(self.offs, i) - 1
        return (self.lines[k], self.cols[k] + i - self.offs[k])

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        line, col = value
        for k, ln in enumerate(self.lines):
            if ln == line and 0 <= col - self.cols[k] < self._end(k) - self.offs[k]:
                return self.offs[k] + int(col) - self.cols[k]
        raise ValueError(value)


@record
class Located:
    """A string and the source position of each of its characters.

    ``positions`` is either one Pos per character, or empty when the mapping is unknown; then
    every character is placed on ``fallback`` (the whole token's span).
    """

    value: str
    positions: Sequence[Pos]
    fallback: Span
    path: str

    def __init__(self, value: str, positions: Sequence[Pos], fallback: Span, path: str) -> None:
        # Written out: ~25k per 1,000-manifest run (see tpcheck.record)
        d = self.__dict__
        d["value"], d["positions"], d["fallback"], d["path"] = value, positions, fallback, path

    def span(self, start: int = 0, end: int | None = None) -> Span:
        """Span of ``value[start:end]`` (end exclusive)."""
        end = len(self.value) if end is None else end
        ps = self.positions
        if type(ps) is Linear and start >= 0:  # one line: no tuple per end (most values)
            if end <= start or end > ps.n:
                return self.fallback
            return Span(self.path, ps.line, ps.col + start, ps.line, ps.col + end)
        if not ps or end <= start or end > len(ps):
            return self.fallback
        a = self.positions[start]
        b = self.positions[end - 1]
        if b[0] < a[0] or (b[0] == a[0] and b[1] < a[1]):
            # the characters come from two places (x$MODEL: the word, then the value where MODEL
            # was assigned above): no span runs backwards, the token as written stands for them
            return self.fallback
        return Span(self.path, a[0], a[1], b[0], b[1] + 1)

    def sub(self, start: int, end: int) -> Located:
        if not self.positions:
            return Located(self.value[start:end], (), self.fallback, self.path)
        return Located(
            self.value[start:end], self.positions[start:end], self.span(start, end), self.path
        )


class FilePositions(Sequence[Pos]):
    """Positions of ``index.text[start:start + n]``, computed on demand (no list per file).

    A shell script is tokenized straight from the file; building a tuple per character up
    front would cost ~70 bytes a character, 150 MB for a 2-MB script.
    """

    __slots__ = ("_ix", "n", "start")

    def __init__(self, index: LineIndex, start: int, n: int) -> None:
        self._ix, self.start, self.n = index, start, n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Pos]:
        if not self.n:
            return iter(())
        line, col = self._ix.pos(self.start)
        return _walk_positions(self._ix.text, self.start, self.start + self.n, line, col)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self.n)
            if step != 1:
                return [self[k] for k in range(start, stop, step)]
            return FilePositions(self._ix, self.start + start, max(0, stop - start))
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self._ix.pos(self.start + i)

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        line, col = value
        if not 1 <= line <= len(self._ix.starts):
            raise ValueError(value)
        k = self._ix.offset(line, col) - self.start
        if not 0 <= k < self.n or self[k] != value:
            raise ValueError(value)
        return k


def _walk_positions(text: str, start: int, end: int, line: int, col: int) -> Iterator[Pos]:
    for i in range(start, end):
        yield (line, col)
        if text[i] == "\n":
            line += 1
            col = 1
        else:
            col += 1


def from_file(index: LineIndex, path: str, start: int = 0, end: int | None = None) -> Located:
    """The file's own text between two offsets, each character at its place."""
    end = len(index.text) if end is None else end
    value = index.text[start:end]
    positions = FilePositions(index, start, end - start)
    if end > start:
        a, b = index.pos(start), index.pos(end - 1)
        fb = Span(path, a[0], a[1], b[0], b[1] + 1)
    else:
        fb = Span(path, *index.pos(start), *index.pos(start))
    return Located(value, positions, fb, path)
