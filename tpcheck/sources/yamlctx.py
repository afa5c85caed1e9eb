"""Where a YAML node sits in the file, also for YAML nested inside a YAML string."""

from __future__ import annotations

from tpcheck.sources.base import Span
from tpcheck.sources.positions import LineIndex, Located
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.words import file_budget
from tpcheck.sources.yaml_scalar import locate, node_span

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAGS = {
    yaml.ScalarNode: "tag:yaml.org,2002:str",
    yaml.SequenceNode: "tag:yaml.org,2002:seq",
    yaml.MappingNode: "tag:yaml.org,2002:map",
}


class NodeLoader(SAFE_LOADER):  # type: ignore[misc]
    """The safe (C when present) loader, used only to compose nodes, with tag resolution off.

    Readers look at node kinds and scalar text, never at resolved tags, and never construct
    Python objects (so no tag, safe or not, is ever acted on). Resolving implicit tags runs a
    Python regex per scalar and costs a third of composing; skipping it is most of the reason
    reading a manifest costs less than twice composing it with the stock loader.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        return _TAGS[kind]

    # The composer calls these two around every node and ignores what they return: C
    # callables that take the same arguments and do nothing (``slice(parent, index)``,
    # ``tuple()``) cost a tenth of a Python method, ~45 M instructions a 1,000-file run.
    descend_resolver = slice
    ascend_resolver = tuple


LOADER: Any = NodeLoader


class Ctx:
    """Positions for nodes composed from ``index.text``; ``outer`` maps them further out."""

    def __init__(self, path: str, index: LineIndex, outer: Located | None = None) -> None:
        self.path = path
        self.index = index
        self.outer = outer
        self.loader = LOADER
        self._hints: list[int] | None = None
        self.expansion = file_budget()  # the kubelet's $(VAR) expansion here (words.py)

    def hints(self) -> list[int]:
        """Offsets of engine hints in this text (computed once per file, on first use)."""
        if self._hints is None:
            from tpcheck.sources.hints import hint_offsets

            self._hints = hint_offsets(self.index.text)
        return self._hints

    def locate(self, node: Any) -> Located:
        loc = locate(node, self.index, self.path)
        if self.outer is None:
            return loc
        return self._map(loc)

    def span(self, node: Any) -> Span:
        if isinstance(node, yaml.ScalarNode) and node.value:
            return self.locate(node).span()
        s = node_span(node, self.index, self.path)
        if self.outer is None:
            return s
        a = self._pos(s.line, s.column)
        b = self._pos(s.end_line, max(1, s.end_column - 1))
        if b < a and self.outer is not None and self.outer.positions:
            # a block node ends at the start of the line after it, past the embedded text:
            # end it at the embedded text's last character instead of before its start
            b = max(a, self.outer.positions[-1])
        return Span(self.path, a[0], a[1], b[0], b[1] + 1)

    def inner(self, loc: Located) -> Ctx:
        return Ctx(self.path, LineIndex(loc.value), loc)

    def _pos(self, line: int, col: int) -> tuple[int, int]:
        assert self.outer is not None
        off = self.index.offset(line, col)
        if self.outer.positions and 0 <= off < len(self.outer.positions):
            return self.outer.positions[off]
        fb = self.outer.fallback
        return (fb.line, fb.column)

    def _map(self, loc: Located) -> Located:
        assert self.outer is not None
        if not loc.positions or not self.outer.positions:
            fb = self.outer.fallback
            return Located(loc.value, (), fb, self.path)
        pos = [self._pos(line, col) for line, col in loc.positions]
        a, b = pos[0], pos[-1]
        return Located(loc.value, pos, Span(self.path, a[0], a[1], b[0], b[1] + 1), self.path)


class NodePlace:
    """A scalar's positions worked out on first use (a ``words.Placement``): the items of a
    container's ``command``/``args`` list are words whose place most runs never ask for."""

    __slots__ = ("ctx", "loc", "node")

    def __init__(self, ctx: Ctx, node: Any) -> None:
        self.ctx, self.node = ctx, node
        self.loc: Located | None = None

    def _located(self) -> Located:
        if self.loc is None:
            self.loc = self.ctx.locate(self.node)
        return self.loc

    def raw_span(self) -> Span:
        return self._located().fallback

    def located(self, value: str, raw: Span) -> Located:
        return self._located()


def scalar(node: Any) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None
