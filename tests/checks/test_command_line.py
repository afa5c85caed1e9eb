"""TP001-TP005: what each engine release's argparse (or EngineArgs/ServerArgs) does with a line.

The cases of one rule live in tests/checks/test_tp001.py..test_tp005.py; here are those that
span several codes (Python keywords, the layout rules beside a bad value, release pins).

Every expected message is the engine's own text: argparse's ``unrecognized arguments`` /
``ambiguous option`` / ``invalid int value`` / ``invalid choice`` lines (CPython
Lib/argparse.py), pydantic's bound messages for the config fields (vLLM 0.33.0
config/cache.py:215 ``gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)``), and
the deprecation texts of the releases (quoted from the generated tables).
"""

from __future__ import annotations

from pathlib import Path

from tests.checks.rulecase import col, engine_says
from tests.checks.rulecase import lint_command_line as lint
from tpcheck.lint import Linter
from tpcheck.settings import Settings

# ------------------------------------------------------------------------- Python keywords


def test_python_keywords_unknown_and_out_of_range(tmp_path: Path) -> None:
    text = ("from vllm import LLM\n"
            "llm = LLM(model='m', tensor_parallel_sise=2, gpu_memory_utilization=1.5)\n")
    fs = lint(tmp_path, "run.py", text)
    assert [f.code for f in fs] == ["TP001", "TP003"]
    assert engine_says(fs[0]) == (
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument "
        "'tensor_parallel_sise'")
    assert fs[0].message == ("unknown keyword argument tensor_parallel_sise "
                             "(did you mean tensor_parallel_size?)")
    assert fs[0].span.column == text.splitlines()[1].index("tensor_parallel_sise") + 1
    assert engine_says(fs[1]).startswith("pydantic ValidationError: gpu_memory_utilization: Input "
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
    assert engine_says(f) == "vllm serve: error: unrecognized arguments: --max-num-seqz"
    assert f.message == "unknown option --max-num-seqz (did you mean --max-num-seqs?)"
    assert "vllm 0.23.0 has no option table: checked against 0.21.0, the nearest known" in (
        f.text)


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
