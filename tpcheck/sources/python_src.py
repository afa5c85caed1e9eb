"""Python launch code, read with libcst (never imported or run).

``LLM(...)``, ``EngineArgs(...)``, ``AsyncEngineArgs(...)`` (vLLM) and ``sgl.Engine(...)``
(SGLang) keyword arguments, and ``subprocess`` argument lists that start an engine. A name bound
at module level to a plain literal is resolved; anything else is kept in ``unresolved``.
"""

from __future__ import annotations

from tpcheck.engines.flags import SGLANG_KWARGS, VLLM_KWARGS
from tpcheck.sources.argv import (
    Fields,
    deployment_from_fields,
    deployment_from_words,
    find_launch,
    set_typed,
)
from tpcheck.sources.base import Deployment, OptionUse, ReadResult, SourceError, Span
from tpcheck.sources.positions import Located
from tpcheck.sources.shell import Word

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

VLLM_CALLS = frozenset({"LLM", "EngineArgs", "AsyncEngineArgs", "AsyncLLMEngine", "LLMEngine"})
SUBPROCESS = frozenset({"run", "Popen", "call", "check_call", "check_output", "execvp", "execv"})


# Python nested deeper than this is not handed to libcst, whose time grows faster than linearly
# with depth (a 2,000-term `1+1+...` chain takes seconds); real launch code nests a few dozen.
MAX_DEPTH = 200


def _too_deep(path: str, text: str) -> SourceError | None:
    """A quick check with the interpreter's own parser (it runs nothing): None when libcst may
    read the file. Other syntax errors are left to libcst, which knows newer grammars."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        if "too many nested" not in str(e.msg):
            return None
        return SourceError(path, e.lineno or 1, e.offset or 1,
                           f"Python nests too deep to read: {e.msg}")
    except (RecursionError, MemoryError, ValueError):
        return SourceError(path, 1, 1, "Python nests too deep to read")
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            line = getattr(node, "lineno", 1)
            return SourceError(path, line, getattr(node, "col_offset", 0) + 1,
                               f"Python nests over {MAX_DEPTH} levels deep; not read")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return None


def read_python(path: str, text: str) -> ReadResult:
    if not any(hint in text for hint in ("LLM", "Engine", "vllm", "sglang")):
        return ReadResult(path, (), (), text)  # no launcher name: nothing libcst could find
    deep = _too_deep(path, text)
    if deep is not None:
        return ReadResult(path, (), (deep,), text)
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        msg = str(e.message).splitlines()[0] if e.message else "syntax error"
        return ReadResult(path, (), (SourceError(path, e.raw_line, e.raw_column + 1,
                                                 f"Python does not parse: {msg}"),), text)
    wrapper = MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)

    def span(node: Any) -> Span:
        r = positions[node]
        return Span(path, r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)

    consts: dict[str, Any] = {}
    for stmt in wrapper.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and _literal(small.value) is not None
                ):
                    consts[small.targets[0].target.value] = small.value

    def word(node: Any) -> Word | None:
        """A literal (or a constant naming one) as a Word with per-character positions."""
        target = node
        if isinstance(node, cst.Name) and node.value in consts:
            target = consts[node.value]
        lit = _literal(target)
        if lit is None:
            src = wrapper.module.code_for_node(node)
            fb = span(node)
            return Word(Located(src, (), fb, path), fb, unresolved=src)
        fb = span(target)
        if isinstance(target, cst.SimpleString) and target.evaluated_value == target.value[
            len(target.prefix) + len(target.quote) : -len(target.quote)
        ] and fb.line == fb.end_line:
            off = fb.column + len(target.prefix) + len(target.quote)
            pos = [(fb.line, off + k) for k in range(len(str(lit)))]
            return Word(Located(str(lit), pos, fb, path), fb)
        return Word(Located(str(lit), (), fb, path), fb)

    found: list[Deployment] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            fn = node.func
            name = fn.value if isinstance(fn, cst.Name) else (
                fn.attr.value if isinstance(fn, cst.Attribute) else ""
            )
            owner = fn.value.value if isinstance(fn, cst.Attribute) and isinstance(
                fn.value, cst.Name) else ""
            if name in VLLM_CALLS:
                found.append(self.kwargs_call(node, "vllm", VLLM_KWARGS))
            elif name == "Engine" and owner in ("sgl", "sglang", ""):
                found.append(self.kwargs_call(node, "sglang", SGLANG_KWARGS))
            elif name in SUBPROCESS and node.args:
                arg0 = node.args[0].value
                if isinstance(arg0, (cst.List, cst.Tuple)):
                    words = [word(el.value) for el in arg0.elements
                             if isinstance(el, cst.Element)]
                    ws = [w for w in words if w is not None]
                    la = find_launch([w.value for w in ws])
                    if la is not None:
                        found.append(deployment_from_words(path, ws, la))

        def kwargs_call(self, node: cst.Call, engine: Any, table: dict[str, Any]) -> Deployment:
            f = Fields()
            for k, arg in enumerate(node.args):
                if arg.keyword is None:
                    if k == 0 and arg.star == "":
                        w = word(arg.value)
                        if w is not None:
                            set_typed(f, "model", "model", w)
                    elif arg.star == "**":
                        f.notes.append("**kwargs not read")
                    continue
                w = word(arg.value)
                f.options.append(_keyword_use(arg.keyword.value, w, span(arg.keyword)))
                row = table.get(arg.keyword.value)
                if row is None:
                    continue
                if w is not None:
                    set_typed(f, row[0], row[1], w)
            return deployment_from_fields(path, engine, span(node), f,
                                          extra={"entrypoint": "llm"})

    wrapper.visit(V())
    return ReadResult(path, tuple(found), (), text)


def _keyword_use(name: str, w: Word | None, at: Span) -> OptionUse:
    """A keyword argument for the TP0xx rules: its name and its literal value, if it has one."""
    value = None if w is None or w.unresolved is not None else w.value
    return OptionUse(name, value, lambda: (at, w.value_span() if w is not None else None),
                     keyword=True)


def _literal(node: Any) -> Any:
    import libcst as cst

    if isinstance(node, cst.SimpleString):
        try:
            return node.evaluated_value
        except (SyntaxError, ValueError):  # "\N{NOPE}", a bad escape: the engine could not run it
            return None
    if isinstance(node, cst.Integer):
        digits = node.value.replace("_", "")
        if len(digits) > 400:  # int() refuses over 4,300 digits; no size is that long anyway
            return None
        return int(digits, 0)
    if isinstance(node, cst.Float):
        return float(node.value)
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal(node.expression)
        return -inner if isinstance(inner, (int, float)) else None
    return None
