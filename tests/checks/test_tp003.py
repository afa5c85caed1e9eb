"""TP003 bad-option-value: a value of the wrong type, outside the choices or the field's bounds.

Every expected message is the engine's own text (CPython Lib/argparse.py, pydantic, the
releases' deprecation texts quoted from the generated tables); moved from
tests/checks/test_command_line.py, which keeps the cases that span several codes (issue 15).
"""

from __future__ import annotations

from pathlib import Path

from tests.checks.rulecase import col, engine_says
from tests.checks.rulecase import lint_command_line as lint


def test_out_of_range_utilization_quotes_the_field_bound(tmp_path: Path) -> None:
    line = "vllm serve m --gpu-memory-utilization 90"
    [f] = lint(tmp_path, "u.sh", line + "\n")
    assert f.code == "TP003"
    assert engine_says(f).startswith("pydantic ValidationError: gpu_memory_utilization: Input "
                                     "should be less than or equal to 1 [input_value=90]")
    assert (f.span.column, f.span.end_column) == (col(line, "90"), col(line, "90") + 2)


def test_not_an_int_and_not_a_choice(tmp_path: Path) -> None:
    line = "vllm serve m -tp eight --dtype fp9"
    fs = lint(tmp_path, "t.sh", line + "\n")
    assert [f.code for f in fs] == ["TP003", "TP003"]
    assert engine_says(fs[0]).startswith("vllm serve: error: argument --tensor-parallel-size/-tp: "
                                    "invalid int value: 'eight'")
    assert fs[0].span.column == col(line, "eight")
    # ModelDType = Literal["auto", "half", "float16", "bfloat16", "float", "float32"]
    # (vLLM 0.33.0 config/model.py:100), sorted into argparse choices
    assert engine_says(fs[1]).startswith(
        "vllm serve: error: argument --dtype: invalid choice: 'fp9' (choose from 'auto', "
        "'bfloat16', 'float', 'float16', 'float32', 'half')")


def test_sglang_kv_cache_dtype_choice(tmp_path: Path) -> None:
    [f] = lint(tmp_path, "k.sh",
               "python -m sglang.launch_server --model-path m --kv-cache-dtype fp9\n")
    assert f.code == "TP003"
    assert "argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'bf16'" in (
        f.text)


def test_value_filled_in_at_run_time_is_not_judged(tmp_path: Path) -> None:
    assert lint(tmp_path, "r.sh", 'vllm serve m -tp "$(( N * 2 ))" --max-model-len "$LEN"\n') == []


def test_pinned_0_10_2_reads_skipvalidation_fields(tmp_path: Path) -> None:
    """vLLM 0.10.2 --block-size is SkipValidation[BlockSize] (config/cache.py:35), BlockSize =
    Literal[1, 8, 16, 32, 64, 128] (cache.py:24): argparse refuses 256 there (0.14.0 adds it).
    --max-num-seqs is SkipValidation[int] (config/scheduler.py:43): an int. The tables before
    the regeneration had both as plain strings, so neither was judged."""
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - name: vllm\n    image: vllm/vllm-openai:v0.10.2\n"
            "    command: [vllm, serve, m, --block-size, '256', --max-num-seqs, lots]\n")
    fs = lint(tmp_path, "p.yaml", text)
    assert [f.code for f in fs] == ["TP003", "TP003"]
    assert engine_says(fs[0]).startswith(
        "vllm serve: error: argument --block-size: invalid choice: ")
    assert "(choose from '1', '8', '16', '32', '64', '128')" in fs[0].text
    assert engine_says(fs[1]).startswith(
        "vllm serve: error: argument --max-num-seqs: invalid int value: 'lots'")
