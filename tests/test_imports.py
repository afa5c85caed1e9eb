"""The package's import graph, read with ``ast`` (function-level imports included, imports under
``if TYPE_CHECKING:`` left out: they never run): no import cycle (the lists below are empty), and no
module importing another module's private names (issue 15)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tpcheck"

# Cycles allowed: none. Issue 15 broke the last ones with leaf modules (sources.words: the shell
# word model; sources.hints: hint scanning; sources.yamlnodes: YAML node lookups; the dispatcher
# asks whether a chart's templates launch). Kept as sets so a reviewer sees where to list one.
KNOWN_CYCLES: set[frozenset[str]] = set()

# (importing module, imported module, private name): none allowed.
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def runtime_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those only a type checker reads."""
    def visit(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (n for s in child.orelse for n in visit_one(s))
                continue
            yield from visit_one(child)

    def visit_one(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        else:
            yield from visit(node)

    return visit(tree)


def absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def edges(module: str) -> Iterator[tuple[str, str | None]]:
    """(imported module, the name taken from it or None) for each tpcheck import in ``module``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in runtime_imports(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield alias.name, None
            continue
        source = absolute(module, node)
        if source not in MODULES:
            continue
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            yield (sub, None) if sub in MODULES else (source, alias.name)


def graph() -> dict[str, set[str]]:
    return {m: {target for target, _ in edges(m) if target != m} for m in MODULES}


def cycles(g: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected sets of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in sorted(g):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(g[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    members.add(top)
                    if top == node:
                        break
                if len(members) > 1:
                    found.add(frozenset(members))
    return found


def test_the_graph_sees_function_level_imports() -> None:
    g = graph()
    # tpcheck/cli.py imports the commands' base only inside group(): still an edge
    assert "tpcheck.commands.base" in g["tpcheck.cli"]
    # ... and not what it imports under `if TYPE_CHECKING:` only
    assert "tpcheck.commands.lint" not in g["tpcheck.cli"]


def test_cycle_finder_finds_a_cycle_and_only_cycles() -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(g) == {frozenset({"a", "b", "c"})}


def test_no_import_cycles_but_the_known_ones() -> None:
    found = cycles(graph())
    assert found - KNOWN_CYCLES == set(), "a new import cycle"
    assert KNOWN_CYCLES - found == set(), "a known cycle changed or is gone: update KNOWN_CYCLES"


def test_no_private_names_imported_across_modules() -> None:
    found = {(m, source, name) for m in MODULES for source, name in edges(m)
             if name is not None and name.startswith("_") and not name.startswith("__")}
    assert found - KNOWN_PRIVATE_IMPORTS == set(), "a module imports another's private name"
    assert KNOWN_PRIVATE_IMPORTS - found == set(), "gone: update KNOWN_PRIVATE_IMPORTS"
