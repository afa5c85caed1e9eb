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

from collections.abc import Mapping

from tpcheck.engines.flags import SGLANG_KWARGS, VLLM_KWARGS
from tpcheck.sources.argv import (
    Fields,
    deployment_from_fields,
    deployment_from_words,
    find_launch,
    set_typed,
)
from tpcheck.sources.base import Deployment, ModelHint, OptionUse, ReadResult, SourceError, Span
from tpcheck.sources.positions import Located
from tpcheck.sources.words import Word

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
    except cst.CSTValidationError as e:
        # libcst tokenised the file but would not build the tree (b"" "" concatenates bytes and
        # str, which Python refuses too): the file's own error, never the run's.
        return ReadResult(path, (), (_refused(path, text, e),), text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # read only: no second tree
    reader = _Reader(path, wrapper, wrapper.resolve(PositionProvider))

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            reader.call(node)

    wrapper.visit(V())
    return ReadResult(path, tuple(reader.found), (), text)


def _module_consts(module: Any) -> dict[str, Any]:
    """Names bound once at module level to a plain literal: name → the literal's node."""
    import libcst as cst

    consts: dict[str, Any] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and _literal(small.value) is not None
                ):
                    consts[small.targets[0].target.value] = small.value
    return consts


class _Reader:
    """One parsed file: its positions, constants and argparse defaults, and the launches its
    calls make (``call`` is handed every ``Call`` node, in source order)."""

    def __init__(self, path: str, wrapper: Any, positions: Any) -> None:
        self.path = path
        self.wrapper = wrapper
        self.positions = positions
        self.consts = _module_consts(wrapper.module)
        self.flags = _argparse_defaults(wrapper.module)
        self.consts.update(_env_names(wrapper.module, self.consts, self.flags))
        self.found: list[Deployment] = []

    def span(self, node: Any) -> Span:
        r = self.positions[node]
        return Span(self.path, r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)

    def env_default(self, node: Any) -> tuple[str, Any] | None:
        """(what is read, default literal node) when ``node`` (or the name bound to it) reads
        the environment or an argparse option with a literal default."""
        import libcst as cst

        target = self.consts.get(node.value, node) if isinstance(node, cst.Name) else node
        return _env_default(target, self.flags)

    def env_origin(self, node: Any, label: str, lit: Any) -> str:
        return f"the default of {label} `{_literal(lit)}` (line {self.span(lit).line})"

    def word(self, node: Any) -> Word | None:
        """A literal (or a constant naming one, or an environment read's literal default) as a
        Word with per-character positions."""
        import libcst as cst

        path = self.path
        target = node
        if isinstance(node, cst.Name) and node.value in self.consts:
            target = self.consts[node.value]
        env = _env_default(target, self.flags)
        if env is not None:
            target = env[1]
        lit = _literal(target)
        if lit is None:
            src = self.wrapper.module.code_for_node(node)
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

        fn = node.func
        name = fn.value if isinstance(fn, cst.Name) else (
            fn.attr.value if isinstance(fn, cst.Attribute) else ""
        )
        owner = fn.value.value if isinstance(fn, cst.Attribute) and isinstance(
            fn.value, cst.Name) else ""
        if name in VLLM_CALLS:
            self.found.append(self.kwargs_call(node, "vllm", VLLM_KWARGS))
        elif name == "Engine" and owner in ("sgl", "sglang", ""):
            self.found.append(self.kwargs_call(node, "sglang", SGLANG_KWARGS))
        elif name in SUBPROCESS and node.args:
            self.subprocess_call(node.args[0].value)

    def subprocess_call(self, arg0: Any) -> None:
        """``subprocess.run([...])`` and friends: a literal argument list that starts an engine."""
        import libcst as cst

        if not isinstance(arg0, (cst.List, cst.Tuple)):
            return
        elements = [el.value for el in arg0.elements if isinstance(el, cst.Element)]
        words = [self.word(el) for el in elements]
        ws = [w for w in words if w is not None]
        la = find_launch([w.value for w in ws])
        if la is not None:
            d = deployment_from_words(self.path, ws, la)
            envs = [(el, *e) for el in elements if (e := self.env_default(el)) is not None]
            self.found.append(self.env_model(d, envs))

    def env_model(self, d: Deployment, envs: list[tuple[Any, str, Any]]) -> Deployment:
        """A subprocess word that was an environment default: as the model it becomes a
        hint (the reference stays the expression), elsewhere a note."""
        from tpcheck.record import replace

        notes = list(d.notes)
        for node, var, lit in envs:
            value = str(_literal(lit))
            where = d.spans.get("model")
            if d.model == value and where is not None and where.line == self.span(lit).line:
                src = self.wrapper.module.code_for_node(node)
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
            src = self.wrapper.module.code_for_node(value)
            fb = self.span(value)
            set_typed(f, name, kind, Word(Located(src, (), fb, self.path), fb, unresolved=src))
            model_hints.append(ModelHint(w.value, self.env_origin(value, *env)))
            return
        set_typed(f, name, kind, w)
        if env is not None and name in f.values:
            f.notes.append(f"{name} = {w.value} is the default of {env[0]}; the "
                           "environment or command line may set another")


_ENV_READERS = frozenset({"getenv", "get"})  # os.getenv / getenv / os.environ.get / environ.get
_CASTS = frozenset({"int", "float", "str"})


def _env_default(node: Any, flags: Mapping[str, tuple[str, Any]] | None = None
                 ) -> tuple[str, Any] | None:
    """(what is read, default literal node) for ``os.getenv("V", lit)``,
    ``os.environ.get("V", lit)`` (also ``default=lit``) and ``args.dest`` of an argparse option
    in ``flags``, optionally inside ``int()``, ``float()`` or ``str()``."""
    import libcst as cst

    if (flags and isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
            and node.attr.value in flags):
        return flags[node.attr.value]
    if not isinstance(node, cst.Call):
        return None
    fn = node.func
    if isinstance(fn, cst.Name) and fn.value in _CASTS and len(node.args) == 1:
        return _env_default(node.args[0].value, flags)
    if isinstance(fn, cst.Name) and fn.value == "getenv":
        pass
    elif isinstance(fn, cst.Attribute) and fn.attr.value in _ENV_READERS:
        owner = fn.value
        is_os = isinstance(owner, cst.Name) and owner.value == "os" and fn.attr.value == "getenv"
        is_environ = (fn.attr.value == "get" and (
            (isinstance(owner, cst.Name) and owner.value == "environ")
            or (isinstance(owner, cst.Attribute) and owner.attr.value == "environ"
                and isinstance(owner.value, cst.Name) and owner.value.value == "os")))
        if not (is_os or is_environ):
            return None
    else:
        return None
    args = node.args
    if not args or args[0].keyword is not None or not isinstance(args[0].value, cst.SimpleString):
        return None
    var = _literal(args[0].value)
    default = None
    if len(args) >= 2 and args[1].keyword is None:
        default = args[1].value
    for a in args[1:]:
        if a.keyword is not None and a.keyword.value == "default":
            default = a.value
    if not isinstance(var, str) or default is None or _literal(default) is None:
        return None
    return f'os.getenv("{var}")', default


def _argparse_defaults(module: Any) -> dict[str, tuple[str, Any]]:
    """argparse dest → (its option, default literal node) for every ``add_argument("--x", ...,
    default=lit)`` in the file; a dest declared twice could hold either default and is left
    out."""
    import libcst as cst

    found: dict[str, tuple[str, Any]] = {}
    seen: dict[str, int] = {}

    class Options(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            fn = node.func
            if not (isinstance(fn, cst.Attribute) and fn.attr.value == "add_argument"):
                return
            names = [_literal(a.value) for a in node.args if a.keyword is None]
            opts = [n for n in names if isinstance(n, str) and n.startswith("-")]
            kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            if not opts or "default" not in kw or _literal(kw["default"]) is None:
                return
            opt = next((o for o in opts if o.startswith("--")), opts[0])
            dest = _literal(kw["dest"]) if "dest" in kw else opt.lstrip("-").replace("-", "_")
            if isinstance(dest, str) and dest:
                seen[dest] = seen.get(dest, 0) + 1
                found[dest] = (opt, kw["default"])

    module.visit(Options())
    return {d: v for d, v in found.items() if seen[d] == 1}


def _env_names(module: Any, consts: dict[str, Any],
               flags: Mapping[str, tuple[str, Any]] | None = None) -> dict[str, Any]:
    """Names bound exactly once in the file (at any depth) to an environment read with a literal
    default: ``model = os.getenv("MODEL_ID", "org/name")`` inside ``main()`` is common. A name
    bound twice could hold either value, so it is left alone."""
    import libcst as cst

    counts: dict[str, int] = {}
    values: dict[str, Any] = {}

    class Binds(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    counts[t.target.value] = counts.get(t.target.value, 0) + 1
                    values[t.target.value] = node.value

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if isinstance(node.target, cst.Name):
                counts[node.target.value] = counts.get(node.target.value, 0) + 1
                values[node.target.value] = node.value

    module.visit(Binds())
    return {n: v for n, v in values.items()
            if counts[n] == 1 and n not in consts and v is not None
            and _env_default(v, flags) is not None}


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
