"""One line per problem, whatever the paths and values hold (issue 14, hostile classes).

A newline, carriage return, NEL (U+0085), U+2028 or an escape sequence in a file name, a setting
or a launch value is written the way ``repr`` writes it in text output, in the GitHub commands
and in the error lines on stderr; JSON and SARIF keep the true string (their encoders escape
it). Each case runs ``main()`` in a temporary folder, offline.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.shared import chdir
from tpcheck.cli import main
from tpcheck.oneline import one_line

ROOT = Path(__file__).resolve().parents[2]
GOOD_TEXT = (ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml").read_text(encoding="utf-8")
# Each breaks a line for str.splitlines() or rewrites a terminal (ESC ... m recolours it).
HOSTILE = ["\n", "\r", "\x85", "\u2028", "\u2029", "\x1b[31m", "\x0b", "\x7f"]
ODD_PY = 'LLM(model=b"""""""", tensor_parallel_size=2)\n'  # bytes then str: Python refuses it


def run_in(folder: Path, args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with chdir(folder), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(["--offline", "--gpu", "h100-sxm", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("text", ["a\nb", "a\rb", "a\x85b", "a\u2028b", "a\u2029b",
                                  "\x1b[31mred", "\x00", "\t", "\x7f", "\x9f"])
def test_every_line_breaking_or_terminal_character_is_escaped(text: str) -> None:
    shown = one_line(text)
    assert len(shown.splitlines()) == 1 and shown.isprintable(), shown
    assert shown == repr(text)[1:-1]  # as repr writes them (no quote or backslash in the cases)


def test_other_text_is_left_alone() -> None:
    text = "C:\\models\\x 'é' \"ü\" 中文 ${A} %0A"
    assert one_line(text) == text


@pytest.mark.parametrize("bad", HOSTILE)
def test_a_finding_in_a_file_so_named_stays_on_its_line(tmp_path: Path, bad: str) -> None:
    name = f"q{bad}wen.yaml"
    (tmp_path / name).write_text(GOOD_TEXT, encoding="utf-8")
    code, out, err = run_in(tmp_path, [name])
    assert code == 1, err
    # TP201 on the fixture: t = 16 > h_kv = 8 (Qwen3-32B), at its "16" (line 19, column 16)
    heads = [x for x in out.splitlines() if " TP201 " in x]
    assert len(heads) == 1 and heads[0].startswith(f"q{one_line(bad)}wen.yaml:19:16: "), out
    assert "\x1b" not in out and len(out.splitlines()) == len(out.split("\n")) - 1

    code, out, _ = run_in(tmp_path, ["--format", "json", name])
    assert {f["path"] for f in json.loads(out)["findings"]} == {name}  # the true name

    code, out, _ = run_in(tmp_path, ["--format", "github", name])
    line = next(x for x in out.splitlines() if x.startswith("::"))
    # GitHub's own escapes for CR and LF (the runner turns them back into the true name), the
    # others as repr writes them
    shown = {"\n": "%0A", "\r": "%0D"}.get(bad, one_line(bad))
    assert f"file=q{shown.replace(':', '%3A')}wen.yaml," in line
    assert "\x1b" not in out


@pytest.mark.parametrize("bad", HOSTILE)
def test_an_error_about_a_file_so_named_is_one_line(tmp_path: Path, bad: str) -> None:
    name = f"od{bad}d.py"
    (tmp_path / name).write_text(ODD_PY, encoding="utf-8")
    (tmp_path / "good.yaml").write_text(GOOD_TEXT, encoding="utf-8")
    code, out, err = run_in(tmp_path, [name, "good.yaml"])
    assert code == 2
    # where the interpreter's own parser points (3.11: column 20, just past b"""""""")
    try:
        ast.parse(ODD_PY)
    except SyntaxError as e:
        at = f"{e.lineno}:{e.offset}"
    assert err.splitlines() == [f"tpcheck: od{one_line(bad)}d.py:{at}: Python does not parse: "
                                "cannot mix bytes and nonbytes literals"], err
    assert "TP201" in out  # the other file is still checked

    code, out, err = run_in(tmp_path, ["--format", "sarif", name])
    (result,) = json.loads(out)["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert unquote(uri) == name  # SARIF keeps the true name (percent-encoded in its URI)


@pytest.mark.parametrize("bad", HOSTILE)
def test_a_settings_value_in_an_error_is_one_line(tmp_path: Path, bad: str) -> None:
    # the reproducer: topology = "\u0085" printed a raw NEL inside "tpcheck: ...:1:1: ..."
    (tmp_path / ".tpcheck.toml").write_text(f"offline = true\ntopology = {json.dumps(bad)}\n",
                                            encoding="utf-8")
    (tmp_path / "good.yaml").write_text(GOOD_TEXT, encoding="utf-8")
    code, _, err = run_in(tmp_path, ["good.yaml"])
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tpcheck: {one_line(bad)}:1:1: cannot read "
                                                   "topology"), err
    assert "\x1b" not in err


def test_a_launch_value_in_a_message_cannot_recolour_the_terminal(tmp_path: Path) -> None:
    (tmp_path / "esc.sh").write_text('vllm serve "nosuch/m\x1b[31mX" -tp 3\n', encoding="utf-8")
    _, out, err = run_in(tmp_path, ["esc.sh"])
    assert "\x1b" not in out + err
    # column 13: the model's first character, after `vllm serve ` (11) and the quote
    assert "esc.sh:1:13: TP000 [warning] nosuch/m\\x1b[31mX: " in out, out


def test_a_command_line_error_is_one_line(tmp_path: Path) -> None:
    code, _, err = run_in(tmp_path, ["--context", "1\n2", "x.yaml"])
    assert code == 2 and len(err.splitlines()) == 1 and "1\\n2" in err, err


def test_inspect_text_keeps_each_launch_on_its_lines(tmp_path: Path) -> None:
    # tp is $'\n' (ANSI-C quoting): unresolved, and its expression holds a real newline
    (tmp_path / "esc.sh").write_text("vllm serve \"nosuch/m\x1b[31mX\" -tp $'\\n'\n",
                                     encoding="utf-8")
    out = io.StringIO()
    with chdir(tmp_path), contextlib.redirect_stdout(out):
        assert main(["inspect", "--offline", "esc.sh"]) == 0
    assert "\x1b" not in out.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("esc.sh:1: vllm model=nosuch/m\\x1b[31mX tp=- "), lines
    assert "    tensor_parallel_size: unresolved $\\n" in lines, lines


# The Unicode bidi controls (UAX #9): LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI.
# None breaks a line, but each reorders how the rest of it is shown ("Trojan source").
# And ALM (U+061C), UAX #9's twelfth: the Arabic letter mark.
BIDI = ["\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
        "\u2066", "\u2067", "\u2068", "\u2069", "\u061c"]
# Zero-width characters that join nothing: a name with one looks like the name without it.
ZERO_WIDTH = ["\u200b", "\u2060", "\u2061", "\u2062", "\u2063", "\u2064", "\ufeff", "\u180e"]


@pytest.mark.parametrize("mark", BIDI)
def test_bidi_controls_are_escaped_as_repr_writes_them(mark: str) -> None:
    shown = one_line(f"a{mark}b")
    # "\u202e" is 6 printable characters: a, the escape, b = 8, and no bidi control left
    assert shown == f"a\\u{ord(mark):04x}b" and len(shown) == 8 and shown.isprintable()
    assert shown == repr(f"a{mark}b")[1:-1]


@pytest.mark.parametrize("mark", ZERO_WIDTH)
def test_zero_width_characters_are_escaped(mark: str) -> None:
    # repr leaves U+200B as it is (it is "printable" to Python): written \u200b all the same
    assert one_line(f"a{mark}b") == f"a\\u{ord(mark):04x}b"


@pytest.mark.parametrize("mark", ["\u061c", "\u200b"])
def test_text_and_github_output_escape_alm_and_zwsp(tmp_path: Path, mark: str) -> None:
    name = f"q{mark}wen.yaml"
    (tmp_path / name).write_text(GOOD_TEXT, encoding="utf-8")
    for fmt in ("text", "github"):
        code, out, _ = run_in(tmp_path, ["--format", fmt, name])
        assert code == 1 and mark not in out, fmt
        assert f"q\\u{ord(mark):04x}wen.yaml" in out


def test_plans_header_escapes_the_engine_version() -> None:
    bad = "0.10.0\x1b[2J\x1b]0;pwned\x07"  # clears the screen, retitles the terminal
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100-sxm",
                     "--offline", "--engine-version", bad])
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    assert "engine=vllm 0.10.0\\x1b[2J\\x1b]0;pwned\\x07 " in text


def test_neighbours_of_the_bidi_controls_are_left_alone() -> None:
    # U+200D (ZWJ, joins emoji), U+2065 (unassigned) and U+206A (deprecated, not a UAX #9 control)
    # sit just outside the escaped ranges U+200E-U+200F, U+202A-U+202E, U+2066-U+2069
    text = "a\u200db\u202fc\u2065d\u206ae"
    assert one_line(text) == text


def test_a_file_named_with_an_rlo_shows_it_escaped(tmp_path: Path) -> None:
    # unescaped, the RLO would show the rest of the line right to left
    name = "q\u202ewen.yaml"
    (tmp_path / name).write_text(GOOD_TEXT, encoding="utf-8")
    code, out, _ = run_in(tmp_path, [name])
    assert code == 1 and "\u202e" not in out
    # TP201 at line 19, column 16 of the fixture, as in the hostile-name test above
    assert "q\\u202ewen.yaml:19:16: TP201 " in out, out
    code, out, _ = run_in(tmp_path, ["--format", "json", name])
    assert {f["path"] for f in json.loads(out)["findings"]} == {name}  # JSON keeps the name


def test_models_list_escapes_committed_folder_names_and_revisions(tmp_path: Path) -> None:
    # .tpcheck/models/<org--name>/ and its REVISION come from the repository (a pull request)
    folder = tmp_path / ".tpcheck" / "models" / "ev\x1b]0;pwned\x07il--m\u202eodel"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}", encoding="utf-8")
    (folder / "REVISION").write_text("abc\x1b[2J\n", encoding="utf-8")
    out = io.StringIO()
    with chdir(tmp_path), contextlib.redirect_stdout(out):
        assert main(["models", "list"]) == 0
    first = out.getvalue().splitlines()[0]
    assert "\x1b" not in out.getvalue() and "\u202e" not in out.getvalue()
    assert first.startswith("ev\\x1b]0;pwned\\x07il/m\\u202eodel ")
    assert first.endswith(" pulled   abc\\x1b[2J")
