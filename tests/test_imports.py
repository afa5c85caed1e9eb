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


# ---- what a one-file lint loads (issue 30): measured in instructions by bench/startup.py -------

ROOT = PACKAGE.parent
QWEN_TP16 = str(ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml")

LINT_PROBE = """
import sys, io, contextlib
from tpcheck.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(['--offline', '--gpu', 'h100-sxm', '-q', {path!r}])
real = [m for m in {names!r} if type(sys.modules.get(m)).__name__ == 'module']
print(rc, real)
"""

# What click, pathlib and PyYAML import for features a lint never reaches (tpcheck.deferred,
# tpcheck.sources.pyyaml): help pages (inspect, ast, dis, tokenize), a spell-check of every
# short option (difflib), Path.as_uri (urllib.parse, ipaddress), threads, click's UUID type's
# platform, PyYAML's timestamps (datetime.py) and binary values (base64, struct, binascii),
# translations of click's messages (gettext, locale).
NOT_ON_THE_LINT_PATH = ("inspect", "ast", "dis", "tokenize", "difflib", "threading",
                        "urllib.parse", "ipaddress", "platform", "datetime", "base64", "struct",
                        "binascii", "gettext", "locale")


def _probe(code: str) -> str:
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()[-1]


def test_a_yaml_lint_loads_none_of_clicks_help_or_threading_modules() -> None:
    # TP201 (a warning) at t = 16 > h_kv = 8: exit 1; none of the modules imported for real
    assert _probe(LINT_PROBE.format(path=QWEN_TP16, names=NOT_ON_THE_LINT_PATH)) == "1 []"


# tpcheck's own modules a vLLM Deployment with an image (QWEN_TP16) never needs: the overlay
# build (no kustomization beside it, an image named), the Dockerfile reader (no setup to read a
# pip pin from), SGLang's memory and pool physics and its rules (a vLLM launch), the shell
# tokenizer (its command and args are lists of words, no `sh -c` string), the dstack and vLLM
# --config readers (a Kubernetes document: tpcheck.sources.yamlfile tells them apart), the
# KubeAI/Ray readers (no such keys) and the task-file readers (no SkyPilot or Truss top-level key),
# the inline suppressions (no comment names tpcheck) and the pod groups (one pod).
NOT_FOR_A_VLLM_DEPLOYMENT = ("tpcheck.sources.dstack", "tpcheck.sources.vllm_config",
                             "tpcheck.sources.kube_crd", "tpcheck.sources.kube_task",
                             "tpcheck.lint_groups", "tpcheck.lint_ignores",
                             "tpcheck.sources.kustomize", "tpcheck.sources.kustomize_gen",
                             "tpcheck.sources.kustomize_nodes", "tpcheck.sources.kustomize_patch",
                             "tpcheck.sources.dockerfile", "tpcheck.physics.sglang_memory",
                             "tpcheck.physics.sglang_pools", "tpcheck.sources.shell",
                             "tpcheck.sources.shell_tokens", "tpcheck.sources.arith",
                             "tpcheck.sources.shell_recipes", "tpcheck.engines.sglang_rules",
                             # rules skipped for what they need: no --topology matrix, and a
                             # model that resolved
                             "tpcheck.checks.tp_crosses_sockets", "tpcheck.checks._links",
                             "tpcheck.checks.model_unresolved")


def test_a_yaml_lint_loads_no_reader_or_physics_its_file_does_not_need() -> None:
    # exit 1 (TP201's warning, as above); the modules loaded: none of them
    assert _probe(LINT_PROBE.format(path=QWEN_TP16, names=NOT_FOR_A_VLLM_DEPLOYMENT)) == "1 []"


def test_the_deferred_readers_still_load_when_a_file_needs_them(tmp_path: Path) -> None:
    """A kustomization beside the file, and an SGLang launch, import what they need."""
    (tmp_path / "kustomization.yaml").write_text("resources: [d.yaml]\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: s}\nspec:\n  template:\n"
        "    spec:\n      containers:\n        - name: s\n          image: lmsysorg/sglang\n"
        "          command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen3-32B,"
        " --tp-size, '2']\n", encoding="utf-8")
    names = ("tpcheck.sources.kustomize", "tpcheck.physics.sglang_pools",
             "tpcheck.physics.sglang_memory")
    code = LINT_PROBE.format(path=str(tmp_path / "d.yaml"), names=names)
    # a kustomization beside d.yaml (is it a patch it lists? it names d.yaml as a resource,
    # so no: read alone) and an SGLang launch at TP 2 on H100s (nothing to report: exit 0)
    assert _probe(code) == f"0 {list(names)!r}"


def test_the_yaml_patterns_deferred_at_import_are_stand_ins_until_used() -> None:
    code = ("import re\nfrom tpcheck.sources.pyyaml import yaml\n"
            "r, c = yaml.reader.Reader, yaml.constructor.SafeConstructor\n"
            "kinds = [type(r.NON_PRINTABLE).__name__, type(c.timestamp_regexp).__name__]\n"
            "import tpcheck.sources.pyyaml as p\n"
            "fresh = type(re.compile(p.NON_PRINTABLE)).__name__\n"
            "print(kinds, fresh)")
    # both stand-ins inside PyYAML; the same text compiled afterwards is a real pattern
    assert _probe(code) == "['DeferredPattern', 'DeferredPattern'] Pattern"


def test_deferred_yaml_patterns_still_work() -> None:
    code = ("import datetime\nfrom tpcheck.sources.pyyaml import yaml\n"
            "t = yaml.load('a: 2001-12-14 21:59:43.10', Loader=yaml.SafeLoader)['a']\n"
            "try:\n    yaml.load('a: \\x01', Loader=yaml.SafeLoader)\n    bad = 'read'\n"
            "except yaml.reader.ReaderError as e:\n    bad = hex(e.character)\n"
            "print(t == datetime.datetime(2001, 12, 14, 21, 59, 43, 100000), bad)")
    # the pure-Python loader's timestamp and its refusal of a control character (U+0001)
    assert _probe(code) == "True 0x1"


def test_clicks_deferred_features_still_work() -> None:
    """After a lint, the rest of click works: a multi-line help goes through the real
    ``inspect.cleandoc``, a misspelt long option is still spell-checked, ``threading.local``
    is the real class, ``Path.as_uri`` quotes, and ``import inspect`` is the real module."""
    code = (LINT_PROBE.format(path=QWEN_TP16, names=()) +
            "import click, inspect, threading, pathlib\n"
            "o = click.Option(['--x'], help='  a\\n    b')\n"
            "e = click.NoSuchOption('--cont', possibilities=['--context', '--color'])\n"
            "print(repr(o.help), e.possibilities, click.globals._local.__class__ is"
            " threading.local, pathlib.Path('/a b').as_uri(), type(inspect).__name__,"
            " callable(inspect.signature))")
    assert _probe(code) == ("'a\\nb' ['--context', '--color'] True file:///a%20b module True")


def test_the_later_deferred_features_still_work() -> None:
    """click's UUID type (uuid, which asked platform for the system's name), a YAML timestamp
    and dump (datetime's classes), click's messages (gettext, which has no catalog here), and a
    module's pattern compiled on first use."""
    code = (LINT_PROBE.format(path=QWEN_TP16, names=()) +
            "import click, datetime, platform, uuid, yaml\n"
            "from tpcheck.deferred import lazy_re\n"
            "u = click.UUID.convert('12345678-1234-5678-1234-567812345678', None, None)\n"
            "y = yaml.safe_load('a: 2001-12-14')['a']\n"
            "b = yaml.safe_load('b: !!binary aGk=')['b']\n"
            "p = lazy_re(r'(\\d+)x')\n"
            # 3.13's uuid asks platform nothing on Linux (no _platform_system to check)
            "print(type(u) is uuid.UUID,"
            " getattr(uuid, '_platform_system', platform.system()) == platform.system(),"
            " type(y) is datetime.date, yaml.safe_dump({'d': y}).strip(), b,"
            " click.exceptions.NoSuchOption('--x').message, p.sub('<\\\\1>', 'a 8x b'),"
            " p.pattern, p.search('c').__class__.__name__)")
    assert _probe(code) == ("True True True d: 2001-12-14 b'hi' No such option '--x'. "
                            "a <8> b (\\d+)x NoneType")


# The direction imports take (DESIGN's data flow): the command line and its commands over the
# reports and the editor, over the linter, over the rules, over the physics, over the readers,
# models and settings, over the engines' and the hardware's facts, over the value classes.
# An import goes down, or stays inside its own layer. The longest matching prefix decides.
LAYERS: dict[str, int] = {
    "tpcheck.cli": 7, "tpcheck.__main__": 7, "tpcheck.commands": 7,
    "tpcheck.report": 6, "tpcheck.lsp": 6,
    "tpcheck.lint": 5, "tpcheck.diff": 5,
    # the linter's parts beside it (issue 29's split of lint.py)
    "tpcheck.lint_config_fix": 5, "tpcheck.lint_groups": 5, "tpcheck.lint_ignores": 5,
    "tpcheck.lint_nearest": 5, "tpcheck.lint_values": 5,
    "tpcheck.checks": 4, "tpcheck.result": 4,
    "tpcheck.physics": 3,
    "tpcheck.models": 2, "tpcheck.sources": 2, "tpcheck.settings": 2,
    # the records every reader fills and the one way a file is opened sit below the readers
    "tpcheck.sources.base": 1, "tpcheck.sources.files": 1,
    "tpcheck.engines": 1, "tpcheck.hardware": 1,
    "tpcheck": 0,  # record, formula, errors, oneline, safewrite, deferred, ruledocs
}


def layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return key, LAYERS[key]
    raise AssertionError(f"{module} is in no layer")


def all_edges(module: str) -> Iterator[str]:
    """Imports at any depth, those only a type checker reads included."""
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            source = absolute(module, node)
            if source in MODULES:
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    yield sub if sub in MODULES else source
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in MODULES)


def test_layer_table_sees_an_upward_import() -> None:
    assert layer("tpcheck.physics.kv") == ("tpcheck.physics", 3)
    assert layer("tpcheck.sources.base") == ("tpcheck.sources.base", 1)
    assert layer("tpcheck.formula") == ("tpcheck", 0)
    assert layer("tpcheck.physics.kv")[1] < layer("tpcheck.lint")[1]  # physics → lint: up


def test_imports_point_down_the_layers() -> None:
    upward = set()
    for module in MODULES:
        here, rank = layer(module)
        for target in all_edges(module):
            there, target_rank = layer(target)
            if target_rank > rank or (target_rank == rank and rank == 1 and here != there
                                      and {here, there} != {"tpcheck.sources.base",
                                                            "tpcheck.sources.files"}):
                upward.add((module, target))
    assert upward == set(), "an import against the layers"


def test_models_do_not_read_files_or_settings() -> None:
    # models/ resolves a name to a config; which files name models (models pull's scan) and the
    # settings are the command's business
    reach = {(m, t) for m in MODULES if m.startswith("tpcheck.models") for t in all_edges(m)
             if t.startswith(("tpcheck.settings", "tpcheck.sources"))
             and t not in ("tpcheck.sources.base", "tpcheck.sources.files")}
    assert reach == KNOWN_MODELS_READING, "models/ reaches a reader or the settings"


# Left for the next round: models pull's scan of the files and its settings edit still live in
# models/pull.py; they belong to commands/models.py.
KNOWN_MODELS_READING = {
    ("tpcheck.models.pull", "tpcheck.settings"), ("tpcheck.models.pull", "tpcheck.sources"),
}


def test_no_cycle_even_under_type_checking() -> None:
    g = {m: {t for t in all_edges(m) if t != m} for m in MODULES}
    assert cycles(g) == KNOWN_TYPE_CHECKING_CYCLES


# The rule record names the context it checks and the context names the rule it runs.
KNOWN_TYPE_CHECKING_CYCLES = {frozenset({"tpcheck.checks.registry", "tpcheck.checks.context"})}


def test_the_resolvers_patterns_are_stand_ins_and_still_resolve() -> None:
    # tpcheck's loader resolves no tags; PyYAML's own loaders still do: 16 an int, yes a bool
    code = ("from tpcheck.sources.pyyaml import yaml\n"
            "first = yaml.resolver.Resolver.yaml_implicit_resolvers['1'][0][1]\n"
            "kind = type(first).__name__\n"
            "print(kind, yaml.safe_load('a: 16\\nb: yes\\nc: ~'))")
    assert _probe(code) == "DeferredPattern {'a': 16, 'b': True, 'c': None}"


def test_the_collector_is_on_when_a_standalone_command_runs() -> None:
    # tpcheck.cli.main (console script: no argv) turns it off while importing; the lint turns
    # it back on after gc.freeze, every other command as its callback starts (rules: exit 0)
    code = ("import sys, io, contextlib, gc\nfrom tpcheck.cli import main\n"
            "out = []\n"
            "for argv in (['tpcheck', '--offline', '--gpu', 'h100-sxm', '-q', "
            f"{QWEN_TP16!r}], ['tpcheck', 'rules']):\n"
            "    sys.argv = argv\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        rc = main()\n"
            "    out.append((rc, gc.isenabled()))\n"
            "    gc.unfreeze()\n"
            "print(out)")
    assert _probe(code) == "[(1, True), (0, True)]"


def test_windows_modules_are_absent_only_while_pathlib_imports() -> None:
    # ntpath tries nt and _winapi six times; off Windows each is None in sys.modules (the
    # import fails at once) while tpcheck.commands imports pathlib, and gone afterwards
    code = ("import sys\nimport tpcheck.commands\nimport ntpath, pathlib\n"
            "print(sorted(m for m in ('nt', '_winapi') if m in sys.modules),"
            " ntpath.abspath('a').endswith('a'), str(pathlib.PureWindowsPath('a/b')))")
    assert _probe(code) == "[] True a\\b"


def test_jsons_fallback_patterns_are_compiled_on_first_use() -> None:
    # tpcheck.jsonlib: the pure-Python scanner's and encoders' patterns wait for their first
    # use (the C accelerator does their work); json itself, and re, are unchanged
    code = ("from tpcheck.jsonlib import json\nimport re, json.scanner as s, json.encoder as e\n"
            "kinds = [type(s.NUMBER_RE).__name__, type(e.ESCAPE).__name__]\n"
            "fallback = (e.py_encode_basestring('a\"\\n'), e.py_encode_basestring_ascii('\\xe9'),"
            " s.py_make_scanner(json.JSONDecoder())('12.5e1', 0))\n"
            "print(kinds, fallback, json.loads('[1, 2.5, \"\\\\u00e9\"]'),"
            " type(re.compile('x')).__name__)")
    assert _probe(code) == ("['LazyPattern', 'LazyPattern'] ('\"a\\\\\"\\\\n\"', '\"\\\\u00e9\"', "
                            "(125.0, 6)) [1, 2.5, 'é'] Pattern")
