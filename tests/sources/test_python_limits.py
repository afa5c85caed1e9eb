"""Issue 14 item 8: a Python file under the size cap is read in seconds. libcst reads at most
MAX_CHARS characters, MAX_NODES syntax nodes and MAX_LAUNCHES launches of a file; the first limit
reached is one line naming where reading stopped (exit 2), and what came before is checked.
Positions are placed a chunk of statements at a time and must equal libcst's PositionProvider
over the whole module."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tpcheck.sources import python_src, read_path
from tpcheck.sources.python_src import MAX_CHARS, MAX_LAUNCHES, _Positions

ROOT = Path(__file__).resolve().parents[2]
HEAD = "from vllm import LLM\nimport subprocess\n"
LAUNCH = "LLM(model='Qwen/Qwen3-32B', tensor_parallel_size=2)\n"
NOT_A_LAUNCH = "subprocess.run(['echo', 'vllm'])\n"  # a subprocess call that starts no engine


def _nodes(top: Any) -> list[Any]:
    out, stack = [], [top]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children)
    return out


def test_positions_in_chunks_equal_position_provider_over_the_module() -> None:
    filler = "".join(f"x{i} = {i}  # filler\n" for i in range(2 * _Positions.CHUNK + 7))
    text = (
        "#!/usr/bin/env python\n# header comment\n\n"
        '"""Docstring\nover lines."""\n'
        "import os; from vllm import LLM\n"
        "MODEL = 'Qwen/Qwen3-32B'\n\n"
        "@decorator(\n    1)\n\n"
        "def main():\n"
        "    tp = int(os.getenv('TP', '2'))\n"
        "    if tp:\n"
        "        LLM(model=MODEL,\n"
        "            tensor_parallel_size=tp)  # a comment\n"
        "    else:\n        pass\n"
        + filler
        + "class C:\n\tx = '''a\nb'''\n\n\n"
        "a = 1; LLM(\n  MODEL, \\\n  tensor_parallel_size=4)\n"
        + filler
        + "if __name__ == '__main__':\n    main()\n    LLM(model=MODEL)"  # no final newline
    )
    module = cst.parse_module(text)
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    # asked for in reverse, so later chunks are placed before the statements they follow
    # are asked for (the line count must not depend on the order of questions)
    positions = _Positions(module)
    checked = 0
    for top in reversed(module.body):
        for node in _nodes(top):
            assert positions.get(node, top) == reference[node], module.code_for_node(node)
            checked += 1
    # every node the whole-module provider placed, but the module and its header comments
    outside = 1 + sum(len(_nodes(e)) for e in (*module.header, *module.footer))
    assert checked == len(reference) - outside


# The reader tests set small limits (the same code reads the module constants at each call);
# the CLI test runs the real MAX_LAUNCHES in a fresh process.
SMALL = 5


def launches_file(tmp_path: Path, n: int) -> Path:
    p = tmp_path / "many.py"
    p.write_text(HEAD + (LAUNCH + NOT_A_LAUNCH) * n)
    return p


def test_launches_up_to_the_limit_are_all_read(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(python_src, "MAX_LAUNCHES", SMALL)
    res = read_path(str(launches_file(tmp_path, SMALL)))
    assert res.errors == ()
    # launch k (1-based) is on line 2 + 2k - 1: after the 2 lines of HEAD, two lines a launch
    assert [d.span.line for d in res.deployments] == [2 + 2 * k - 1 for k in range(1, SMALL + 1)]


def test_one_launch_past_the_limit_is_one_line_and_the_first_ones_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(python_src, "MAX_LAUNCHES", SMALL)
    res = read_path(str(launches_file(tmp_path, SMALL + 1)))
    assert len(res.deployments) == SMALL
    [err] = res.errors
    line = 2 + 2 * (SMALL + 1) - 1  # the launch past the limit
    assert (err.line, err.column) == (line, 1)
    assert err.message == (f"the file has more launches than tpcheck reads ({SMALL:,}); "
                           f"nothing from line {line} on is checked")


def test_launch_limit_cli_one_line_exit_2(tmp_path: Path) -> None:
    p = launches_file(tmp_path, MAX_LAUNCHES + 1)
    r = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--format", "json", str(p)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert r.returncode == 2
    out = json.loads(r.stdout)
    assert out["summary"]["deployments"] == MAX_LAUNCHES
    [err] = out["errors"]
    assert err["line"] == 2 + 2 * (MAX_LAUNCHES + 1) - 1
    assert "more launches than tpcheck reads" in err["message"]
    assert "Traceback" not in r.stderr


# Syntax nodes as the interpreter's parser counts them (ast.walk, the module itself not counted):
# "from vllm import LLM" = ImportFrom + alias = 2; "x = 1" = Assign + Name + Store + Constant
# = 4; "pass" = 1; "LLM(model='m')" = Expr + Call + Name + Load + keyword + Constant = 6.
NODES_HEAD, NODES_FILLER, NODES_LAUNCH = 2, 4, 6
FILLERS = 100
NODES = NODES_HEAD + FILLERS * NODES_FILLER + NODES_LAUNCH  # the file's 408 nodes: the limit


def nodes_file(tmp_path: Path, extra: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(python_src, "MAX_NODES", NODES)
    p = tmp_path / "nodes.py"
    p.write_text("from vllm import LLM\n" + "x = 1\n" * FILLERS + extra + "LLM(model='m')\n")
    return p


def test_exactly_max_nodes_is_read_whole(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    res = read_path(str(nodes_file(tmp_path, "", monkeypatch)))
    assert res.errors == ()
    [d] = res.deployments
    assert d.span.line == 1 + FILLERS + 1


def test_one_node_past_max_nodes_stops_before_that_statement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "pass" adds 1 node: the launch's statement is the one that goes past the limit
    res = read_path(str(nodes_file(tmp_path, "pass\n", monkeypatch)))
    assert res.deployments == ()
    [err] = res.errors
    line = 1 + FILLERS + 1 + 1  # the head, the fillers, "pass", then the launch
    assert err.line == line
    assert err.message == (f"the file is longer than tpcheck reads as Python ({NODES:,} "
                           f"syntax nodes); nothing from line {line} on is checked")


COMMENT = "# " + "c" * 1021 + "\n"  # 1,024 characters, no syntax node


def chars_file(tmp_path: Path, extra: int) -> tuple[Path, int]:
    head = "from vllm import LLM\n"
    launch = "LLM(model='m')\n"
    comments = (MAX_CHARS - len(head) - len(launch)) // len(COMMENT)
    pad = MAX_CHARS - len(head) - len(launch) - comments * len(COMMENT)
    # a last comment line takes the remainder (+ extra), so the file is MAX_CHARS + extra long
    text = head + COMMENT * comments + "#" + "p" * (pad + extra - 2) + "\n" + launch
    assert len(text) == MAX_CHARS + extra
    p = tmp_path / "chars.py"
    p.write_text(text)
    return p, 1 + comments + 1 + 1  # the launch's line


def test_exactly_max_chars_is_read_whole(tmp_path: Path) -> None:
    p, line = chars_file(tmp_path, 0)
    res = read_path(str(p))
    assert res.errors == ()
    assert [d.span.line for d in res.deployments] == [line]


def test_one_char_past_max_chars_stops_at_the_last_statement_before(tmp_path: Path) -> None:
    p, line = chars_file(tmp_path, 1)
    res = read_path(str(p))
    assert res.deployments == ()
    [err] = res.errors
    assert err.line == line
    assert err.message == (f"the file is longer than tpcheck reads as Python ({MAX_CHARS:,} "
                           f"characters); nothing from line {line} on is checked")


def test_a_cut_inside_a_bracket_is_one_error_not_a_syntax_error(tmp_path: Path) -> None:
    # keyword arguments written at column 0 look like statements to the text cut
    arg = "a" + "=" + "'" + "v" * 1000 + "',\n"
    p = tmp_path / "bracket.py"
    p.write_text("from vllm import LLM\nLLM(\n" + arg * (MAX_CHARS // len(arg) + 10) + ")\n")
    res = read_path(str(p))
    assert res.deployments == ()
    [err] = res.errors
    assert err.message.startswith("the file is longer than tpcheck reads as Python and line ")
    assert err.message.endswith("is inside a statement; not read")


def test_str_and_bytes_concatenated_is_one_error_not_an_internal_error(tmp_path: Path) -> None:
    # libcst parses 'a' b'x' and then refuses to build the node (CSTValidationError): it ended
    # the run with "internal error" (found by test_odd_python_string_literals)
    p = tmp_path / "mixed.py"
    p.write_text("from vllm import LLM\nLLM(model='a' b'x')\n")
    res = read_path(str(p))
    assert res.deployments == ()
    [err] = res.errors
    # the position is the interpreter's own parser's (ast): line 2, the concatenation
    assert (err.line, err.message) == (2, "Python does not parse: cannot mix bytes and "
                                          "nonbytes literals")
