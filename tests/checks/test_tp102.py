"""TP102 kv-heads-not-divisible, both branches of the attention layer's assert: h_kv ≥ t needs
h_kv mod t = 0 (the heads are partitioned), h_kv < t needs t mod h_kv = 0 (they are
replicated). Error at the t value; quiet for a legal t."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Severity


@pytest.mark.parametrize(("text", "expression", "vals", "remainder", "fix"), [
    # Llama-3.1-70B: h_kv = 8 ≥ t = 6, 8 mod 6 = 2
    ("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6",
     "h_kv mod t", {"h_kv": 8, "t": 6}, 8 % 6, "use tensor parallel size 4 or 8"),
    # Qwen2.5-7B: h = 28 (28 mod 14 = 0), h_kv = 4 < t = 14, 14 mod 4 = 2; the legal sizes are
    # 1, 2, 4 (t = 28 passes both head rules, but f = 18,944 = 676·28 + 16)
    ("vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 14",
     "t mod h_kv", {"t": 14, "h_kv": 4}, 14 % 4, "use tensor parallel size 4"),
    # Qwen2-0.5B: h = 14 (14 mod 7 = 0: no TP101), h_kv = 2 < 7, 7 mod 2 = 1
    ("vllm serve Qwen/Qwen2-0.5B --tensor-parallel-size 7",
     "t mod h_kv", {"t": 7, "h_kv": 2}, 7 % 2, "use tensor parallel size 2"),
])
def test_fires(text: str, expression: str, vals: dict[str, int], remainder: int,
               fix: str) -> None:
    f = only(lint_text(text), "TP102")
    assert f.severity == Severity.ERROR
    t = str(vals["t"])
    assert (f.span.line, f.span.column, f.span.end_column) == (
        1, len(text) - len(t) + 1, len(text) + 1)
    assert f.formula is not None
    assert (f.formula.expression, dict(f.formula.values)) == (expression, vals)
    assert f.formula.result == remainder != 0
    assert f.fix == fix


@pytest.mark.parametrize("text", [
    "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8",  # 8 mod 8 = 0
    "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16",  # h_kv = 8 < 16, 16 mod 8 = 0
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text) if f.code == "TP102"] == []
