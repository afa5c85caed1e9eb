"""TP205 weights-do-not-fit, every branch: vLLM's budget M·u and SGLang's T·mfs, each with
weights over the whole GPU (CUDA out of memory while loading) and with weights that load but
leave no KV room (the engine refuses); quiet when they fit or with no GPU."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Finding, Severity

M_H100 = 85_031_714_816  # bytes an H100 SXM reports (79.19 GiB)
L70 = "meta-llama/Llama-3.1-70B-Instruct"
Q32 = "Qwen/Qwen3-32B"


def _weights_over_budget(f: Finding, expression: str) -> float:
    w, budget = f.formulas
    assert w.name == "weights_bytes_per_gpu" and budget.name == "budget_bytes"
    assert budget.expression == expression
    a, b = budget.values.values()
    assert isinstance(a, (int, float)) and isinstance(b, (int, float))
    assert budget.result == pytest.approx(a * b)  # M·u, or T·mfs
    assert w.result > budget.result
    return w.result


@pytest.mark.parametrize(("text", "expression", "oom"), [
    # Llama-3.1-70B at t = 1: 141,107,412,992 B of weights > M = 85,031,714,816 B: OOM
    (f"vllm serve {L70} --max-model-len 8192", "M·u", True),
    # Qwen3-32B: 65,524,246,528 B ≤ M, but > M·0.75 = 63,773,786,112 B: loads, then refused
    (f"vllm serve {Q32} --max-model-len 8192 --gpu-memory-utilization 0.75", "M·u", False),
    (f"python -m sglang.launch_server --model-path {L70}", "T·mfs", True),
    (f"python -m sglang.launch_server --model-path {Q32} --mem-fraction-static 0.75", "T·mfs",
     False),
])
def test_fires(text: str, expression: str, oom: bool) -> None:
    f = only(lint_text(text), "TP205")
    assert f.severity == Severity.ERROR
    model = L70 if L70 in text else Q32
    at = text.index(model) + 1
    # the finding points at the model (t is not written)
    assert (f.span.line, f.span.column, f.span.end_column) == (1, at, at + len(model))
    w = _weights_over_budget(f, expression)
    assert (w > M_H100) == oom
    if expression == "M·u":
        assert f.formulas[1].values["M"] == M_H100
    if oom:
        assert "loading fails with CUDA out of memory before any KV cache exists" in f.text
    elif expression == "M·u":
        assert 'then vLLM refuses: "No available memory for the cache blocks"' in f.text
    else:
        assert "then SGLang refuses: there is no room left for the KV cache" in f.text
    assert "the fewest stages that leave a KV pool" in (f.fix or "")


def test_the_fix_offers_fp8_weights_when_they_would_fit() -> None:
    # Qwen3-32B in fp8: about half of 61.02 GiB (+ the 10 MiB rotary cache, 40,960 · 128 ·
    # 2 B), under the 59.39 GiB budget
    f = only(lint_text(f"vllm serve {Q32} --max-model-len 8192 --gpu-memory-utilization 0.75"),
             "TP205")
    assert "or keep t=1 with fp8 weights (--quantization fp8: 31.97 GiB per GPU" in (f.fix or "")


@pytest.mark.parametrize(("text", "gpu"), [
    (f"vllm serve {Q32} --max-model-len 8192", "h100-sxm"),  # 65.5 GB < M·u = 78.2 GB
    (f"vllm serve {L70} --max-model-len 8192", None),  # no GPU: no budget
])
def test_quiet(text: str, gpu: str | None) -> None:
    assert [f for f in lint_text(text, gpu=gpu) if f.code == "TP205"] == []
