"""TP002 ambiguous-option: a prefix that matches several options (argparse refuses it).

Every expected message is the engine's own text (CPython Lib/argparse.py, pydantic, the
releases' deprecation texts quoted from the generated tables); moved from
tests/checks/test_command_line.py, which keeps the cases that span several codes (issue 15).
"""

from __future__ import annotations

from pathlib import Path

from tests.checks.rulecase import col, engine_says
from tests.checks.rulecase import lint_command_line as lint


def test_ambiguous_prefix_lists_every_match(tmp_path: Path) -> None:
    line = "python -m sglang.launch_server --model-path m --pp 2"
    [f] = lint(tmp_path, "pp.sh", line + "\n")
    assert f.code == "TP002"
    # SGLang 0.5.23: --pp-size, --pp-max-micro-batch-size and --pp-async-batch-depth
    assert f.message.startswith("ambiguous option --pp")
    assert engine_says(f).startswith(
        "sglang serve: error: ambiguous option: --pp could match --pp-async-batch-depth, "
        "--pp-max-micro-batch-size, --pp-size")
    assert f.span.column == col(line, "--pp")


def test_ambiguous_prefix_says_when_it_became_ambiguous(tmp_path: Path) -> None:
    # --cuda-graph-max-bs was an option up to the 0.5.10 line; 0.5.23 split it into -decode and
    # -prefill (fields/exec_.py:629/632), so the old spelling is now a prefix of both.
    [f] = lint(tmp_path, "cg.sh",
               "python -m sglang.launch_server --model-path m --cuda-graph-max-bs 8\n")
    assert f.code == "TP002"
    assert ("--cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
            "--cuda-graph-max-bs-prefill (it named --cuda-graph-max-bs in sglang 0.5.10.post1; "
            "ambiguous since 0.5.23)") in f.text
