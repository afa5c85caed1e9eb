"""Where the ignore quick fix puts its comment, and where it refuses to (in-process, fast)."""

from __future__ import annotations

from tests.lsp.conftest import REPO
from tpcheck.lint import Linter, LintResult
from tpcheck.lsp import convert
from tpcheck.lsp.suppress import apply_change, ignore_change
from tpcheck.settings import Settings
from tpcheck.sources import read_path

FIX = REPO / "fixtures" / "lint"


def _codes(name: str, text: str) -> list[str]:
    out = LintResult()
    Linter(Settings(offline=True), gpu_flag="h100-sxm").lint_read(read_path(name, text), out)
    return [f.code for f in out.findings]


def test_yaml_list_item_gets_a_comment_line_above_with_its_indent() -> None:
    text = (FIX / "qwen3-32b-tp16.yaml").read_text(encoding="utf-8")
    row = text.split("\n").index('            - "16"') + 1
    change = ignore_change(text, "yaml", row, "TP201", "d.yaml")
    assert change is not None
    assert (change.line, change.column, change.new_text) == (
        row - 1, 0, "            # tpcheck: ignore[TP201]\n")
    # TP402 too: the fixture's one pod asks for 16 GPUs on an 8-GPU H100 node type
    assert _codes("d.yaml", text) == ["TP201", "TP402"]
    assert _codes("d.yaml", apply_change(text, change)) == ["TP402"]


def test_folded_block_scalar_is_refused() -> None:
    # Inside `- >` the comment would become part of the sh -c command line.
    text = (FIX / "deepseek-v3-sglang.yaml").read_text(encoding="utf-8")
    row = next(i for i, ln in enumerate(text.split("\n"), 1) if "--tp 8" in ln)
    assert ignore_change(text, "yaml", row, "TP202", "d.yaml") is None


def test_shell_continuation_is_refused_but_a_one_liner_is_not() -> None:
    text = (FIX / "llama70b-tp6.sh").read_text(encoding="utf-8")
    row = next(i for i, ln in enumerate(text.split("\n"), 1) if "--tensor-parallel-size" in ln)
    # The line above ends in `\`: a comment line there would end the vllm command.
    assert ignore_change(text, "shell", row, "TP101", "s.sh") is None
    one = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n"
    change = ignore_change(one, "shell", 1, "TP201", "s.sh")
    assert change is not None and change.new_text == "# tpcheck: ignore[TP201]\n"


def test_existing_ignore_is_extended_not_duplicated() -> None:
    text = "# tpcheck: ignore[TP203]\nvllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n"
    change = ignore_change(text, "shell", 2, "TP201", "s.sh")
    assert change is not None
    assert apply_change(text, change).split("\n")[0] == "# tpcheck: ignore[TP203, TP201]"
    assert ignore_change(text, "shell", 2, "TP203", "s.sh") is None  # already there


def test_python_call_argument_gets_a_comment_line() -> None:
    text = ('from vllm import LLM\n\nllm = LLM(\n    model="Qwen/Qwen3-32B",\n'
            '    tensor_parallel_size=16,\n)\n')
    change = ignore_change(text, "python", 5, "TP201", "l.py")
    assert change is not None and change.new_text == "    # tpcheck: ignore[TP201]\n"
    # A line above would land inside the string; after its closing quotes is a real comment.
    inside = 'cmd = """vllm serve Qwen/Qwen3-32B\n--tensor-parallel-size 16"""\n'
    change = ignore_change(inside, "python", 2, "TP201", "l.py")
    assert change is not None and change.new_text == "  # tpcheck: ignore[TP201]"
    assert apply_change(inside, change).split("\n")[1].endswith('16"""  # tpcheck: ignore[TP201]')
    still_open = 'cmd = """vllm serve Qwen/Qwen3-32B\n--tensor-parallel-size 16\n"""\n'
    assert ignore_change(still_open, "python", 2, "TP201", "l.py") is None


def test_columns_count_utf16_units() -> None:
    # "é" is one UTF-16 unit, "😋" two (outside the Basic Multilingual Plane), four in UTF-8.
    line = 'x="😋é" 16'
    col = line.index("16")  # 7 code points before it
    assert convert.units(line, col, "utf-32") == 7
    assert convert.units(line, col, "utf-16") == 8
    assert convert.units(line, col, "utf-8") == 11  # 3 + 4 + 2 + 2
    for enc in ("utf-8", "utf-16", "utf-32"):
        assert convert.code_points(line, convert.units(line, col, enc), enc) == col


def test_a_lone_surrogate_in_the_buffer_counts_instead_of_raising() -> None:
    # An editor buffer can hold "\ud800" (JSON escapes it); strict encoding raised
    # UnicodeEncodeError and the document got no diagnostics. It is one UTF-16 unit, and the
    # three bytes of its surrogatepass form in UTF-8.
    line = "x\ud800-tp 8"
    col = line.index("8")  # 6 code points before it: x, \ud800, -, t, p, space
    assert convert.units(line, col, "utf-16") == 6
    assert convert.units(line, col, "utf-8") == 8  # 1 + 3 + 1 + 1 + 1 + 1
    for enc in ("utf-8", "utf-16", "utf-32"):
        assert convert.code_points(line, convert.units(line, col, enc), enc) == col
