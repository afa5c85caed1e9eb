"""Weight bytes per component: each expected figure is derived beside its assertion."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.models import catalog
from tpcheck.models.config import load_shape
from tpcheck.models.params import param_counts
from tpcheck.models.quant import WeightBytes, weight_bytes
from tpcheck.models.shape import ModelShape

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "models"


def wb(model_id: str, **kw: str) -> tuple[ModelShape, WeightBytes]:
    entry = catalog.find(model_id)
    assert entry is not None
    s = load_shape(entry.config_path, name=model_id)
    return s, weight_bytes(s, param_counts(s), **kw)


def fx(name: str, **kw: str) -> WeightBytes:
    s = load_shape(FIX / name)
    return weight_bytes(s, param_counts(s), **kw)


def test_bf16_is_two_bytes_per_param() -> None:
    s, w = wb("meta-llama/Llama-3.1-8B")
    assert w.total == 2 * param_counts(s).total == 2 * 8_030_261_248
    assert w.quant_method is None and w.dtype == "bfloat16"


def test_llama_3_1_70b_modelopt_fp8() -> None:
    _, w = wb("nvidia/Llama-3.1-70B-Instruct-FP8")
    L, d, V = 80, 8192, 128256
    # embeddings and lm_head (exclude_modules) stay bf16: 2 B
    assert w.embedding == V * d * 2 and w.lm_head == V * d * 2
    # linear weights: 1 B + fp32 weight_scale + fp32 input_scale (8 B) per tensor
    assert w.attn_kv == L * 2 * (1024 * d * 1 + 8)  # k_proj, v_proj: 8 heads × 128
    assert w.attn_q == L * (d * d + 8)
    assert w.dense_mlp == L * ((2 * 28672 * d + 8) + (d * 28672 + 8))  # gate_up fused, down
    assert w.norms == (L * 2 * d + d) * 2
    assert round(w.total / 1e9, 2) == 72.66  # 68.45B fp8 linear + 2.10B bf16 emb/head ×2


def test_deepseek_v3_block_fp8() -> None:
    _, w = wb("deepseek-ai/DeepSeek-V3")
    d = 7168
    # routed experts: 58 layers × 256 × [gate_up 4096×7168 + down 7168×2048] at 1 B, plus one
    # fp32 scale per 128×128 block: (4096/128)(7168/128) = 32·56 and (7168/128)(2048/128) = 56·16
    per_expert = 4096 * d + 32 * 56 * 4 + d * 2048 + 56 * 16 * 4
    assert w.routed_experts == 58 * 256 * per_expert
    # router (gate 256×7168 + bias) stays bf16
    assert w.router == 58 * (256 * d + 256) * 2
    # kv_a_proj_with_mqa 576×7168 → ceil(576/128)=5 × 56 blocks; q_a_proj 1536×7168 → 12 × 56
    mla = 61 * ((1536 * d + 12 * 56 * 4) + (576 * d + 5 * 56 * 4) + (1536 + 512) * 2)
    assert w.mla_other == mla


def test_gpt_oss_mxfp4_matches_checkpoint_size() -> None:
    # config.json has no torch_dtype (float32 as read); vLLM downcasts to bf16 → override.
    _, w = wb("openai/gpt-oss-120b", dtype_override="bfloat16")
    # expert weights: 4 bits + one 8-bit scale per 32 → 4.25 bits; expert biases stay bf16
    weights = 36 * 128 * (5760 * 2880 + 2880 * 2880)
    biases = 36 * 128 * (5760 + 2880)
    assert w.routed_experts == weights // 2 + weights // 32 + biases * 2
    assert w.attn_q == 36 * (4096 * 2880 + 4096) * 2  # attention is left in bf16
    # model card: checkpoint 60.8 GiB
    assert round(w.total / 2**30, 1) == 60.8
    _, w20 = wb("openai/gpt-oss-20b", dtype_override="bfloat16")
    assert round(w20.total / 2**30, 1) == 12.8  # model card: 12.8 GiB


def test_float32_config_without_override_is_four_bytes() -> None:
    s = load_shape(FIX / "unknown-no-dtype.json")
    c = param_counts(s)
    assert weight_bytes(s, c).total == 4 * c.total
    assert weight_bytes(s, c, dtype_override="half").total == 2 * c.total
    assert weight_bytes(s, c, dtype_override="auto").total == 4 * c.total


def test_awq_int4_group_128() -> None:
    w = fx("llama-2-7b-awq.json")
    L, d, f = 32, 4096, 11008
    # q_proj 4096×4096: 0.5 B each + per (row, 128-col group) an fp16 scale and a 4-bit zero:
    # 4096·4096/2 + 4096·32·2 + 4096·32/2
    assert w.attn_q == L * (d * d // 2 + d * 32 * 2 + d * 32 // 2)
    # down_proj 4096×11008: 11008/128 = 86 groups per row
    down = d * f // 2 + d * 86 * 2 + d * 86 // 2
    gate_up = 2 * f * d // 2 + 2 * f * 32 * 2 + 2 * f * 32 // 2
    assert w.dense_mlp == L * (gate_up + down)
    assert w.embedding == 32000 * d * 2 and w.lm_head == 32000 * d * 2  # fp16 stays 2 B


def test_compressed_tensors_w4a16() -> None:
    w = fx("llama-3.1-8b-w4a16-ct.json")
    d = 4096
    # symmetric int4, group 128: 0.5 B + one bf16 scale per group, no zeros
    assert w.attn_q == 32 * (d * d // 2 + d * 32 * 2)
    assert w.lm_head == 128256 * d * 2  # ignore: [lm_head]


def test_bitsandbytes_nf4() -> None:
    w = fx("llama-3.1-8b-bnb4.json")
    d = 4096
    # 4 bits + fp32 absmax per 64 weights
    assert w.attn_q == 32 * (d * d // 2 + d * d // 64 * 4)


def test_online_fp8_override() -> None:
    _, w = wb("meta-llama/Llama-3.1-8B", quantization_override="fp8")
    # vLLM online fp8: per-tensor scale; 1 B + 4 B per tensor; embeddings stay bf16
    assert w.attn_kv == 32 * 2 * (1024 * 4096 + 4)
    assert w.embedding == 128256 * 4096 * 2 and w.quant_method == "fp8"
    # an override naming the checkpoint's own method keeps its layout
    _, w2 = wb("Qwen/Qwen3-32B-FP8", quantization_override="fp8")
    _, w3 = wb("Qwen/Qwen3-32B-FP8")
    assert w2 == w3


def test_unknown_overrides_rejected() -> None:
    s, _ = wb("meta-llama/Llama-3.1-8B")
    with pytest.raises(ValueError, match="unknown quantization"):
        weight_bytes(s, param_counts(s), quantization_override="int3-magic")
    with pytest.raises(ValueError, match="unknown dtype"):
        weight_bytes(s, param_counts(s), dtype_override="float8")


def test_kv_proj_exposed_for_replication() -> None:
    _, w = wb("Qwen/Qwen2.5-7B-Instruct")
    # k_proj and v_proj 3584 → 4 × 128 each, with biases, bf16
    assert w.kv_proj == w.attn_kv == 28 * 2 * (512 * 3584 + 512) * 2


def test_exclusion_list_read_once_as_prefixes() -> None:
    from tpcheck.models.quant import _excluded_prefixes

    # 'model.'/'language_model.' lead-ins and 'layers.*.' are dropped; an entry naming one
    # layer's module (layers.3.) is a norm or gate already priced unquantized; repeats collapse.
    got = _excluded_prefixes(("model.layers.*.self_attn", "model.language_model.layers.*.mlp"
                              ".shared_expert", "model.layers.3.mlp.gate", "lm_head", "lm_head"))
    assert got == ("self_attn", "mlp.shared_expert", "lm_head")
    # Qwen3-30B-A3B-FP8 lists 145 modules: lm_head and 144 single-layer norms and gates
    s, _ = wb("Qwen/Qwen3-30B-A3B-FP8")
    assert s.quant is not None and len(s.quant.excluded) == 145
    assert _excluded_prefixes(s.quant.excluded) == ("lm_head",)
