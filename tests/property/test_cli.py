"""Property tests over the command line: random flag values never escape as a traceback.

``main()`` runs in-process with stdout/stderr captured; the invariant is an exit code in
{0, 1, 2} and no "Traceback"/"internal error" text. Values: -1, 0, abc, 1e309, 30-digit numbers,
Unicode digits, empty strings and random text.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpcheck.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOOD = str(ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALUES = st.sampled_from(["-1", "0", "abc", "1e309", "1" * 30, "٨", "８", "", " ", "2.5",
                          "nan", "inf", "-0", "0x10", "h100-sxm", "TP201", "TP1,TP2"]) | st.text(
    max_size=12)


def run(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    text = out.getvalue() + err.getvalue()
    assert code in (0, 1, 2), (args, code, text[-500:])
    assert "Traceback" not in text and "internal error" not in text, (args, text[-1000:])
    return code, text


LINT_OPTS = ["--context", "--gpu", "--select", "--ignore", "--fail-on", "--engine-version",
             "--format"]


@SETTINGS
@given(st.sampled_from(LINT_OPTS), VALUES)
def test_lint_flag_values(opt: str, value: str) -> None:
    code, text = run(["--offline", opt, value, GOOD])
    if code != 2:  # the value was accepted: the good file was still checked
        assert "TP201" in text or opt in ("--select", "--ignore", "--fail-on", "--format")


PLAN_OPTS = ["--tp", "--pp", "--dp", "--hbm", "--reserve", "--context", "--batch", "--alpha",
             "--gpu-memory-utilization", "--max-num-seqs", "--kv-cache-dtype", "--quantization",
             "--dtype", "--engine-version", "--attn-dp", "--link"]


NAME_OPTS = ("--quantization", "--dtype")  # names: random values are a usage error (below)


@SETTINGS
@given(st.sampled_from(PLAN_OPTS), VALUES)
def test_plan_flag_values(opt: str, value: str) -> None:
    if opt in NAME_OPTS:
        value = "fp8" if opt == "--quantization" else "float16"
    run(["plan", "Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--offline", opt, value])


@pytest.mark.parametrize("opt", NAME_OPTS)
def test_plan_unknown_quantization_or_dtype_is_a_usage_error(opt: str) -> None:
    code, text = run(["plan", "Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--offline", opt, "bogus"])
    assert code == 2 and "bogus" in text


@SETTINGS
@given(st.sampled_from(["num_key_value_heads", "hidden_size", "num_hidden_layers", "vocab_size",
                        "torch_dtype", "head_dim", "max_position_embeddings"]), VALUES)
def test_plan_set_overrides(key: str, value: str) -> None:
    run(["plan", "Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--offline", "--set", f"{key}={value}"])


@SETTINGS
@given(st.lists(st.sampled_from(["--tensor-parallel-size", "--max-num-seqs", "--max-model-len",
                                 "--pipeline-parallel-size", "--data-parallel-size",
                                 "--gpu-memory-utilization", "--kv-cache-dtype",
                                 "--max-num-batched-tokens"]), min_size=1, max_size=4),
       st.lists(VALUES, min_size=4, max_size=4))
def test_manifest_flag_values_next_to_a_good_file(flags: list[str], values: list[str]) -> None:
    """A launch with hostile values and a good manifest in one run: the good one's TP201 is
    still reported whatever happens to the other."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "run.sh"
        args = " ".join(f"{f} '{v}'" for f, v in zip(flags, values, strict=False))
        script.write_text(f"vllm serve Qwen/Qwen3-32B {args}\n", encoding="utf-8")
        _, text = run(["--offline", "--gpu", "h100-sxm", str(script), GOOD])
        assert "qwen3-32b-tp16.yaml:19:16: TP201" in text
