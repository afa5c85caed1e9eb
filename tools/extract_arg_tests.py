"""Extract the command-line cases of an engine release's own argument tests into tpcheck's data.

Usage: ``python tools/extract_arg_tests.py ENGINE VERSION ARCHIVE [...]`` (triples; ARCHIVE is the
release's sdist), writing ``tests/data/engine_arg_cases/<engine>-<version>.json``.

The test files (vLLM's ``tests/engine/test_arg_utils.py`` and the ``test_cli_args.py`` of the
OpenAI/common entrypoints; SGLang's ``test/srt/test_server_args.py``) are read with ``ast`` only:
nothing is imported or run. What is kept are facts: each ``parse_args([...])`` whose argument is
a list of string literals (after substituting ``pytest.mark.parametrize`` values and ``for x in
[...]`` loops), the file and line it comes from, and what the test asserts about it:

- ``accepted``: parsed outside any ``pytest.raises`` (and, when the test then validates it, the
  validation is not expected to raise);
- ``refused_parse``: inside ``pytest.raises(SystemExit | ArgumentError | ArgumentTypeError)``;
- ``refused_validation``: parsed fine, then ``validate_parsed_serve_args`` / ``from_cli_args`` /
  ``create_engine_config`` is expected to raise (the exception is recorded);
- ``warns``: inside ``pytest.warns`` (a deprecation said at parse time).

A case whose list holds anything but literals (a file made by the test, ``json.dumps(...)``) or
that parses with a parser the test builds for its own dataclass is left out, and counted.
"""

from __future__ import annotations

import ast
import json
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "engine_arg_cases"
FILES = {
    "vllm": ("tests/engine/test_arg_utils.py", "tests/entrypoints/openai/test_cli_args.py",
             "tests/entrypoints/common/test_cli_args.py"),
    "sglang": ("test/srt/test_server_args.py", "test/registered/unit/server_args/"
               "test_server_args.py"),
}
PARSE_ERRORS = {"SystemExit", "ArgumentError", "ArgumentTypeError"}
VALIDATORS = {"validate_parsed_serve_args", "from_cli_args", "create_engine_config",
              "check_server_args", "__post_init__", "prepare_server_args"}
ENGINE_PARSERS = ("add_cli_args", "make_arg_parser", "serve_parser", "vllm_parser",
                  "cli_parser", "prepare_server_args", "parser")
OWN_PARSERS = ("dummy_config", "get_kwargs", "_compute_kwargs", "DummyConfig")


def _raises(item: ast.withitem) -> tuple[str, str] | None:
    """('raises'|'warns', exception name) for ``with pytest.raises(X)``/``pytest.warns(X)``."""
    c = item.context_expr
    if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
            and c.func.attr in ("raises", "warns")):
        return None
    arg = c.args[0] if c.args else None
    name = arg.id if isinstance(arg, ast.Name) else (
        arg.attr if isinstance(arg, ast.Attribute) else "?")
    return c.func.attr, name


def _params(fn: ast.FunctionDef) -> list[dict[str, Any]]:
    """The parametrize combinations of ``fn`` (literal values only), [{}] when none."""
    combos: list[dict[str, Any]] = [{}]
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                and dec.func.attr == "parametrize" and len(dec.args) >= 2):
            continue
        try:
            names_node = ast.literal_eval(dec.args[0])
        except ValueError:
            continue
        names = ([n.strip() for n in names_node.split(",")] if isinstance(names_node, str)
                 else list(names_node))
        rows: list[Any] = []
        if not isinstance(dec.args[1], (ast.List, ast.Tuple)):
            return []
        for elt in dec.args[1].elts:
            if (isinstance(elt, ast.Call) and isinstance(elt.func, ast.Attribute)
                    and elt.func.attr == "param"):
                elt = elt.args[0] if len(elt.args) == 1 else ast.Tuple(elts=elt.args)
            try:
                rows.append(ast.literal_eval(elt))
            except (ValueError, TypeError, SyntaxError):
                rows.append(None)
        new = []
        for c in combos:
            for r in rows:
                vals = (r,) if len(names) == 1 else r
                if vals is None or not isinstance(vals, (tuple, list)) or len(vals) != len(names):
                    new.append({**c, **{n: _UNKNOWN for n in names}})
                else:
                    new.append({**c, **dict(zip(names, vals, strict=True))})
        combos = new
    return combos


_UNKNOWN = object()


def _argv(node: ast.expr, env: dict[str, Any]) -> list[str] | None:
    """The literal argv of a parse_args argument under ``env``, else None."""
    if isinstance(node, ast.Name):
        v = env.get(node.id, _UNKNOWN)
        if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
            return list(v)
        return None
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    out: list[str] = []
    for e in node.elts:
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            out.append(e.value)
        elif isinstance(e, ast.Name) and isinstance(env.get(e.id, _UNKNOWN), (str, int, float)):
            out.append(str(env[e.id]))
        elif isinstance(e, ast.Starred):
            inner = _argv(e.value, env)
            if inner is None:
                return None
            out.extend(inner)
        elif isinstance(e, ast.JoinedStr):
            parts = []
            for p in e.values:
                if isinstance(p, ast.Constant):
                    parts.append(str(p.value))
                elif (isinstance(p, ast.FormattedValue) and isinstance(p.value, ast.Name)
                      and isinstance(env.get(p.value.id, _UNKNOWN), (str, int, float))):
                    parts.append(str(env[p.value.id]))
                else:
                    return None
            out.append("".join(parts))
        else:
            return None
    return out


def _parse_call(node: ast.AST) -> ast.Call | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "parse_args"):
        return node
    return None


def _calls_validator(stmts: list[ast.stmt]) -> bool:
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Call):
                f = n.func
                name = f.attr if isinstance(f, ast.Attribute) else (
                    f.id if isinstance(f, ast.Name) else "")
                if name in VALIDATORS:
                    return True
    return False


def cases(tree: ast.Module, rel: str) -> Iterator[dict[str, Any]]:
    """Every parse_args case of the file, and the ones left out (with ``skip``)."""
    fns = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
           and n.name.startswith("test")]
    for fn in fns:
        src = ast.dump(fn)
        own = any(w in src for w in OWN_PARSERS)
        engine_parser = any(w in src for w in ENGINE_PARSERS)
        combos = _params(fn)
        if not combos:
            combos = [{}]
        for env in combos:
            yield from _walk(fn.body, env, None, fn, rel, own or not engine_parser, [])


def _walk(stmts: list[ast.stmt], env: dict[str, Any], ctx: tuple[str, str] | None,
          fn: ast.FunctionDef, rel: str, own: bool,
          pending: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for s in stmts:
        if isinstance(s, ast.With):
            got = next((r for r in map(_raises, s.items) if r), None)
            if got and _calls_validator(s.body) and not any(
                    _parse_call(n) for b in s.body for n in ast.walk(b)):
                for c in pending[-1:]:
                    if c.get("outcome") == "accepted":
                        c["outcome"] = "refused_validation"
                        c["exception"] = got[1]
                continue
            yield from _walk(s.body, env, got or ctx, fn, rel, own, pending)
            continue
        if isinstance(s, ast.For) and isinstance(s.target, ast.Name):
            try:
                seq = ast.literal_eval(s.iter)
            except (ValueError, TypeError, SyntaxError):
                seq = None
            if isinstance(seq, (list, tuple)):
                for v in seq:
                    yield from _walk(s.body, {**env, s.target.id: v}, ctx, fn, rel, own, pending)
                continue
        if isinstance(s, (ast.If, ast.Try)):
            yield from _walk(s.body, env, ctx, fn, rel, own, pending)
            continue
        for n in ast.walk(s):
            call = _parse_call(n)
            if call is None:
                continue
            arg = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "args"), None)
            case: dict[str, Any] = {"file": rel, "line": call.lineno, "test": fn.name}
            argv = _argv(arg, env) if arg is not None else []
            if own:
                case["skip"] = "a parser the test builds for its own dataclass"
            elif "setenv" in ast.dump(fn):
                case["skip"] = "depends on an environment variable the test sets"
            elif argv is None:
                case["skip"] = "argv not literal (built by the test at run time)"
            else:
                case["argv"] = argv
                if ctx is None:
                    case["outcome"] = "accepted"
                elif ctx[0] == "warns":
                    case["outcome"] = "warns"
                elif ctx[1] in PARSE_ERRORS:
                    case["outcome"] = "refused_parse"
                else:
                    case["outcome"] = "refused"
                    case["exception"] = ctx[1]
            pending.append(case)
            yield case


def read_tests(archive: Path, engine: str) -> dict[str, str]:
    out: dict[str, str] = {}
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            if m.isfile() and rel in FILES[engine]:
                fh = t.extractfile(m)
                if fh is not None:
                    out[rel] = fh.read().decode("utf-8", "replace")
    return out


def write(engine: str, version: str, archive: Path, out: Path = OUT) -> Path:
    found: list[dict[str, Any]] = []
    for rel, text in sorted(read_tests(archive, engine).items()):
        seen: set[tuple[int, str]] = set()
        for c in cases(ast.parse(text), rel):
            key = (c["line"], json.dumps(c.get("argv")))
            if key in seen:
                continue
            seen.add(key)
            found.append(c)
    data = {"_": "extracted by tools/extract_arg_tests.py from the release's sdist; facts "
                 "(argv and the outcome the engine's test asserts), no code",
            "engine": engine, "version": version, "source": archive.name, "cases": found}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{engine}-{version}.json"
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    if not argv or len(argv) % 3:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    for i in range(0, len(argv), 3):
        print(write(argv[i], argv[i + 1], Path(argv[i + 2])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
