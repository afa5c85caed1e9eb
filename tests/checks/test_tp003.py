"""TP003 bad-option-value: a value of the wrong type, outside the choices or the field's bounds.

Every expected message is the engine's own text (CPython Lib/argparse.py, pydantic, the
releases' deprecation texts quoted from the generated tables); moved from
tests/checks/test_command_line.py, which keeps the cases that span several codes (issue 15).
"""

from __future__ import annotations

from pathlib import Path

import pytest

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


# Values as each release's parser reads them (the table's "parsing" and per-option "parser",
# read from the release by tools/gen_options.py).
HUMAN = [
    # vllm 0.33.0 utils/argparse_utils.py:30 human_readable_int: (\d+(?:\.\d+)?)([kKmMgGtT]);
    # a decimal suffix takes decimals (10.2k = 10,200), a binary one does not
    ("0.33.0", "10.2k", None),
    ("0.33.0", "4T", None),
    ("0.33.0", "AUTO", None),  # human_readable_int_or_auto: value.lower() == "auto"
    ("0.33.0", "1.23M", "Decimals are not allowed with binary suffixes like M. Did you mean to "
                        "use 1.23m instead?"),
    ("0.33.0", "10.24", "invalid human_readable_int_or_auto value: '10.24'"),
    # 0.10.2 engine/arg_utils.py: the pattern has t/T but the multipliers stop at g/G, so "2t"
    # falls through to int() (its own test refuses 1.23M and 10.24, not 2t; 0.14.0 adds t/T)
    ("0.10.2", "2t", "invalid human_readable_int value: '2t'"),
    ("0.14.0", "2t", None),
    ("0.10.2", "auto", "invalid human_readable_int value: 'auto'"),  # no _or_auto before 0.14
]


@pytest.mark.parametrize(("release", "value", "said"), HUMAN)
def test_human_readable_integers_per_release(tmp_path: Path, release: str, value: str,
                                             said: str | None) -> None:
    fs = lint(tmp_path, "s.sh", f"vllm serve m --max-model-len {value}\n",
              engine_version=release)
    if said is None:
        assert fs == []
    else:
        [f] = fs
        assert f.code == "TP003"
        assert f.message == f"invalid value {value!r} for --max-model-len"
        assert engine_says(f).startswith(f"vllm serve: error: argument --max-model-len: {said}")


@pytest.mark.parametrize(("args", "said"), [
    ("--default-chat-template-kwargs 'not valid json'",
     "argument --default-chat-template-kwargs: invalid loads value: 'not valid json'"),
    ("--lora-modules '{\"name\": \"a\", \"path\": \"/p\"'",
     "Invalid JSON format for --lora-modules: {\"name\": \"a\", \"path\": \"/p\""),
    ("--lora-modules invalid_format", "Invalid JSON format for --lora-modules: invalid_format"),
    ("--lora-modules '{\"name\": \"m4\"}'",
     "Invalid fields for --lora-modules: {\"name\": \"m4\"} - missing required field(s): path"),
])
def test_values_parsed_as_json_or_by_the_lora_action(tmp_path: Path, args: str,
                                                     said: str) -> None:
    [f] = lint(tmp_path, "s.sh", f"vllm serve m {args}\n")
    assert f.code == "TP003"
    assert engine_says(f).startswith(f"vllm serve: error: {said}")


@pytest.mark.parametrize("args", [
    "--default-chat-template-kwargs '{\"enable_thinking\": false}'",
    "--lora-modules a=/path/to/a",
    "--lora-modules '{\"name\": \"b\", \"path\": \"/p\", \"base_model_name\": \"m\"}'",
    "--lora-modules ''",
])
def test_good_json_and_lora_values(tmp_path: Path, args: str) -> None:
    assert lint(tmp_path, "s.sh", f"vllm serve m {args}\n") == []


def test_a_bound_the_release_checks_in_code(tmp_path: Path) -> None:
    """vLLM 0.33.0 validate_parsed_serve_args (common/cli_args.py:559-562) refuses a negative
    --sse-keep-alive-interval after parsing; the bound is read into the table's validations."""
    [f] = lint(tmp_path, "s.sh", "vllm serve m --sse-keep-alive-interval -5\n")
    assert f.code == "TP003"
    assert f.message == "invalid value '-5' for --sse-keep-alive-interval"
    assert engine_says(f).startswith("ValueError: Error: --sse-keep-alive-interval must be a "
                                "non-negative integer (0 disables keep-alive comments). "
                                "(vllm/entrypoints/common/cli_args.py:560)")
    assert lint(tmp_path, "s.sh", "vllm serve m --sse-keep-alive-interval 0\n") == []


def test_a_huge_value_is_cut_in_the_headline_and_quoted_whole_in_the_evidence(
        tmp_path: Path) -> None:
    value = "x" * 300
    [f] = lint(tmp_path, "s.sh", f"vllm serve m --max-model-len {value}\n")
    # 23 characters and an ellipsis: the headline stays one line
    assert f.message == f"invalid value '{'x' * 23}…' for --max-model-len"
    assert len(f.message) <= 100
    assert engine_says(f).endswith(f"invalid human_readable_int_or_auto value: '{value}'")
