"""Python launch code, read with libcst (never imported or run).

``LLM(...)``, ``EngineArgs(...)``, ``AsyncEngineArgs(...)`` (vLLM) and ``sgl.Engine(...)``
(SGLang) keyword arguments, and ``subprocess`` argument lists that start an engine. A name bound
at module level to a plain literal is resolved; anything else is kept in ``unresolved``.
"""

from __future__ import annotations

import re

from tpcheck.engines.flags import SGLANG_KWARGS, VLLM_KWARGS
from tpcheck.sources.argv import (
    Fields,
    deployment_from_fields,
    deployment_from_words,
    find_launch,
    set_typed,
)
from tpcheck.sources.base import Deployment, ReadResult, SourceError, Span
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
        tree = _quiet_parse(text)
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


def read_python(path: str, text: str, *, use_ast: bool = True) -> ReadResult:
    """The launches in ``text``: with the interpreter's ``ast`` when it parses the file (ten
    times faster than libcst, issue 14 item 8: 40,000 ``LLM()`` calls took 166 s and 1.1 GB),
    else with libcst, which also knows newer grammars and literals ``ast`` refuses outright
    (``"\\N{NOPE}"``, a 5,000-digit int). Both find the same deployments (tests compare them)."""
    if not any(hint in text for hint in ("LLM", "Engine", "vllm", "sglang")):
        return ReadResult(path, (), (), text)  # no launcher name: nothing libcst could find
    deep = _too_deep(path, text)
    if deep is not None:
        return ReadResult(path, (), (deep,), text)
    if use_ast:
        fast = _read_with_ast(path, text)
        if fast is not None:
            return fast
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        msg = str(e.message).splitlines()[0] if e.message else "syntax error"
        return ReadResult(path, (), (SourceError(path, e.raw_line, e.raw_column + 1,
                                                 f"Python does not parse: {msg}"),), text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # read only: no second tree
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
                row = table.get(arg.keyword.value)
                if row is None:
                    continue
                w = word(arg.value)
                if w is not None:
                    set_typed(f, row[0], row[1], w)
            return deployment_from_fields(path, engine, span(node), f,
                                          extra={"entrypoint": "llm"})

    wrapper.visit(V())
    return ReadResult(path, tuple(found), (), text)


class _Source:
    """Character columns and source text of ``ast`` nodes (``ast`` counts UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        # ast splits lines on \r\n, \r and \n only (str.splitlines also splits on \f, \x1c...)
        self.lines = [line.encode("utf-8") for line in _LINE_BREAK.split(text)]

    def column(self, line: int, byte_col: int) -> int:
        """1-based character column of byte offset ``byte_col`` on 1-based ``line``."""
        raw = self.lines[line - 1] if 0 < line <= len(self.lines) else b""
        return len(raw[:byte_col].decode("utf-8", "replace")) + 1

    def span(self, path: str, node: Any) -> Span:
        line, end_line = node.lineno, node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return Span(path, line, self.column(line, node.col_offset), end_line,
                    self.column(end_line, end_col))

    def code(self, node: Any) -> str:
        """The node as written (``ast.get_source_segment`` splits the whole file per call)."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        end = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        if first == last:
            raw: bytes = self.lines[first][node.col_offset:end]
        else:
            raw = b"\n".join([self.lines[first][node.col_offset:], *self.lines[first + 1:last],
                              self.lines[last][:end]])
        return raw.decode("utf-8", "replace")


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SIMPLE_STRING = re.compile(r"([rRbBuU]{0,2})('\'\'|\"\"\"|'|\")(.*)\2", re.DOTALL)


def _quiet_parse(text: str) -> Any:
    """``ast.parse`` without its warnings on stderr ("invalid escape sequence" is the user's
    code's business, not the linter's output)."""
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def _read_with_ast(path: str, text: str) -> ReadResult | None:
    """``read_python`` with ``ast``; None when ``ast`` refuses the file (libcst reads it then)."""
    import ast

    try:
        tree = _quiet_parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    src = _Source(text)

    def literal(node: ast.expr) -> Any:
        v = _ast_literal(node)
        if (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
                and not _one_string_token(src.code(node))):
            return None  # "a" "b": libcst keeps implicit concatenation as an expression
        return v

    consts: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and literal(stmt.value) is not None
        ):
            consts[stmt.targets[0].id] = stmt.value

    def word(node: ast.expr) -> Word:
        """A literal (or a constant naming one) as a Word with per-character positions."""
        target = consts.get(node.id, node) if isinstance(node, ast.Name) else node
        lit = literal(target)
        if lit is None:
            fb = src.span(path, node)
            code = src.code(node)
            return Word(Located(code, (), fb, path), fb, unresolved=code)
        fb = src.span(path, target)
        if isinstance(target, ast.Constant) and isinstance(lit, str) and fb.line == fb.end_line:
            m = _SIMPLE_STRING.fullmatch(src.code(target))
            if m is not None and m.group(3) == lit:  # written without escapes
                off = fb.column + len(m.group(1)) + len(m.group(2))
                pos = [(fb.line, off + k) for k in range(len(lit))]
                return Word(Located(lit, pos, fb, path), fb)
        return Word(Located(str(lit), (), fb, path), fb)

    def kwargs_call(node: ast.Call, engine: Any, table: dict[str, Any]) -> Deployment:
        f = Fields()
        if node.args and not isinstance(node.args[0], ast.Starred):
            set_typed(f, "model", "model", word(node.args[0]))
        for kw in node.keywords:
            if kw.arg is None:
                f.notes.append("**kwargs not read")
                continue
            row = table.get(kw.arg)
            if row is not None:
                set_typed(f, row[0], row[1], word(kw.value))
        return deployment_from_fields(path, engine, src.span(path, node), f,
                                      extra={"entrypoint": "llm"})

    found: list[Deployment] = []
    stack: list[ast.AST] = [tree]
    while stack:  # depth first, in source order, as libcst's visitor goes
        node = stack.pop()
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else (
            fn.attr if isinstance(fn, ast.Attribute) else "")
        owner = fn.value.id if isinstance(fn, ast.Attribute) and isinstance(
            fn.value, ast.Name) else ""
        if name in VLLM_CALLS:
            found.append(kwargs_call(node, "vllm", VLLM_KWARGS))
        elif name == "Engine" and owner in ("sgl", "sglang", ""):
            found.append(kwargs_call(node, "sglang", SGLANG_KWARGS))
        elif name in SUBPROCESS and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            ws = [word(el) for el in node.args[0].elts if not isinstance(el, ast.Starred)]
            la = find_launch([w.value for w in ws])
            if la is not None:
                found.append(deployment_from_words(path, ws, la))
    return ReadResult(path, tuple(found), (), text)


def _one_string_token(code: str) -> bool:
    import io
    import tokenize

    try:
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        return sum(t.type == tokenize.STRING for t in tokens) == 1
    except (tokenize.TokenError, SyntaxError):
        return False


def _ast_literal(node: Any) -> Any:
    """``_literal`` for ``ast`` nodes: the same values for the same source."""
    import ast

    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return str(v)  # libcst reads True/False as names
        if isinstance(v, int) and len(str(abs(v))) > 400:
            return None
        return v if isinstance(v, (str, bytes, int, float)) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _ast_literal(node.operand)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else None
    return None


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
