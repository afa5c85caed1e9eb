"""Line and column of libcst nodes, placed lazily a chunk of statements at a time."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


class Positions:
    """Line and column of the nodes a finding can point at, worked out in source order up to the
    last statement asked for: libcst's PositionProvider over the whole module recorded every
    node of a large file (most of a 10,000-call file's time and memory). Top-level statements
    are placed ``CHUNK`` at a time, each chunk by PositionProvider on a module of those
    statements alone, shifted by the lines before them (a resolve per statement cost ~1 ms)."""

    CHUNK = 256

    def __init__(self, module: Any) -> None:
        self.module = module
        self.ranges: dict[Any, Any] = {}
        self.homes: dict[int, Any] = {}  # id(node) -> its top-level statement (borrowed values)
        self.index = {id(top): i for i, top in enumerate(module.body)}
        self.placed = 0  # module.body[:placed] have their ranges
        self.line = 1 + sum(module.code_for_node(e).count("\n") for e in module.header)

    def home(self, root: Any, top: Any) -> None:
        """``root`` and every node under it live in ``top``."""
        stack = [root]
        while stack:
            node = stack.pop()
            self.homes[id(node)] = top
            stack.extend(node.children)

    def get(self, node: Any, top: Any) -> Any:
        r = self.ranges.get(node)
        if r is None:
            self.place(self.homes.get(id(node), top))
            r = self.ranges[node]
        return r

    def place(self, top: Any) -> None:
        import libcst as cst
        from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

        i = self.index[id(top)]
        while self.placed <= i:
            chunk = self.module.body[self.placed : self.placed + self.CHUNK]
            alone = cst.Module(body=chunk, header=[], footer=[],
                               default_indent=self.module.default_indent,
                               default_newline=self.module.default_newline)
            shift = self.line - 1
            for node, r in MetadataWrapper(alone, unsafe_skip_copy=True).resolve(
                    PositionProvider).items():
                self.ranges[node] = CodeRange(CodePosition(r.start.line + shift, r.start.column),
                                              CodePosition(r.end.line + shift, r.end.column))
            self.line += alone.code.count("\n")
            self.placed += len(chunk)


__all__ = ["Positions"]
