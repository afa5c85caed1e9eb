"""Parameter counts against published figures (/work/shared/models/PARAMS.tsv → copied below).

The default bar is 1% of the published count. Rows whose published figure is defined
differently from "parameters vLLM loads for the text model" carry an explicit expected
deviation and the reason; each is asserted, none is skipped.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest

from tpcheck.models import catalog
from tpcheck.models.config import load_shape
from tpcheck.models.params import COMPONENTS, ParamCounts, param_counts
from tpcheck.models.shape import ModelShape

PARAMS_TSV = Path("/work/shared/models/PARAMS.tsv")


def counts(model_id: str) -> tuple[ModelShape, ParamCounts]:
    entry = catalog.find(model_id)
    assert entry is not None
    s = load_shape(entry.config_path, name=model_id)
    return s, param_counts(s)


def _rows() -> list[tuple[str, float, str]]:
    with PARAMS_TSV.open(encoding="utf-8") as fh:
        return [
            (r["model_id"], float(r["params_billion"]) * 1e9, r["total_or_active"])
            for r in csv.DictReader(fh, delimiter="\t")
        ]


Measure = Callable[[ParamCounts], int]


def _total(c: ParamCounts) -> int:
    return c.total


def _active(c: ParamCounts) -> int:
    return c.active


def _active_without_embedding(c: ParamCounts) -> int:
    return c.active - c.embedding


def _active_without_embeddings_and_head(c: ParamCounts) -> int:
    return c.active - c.embedding - c.lm_head


def _active_without_indexer(c: ParamCounts) -> int:
    return c.active - sum(t.numel for t in c.tensors if t.name.startswith("indexer."))


# (model, total|active) → (what to compare, accepted ratio band computed/published, reason)
DEVIATIONS: dict[tuple[str, str], tuple[Measure, float, float, str]] = {
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "total"): (
        _total, 0.985, 0.990,
        "109B includes the vision encoder; the catalog config has no vision_config (trimmed) "
        "and ModelShape is the text model: 107.77B",
    ),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "active"): (
        _active, 1.010, 1.015, "'17B' is the name's rounding of 17.17B"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "active"): (
        _active, 1.010, 1.015, "'17B' is the name's rounding of 17.19B"),
    ("Qwen/Qwen3-30B-A3B", "active"): (
        _active, 1.010, 1.020, "card's 3.3B is two significant figures of 3.35B"),
    ("Qwen/Qwen3-30B-A3B-FP8", "active"): (
        _active, 1.010, 1.020, "card's 3.3B is two significant figures of 3.35B"),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "active"): (
        _active, 1.010, 1.015, "'35B' is the name's rounding of 35.48B"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "active"): (
        _active_without_embeddings_and_head, 1.080, 1.090,
        "'3B' is the A3B label: 3.25B without embeddings/lm_head, 3.87B with them"),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "active"): (
        _active_without_embeddings_and_head, 1.080, 1.090,
        "'3B' is the A3B label: 3.25B without embeddings/lm_head, 3.87B with them"),
    ("deepseek-ai/DeepSeek-V3", "active"): (
        _active, 1.010, 1.020, "the report's 37B rounds 37.55B"),
    ("deepseek-ai/DeepSeek-R1", "active"): (
        _active, 1.010, 1.020, "the report's 37B rounds 37.55B"),
    ("deepseek-ai/DeepSeek-V3.2", "active"): (
        _active_without_indexer, 1.010, 1.020,
        "PARAMS.tsv reuses V3's 37B; V3.2 adds a 0.85B sparse-attention indexer (index_n_heads "
        "64 × index_head_dim 128) on every layer, always active"),
    ("deepseek-ai/DeepSeek-V2-Lite", "active"): (
        _active_without_embedding, 1.015, 1.025,
        "the card's 2.4B activated leaves out the input embedding (2.45B without it)"),
    ("openai/gpt-oss-20b", "active"): (
        _active_without_embedding, 0.995, 1.005,
        "the card counts active parameters without the input embedding (3.61B)"),
    ("openai/gpt-oss-120b", "active"): (
        _active_without_embedding, 0.995, 1.010,
        "the card counts active parameters without the input embedding (5.13B)"),
    ("zai-org/GLM-4.5-Air", "active"): (
        _active_without_embeddings_and_head, 1.010, 1.020,
        "12B activated leaves out embedding and lm_head (12.18B); the MTP layer is not loaded"),
    ("moonshotai/Kimi-K2-Instruct", "total"): (
        _total, 1.020, 1.030, "'1 trillion' rounds 1.026T"),
    ("moonshotai/Kimi-K2-Instruct", "active"): (
        _active, 1.020, 1.030, "'32 billion activated' rounds 32.86B"),
    ("tiiuae/falcon-40b", "total"): (
        _total, 1.030, 1.035,
        "'40B' is the name; 41.30B with the embedding tied to lm_head as vLLM loads it"),
    ("dphn/dolphin-2.9.1-yi-1.5-34b", "total"): (
        _total, 1.010, 1.015, "'34B' is the name's rounding of 34.39B"),
    ("inclusionAI/Ling-flash-2.0", "total"): (
        _total, 1.020, 1.035, "'100B' is the name's rounding of 102.89B"),
    ("mistralai/Magistral-Small-2509", "total"): (
        _total, 0.980, 0.985,
        "24B counts the Pixtral vision encoder (24 layers × 1024) and projector, ~0.44B, not "
        "part of the text model (23.57B)"),
}


@pytest.mark.parametrize(("model_id", "published", "kind"), _rows())
def test_params_match_published(model_id: str, published: float, kind: str) -> None:
    _, c = counts(model_id)
    measure, lo, hi, _reason = DEVIATIONS.get(
        (model_id, kind), (_total if kind == "total" else _active, 0.99, 1.01, "")
    )
    ratio = measure(c) / published
    assert lo <= ratio <= hi, f"{model_id} {kind}: {measure(c):,} vs {published:,.0f}"


def test_every_deviation_is_used() -> None:
    keys = {(m, k) for m, _, k in _rows()}
    assert set(DEVIATIONS) <= keys


def test_llama_3_1_8b_by_hand() -> None:
    _, c = counts("meta-llama/Llama-3.1-8B")
    L, d, f, V = 32, 4096, 14336, 128256
    assert c.embedding == V * d == 525_336_576
    assert c.lm_head == V * d  # untied
    assert c.attn_q == L * d * 32 * 128  # q_proj 4096 → 32 heads × 128
    assert c.attn_kv == L * 2 * d * 8 * 128  # k_proj and v_proj: 8 KV heads × 128
    assert c.attn_o == L * 32 * 128 * d
    assert c.dense_mlp == L * 3 * d * f
    assert c.norms == L * 2 * d + d
    assert c.total == 8_030_261_248  # the published safetensors count of Llama-3.1-8B
    assert c.active == c.total and c.routed_experts == 0


def test_gemma2_9b_matches_report_split() -> None:
    _, c = counts("google/gemma-2-9b-it")
    # Gemma 2 report: 917,962,752 embedding + 8,324,201,984 non-embedding (tied lm_head).
    # The report's embedding is 256,128 rows × 3584; config.json vocab_size is 256,000.
    assert c.embedding == 256_000 * 3584 and 917_962_752 == 256_128 * 3584 and c.lm_head == 0
    assert c.total - c.embedding == 8_324_201_984


def test_gpt_oss_120b_matches_card_total() -> None:
    _, c = counts("openai/gpt-oss-120b")
    assert round(c.total / 1e7) == 11683  # card table: 116.83B total
    # per layer: 128 experts × (gate_up 5760×2880 + 5760 bias + down 2880×2880 + 2880 bias)
    assert c.routed_experts == 36 * 128 * (5760 * 2880 + 5760 + 2880 * 2880 + 2880)
    assert c.other == 36 * 64  # attention sinks: one per head per layer


def test_mla_split_deepseek_v3() -> None:
    _, c = counts("deepseek-ai/DeepSeek-V3")
    L, d, h = 61, 7168, 128
    assert c.attn_q == L * h * 192 * 1536  # q_b_proj: q_lora_rank 1536 → 128 × (128+64)
    assert c.attn_kv == L * h * (128 + 128) * 512  # kv_b_proj: 512 → 128 × (nope 128 + v 128)
    # replicated down-projections q_a (7168→1536), kv_a (7168→576) and their norms
    assert c.mla_other == L * (1536 * d + 576 * d + 1536 + 512)
    assert c.attn_o == L * d * h * 128
    # 58 MoE layers × 256 experts × 3 × 7168 × 2048; active: 8 of 256
    assert c.routed_experts == 58 * 256 * 3 * d * 2048
    assert c.active_routed_experts == 58 * 8 * 3 * d * 2048
    assert c.shared_experts == 58 * 3 * d * 2048
    assert c.router == 58 * (256 * d + 256)  # gate + e_score_correction_bias
    assert c.dense_mlp == 3 * 3 * d * 18432


def test_component_sum_and_kinds() -> None:
    for model_id in catalog.all_ids():
        _, c = counts(model_id)
        assert sum(c.component(n) for n in COMPONENTS) == c.total
        assert sum(c.by_kind().values()) == c.total
        assert c.active <= c.total


def test_falcon_tied_layernorm_with_bias() -> None:
    _, c = counts("tiiuae/falcon-40b")
    d = 8192
    assert c.lm_head == 0
    assert c.norms == 60 * 2 * 2 * d + 2 * d  # ln_attn + ln_mlp, weight and bias; final ln_f
    assert c.dense_mlp == 60 * 2 * d * 4 * d  # dense_h_to_4h + dense_4h_to_h, not gated
    assert c.attn_kv == 60 * 2 * d * 8 * 64


def test_qwen3_next_hybrid_layers() -> None:
    _, c = counts("Qwen/Qwen3-Next-80B-A3B-Instruct")
    d = 2048
    # 36 Gated DeltaNet layers: in_proj_qkvz 2048 → 2·16·128 + 2·32·128 = 12288, in_proj_ba
    # 2048 → 64, conv1d (2·2048 + 4096) × 4, dt_bias + A_log 64, norm 128, out_proj 4096 → 2048
    per = d * 12288 + d * 64 + 8192 * 4 + 64 + 128 + 4096 * d
    assert c.linear_attn == 36 * per
    # 12 full-attention layers, q_proj doubled for the output gate: 16 × 256 × 2
    assert c.attn_q == 12 * d * 16 * 256 * 2
    assert c.router == 48 * (512 * d + d)  # gate + shared_expert_gate


def test_extra_params_counted_in_other() -> None:
    from tpcheck.record import replace

    s, c = counts("meta-llama/Llama-3.2-1B-Instruct")
    c2 = param_counts(replace(s, extra_params=1000))
    assert c2.other == c.other + 1000 and c2.total == c.total + 1000


# DeepSeek-V4 (not in PARAMS.tsv): the model card, "DeepSeek-V4: Towards Highly Efficient
# Million-Token Context Intelligence" (huggingface.co/deepseek-ai/DeepSeek-V4-Flash, -Pro):
# V4-Flash 284B total, 13B activated; V4-Pro 1.6T total, 49B activated. The MTP layer
# (num_nextn_predict_layers 1) is not counted, as for DeepSeek-V3's 671B.
def test_deepseek_v4_flash_low_rank_attention_by_hand() -> None:
    s, c = counts("deepseek-ai/DeepSeek-V4-Flash")
    L, d, h, hd, q_r, o_r, g = 43, 4096, 64, 512, 1024, 1024, 8  # config.json
    assert s.compressed is not None
    r = s.compressed.ratios
    assert (r.count(4), r.count(128), r.count(0)) == (21, 20, 2)  # compress_ratios[:43]
    # wq_b: q_lora_rank 1024 -> 64 heads x 512, split by head (vLLM ColumnParallel)
    assert c.attn_q == L * h * hd * q_r == 1_442_840_576
    # wo_a: per group 64·512/8 = 4096 -> 8·1024 (ColumnParallel); wo_b: 8·1024 -> 4096
    assert c.attn_o == L * (g * o_r * (h * hd // g) + d * g * o_r) == 2_885_681_152
    assert c.attn_kv == 0  # no K/V projection: the latent comes from fused_wqa_wkv
    replicated = (
        L * ((q_r + hd) * d + q_r + hd)  # fused_wqa_wkv 4096 -> 1024 + 512, q_norm, kv_norm
        + 21 * (2 * 2 * hd * d + 4 * 2 * hd + hd)  # ratio 4 compressor: coff 2, ape 4 x 1024
        + 20 * (2 * hd * d + 128 * hd + hd)  # ratio 128 compressor: coff 1, ape 128 x 512
        # indexer on the 21 ratio-4 layers: wq_b 1024 -> 64 x 128, weights_proj 4096 -> 64,
        # its own ratio-4 compressor of head 128 (fused_wkv_wgate 4096 -> 512, ape 4 x 256)
        + 21 * (64 * 128 * q_r + 64 * d + 4 * 128 * d + 4 * 256 + 128)
    )
    assert c.mla_other == replicated == 757_793_408
    # attention per layer: (1,442,840,576 + 2,885,681,152 + 757,793,408) / 43 = 118.3M,
    # where a GQA reading (q_proj and o_proj 4096 x 32768) gave 270.6M
    assert (c.attn_q + c.attn_o + c.mla_other) // L == 118_286_398
    # hyper-connections (hc_mult 4): 2 mixers of (2+4)·4 = 24 rows over 4·4096, bases, scales
    hc = 2 * L * (24 * 4 * d + 24 + 3) + 4 * (4 * d + 1) + 1
    assert c.other == hc + L * h  # + one fp32 attention sink per head per layer
    # 3 hash-routed layers: tid2eid 129280 x 6, no e_score_correction_bias
    assert c.router == L * 256 * d + 3 * 129_280 * 6 + (L - 3) * 256


def test_deepseek_v4_pro_attention_is_about_300m_a_layer() -> None:
    s, c = counts("deepseek-ai/DeepSeek-V4-Pro")
    L, d, h, hd, q_r, o_r, g = 61, 7168, 128, 512, 1536, 1024, 16
    # fused_wqa_wkv 14.68M + wq_b 100.66M + wo_a 67.11M + wo_b 117.44M = 299.9M a layer,
    # not the 947M of q_proj/o_proj 7168 x 65536 plus k/v 7168 x 512
    main = (q_r + hd) * d + h * hd * q_r + g * o_r * (h * hd // g) + d * g * o_r
    assert main == 299_892_736
    assert c.attn_q + c.attn_o == L * (h * hd * q_r + g * o_r * (h * hd // g) + d * g * o_r)
    assert c.attn_q == 6_140_461_056 and c.attn_o == 11_257_511_936
    r = s.compressed.ratios if s.compressed else ()
    assert (r.count(4), r.count(128)) == (30, 31)
    assert c.mla_other == (L * ((q_r + hd) * d + q_r + hd) + 30 * (4 * hd * d + 8 * hd + hd)
                           + 31 * (2 * hd * d + 128 * hd + hd)
                           + 30 * (64 * 128 * q_r + 64 * d + 512 * d + 4 * 256 + 128))


def test_deepseek_v4_totals_match_the_model_card() -> None:
    _, flash = counts("deepseek-ai/DeepSeek-V4-Flash")
    _, pro = counts("deepseek-ai/DeepSeek-V4-Pro")
    # Flash: 43 x 256 experts x 3 x 4096 x 2048 = 277.03B routed + 7.31B else = 284.33B
    assert flash.total == 284_334_567_511
    assert 0.99 <= flash.total / 284e9 <= 1.01  # the 1% bar: 1.0012
    # Pro: 61 x 384 x 3 x 7168 x 3072 = 1547.40B routed + 25.60B else = 1573.00B; the card's
    # "1.6T" is two significant figures of it (the MTP layer's ~25.6B is not loaded here)
    assert pro.total == 1_572_999_528_803
    assert 0.98 <= pro.total / 1.6e12 <= 0.99  # 0.9831, like Kimi-K2's "1 trillion" row
    # activated: the cards count without the input embedding (as gpt-oss's does):
    # Flash 13.80B - 0.53B = 13.27B ("13B"); Pro 49.78B - 0.93B = 48.85B ("49B")
    assert round((flash.active - flash.embedding) / 1e7) == 1327
    assert round((pro.active - pro.embedding) / 1e7) == 4885
