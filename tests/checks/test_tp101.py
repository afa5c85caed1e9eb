"""TP101 heads-not-divisible: h mod t ≠ 0 is a start-up refusal in vLLM and SGLang (error at
the t value), with the nearest legal sizes as the fix; quiet for a legal t."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Severity

L70 = "meta-llama/Llama-3.1-70B-Instruct"  # h = 64, h_kv = 8, f = 28,672


@pytest.mark.parametrize("text", [
    f"vllm serve {L70} --tensor-parallel-size 6",
    f"python -m sglang.launch_server --model-path {L70} --tp 6",
])
def test_fires_at_the_t_value(text: str) -> None:
    f = only(lint_text(text), "TP101")
    assert f.severity == Severity.ERROR
    # the `6` at the end of line 1
    assert (f.span.line, f.span.column, f.span.end_column) == (1, len(text), len(text) + 1)
    assert f.formula is not None
    assert (f.formula.expression, dict(f.formula.values)) == ("h mod t", {"h": 64, "t": 6})
    assert f.formula.result == 64 % 6 == 4
    # the legal sizes divide 64 (and h_kv = 8 or are multiples of it, and f = 28,672 = 2^12·7)
    assert ("Legal sizes for this model (meta-llama/Llama-3.1-70B-Instruct): "
            "1, 2, 4, 8, 16, 32, 64") in f.text
    assert f.fix == "use tensor parallel size 4 or 8"
    # both neighbours offered as edits of the `6`, one preferred (--fix applies it): no GPU
    # count to contradict and no GPU to say the weights do not fit, both 2 from t = 6, so the
    # smaller, which needs no GPU that may not be there
    assert [(e.new_text, e.preferred) for e in f.edits] == [("4", True), ("8", False)]
    assert all(e.span == f.span for e in f.edits)


def test_a_neighbour_that_leaves_gpus_idle_is_not_preferred() -> None:
    text = f"""apiVersion: v1
kind: Pod
metadata: {{name: x}}
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.33.0
      args: ["vllm", "serve", "{L70}", "--tensor-parallel-size", "6"]
      resources: {{limits: {{nvidia.com/gpu: "8"}}}}
"""
    f = only(lint_text(text, name="pod.yaml"), "TP101")
    # 8 GPUs requested: t = 8 uses them all (preferred), t = 4 leaves 4 idle
    assert sorted((e.new_text, e.preferred) for e in f.edits) == [("4", False), ("8", True)]
    assert f.edits[0].new_text == "8"  # the preferred edit first


@pytest.mark.parametrize("t", [1, 2, 4, 8])
def test_quiet_for_a_divisor_of_h(t: int) -> None:
    assert [f for f in lint_text(f"vllm serve {L70} --tensor-parallel-size {t}")
            if f.code == "TP101"] == []
