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
    assert "(70,272 B per token per GPU at any t)" in f.text
    assert f.message == (f"MLA latent KV cache held whole on all {t} TP ranks: {t}× the cache "
                         "per sequence")
    assert "overtake MLA's per-token advantage at t ≈ 4.4" in f.text


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
    assert f"DP-attention over the same 8 GPUs seats {per_rank * 8} (" in f.text
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
    assert "seats now" not in f.text


def test_no_pool_at_t_waits_for_the_weights() -> None:
    # On an H100 V3's weights at t = 8 (79.29 GiB per GPU) exceed M·u = 79.19·0.92 GiB: TP205
    # fires, and TP202's fix says the DP-attention layout helps once they fit.
    found = lint_text(VLLM)
    f = only(found, "TP202")
    assert "TP205" in {x.code for x in found}
    assert "— once the weights fit (at t=8 they leave no KV pool: weights 79.3 GiB" in (f.fix or "")
    assert "seats now" not in f.text


@pytest.mark.parametrize("text", [
    f"python3 -m sglang.launch_server --model-path {V3} --tp 8 --attn-dp-size 8",
    f"vllm serve {V3} --max-model-len 32768",  # t = 1: nothing replicated
    "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8",  # GQA: TP201's territory
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text, gpu="h200") if f.code == "TP202"] == []


# ---- DeepSeek-V4: compressed MLA states, whole on every rank (TP202's, not TP201's) ----------
# vLLM 0.33.0 caches V4's attention as MLA specs with num_kv_heads=1, max_tp_shards=1
# (models/deepseek_v4/attention.py l.860-883, l.911-925; v1/attention/backends/mla/sparse_swa.py
# l.120-136), and "TP ranks beyond this hold replicas" (v1/kv_cache_interface.py l.554-556).
# s = 584 B fp8_ds_mla state (448 fp8 NoPE + 64·2 bf16 RoPE + 8 scale bytes), i = 132 B indexer
# key (128 fp8 + one fp32 scale), w = 128-token window; c = 65,536, 16-token blocks in vLLM.
C = 65536
V4F = "deepseek-ai/DeepSeek-V4-Flash"
V4P = "deepseek-ai/DeepSeek-V4-Pro"
V4F_VLLM = f"vllm serve {V4F} --tensor-parallel-size 8 --max-model-len {C}"
V4F_SGL = f"python3 -m sglang.launch_server --model-path {V4F} --tp 8 --context-length {C}"
V4P_VLLM = f"vllm serve {V4P} --tensor-parallel-size 8 --max-model-len {C}"
# V4-Flash: 43 layers, compress_ratios 0,0 then 4/128 alternating, last 0: n_4 = 21, n_128 = 20.
# kv_B = n_4·s/4 + n_128·s/128 + n_4·i/4 + L·s·min(c, w)/c
#      = 21·584/4 + 20·584/128 + 21·132/4 + 43·584·128/65536
#      = 3066 + 91.25 + 693 + 49.046875 = 3,899.296875 B per token per GPU, at t = 1 or 8.
V4F_KV = 21 * 584 / 4 + 20 * 584 / 128 + 21 * 132 / 4 + 43 * 584 * 128 / C
# V4-Pro: 61 layers, 128,128 then 4/128 alternating: n_4 = 30, n_128 = 31.
# kv_B = 30·584/4 + 31·584/128 + 30·132/4 + 61·584·128/65536
#      = 4380 + 141.4375 + 990 + 69.578125 = 5,581.015625 B.
V4P_KV = 30 * 584 / 4 + 31 * 584 / 128 + 30 * 132 / 4 + 61 * 584 * 128 / C


# tpcheck's vLLM 0.33 reserve at t = 8 on NVSwitch GPUs: main's figures (3,311,004,549 B V4-Flash
# H100, 3,361,336,197 V4-Pro H200, 3,478,776,709 V4-Pro B200) carried NCCL 0.25 GiB·8/8 + 3 × 8
# MiB custom all-reduce (293,601,280 B), which 0.19+ allocates before the profiling snapshot;
# issue 32 charges the all-reduce fusion workspace instead, one 512 MiB MNNVL buffer: +243,269,632.
R_T8_FLASH = 3311004549 - 293601280 + 536870912
R_T8_PRO_H200 = 3361336197 - 293601280 + 536870912
R_T8_PRO_B200 = 3478776709 - 293601280 + 536870912


def _vllm_seats(pool: float, kv_b: float) -> int:
    """vLLM: blocks = floor(pool / (kv_B·16)); a sequence of c tokens takes c/16 blocks."""
    return int(pool // (kv_b * 16)) // (C // 16)


def test_v4_flash_vllm_is_tp202_with_dp_attention_seats() -> None:
    found = lint_text(V4F_VLLM)  # H100 SXM: M = 85,031,714,816 B, u = 0.92
    assert "TP201" not in {f.code for f in found}  # no "t=8 > h_kv=1 … TP 1 × PP 8"
    f = only(found, "TP202")
    assert V4F_KV == 3899.296875
    kvb = f.formulas[0]
    assert kvb.expression == "n_4·s/4 + n_128·s/128 + n_4·i/4 + L·s·min(c, w)/c"
    assert kvb.result == pytest.approx(V4F_KV)
    assert "(3,899 B per token per GPU at any t)" in f.text
    assert f.message.endswith("held whole on all 8 TP ranks: 8× the cache per sequence")
    assert "on 41 of its 43 layers (r = 4, 128), indexer keys on the 21 r = 4 layers" in f.text
    # no GQA-8 catch-up for V4: its bytes per token are per r tokens plus a window
    assert "GQA-8" not in f.text and "t_spent" not in [x.name for x in f.formulas]
    # Weights (tests/models/test_params.py, fp8 blocks, MXFP4 experts): sharded 3,200,518,144
    # (embedding, lm_head, shared experts), attention 4,329,578,496 (wq_b, wo_a, wo_b split by
    # t), experts 147,169,738,752, replicated 1,307,606,620 (fused_wqa_wkv, compressors,
    # indexer, fp32 hyper-connections, router, norms); no K/V projection to replicate.
    # t = 8: W = (3,200,518,144 + 4,329,578,496 + 147,169,738,752)/8 + 1,307,606,620
    #          = 20,645,086,044 B; R = 3,554,274,181 B (tpcheck's vLLM reserve; its non-torch
    #          term at t = 8 is 0.13 GiB + one 512 MiB MNNVL fusion workspace, issue 32)
    # pool = 85,031,714,816·0.92 − W − R = 54,029,817,406 B → 866,018 blocks → 211 seats
    now = _vllm_seats(85031714816 * 0.92 - 20645086044 - R_T8_FLASH, V4F_KV)
    # DP-attention: 8 ranks of TP 1, experts over EP 8: W = 3,200,518,144 + 4,329,578,496
    #   + 147,169,738,752/8 + 1,307,606,620 = 27,233,920,604 B, R = 3,017,403,269 B
    # pool = 47,977,853,758 B → 769,013 blocks → 187 seats per rank, 8·187 = 1,496
    # (the GQA reading's 11.5 GB of q/o projections gave 163 and 1,304)
    per_rank = _vllm_seats(85031714816 * 0.92 - 27233920604 - 3017403269, V4F_KV)
    assert (now, per_rank) == (211, 187)
    gain = next(x for x in f.formulas if x.name == "seats_with_dp_attention")
    assert (gain.values["seats_rank"], gain.values["t"], gain.result) == (187, 8, 1496)
    assert "seats now: 211 sequences of 65,536 tokens" in f.notes
    assert ("DP-attention over the same 8 GPUs seats 1496 (7.1×, attention weights then "
            "replicated per rank)") in f.text  # 1496/211
    assert f.fix == ("use --data-parallel-size 8 --tensor-parallel-size 1 --enable-expert-parallel "
                     "(DP attention, experts shared)")


def test_v4_flash_sglang_is_tp202_with_attn_dp_seats() -> None:
    found = lint_text(V4F_SGL)
    assert "TP201" not in {f.code for f in found}
    f = only(found, "TP202")
    # SGLang 0.5.23 cell: n_4·s/4 + n_128·s/128 + n_4·i/4 + r·(L·s + n_4·ring), SWA ratio
    # r = 0.1, c4 state ring 320 B: 3,850.25 + 0.1·(43·584 + 21·320) = 7,033.45 B
    cell = 21 * 584 / 4 + 20 * 584 / 128 + 21 * 132 / 4 + 0.1 * (43 * 584 + 21 * 320)
    assert f.formulas[0].result == pytest.approx(cell) == pytest.approx(7033.45)
    # now: rest = T·mfs − W = 82,443,997,020·0.811 − 20,645,086,044 = 46,216,995,539 B
    #   → floor(rest/cell) = 6,571,027 tokens → floor(6,571,027/65,536) = 100 seats
    # --attn-dp-size 8: attention whole per rank, W = 3,200,518,144/8 + 4,329,578,496
    #   + 147,169,738,752/8 + 1,307,606,620 = 24,433,467,228 B, mfs 0.584:
    #   rest = 23,713,827,032 B → 3,371,578 tokens → 51 seats per rank, 8·51 = 408
    now = int((82443997020 * 0.811 - 20645086044) // cell) // C
    per_rank = int((82443997020 * 0.584 - 24433467228) // cell) // C
    assert (now, per_rank) == (100, 51)
    assert "seats now: 100 sequences of 65,536 tokens" in f.notes
    assert "DP-attention over the same 8 GPUs seats 408 (4.1×" in f.text
    assert f.fix == "run attention data parallel over the same GPUs: --attn-dp-size 8"


# V4-Pro weights (tests/models/test_params.py): sharded 7,737,377,536, attention
# 17,402,220,544 (20.3 GB with the 2.87 GB replicated part, where the GQA reading had 57.8 GB),
# experts 822,054,223,872, replicated 3,549,186,956.
# t = 8: W = (7,737,377,536 + 17,402,220,544 + 822,054,223,872)/8 + 3,549,186,956
#          = 109,448,414,700 B = 101.9 GiB
# DP-attention (TP 1, EP 8): W = 7,737,377,536 + 17,402,220,544 + 822,054,223,872/8
#          + 3,549,186,956 = 131,445,563,020 B = 122.4 GiB
# TP 1 × PP 8: vLLM cuts 61 layers 7,7,8,8,8,8,8,7 (get_pp_indices); the heaviest stage is an
# 8-layer middle one without the embedding or the LM head (129,280 · 7,168 · 2 B each):
# W = (850,743,008,908 − 2·1,853,358,080)·8/61 = 111,086,726,917.8 B (the average stage,
# W/8, is 106,342,876,113.5); the worst stage has 4 r=4 and 4 r=128 layers:
# 4·584/4 + 4·584/128 + 4·132/4 + 8·584·128/65536 = 743.375 B per token.
V4P_W_TP8, V4P_W_DP = 109448414700, 131445563020
V4P_W_PP8 = (850743008908 - 2 * 129280 * 7168 * 2) * 8 / 61
V4P_STAGE = 4 * 584 / 4 + 4 * 584 / 128 + 4 * 132 / 4 + 8 * 584 * 128 / C
H200_M = 150023207649


def test_v4_pro_h200_dp_attention_seats_a_few_more() -> None:
    f = only(lint_text(V4P_VLLM, gpu="h200"), "TP202")  # M = 150,023,207,649 B, u = 0.92
    assert V4P_KV == 5581.015625
    assert f.formulas[0].result == pytest.approx(V4P_KV)
    assert "(5,581 B per token per GPU at any t)" in f.text
    assert f.message.endswith("held whole on all 8 TP ranks: 8× the cache per sequence")
    # t = 8: R = 3,604,605,829 B: pool = 24,968,330,508 B → 279,612 blocks → 68 seats
    assert _vllm_seats(H200_M * 0.92 - V4P_W_TP8 - R_T8_PRO_H200, V4P_KV) == 68
    # DP-attention: R = 3,067,734,917 B: pool = 3,508,053,100 B → 39,285 blocks → 9 a rank
    assert _vllm_seats(H200_M * 0.92 - V4P_W_DP - 3067734917, V4P_KV) == 9
    gain = next(x for x in f.formulas if x.name == "seats_with_dp_attention")
    assert (gain.values["seats_rank"], gain.result) == (9, 72)  # 8·9 > 68: offered
    assert "seats now: 68 sequences of 65,536 tokens" in f.notes
    assert "DP-attention over the same 8 GPUs seats 72 (1.1×" in f.text
    assert f.fix == ("use --data-parallel-size 8 --tensor-parallel-size 1 --enable-expert-parallel "
                     "(DP attention, experts shared)")


def test_v4_pro_dp_attention_does_not_start_so_pipeline_stages() -> None:
    # H200 at u = 0.85: M·u = 127,519,726,501.65 B = 118.8 GiB < the DP rank's 122.4 GiB
    f = only(lint_text(V4P_VLLM + " --gpu-memory-utilization 0.85", gpu="h200"), "TP202")
    # t = 8: pool = 127,519,726,501.65 − 109,448,414,700 − 3,604,605,829 = 14,466,705,973 B
    #   → 162,007 blocks → 39 seats
    assert _vllm_seats(H200_M * 0.85 - V4P_W_TP8 - R_T8_PRO_H200, V4P_KV) == 39
    assert "seats now: 39 sequences of 65,536 tokens" in f.notes
    assert ("DP-attention over the same 8 GPUs does "
            "not start (weights 122.4 GiB per GPU > M·u = 139.7·0.85 = 118.8 GiB") in f.text
    # PP 8: R = 3,067,734,917 B: pool = 13,365,264,666.9 B → 1,123,704 blocks → 274 seats
    assert V4P_STAGE == 743.375
    assert _vllm_seats(H200_M * 0.85 - V4P_W_PP8 - 3067734917, V4P_STAGE) == 274
    pp = next(x for x in f.formulas if x.name == "seats_pp")
    assert pp.result == 274
    assert "TP 1 × PP 8 over the same GPUs caches each layer on one stage: 274 seats" in f.text
    assert f.fix == ("use --tensor-parallel-size 1 --pipeline-parallel-size 8: the same 8 GPUs, "
                     "each stage caching only its own layers")


def test_v4_pro_dp_attention_that_seats_fewer_is_no_fix() -> None:
    # H200 at u = 0.9 (M·u = 135,020,886,884.1 B): t = 8 pool 21,967,866,355 B → 60 seats;
    # DP-attention 507,588,947 B → 5,684 blocks → 1 seat a rank, 8·1 = 8 < 60; PP 8 quoted:
    # 135,020,886,884.1 − 111,086,726,917.8 − 3,067,734,917 = 20,866,425,049 B → 428 seats
    f = only(lint_text(V4P_VLLM + " --gpu-memory-utilization 0.9", gpu="h200"), "TP202")
    assert _vllm_seats(H200_M * 0.9 - V4P_W_TP8 - R_T8_PRO_H200, V4P_KV) == 60
    assert _vllm_seats(H200_M * 0.9 - V4P_W_DP - 3067734917, V4P_KV) == 1
    assert _vllm_seats(H200_M * 0.9 - V4P_W_PP8 - 3067734917, V4P_STAGE) == 428
    gain = next(x for x in f.formulas if x.name == "seats_with_dp_attention")
    assert (gain.values["seats_rank"], gain.result) == (1, 8)
    assert "seats now: 60 sequences" in f.text
    assert "with DP-attention over the same 8 GPUs only 8 (the attention weights" in f.text
    assert "caches each layer on one stage: 428 seats" in f.text
    assert (f.fix or "").startswith("use --tensor-parallel-size 1 --pipeline-parallel-size 8")


def test_v4_pro_b200_dp_attention_seats_five_times() -> None:
    # B200: M·u = 191,531,843,584·0.92 = 176,209,296,097.3 B. t = 8, R = 3,722,046,341 B:
    # pool = 63,038,835,056 B → 705,951 blocks → 172 seats. DP-attention, R = 4,795,263,877 B:
    # pool = 39,968,469,200 B → 447,594 blocks → 109 a rank, 8·109 = 872 (the GQA reading kept
    # 57.3 GB of attention whole per rank: 7 a rank, 56 < 166, and PP 8 was quoted instead)
    f = only(lint_text(V4P_VLLM, gpu="b200"), "TP202")
    b200 = 191531843584 * 0.92
    assert _vllm_seats(b200 - V4P_W_TP8 - R_T8_PRO_B200, V4P_KV) == 172
    assert _vllm_seats(b200 - V4P_W_DP - 4795263877, V4P_KV) == 109
    gain = next(x for x in f.formulas if x.name == "seats_with_dp_attention")
    assert (gain.values["seats_rank"], gain.result) == (109, 872)
    assert "seats now: 172 sequences of 65,536 tokens" in f.notes
    assert "DP-attention over the same 8 GPUs seats 872 (5.1×" in f.text
    assert (f.fix or "").startswith("use --data-parallel-size 8 --tensor-parallel-size 1")


@pytest.mark.parametrize("text", [
    f"python3 -m sglang.launch_server --model-path {V4F} --tp 8 --attn-dp-size 8",
    f"vllm serve {V4F} --data-parallel-size 8 --enable-expert-parallel --max-model-len {C}",
    f"vllm serve {V4F} --max-model-len {C}",  # t = 1
])
def test_v4_quiet(text: str) -> None:
    found = lint_text(text, gpu="h200")
    assert [f.code for f in found if f.code in ("TP201", "TP202")] == []


def test_v4_no_gpu_no_seats_and_pro_on_h100_waits_for_the_weights() -> None:
    f = only(lint_text(V4F_VLLM, gpu=None), "TP202")
    assert [x.name for x in f.formulas] == ["kv_bytes_per_token_per_gpu"]  # no t_spent for V4
    assert "(3,899 B per token per GPU at any t)" in f.text and "seats now" not in f.text
    # V4-Pro at t = 8 on an H100: W = 109,448,414,700 B = 101.9 GiB > M·u = 72.9 GiB (TP205)
    f = only(lint_text(V4P_VLLM), "TP202")
    assert "seats now" not in f.text
    assert ("— once the weights fit (at t=8 they leave no KV pool: weights 101.9 GiB"
            in (f.fix or ""))


R1_SGLANG_16 = ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 16 "
                "--nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:5000 --trust-remote-code "
                "--enable-dp-attention\n")


@pytest.mark.parametrize(("pin", "fires"), [
    # sglang 0.4.2.post4 server_args.py:249-250 and 0.4.4 l.264-265: --enable-dp-attention sets
    # dp_size = tp_size, so the MLA cache is split over all 16 ranks: no TP202
    ("0.4.2.post4", False), ("0.4.4", False),
    # 0.4.4.post1 on: dp_size stays the user's (1 here; l.266-268 then asserts dp > 1): the
    # cache is held whole on every rank
    ("0.4.4.post1", True), ("0.5.23", True),
])
def test_sglang_dp_attention_alone_spans_tp_up_to_0_4_4(pin: str, fires: bool) -> None:
    text = f"pip install 'sglang[all]=={pin}'\n" + R1_SGLANG_16
    codes = [f.code for f in lint_text(text)]
    assert ("TP202" in codes) is fires, codes
