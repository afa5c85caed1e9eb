"""TP001 unknown-option: an option the engine release does not have (argparse refuses the line).

Every expected message is the engine's own text (CPython Lib/argparse.py, pydantic, the
releases' deprecation texts quoted from the generated tables); moved from
tests/checks/test_command_line.py, which keeps the cases that span several codes (issue 15).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.rulecase import col, engine_says
from tests.checks.rulecase import lint_command_line as lint
from tpcheck.checks.base import Severity


def test_misspelt_option_is_the_engines_message_with_did_you_mean(tmp_path: Path) -> None:
    line = "vllm serve Qwen/Qwen3-32B --tensor-parallel-sise 8"
    [f] = lint(tmp_path, "a.sh", line + "\n")
    assert f.code == "TP001" and f.severity is Severity.ERROR
    assert f.message == ("unknown option --tensor-parallel-sise "
                         "(did you mean --tensor-parallel-size?)")
    assert engine_says(f) == "vllm serve: error: unrecognized arguments: --tensor-parallel-sise"
    assert "vllm 0.33.0: no release pinned" in f.text
    # the span is the option itself: "--tensor-parallel-sise" is 22 characters
    assert (f.span.line, f.span.column) == (1, col(line, "--tensor"))
    assert f.span.end_column - f.span.column == 22
    assert f.edits and f.edits[0].new_text == "--tensor-parallel-size"


def test_sglang_does_not_rewrite_underscores_but_vllm_does(tmp_path: Path) -> None:
    # vLLM's FlexibleArgumentParser turns _ into - in option names (argparse_utils.py l.381-394)
    assert lint(tmp_path, "v.sh", "vllm serve m --tensor_parallel_size 4\n") == []
    # SGLang's plain ArgumentParser does not
    line = "python -m sglang.launch_server --model-path m --tensor_parallel_size 4"
    [f] = lint(tmp_path, "s.sh", line + "\n")
    assert f.code == "TP001"
    assert engine_says(f) == ("sglang serve: error: unrecognized arguments: "
                              "--tensor_parallel_size")
    assert f.message.endswith("(did you mean --tensor-parallel-size?)")


@pytest.mark.parametrize("line", [
    "vllm serve m -tp 4",                              # the short alias
    "vllm serve m --tensor-parallel 4",                # a unique prefix of --tensor-parallel-size
    "vllm serve m -qfp8",  # -q with its value attached (argparse splits a 2-character option)
    "vllm serve m -O3 --compilation-config.mode=3",    # FlexibleArgumentParser's -O and dotted keys
    "vllm serve m --seed -1",                          # argparse takes a negative number as a value
    "vllm serve m --served-model-name=-x",             # a value after = may start with -
    "vllm serve m --max-model-len 32k",                # human-readable int (vLLM 0.33.0)
    "vllm serve m --no-enable-prefix-caching",         # BooleanOptionalAction's --no- form
    "python -m sglang.launch_server --model-path m --tp 8",  # the only --tp* option: a prefix
    "python -m sglang.launch_server --model-path m --dp 2",
    "vllm serve m -- --not-an-option",                 # after --, every word is positional
    "python -m dynamo.vllm --model m --is-prefill-worker",  # dynamo's own option
])
def test_lines_the_engine_accepts_give_nothing(tmp_path: Path, line: str) -> None:
    assert lint(tmp_path, "ok.sh", line + "\n") == []


def test_dotted_keys_on_a_short_alias(tmp_path: Path) -> None:
    """vLLM expands ``.key`` on any option string starting with ``-`` from 0.9 on
    (argparse_utils.py:462 in 0.33.0), so ``-cc.mode=3`` is ``--compilation-config
    '{"mode": 3}'``; 0.8.5's parser expands none, so a dotted key is an unknown option there."""
    assert lint(tmp_path, "s.sh", "vllm serve m -cc.mode=3\n") == []
    assert lint(tmp_path, "s.sh", "vllm serve m --attention-config.backend FLASH_ATTN\n") == []
    [f] = lint(tmp_path, "s.sh", "vllm serve m --compilation-config.level 3\n",
               engine_version="0.8.5")
    assert f.code == "TP001"
    assert engine_says(f) == ("vllm serve: error: unrecognized arguments: "
                              "--compilation-config.level")
