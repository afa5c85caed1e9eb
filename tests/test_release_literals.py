"""Release knowledge lives in ``tpcheck/engines/`` only (issue 29): no module outside it branches
on an engine release written as a literal, neither a version string (``rel == "0.4.6"``,
``version.startswith("0.4")``) nor a version tuple (``pv >= (0, 19)``, ``((0, 33), ...)`` era
tables). Physics asks ``engines`` a question of the version instead (``engines.eras``,
``engines.sglang_rules``, ``engines.calibration``, the ``Release``). Citations inside source
strings ("vllm 0.33.0 envs.py l.1957") are sources, not logic, and stay where they are cited."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tpcheck"
ENGINES = PACKAGE / "engines"

# A whole string that is a version: 0.4, 0.5.23, v0.8.5, 0.4.10.post2, 0.9.1rc1.
VERSION = re.compile(r"v?\d+\.\d+(\.\d+)*([.-]?(post|rc|dev)\d*)?")

# (module path, literal): numbers that look like versions and are not engine releases.
NOT_RELEASES: dict[tuple[str, str], str] = {
    ("tpcheck/__init__.py", "0.1.0"): "tpcheck's own version",
    ("tpcheck/report/sarif.py", "2.1.0"): "the SARIF schema's version",
    ("tpcheck/physics/collective.py", "9.0"): "CUDA compute capability (Hopper)",
    ("tpcheck/physics/collective.py", "10.0"): "CUDA compute capability (Blackwell)",
    ("tpcheck/physics/collective.py", "10.3"): "CUDA compute capability (Blackwell Ultra)",
}


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the string constants that are docstrings (prose, not code)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                out.add(id(body[0].value))
    return out


def _version_tuple(node: ast.AST) -> bool:
    """(0, 19), (0, 5, 4): two or three ints, the first 0, not all 0 (a position, a size)."""
    if not isinstance(node, ast.Tuple) or not 2 <= len(node.elts) <= 3:
        return False
    ints = [e.value for e in node.elts
            if isinstance(e, ast.Constant) and type(e.value) is int]
    return len(ints) == len(node.elts) and ints[0] == 0 and any(ints)


def release_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal), in source order, for every release written in code: a string constant
    that is a whole version (f-strings and docstrings are prose and are not read), or a version
    tuple that is not just the set an ``in`` test picks from."""
    return sorted(_literals(source), key=lambda x: x[0])


def _literals(source: str) -> Iterator[tuple[int, str]]:
    tree = ast.parse(source)
    docs = _docstrings(tree)
    in_sets: set[int] = set()
    prose: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, ast.Tuple) \
                        and not any(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                    for e in right.elts):
                    in_sets.add(id(right))
        if isinstance(node, ast.JoinedStr):
            prose.update(id(v) for v in ast.walk(node))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docs and id(node) not in prose
                and VERSION.fullmatch(node.value)):
            yield node.lineno, repr(node.value)
        elif _version_tuple(node) and id(node) not in in_sets:
            yield node.lineno, ast.unparse(node)


def test_the_scan_sees_every_kind_of_release_literal() -> None:
    code = '''
"""Docstring: 0.4.6 is prose."""
if rel == "0.4.6" or version.startswith("0.4"):
    pass
TABLE = (((0, 33), "x"), ((0, 0), "y"))
ok = pv >= (0, 19)
SRC = "vllm 0.33.0 envs.py l.12"
label = f"sglang {v} 0.5.23"
here = (0, 0)
flag = v in (0, 1)
'''
    found = [lit for _, lit in release_literals(code)]
    assert found == ["'0.4.6'", "'0.4'", "(0, 33)", "(0, 19)"], found


def test_release_literals_live_in_engines_only() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ENGINES in path.parents:
            continue
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for line, literal in release_literals(path.read_text(encoding="utf-8")):
            if (rel, literal.strip("'")) not in NOT_RELEASES:
                bad.append(f"{rel}:{line}: {literal}")
    assert not bad, "release literals outside tpcheck/engines/ (make them data there):\n" + \
        "\n".join(bad)


def test_the_exceptions_are_still_there() -> None:
    """Each entry of NOT_RELEASES names a literal that exists (no stale exception)."""
    for (rel, literal), why in NOT_RELEASES.items():
        source = (PACKAGE.parent / rel).read_text(encoding="utf-8")
        assert repr(literal) in [lit for _, lit in release_literals(source)], (rel, literal, why)
