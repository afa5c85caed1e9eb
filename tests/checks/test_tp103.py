"""TP103 ffn-not-divisible: the dense FFN width f mod t, and an MoE expert's width mod the
flattened t·dp when experts are not parallel (vLLM's FusedMoEConfig); error at t; quiet with
expert parallelism or a legal t."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Severity

MIXTRAL = ("vllm serve mistralai/Mixtral-8x7B-v0.1 --tensor-parallel-size 8 "
           "--data-parallel-size 3 --max-model-len 4096")


def test_dense_width() -> None:
    # Llama-3.1-70B: f = 28,672 = 4778·6 + 4
    text = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6"
    f = only(lint_text(text), "TP103")
    assert f.severity == Severity.ERROR
    assert (f.span.column, f.span.end_column) == (len(text), len(text) + 1)
    assert f.formula is not None
    assert (f.formula.expression, dict(f.formula.values)) == ("f mod t", {"f": 28672, "t": 6})
    assert f.formula.result == 28672 % 6 == 4
    assert f.fix == "use tensor parallel size 4 or 8"


def test_expert_width_over_t_times_dp() -> None:
    # Mixtral-8x7B: expert width 14,336 = 2^11·7; vLLM shards experts over t·dp = 8·3 = 24 and
    # 14,336 = 597·24 + 8. No t up to 64 helps while dp = 3 (3 never divides 2^11·7).
    f = only(lint_text(MIXTRAL), "TP103")
    assert f.severity == Severity.ERROR
    t_at = MIXTRAL.index("--tensor-parallel-size 8") + len("--tensor-parallel-size ") + 1
    assert (f.span.column, f.span.end_column) == (t_at, t_at + 1)
    assert f.formula is not None
    assert f.formula.expression == "f_expert mod t·dp"
    assert dict(f.formula.values) == {"f_expert": 14336, "t·dp": 24}
    assert f.formula.result == 14336 % 24 == 8
    assert "use --enable-expert-parallel" in f.text
    assert f.fix == "no tensor parallel size up to 64 starts this model with these flags"
    assert f.edits == ()


@pytest.mark.parametrize("text", [
    MIXTRAL.replace(" --max-model-len", " --enable-expert-parallel --max-model-len"),  # EP
    "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8",  # 28,672 = 3584·8
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text) if f.code == "TP103"] == []
