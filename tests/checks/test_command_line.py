"""TP001-TP005: what each engine release's argparse (or EngineArgs/ServerArgs) does with a line.

Every expected message is the engine's own text: argparse's ``unrecognized arguments`` /
``ambiguous option`` / ``invalid int value`` / ``invalid choice`` lines (CPython
Lib/argparse.py), pydantic's bound messages for the config fields (vLLM 0.33.0
config/cache.py:215 ``gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)``), and
the deprecation texts of the releases (quoted from the generated tables).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.checks.base import Finding, Severity
from tpcheck.lint import Linter
from tpcheck.settings import Settings

CODES = ("TP001", "TP002", "TP003", "TP004", "TP005")


def lint(tmp_path: Path, name: str, text: str) -> list[Finding]:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    res = Linter(Settings(offline=True, select=CODES)).run([str(p)])
    assert not res.errors, res.errors
    return sorted(res.findings, key=lambda f: (f.span.line, f.span.column))


def col(line: str, token: str) -> int:
    """1-based column of ``token`` in ``line`` (the span a finding must start at)."""
    return line.index(token) + 1


# ------------------------------------------------------------------------- TP001 unknown


def test_misspelt_option_is_the_engines_message_with_did_you_mean(tmp_path: Path) -> None:
    line = "vllm serve Qwen/Qwen3-32B --tensor-parallel-sise 8"
    [f] = lint(tmp_path, "a.sh", line + "\n")
    assert f.code == "TP001" and f.severity is Severity.ERROR
    assert f.message.startswith(
        "vllm serve: error: unrecognized arguments: --tensor-parallel-sise; "
        "did you mean --tensor-parallel-size?")
    assert "vllm 0.33.0: no release pinned" in f.message
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
    assert f.message.startswith("sglang serve: error: unrecognized arguments: "
                                "--tensor_parallel_size; did you mean --tensor-parallel-size?")


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


# ------------------------------------------------------------------------- TP002 ambiguous


def test_ambiguous_prefix_lists_every_match(tmp_path: Path) -> None:
    line = "python -m sglang.launch_server --model-path m --pp 2"
    [f] = lint(tmp_path, "pp.sh", line + "\n")
    assert f.code == "TP002"
    # SGLang 0.5.23: --pp-size, --pp-max-micro-batch-size and --pp-async-batch-depth
    assert f.message.startswith(
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
            "ambiguous since 0.5.23)") in f.message


# ------------------------------------------------------------------------- TP003 bad value


def test_out_of_range_utilization_quotes_the_field_bound(tmp_path: Path) -> None:
    line = "vllm serve m --gpu-memory-utilization 90"
    [f] = lint(tmp_path, "u.sh", line + "\n")
    assert f.code == "TP003"
    assert f.message.startswith("pydantic ValidationError: gpu_memory_utilization: Input should "
                                "be less than or equal to 1 [input_value=90]")
    assert (f.span.column, f.span.end_column) == (col(line, "90"), col(line, "90") + 2)


def test_not_an_int_and_not_a_choice(tmp_path: Path) -> None:
    line = "vllm serve m -tp eight --dtype fp9"
    fs = lint(tmp_path, "t.sh", line + "\n")
    assert [f.code for f in fs] == ["TP003", "TP003"]
    assert fs[0].message.startswith("vllm serve: error: argument --tensor-parallel-size/-tp: "
                                    "invalid int value: 'eight'")
    assert fs[0].span.column == col(line, "eight")
    # ModelDType = Literal["auto", "half", "float16", "bfloat16", "float", "float32"]
    # (vLLM 0.33.0 config/model.py:100), sorted into argparse choices
    assert fs[1].message.startswith(
        "vllm serve: error: argument --dtype: invalid choice: 'fp9' (choose from 'auto', "
        "'bfloat16', 'float', 'float16', 'float32', 'half')")


def test_sglang_kv_cache_dtype_choice(tmp_path: Path) -> None:
    [f] = lint(tmp_path, "k.sh",
               "python -m sglang.launch_server --model-path m --kv-cache-dtype fp9\n")
    assert f.code == "TP003"
    assert "argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'bf16'" in (
        f.message)


def test_value_filled_in_at_run_time_is_not_judged(tmp_path: Path) -> None:
    assert lint(tmp_path, "r.sh", 'vllm serve m -tp "$(( N * 2 ))" --max-model-len "$LEN"\n') == []


# ------------------------------------------------------------------------- TP004 removed


def test_removed_option_names_the_last_release_that_had_it(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: v\n      image: vllm/vllm-openai:v0.33.0\n"
        "      command: [vllm, serve]\n"
        "      args: [m, --swap-space, '4']\n"
    )
    [f] = lint(tmp_path, "pod.yaml", text)
    assert f.code == "TP004" and f.severity is Severity.ERROR
    assert f.message.startswith("vllm serve: error: unrecognized arguments: --swap-space "
                                "(registered up to vllm 0.14.0 at vllm/engine/arg_utils.py:")
    assert (f.span.line, f.span.column) == (9, text.splitlines()[8].index("--swap") + 1)


def test_removed_option_without_a_pinned_release_is_a_warning(tmp_path: Path) -> None:
    [f] = lint(tmp_path, "s.sh", "vllm serve m --swap-space 4\n")
    assert f.code == "TP004" and f.severity is Severity.WARNING
    assert "pin the image to the release you run" in f.message


def test_old_image_tag_picks_the_nearest_older_table(tmp_path: Path) -> None:
    text = (
        "services:\n  llm:\n    image: vllm/vllm-openai:v0.15.1\n"
        "    command: [--model, m, --swap-space, '4', --tensor-parallel-sise, '2']\n"
    )
    [f] = lint(tmp_path, "docker-compose.yml", text)
    # 0.15.1 has no table; 0.14.0 is the newest known release not newer than it, and it still
    # registers --swap-space: only the misspelling is refused
    assert f.code == "TP001"
    assert "vllm 0.15.1 has no option table: checked against 0.14.0, the nearest known" in (
        f.message)


# ------------------------------------------------------------------------- TP005 deprecated


def test_deprecated_option_quotes_the_engines_warning(tmp_path: Path) -> None:
    line = "python -m sglang.launch_server --model-path m --dp 2 --enable-dp-attention"
    [f] = lint(tmp_path, "d.sh", line + "\n")
    assert f.code == "TP005" and f.severity is Severity.WARNING
    # SGLang 0.5.23 server_args.py:419, DeprecatedStoreTrueAction(new_flag="--attn-dp-size")
    assert f.message.startswith("'--enable-dp-attention' is deprecated and will be removed in a "
                                "future release. Use '--attn-dp-size <dp-size>' instead.")
    assert f.span.column == col(line, "--enable-dp-attention")


# ------------------------------------------------------------------------- Python keywords


def test_python_keywords_unknown_and_out_of_range(tmp_path: Path) -> None:
    text = ("from vllm import LLM\n"
            "llm = LLM(model='m', tensor_parallel_sise=2, gpu_memory_utilization=1.5)\n")
    fs = lint(tmp_path, "run.py", text)
    assert [f.code for f in fs] == ["TP001", "TP003"]
    assert fs[0].message.startswith(
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument "
        "'tensor_parallel_sise'; did you mean tensor_parallel_size?")
    assert fs[0].span.column == text.splitlines()[1].index("tensor_parallel_sise") + 1
    assert fs[1].message.startswith("pydantic ValidationError: gpu_memory_utilization: Input "
                                    "should be less than or equal to 1 [input_value=1.5]")
    assert fs[1].span.column == text.splitlines()[1].index("1.5") + 1


def test_python_keywords_the_engine_takes_give_nothing(tmp_path: Path) -> None:
    text = ("from vllm import LLM\n"
            "llm = LLM(model='m', tensor_parallel_size=2, seed=0, enforce_eager=True)\n")
    assert lint(tmp_path, "ok.py", text) == []


# ------------------------------------------------------------------------- the other rules


def test_invalid_kv_cache_dtype_is_a_finding_and_the_rest_is_checked(tmp_path: Path) -> None:
    """vLLM 0.33.0 takes any string for --kv-cache-dtype at parse time (CacheDType | str:
    metavar, not choices, arg_utils.py literal_to_kwargs); tpcheck's physics cannot size 'fp9',
    which used to stop the deployment (exit 2). Now it is TP003 and the other rules run."""
    p = tmp_path / "k.sh"
    line = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16 --kv-cache-dtype fp9"
    p.write_text(line + "\n", encoding="utf-8")
    res = Linter(Settings(offline=True), gpu_flag="h100-sxm").run([str(p)])
    assert res.errors == []
    codes = {f.code for f in res.findings}
    assert "TP003" in codes
    # Qwen3-32B has 8 KV heads: t = 16 > 8 replicates the cache (TP201), still reported
    assert "TP201" in codes
    [bad] = [f for f in res.findings if f.code == "TP003"]
    assert bad.span.column == col(line, "fp9")


def test_pin_between_two_tables_judges_only_what_both_neighbours_refuse(tmp_path: Path) -> None:
    # --enable-cumem-allocator is not in the 0.21.0 table but is in 0.26.0: a 0.23.0 image may
    # well have it, so it is not reported; the misspelling is refused by both neighbours.
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: v\n      image: vllm/vllm-openai:v0.23.0\n"
        "      command: [vllm, serve]\n"
        "      args: [m, --enable-cumem-allocator, --max-num-seqz, '8']\n"
    )
    [f] = lint(tmp_path, "pod.yaml", text)
    assert f.code == "TP001"
    assert f.message.startswith("vllm serve: error: unrecognized arguments: --max-num-seqz; "
                                "did you mean --max-num-seqs?")
    assert "vllm 0.23.0 has no option table: checked against 0.21.0, the nearest known" in (
        f.message)


def test_one_analysis_per_deployment_and_no_finished_deployment_kept(tmp_path: Path) -> None:
    # The five option rules share one analysis of a deployment; once the next deployment is
    # analysed, the previous one is not kept alive by that memo (a corpus run holds one file).
    import gc
    import weakref

    from tpcheck.checks._options import analyze
    from tpcheck.sources import read_path

    p = tmp_path / "two.sh"
    p.write_text("vllm serve a/b --tensor-parallel-sise 8\nvllm serve c/d --max-num-seqs 8\n",
                 encoding="utf-8")
    rr = read_path(str(p))
    first, second = rr.deployments
    a = analyze(first)
    assert analyze(first) is a
    assert [(v.use.written, v.outcome) for v in a.verdicts] == [
        ("--tensor-parallel-sise", "unknown")]
    assert analyze(second).verdicts == ()
    gone = weakref.ref(first)
    del first, rr, a
    gc.collect()
    assert gone() is None
