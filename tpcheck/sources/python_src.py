"""Python launch code, read with libcst (never imported or run).

``LLM(...)``, ``EngineArgs(...)``, ``AsyncEngineArgs(...)`` (vLLM) and ``sgl.Engine(...)``
(SGLang) keyword arguments, and ``subprocess`` argument lists that start an engine. A name bound
at module level to a plain literal is resolved; anything else is kept in ``unresolved``.

An environment read with a literal default — ``os.getenv("MODEL_ID", "org/name")``,
``os.environ.get("TP", "8")``, wrapped in ``int()``/``float()``/``str()``, inline or through a
name bound once in the file — counts as its default: for the model as a hint (the finding says
so, since the environment may name another), for other options as the value, with a note.
``os.environ["X"]`` has no default and stays unresolved.
"""

from __future__ import annotations

from tpcheck.deferred import lazy_re
from tpcheck.engines.flags import SGLANG_KWARGS, VLLM_KWARGS
from tpcheck.sources.argv import (
    Fields,
    deployment_from_fields,
    deployment_from_words,
    find_launch,
    set_typed,
)
from tpcheck.sources.base import (
    MAX_LAUNCHES,
    Deployment,
    ModelHint,
    OptionUse,
    ReadResult,
    SourceError,
    Span,
    launch_limit,
)
from tpcheck.sources.positions import Located
from tpcheck.sources.python_env import argparse_defaults, env_default, env_names
from tpcheck.sources.python_literals import literal, module_consts
from tpcheck.sources.python_pins import python_pins
from tpcheck.sources.python_positions import Positions
from tpcheck.sources.python_scan import (
    SUBPROCESS,
    VLLM_CALLS,
    launch_kind,
    modal_gpus,
    scan_visitor,
)
from tpcheck.sources.words import Word

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

# Python nested deeper than this is not handed to libcst, whose time grows faster than linearly
# with depth (a 2,000-term `1+1+...` chain takes seconds); real launch code nests a few dozen.
MAX_DEPTH = 200
# An integer literal longer than int's default conversion limit (4,300 digits)
_LONG_INT = lazy_re(r"(?<![\w.])[0-9][0-9_]{4000,}(?![\w.])")


def _screen(path: str, text: str) -> SourceError | int | None:
    """A first read with the interpreter's own parser (``compile`` to a tree: it runs nothing)
    before libcst sees the file: an error when the text does not parse or nests too deep;
    else the line of the first top-level statement past MAX_NODES syntax nodes, where
    reading must stop (None: read it all). libcst's parser took 35-80 s on a 12 KB
    ``x = --a--a…`` with a syntax error after it (issue 28), which ``compile`` refuses in
    milliseconds, so libcst only reads text that compiles. The grammar is the running
    interpreter's: syntax newer than it is refused here, as that Python would refuse it."""
    import ast

    try:
        try:
            tree = ast.parse(text, path)  # compile(..., flags=ast.PyCF_ONLY_AST)
        except SyntaxError as e:
            if "Exceeds the limit" not in str(e.msg):
                raise
            # a literal past int's 4,300-digit conversion limit is legal Python (the engine
            # reads the value, tpcheck reports it): screened as a name of the same length
            tree = ast.parse(_LONG_INT.sub(lambda m: "x" * len(m.group()), text), path)
    except SyntaxError as e:
        if "too many nested" in str(e.msg):
            return SourceError(path, e.lineno or 1, e.offset or 1,
                               f"Python nests too deep to read: {e.msg}")
        return SourceError(path, e.lineno or 1, max(e.offset or 1, 1),
                           f"Python does not parse: {e.msg}")
    except ValueError as e:  # 3.10/3.11: "source code string cannot contain null bytes"
        return SourceError(path, 1, 1, f"Python does not parse: {e}")
    except (RecursionError, MemoryError):
        return SourceError(path, 1, 1, "Python nests too deep to read")
    nodes = 0
    for i, top in enumerate(tree.body):
        stack: list[tuple[ast.AST, int]] = [(top, 1)]
        while stack:
            node, depth = stack.pop()
            nodes += 1
            if depth > MAX_DEPTH:
                line = getattr(node, "lineno", 1)
                return SourceError(path, line, getattr(node, "col_offset", 0) + 1,
                                   f"Python nests over {MAX_DEPTH} levels deep; not read")
            stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
        if nodes > MAX_NODES:
            return _first_line(tree.body, i)
    return None


def _refused(path: str, text: str, err: Exception) -> SourceError:
    """The error for a file libcst would not build a tree for, at the position the
    interpreter's own parser gives (libcst's validation errors carry none). Deep nesting is
    ``_too_deep``'s, and a RecursionError past it is the caller's (``read_path``)."""
    import ast

    try:
        ast.parse(text)
    except SyntaxError as e:
        return SourceError(path, e.lineno or 1, e.offset or 1, f"Python does not parse: {e.msg}")
    except (RecursionError, MemoryError, ValueError):
        pass
    return SourceError(path, 1, 1, f"Python does not parse: {str(err).rstrip('.')}")


def _first_line(body: list[Any], i: int) -> int:
    """The line where statement ``i`` of the module starts (its decorators included), moved
    back to an earlier statement while it shares a line with the one before (``a(); b()``)."""
    while True:
        top = body[i]
        start: int = min([top.lineno, *(d.lineno for d in getattr(top, "decorator_list", ()))])
        if i == 0 or (body[i - 1].end_lineno or start) < start:
            return start
        i -= 1


def read_python(path: str, text: str) -> ReadResult:
    if not any(hint in text for hint in ("LLM", "Engine", "vllm", "sglang")):
        return ReadResult(path, (), (), text)  # no launcher name: nothing libcst could find
    limit: SourceError | None = None  # where reading stopped (MAX_CHARS, MAX_NODES, MAX_LAUNCHES)
    if len(text) > MAX_CHARS:
        cut = _cut(text)
        if cut is None:
            return ReadResult(path, (), (SourceError(
                path, 1, 1, f"the file is longer than tpcheck reads as Python ({MAX_CHARS:,} "
                            "characters) and has no top-level statement to stop at; not read"),),
                text)
        limit = _stopped(path, text, cut, f"{MAX_CHARS:,} characters")
        text = text[:cut]
    screened = _screen(path, text)
    if isinstance(screened, SourceError):
        if limit is not None and screened.message.startswith("Python does not parse"):
            # a cut inside a bracket or a string: say the limit, not the cut
            screened = SourceError(path, limit.line, 1, _INSIDE.format(limit.line))
        return ReadResult(path, (), (screened,), text)
    if screened is not None:
        cut = _line_start(text, screened)
        limit = _stopped(path, text, cut, f"{MAX_NODES:,} syntax nodes")
        text = text[:cut]
    import libcst as cst

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        msg = str(e.message).splitlines()[0] if e.message else "syntax error"
        if limit is not None:  # a cut inside a bracket or a string: say the limit, not the cut
            return ReadResult(path, (), (SourceError(
                path, limit.line, 1, _INSIDE.format(limit.line)),), text)
        return ReadResult(path, (), (SourceError(path, e.raw_line, e.raw_column + 1,
                                                 f"Python does not parse: {msg}"),), text)
    except cst.CSTValidationError as e:
        # libcst tokenised the file but would not build the tree (b"" "" concatenates bytes and
        # str, which Python refuses too): the file's own error, never the run's.
        return ReadResult(path, (), (_refused(path, text, e),), text)
    reader = _Reader(path, module)
    reader.run()
    # the launch limit, when reached, is the earlier stop
    stops = reader.limits or ([limit] if limit is not None else [])
    return ReadResult(path, python_pins(reader.found, text, path), tuple(stops), text)


def _stopped(path: str, text: str, cut: int, what: str) -> SourceError:
    line = text.count("\n", 0, cut) + 1
    return SourceError(path, line, 1, f"the file is longer than tpcheck reads as Python ({what}); "
                                      f"nothing from line {line} on is checked")


def _line_start(text: str, line: int) -> int:
    """Offset of the first character of 1-based ``line``."""
    at = 0
    for _ in range(line - 1):
        at = text.index("\n", at) + 1
    return at


# Work limits (issue 14 item 8), so any file under the size cap is read in seconds. libcst's
# time grows with the syntax nodes it parses (~35 us each to parse, as much again to visit, on
# a busy 2-core box: 5 MB of LLM() calls took 198 s), so a Python file is read up to
# MAX_CHARS characters (what the interpreter's parser screens in about a second), then up to
# MAX_NODES syntax nodes, each cut at a top-level statement; and past base.MAX_LAUNCHES launches
# (each costs its positions and findings) the rest is not checked. The first limit reached is
# said in one line (exit 2, as the shell reader's MAX_WORDS), never a silent "0 deployments". Launch
# scripts have a few hundred nodes; the largest engine sources (SGLang's scheduler.py, 282 KB)
# ~28,000.
MAX_CHARS = 512 * 1024
_INSIDE = ("the file is longer than tpcheck reads as Python and line {} is inside a statement; "
           "not read")
MAX_NODES = 50_000
# A line that can start a top-level statement the prefix before it can end without: not a
# continuation clause (else, elif, except, finally), not after a decorator or a backslash.
_TOP_LINE = lazy_re(r"\n(?![ \t\n#@)\]}]|else\b|elif\b|except\b|finally\b)")


def _cut(text: str) -> int | None:
    """Where to stop reading a Python text over MAX_CHARS: the start of the last line at or
    before MAX_CHARS that begins a top-level statement (None: no such line). A line inside a
    bracket or a string is not known here; libcst then fails on the prefix and the file is
    not read."""
    at = text.rfind("\n", 0, MAX_CHARS)
    while at >= 0:
        prev = text.rfind("\n", 0, at)
        before = text[prev + 1 : at]
        if _TOP_LINE.match(text, at) and not before.startswith("@") and not before.endswith("\\"):
            return at + 1
        at = prev
    return None


class _Reader:
    """One parsed file: its positions, constants and argparse defaults, and the launches its
    calls make (``run`` scans the file once, then reads the launch calls in source order)."""

    def __init__(self, path: str, module: Any) -> None:
        self.path = path
        self.module = module
        self.positions = Positions(module)
        self.top: Any = None  # the top-level statement of the call being read
        self.consts = module_consts(module)
        self.flags: dict[str, tuple[str, Any]] = {}
        self.found: list[Deployment] = []
        self.limits: list[SourceError] = []  # MAX_LAUNCHES, when reached
        self.lists: dict[str, Any] = {}  # names bound once to a list or tuple literal
        self.gpus: dict[int, tuple[int, str | None, Any]] = {}  # id(top) -> Modal gpu=

    def run(self) -> None:
        import libcst as cst

        scan = scan_visitor()
        for top in self.module.body:
            scan.top = top
            top.visit(scan)
        self.flags = argparse_defaults(call for call, _ in scan.options)
        self.consts.update(env_names(scan.binds, self.consts, self.flags))
        # a class attribute or a local bound once in the file to a literal (Modal apps keep
        # the model and GPU count there); a list bound once is an argv a launch may name
        counts: dict[str, int] = {}
        for name, _, _ in scan.binds:
            counts[name] = counts.get(name, 0) + 1
        for name, value, _ in scan.binds:
            if counts[name] == 1 and name not in self.consts and value is not None and (
                    literal(value) is not None):
                self.consts[name] = value
        self.lists = {name: value for name, value, _ in scan.binds
                      if counts[name] == 1 and isinstance(value, (cst.List, cst.Tuple,
                                                                  cst.BinaryOperation))}
        self.gpus = modal_gpus(self.module, self.consts)
        # where the values a launch may borrow are (module constants, environment reads,
        # argparse defaults): their statements are placed when a span asks for them
        const_ids = {id(v) for v in self.consts.values()}
        for top in self.module.body:
            if isinstance(top, cst.SimpleStatementLine):
                for small in top.body:
                    if isinstance(small, cst.Assign) and id(small.value) in const_ids:
                        self.positions.home(small.value, top)
        for name, value, top in scan.binds:
            if value is not None and (self.consts.get(name) is value
                                      or self.lists.get(name) is value):
                self.positions.home(value, top)
        for call, top in scan.options:
            self.positions.home(call, top)
        for node, top in scan.calls:
            self.top = top
            if len(self.found) >= MAX_LAUNCHES and self.launches(node):
                self.limits.append(launch_limit(self.path, self.span(node), MAX_LAUNCHES))
                return
            self.call(node)

    def launches(self, node: Any) -> bool:
        """Whether ``call`` would add a deployment for this call (the launch cap's count)."""
        before = len(self.found)
        self.call(node)
        added = len(self.found) > before
        del self.found[before:]
        return added

    def span(self, node: Any) -> Span:
        r = self.positions.get(node, self.top)
        return Span(self.path, r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)

    def env_default(self, node: Any) -> tuple[str, Any] | None:
        """(what is read, default literal node) when ``node`` (or the name bound to it) reads
        the environment or an argparse option with a literal default."""
        import libcst as cst

        target = self.consts.get(node.value, node) if isinstance(node, cst.Name) else node
        return env_default(target, self.flags)

    def env_origin(self, node: Any, label: str, lit: Any) -> str:
        return f"the default of {label} `{literal(lit)}` (line {self.span(lit).line})"

    def word(self, node: Any) -> Word | None:
        """A literal (or a constant naming one, or an environment read's literal default) as a
        Word with per-character positions."""
        import libcst as cst

        path = self.path
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
                and node.func.value in ("str", "int") and len(node.args) == 1):
            node = node.args[0].value  # str(tp): the value tp names
        target = node
        if isinstance(node, cst.Name) and node.value in self.consts:
            target = self.consts[node.value]
        env = env_default(target, self.flags)
        if env is not None:
            target = env[1]
        lit = literal(target)
        if lit is None:
            src = self.module.code_for_node(node)
            fb = self.span(node)
            return Word(Located(src, (), fb, path), fb, unresolved=src)
        fb = self.span(target)
        if isinstance(target, cst.SimpleString) and target.evaluated_value == target.value[
            len(target.prefix) + len(target.quote) : -len(target.quote)
        ] and fb.line == fb.end_line:
            off = fb.column + len(target.prefix) + len(target.quote)
            pos = [(fb.line, off + k) for k in range(len(str(lit)))]
            return Word(Located(str(lit), pos, fb, path), fb)
        return Word(Located(str(lit), (), fb, path), fb)

    def call(self, node: Any) -> None:
        import libcst as cst

        kind = launch_kind(node)
        if kind == "vllm":
            self.found.append(self.with_gpus(self.kwargs_call(node, "vllm", VLLM_KWARGS)))
        elif kind == "sglang":
            self.found.append(self.with_gpus(self.kwargs_call(node, "sglang", SGLANG_KWARGS)))
        elif kind == "subprocess":
            fn = node.func
            name = fn.attr.value if isinstance(fn, cst.Attribute) else getattr(fn, "value", "")
            at = 1 if name in ("execvp", "execv", "execvpe", "execve") else 0
            if len(node.args) > at:
                self.subprocess_call(node.args[at].value)

    def argv_elements(self, node: Any, depth: int = 0) -> list[Any] | None:
        """The elements of an argv: a list or tuple literal, a name bound once to one,
        ``a + b`` of those, ``" ".join(x)`` / ``shlex.join(x)`` of one; None otherwise."""
        import libcst as cst

        if depth > 8:
            return None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
                node.func.attr.value == "join") and len(node.args) == 1:
            return self.argv_elements(node.args[0].value, depth + 1)
        if isinstance(node, cst.Name) and node.value in self.lists:
            return self.argv_elements(self.lists[node.value], depth + 1)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            left = self.argv_elements(node.left, depth + 1)
            right = self.argv_elements(node.right, depth + 1)
            return None if left is None else [*left, *(right or [node.right])]
        if isinstance(node, (cst.List, cst.Tuple)):
            out: list[Any] = []
            for el in node.elements:
                if isinstance(el, cst.Element):
                    out.append(el.value)
                elif isinstance(el, cst.StarredElement):
                    inner = self.argv_elements(el.value, depth + 1)
                    out.extend(inner if inner is not None else [el.value])
            return out
        return None

    def subprocess_call(self, arg0: Any) -> None:
        """``subprocess.run([...])`` and friends: an argument list that starts an engine."""
        elements = self.argv_elements(arg0)
        if elements is None:
            return
        words = [self.word(el) for el in elements]
        ws = [w for w in words if w is not None]
        la = find_launch([w.value for w in ws])
        if la is not None:
            d = deployment_from_words(self.path, ws, la)
            envs = [(el, *e) for el in elements if (e := self.env_default(el)) is not None]
            self.found.append(self.with_gpus(self.env_model(d, envs)))

    def with_gpus(self, d: Deployment) -> Deployment:
        """A launch inside a Modal function or class gets the GPUs its decorator asks for."""
        from tpcheck.record import replace

        hit = self.gpus.get(id(self.top))
        if hit is None or d.gpus_requested is not None:
            return d
        count, product, node = hit
        span = self.span(node)
        kw: dict[str, Any] = {"gpus_requested": count}
        spans = {"gpus_requested": span}
        if product:
            kw["gpu_product"] = product
            spans["gpu_product"] = span
        return replace(d, **kw, spans={**spans, **d.spans})

    def env_model(self, d: Deployment, envs: list[tuple[Any, str, Any]]) -> Deployment:
        """A subprocess word that was an environment default: as the model it becomes a
        hint (the reference stays the expression), elsewhere a note."""
        from tpcheck.record import replace

        notes = list(d.notes)
        for node, var, lit in envs:
            value = str(literal(lit))
            where = d.spans.get("model")
            if d.model == value and where is not None and where.line == self.span(lit).line:
                src = self.module.code_for_node(node)
                d = replace(d, model=None, unresolved={**d.unresolved, "model": src},
                            model_hints=(*d.model_hints,
                                         ModelHint(value, self.env_origin(lit, var, lit))))
            else:
                notes.append(f"{value!r} is the default of {var}; the environment or "
                             "command line may set another")
        return replace(d, notes=tuple(notes)) if notes != list(d.notes) else d

    def kwargs_call(self, node: Any, engine: Any, table: dict[str, Any]) -> Deployment:
        f = Fields()
        model_hints: list[ModelHint] = []
        for k, arg in enumerate(node.args):
            if arg.keyword is None:
                if k == 0 and arg.star == "":
                    self.put(f, model_hints, "model", "model", arg.value)
                elif arg.star == "**":
                    f.notes.append("**kwargs not read")
                continue
            w = self.word(arg.value)
            f.options.append(_keyword_use(arg.keyword.value, w, self.span(arg.keyword)))
            row = table.get(arg.keyword.value)
            if row is None:
                continue
            self.put(f, model_hints, row[0], row[1], arg.value)
        return deployment_from_fields(self.path, engine, self.span(node), f,
                                      extra={"entrypoint": "llm",
                                             "model_hints": tuple(model_hints) or None})

    def put(self, f: Fields, model_hints: list[ModelHint], name: str, kind: Any,
            value: Any) -> None:
        """Set one keyword's field; an environment default is a hint (model) or noted."""
        env = self.env_default(value)
        w = self.word(value)
        if w is None:
            return
        if env is not None and kind == "model":
            # the environment names the model; its default is a hint, not the value
            src = self.module.code_for_node(value)
            fb = self.span(value)
            set_typed(f, name, kind, Word(Located(src, (), fb, self.path), fb, unresolved=src))
            model_hints.append(ModelHint(w.value, self.env_origin(value, *env)))
            return
        set_typed(f, name, kind, w)
        if env is not None and name in f.values:
            f.notes.append(f"{name} = {w.value} is the default of {env[0]}; the "
                           "environment or command line may set another")


def _keyword_use(name: str, w: Word | None, at: Span) -> OptionUse:
    """A keyword argument for the TP0xx rules: its name and its literal value, if it has one."""
    value = None if w is None or w.unresolved is not None else w.value
    return OptionUse(name, value, lambda: (at, w.value_span() if w is not None else None),
                     keyword=True)


_Positions = Positions  # the name tests/sources/test_python_limits.py has read it by

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_LAUNCHES", "MAX_NODES", "SUBPROCESS", "VLLM_CALLS",
           "read_python"]
