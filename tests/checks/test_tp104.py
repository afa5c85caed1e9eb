"""TP104 vocab-padding, both branches: the vocabulary padded to a multiple of 64 not divisible
by t (a refusal, error), and padding rows that only hold memory (info); quiet at t = 1 or
with no padding."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Severity

TINY = "TinyLlama/TinyLlama-1.1B-Chat-v0.4"  # V = 32,003, d = 2,048, untied, bf16 compute


def test_padded_vocab_not_divisible_is_a_refusal() -> None:
    # Qwen2.5-7B: V = 152,064 = 2,376·64 (no padding), and 152,064 = 10,861·14 + 10
    text = "vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 14"
    f = only(lint_text(text), "TP104")
    assert f.severity == Severity.ERROR
    assert (f.span.column, f.span.end_column) == (len(text) - 1, len(text) + 1)
    assert f.formula is not None
    assert f.formula.expression == "V_pad mod t"
    assert dict(f.formula.values) == {"V_pad": 152064, "t": 14}
    assert f.formula.result == 152064 % 14 == 10
    assert f.fix == "use tensor parallel size 4"


def test_padding_rows_are_info() -> None:
    # V = 32,003 → ceil(32,003/64)·64 = 501·64 = 32,064: 61 rows, each d = 2,048 values of
    # b = 2 bytes, in the embedding and lm_head (untied: 2 copies) = 61·2048·2·2 = 499,712 B
    # = 488.00 KiB
    text = f"vllm serve {TINY} --tensor-parallel-size 2"
    f = only(lint_text(text), "TP104")
    assert f.severity == Severity.INFO
    assert (f.span.column, f.span.end_column) == (len(text), len(text) + 1)
    assert f.formula is not None
    assert (f.formula.name, f.formula.expression) == ("V_pad", "ceil(V / 64)·64")
    assert dict(f.formula.values) == {"V": 32003} and f.formula.result == 501 * 64 == 32064
    waste = f.formulas[1]
    assert waste.expression == "(V_pad − V)·d·b·copies"
    assert dict(waste.values) == {"V_pad": 32064, "V": 32003, "d": 2048, "b": 2, "copies": 2}
    assert waste.result == 61 * 2048 * 2 * 2 == 499712
    assert f.message == "61 vocabulary padding rows at t=2 hold 488.00 KiB: harmless"


@pytest.mark.parametrize("text", [
    f"vllm serve {TINY}",  # t = 1: nothing is split, padding or not
    "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8",  # 151,936 = 2,374·64: no padding
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text) if f.code == "TP104"] == []
