"""TP202 mla-cache-replicated, every branch: SGLang and vLLM with seats (and the DP-attention
alternative's seats), no GPU, no pool at t (the fix waits for the weights), the SGLang 0.4
spelling of the fix; quiet with DP-attention, at t = 1 and for a GQA model."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Finding, Severity

V3 = "deepseek-ai/DeepSeek-V3"
SGL = f"python3 -m sglang.launch_server --model-path {V3} --tp 8 --context-length 32768"
VLLM = f"vllm serve {V3} --tensor-parallel-size 8 --max-model-len 32768"
# DeepSeek-V3: L = 61, kv_lora_rank r_kv = 512, d_rope = 64, bf16: every rank caches
# L·(r_kv + d_rope)·b_kv = 61·576·2 = 70,272 B per token, whatever t.
KV_B = 61 * (512 + 64) * 2
# GQA-8 of the same depth caches 8·(d_k + d_v) = 8·(192 + 128) elements per token and layer,
# divided by t: it overtakes MLA's 576 at t = 2560 / 576 ≈ 4.4.
T_SPENT = 8 * (192 + 128) / (512 + 64)


def _common(f: Finding, text: str, t: str) -> None:
    assert f.severity == Severity.WARNING
    flag = "--tp " if "--tp " in text else "--tensor-parallel-size "
    at = text.index(flag + t) + len(flag) + 1  # 1-based column of the t value
    assert (f.span.line, f.span.column, f.span.end_column) == (1, at, at + len(t))
    kvb = f.formulas[0]
    assert (kvb.expression, kvb.result) == ("L·(r_kv + d_rope)·b_kv", KV_B)
    spent = next(x for x in f.formulas if x.name == "t_spent")
    assert spent.result == pytest.approx(T_SPENT)
    assert f"(70,272 B per token per GPU at any t): {t}× the cache" in f.message
    assert "overtake MLA's per-token advantage at t ≈ 4.4" in f.message


@pytest.mark.parametrize(("text", "fix"), [
    (SGL, "run attention data parallel over the same GPUs: --attn-dp-size 8"),
    (VLLM, "use --data-parallel-size 8 --tensor-parallel-size 1 --enable-expert-parallel "
           "(DP attention, experts shared)"),
])
def test_fires_with_seats_and_the_dp_attention_alternative(text: str, fix: str) -> None:
    f = only(lint_text(text, gpu="h200"), "TP202")
    _common(f, text, "8")
    gain = next(x for x in f.formulas if x.name == "seats_with_dp_attention")
    assert gain.expression == "seats_rank(attn_dp = t)·t"
    per_rank = gain.values["seats_rank"]
    assert isinstance(per_rank, int) and gain.values["t"] == 8
    assert gain.result == per_rank * 8
    assert f"with DP-attention over the same 8 GPUs: {per_rank * 8} (" in f.message
    assert f.fix == fix


def test_sglang_0_4_spells_dp_attention_the_old_way() -> None:
    # the same launch in a pod whose image pins SGLang 0.4.6
    yaml = f"""apiVersion: v1
kind: Pod
metadata: {{name: x}}
spec:
  containers:
    - name: sglang
      image: lmsysorg/sglang:v0.4.6
      command: [{", ".join(f'"{w}"' for w in SGL.split())}]
      resources: {{limits: {{nvidia.com/gpu: "8"}}}}
"""
    f = only(lint_text(yaml, name="pod.yaml", gpu="h200"), "TP202")
    assert f.fix == "run attention data parallel over the same GPUs: --enable-dp-attention --dp 8"


def test_no_gpu_no_seats() -> None:
    f = only(lint_text(VLLM, gpu=None), "TP202")
    _common(f, VLLM, "8")
    assert [x.name for x in f.formulas] == ["kv_bytes_per_token_per_gpu", "t_spent"]
    assert "Seats now" not in f.message


def test_no_pool_at_t_waits_for_the_weights() -> None:
    # On an H100 V3's weights at t = 8 (79.29 GiB per GPU) exceed M·u = 79.19·0.92 GiB: TP205
    # fires, and TP202's fix says the DP-attention layout helps once they fit.
    found = lint_text(VLLM)
    f = only(found, "TP202")
    assert "TP205" in {x.code for x in found}
    assert "— once the weights fit (at t=8 they leave no KV pool: weights 79.3 GiB" in (f.fix or "")
    assert "Seats now" not in f.message


@pytest.mark.parametrize("text", [
    f"python3 -m sglang.launch_server --model-path {V3} --tp 8 --attn-dp-size 8",
    f"vllm serve {V3} --max-model-len 32768",  # t = 1: nothing replicated
    "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8",  # GQA: TP201's territory
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text, gpu="h200") if f.code == "TP202"] == []
