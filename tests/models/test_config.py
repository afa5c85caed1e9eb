"""config.json → ModelShape: every catalog model, per-family numbers, and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tpcheck.models import catalog
from tpcheck.models.config import ConfigError, load_config, load_shape, parse_config
from tpcheck.models.shape import ModelShape

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures" / "models"


def shape(model_id: str) -> ModelShape:
    entry = catalog.find(model_id)
    assert entry is not None, model_id
    return load_shape(entry.config_path, name=model_id)


@pytest.mark.parametrize("model_id", catalog.all_ids())
def test_every_catalog_model_parses(model_id: str) -> None:
    s = shape(model_id)
    assert s.layers > 0 and s.hidden > 0 and s.vocab > 0
    assert s.heads % s.kv_heads == 0  # GQA groups are whole in every real model
    assert s.dtype in ("bfloat16", "float16", "float32")
    assert 0 <= s.sliding_layers <= s.layers
    if s.moe is not None:
        assert 0 < s.moe.moe_layers <= s.layers
        assert (s.ffn == 0) == (s.moe.moe_layers == s.layers)


def test_catalog_size() -> None:
    # 46 first entries + 50 from the aiconfigurator-core 0.12.0 wheel + 6 transcribed from
    # mlc-llm's model_preset.py, then (issue 16, second pass) 6 from the aiconfigurator 0.7.0
    # wheel, 19 more mlc-llm presets and 11 configs kept in public repositories = 138;
    # then (issue 16, helper h) OPT 1.3b/2.7b/6.7b/13b/30b and distilgpt2 = 144, and from the
    # aiconfigurator-core 0.12.0 wheel DeepSeek-V4-Pro, -Flash, nvidia's DeepSeek-V4-Pro-NVFP4
    # and Qwen3.6-35B-A3B-NVFP4 = 148, microsoft/phi-4 and DeepSeek-R1-Distill-Qwen-1.5B = 150;
    # then (issue 16, Google/Meta ids the corpus deploys) gemma-2b-it, gemma-7b-it,
    # Llama-2-7b-chat-hf and Llama-2-13b-chat-hf, and the mlc-llm presets of
    # Phi-3.5-mini-instruct and CodeLlama-7b-hf = 156; then gemma-3-12b-it and gemma-3-27b-it
    # (their text_config leaves vocab_size to Gemma3TextConfig) = 158; then (TP000 reach)
    # facebook/opt-125m and mistralai/Mistral-7B-Instruct-v0.2 = 160; then (issue 33) the five
    # NemotronH hybrid Mamba entries out (test_hybrid_mamba_is_refused) = 155; each SOURCE
    # says which
    assert len(catalog.all_ids()) == 155


def test_dated_and_renamed_ids_resolve_to_their_folder() -> None:
    """ALIASES: the hub's renames and the dated re-releases that keep the shape."""
    for alias, folder in [
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai--DeepSeek-V3"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-ai--DeepSeek-R1"),
        ("meta-llama/Meta-Llama-3.1-405B-Instruct", "meta-llama--Llama-3.1-405B"),
        ("meta-llama/Llama-3.1-405B-Instruct", "meta-llama--Llama-3.1-405B"),
        ("gpt2", "openai-community--gpt2"),
        ("CohereLabs/aya-23-8B", "CohereForAI--aya-23-8B"),
    ]:
        found = catalog.find(alias)
        assert found is not None and found.folder.name == folder, alias
        assert found.model_id == alias  # the finding names the id the file wrote
    # a dated id that was never listed is not guessed from its prefix
    assert catalog.find("deepseek-ai/DeepSeek-R1-0101") is None


FOLDERS = sorted(p.name for p in catalog.CATALOG_DIR.iterdir() if p.is_dir())


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_catalog_entry_has_a_source(folder: str) -> None:
    """Every bundled file says where it came from, under the hub id its folder name spells."""
    entry = catalog.CATALOG_DIR / folder
    assert (entry / "config.json").is_file()
    fields = dict(
        line.split(": ", 1)
        for line in (entry / "SOURCE").read_text(encoding="utf-8").splitlines()
        if ": " in line
    )
    assert fields["model_id"] == folder.replace("--", "/", 1)
    assert fields["repository"].startswith("https://github.com/")
    assert fields["path"] and fields["verified"]
    quant = entry / "hf_quant_config.json"
    cfg = load_config(entry / "config.json")
    parse_config(cfg, name=folder, quant_cfg=load_config(quant) if quant.is_file() else None)


def test_aliases_never_shadow_a_catalog_folder() -> None:
    """An alias names a renamed or same-shape hub id, never one that has its own folder."""
    folders = {p.name.replace("--", "/", 1).lower() for p in catalog.CATALOG_DIR.iterdir()}
    aliases = [
        line.split("#", 1)[0].strip()
        for a in catalog.CATALOG_DIR.glob("*/ALIASES")
        for line in a.read_text(encoding="utf-8").splitlines()
    ]
    aliases = [a for a in aliases if a]
    assert "meta-llama/Meta-Llama-3.1-8B-Instruct" in aliases
    assert not {a.lower() for a in aliases} & folders
    found = catalog.find("meta-llama/Meta-Llama-3.1-8B-Instruct")
    assert found is not None and found.folder.name == "meta-llama--Llama-3.1-8B-Instruct"


def test_llama_3_1_70b() -> None:
    s = shape("meta-llama/Llama-3.1-70B-Instruct")
    # num_hidden_layers 80, hidden_size 8192, num_attention_heads 64, num_key_value_heads 8,
    # no head_dim → 8192/64 = 128, intermediate_size 28672, vocab_size 128256
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim) == (80, 8192, 64, 8, 128)
    assert (s.ffn, s.vocab, s.tied_embeddings, s.dtype) == (28672, 128256, False, "bfloat16")
    assert s.moe is None and s.mla is None and s.quant is None and not s.qkv_bias


def test_llama_3_2_1b_tied_and_head_dim() -> None:
    s = shape("meta-llama/Llama-3.2-1B-Instruct")
    assert s.tied_embeddings  # tie_word_embeddings: true
    assert s.head_dim == 64  # head_dim: 64 (= 2048/32 too)


def test_qwen2_bias_and_unused_sliding_window() -> None:
    s = shape("Qwen/Qwen2.5-7B-Instruct")
    # Qwen2 attention always has q/k/v biases; o_proj none.
    assert s.qkv_bias and not s.o_bias
    # sliding_window 131072 but use_sliding_window false → no sliding layers
    assert s.sliding_layers == 0 and s.sliding_window is None
    assert (s.heads, s.kv_heads, s.ffn, s.vocab) == (28, 4, 18944, 152064)


def test_qwen3_head_dim_and_qk_norm() -> None:
    s = shape("Qwen/Qwen3-8B")
    # head_dim 128 = 4096/32; q_norm/k_norm per layer
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim) == (36, 4096, 32, 8, 128)
    assert s.qk_norm


def test_gemma2_head_dim_and_alternating_sliding() -> None:
    s = shape("google/gemma-2-27b")
    # head_dim 128 while hidden/heads = 4608/32 = 144
    assert s.head_dim == 128 and s.hidden // s.heads == 144
    # 46 layers, even-indexed ones slide: 23; sliding_window 4096; tied by default (gemma)
    assert (s.sliding_layers, s.sliding_window, s.tied_embeddings) == (23, 4096, True)
    assert s.layer_norms == 4  # input, post_attention, pre/post feedforward
    s9 = shape("google/gemma-2-9b-it")
    assert (s9.layers, s9.sliding_layers, s9.head_dim, s9.kv_heads) == (42, 21, 256, 8)


def test_gemma3_wrapper_pattern() -> None:
    s = load_shape(FIX / "gemma-3-27b-it.json")
    # text_config: 62 layers, pattern 6 → layers 5, 11, ..., 59 global: 10; 52 sliding
    assert (s.layers, s.sliding_layers, s.sliding_window) == (62, 52, 1024)
    assert (s.hidden, s.heads, s.kv_heads, s.head_dim, s.vocab) == (5376, 32, 16, 128, 262208)
    assert s.dtype == "bfloat16"  # from the outer config
    assert s.tied_embeddings and s.qk_norm  # gemma3_text defaults


def test_gpt_oss_layer_types_and_mxfp4() -> None:
    s = shape("openai/gpt-oss-120b")
    # layer_types: 36 entries alternating sliding/full → 18 sliding; sliding_window 128
    assert (s.layers, s.sliding_layers, s.sliding_window) == (36, 18, 128)
    # head_dim 64 while 2880/64 = 45; 64 heads, 8 KV heads
    assert (s.head_dim, s.heads, s.kv_heads) == (64, 64, 8)
    assert s.moe is not None
    # num_local_experts 128, experts_per_token 4, intermediate_size 2880, all layers MoE
    assert (s.moe.num_experts, s.moe.experts_per_token, s.moe.expert_ffn) == (128, 4, 2880)
    assert s.moe.moe_layers == 36 and s.ffn == 0
    assert s.moe.router_bias and s.moe.expert_bias and s.qkv_bias and s.o_bias
    assert s.quant is not None and s.quant.method == "mxfp4" and s.quant.experts_only
    assert s.dtype == "float32"  # gpt-oss config.json carries no torch_dtype


def test_falcon_40b_refinedweb_hack() -> None:
    s = shape("tiiuae/falcon-40b")
    # n_layer 60, n_head 128, n_head_kv 8; hidden 8192 → vLLM RWConfig forces the new decoder
    # architecture, so n_head_kv is used (not multi_query → 1)
    assert (s.layers, s.heads, s.kv_heads, s.head_dim) == (60, 128, 8, 64)
    assert s.ffn == 4 * 8192 and not s.gated_mlp and s.tied_embeddings
    assert s.norm_bias and s.layer_norms == 2  # ln_attn + ln_mlp


def test_falcon_7b_multi_query() -> None:
    s = load_shape(FIX / "falcon-7b.json")
    # multi_query true, new_decoder_architecture false → one KV head (vLLM rule)
    assert (s.heads, s.kv_heads, s.head_dim) == (71, 1, 64)  # 4544 // 71 = 64
    assert s.layer_norms == 1  # parallel_attn: one input_layernorm


def test_chatglm_aliases() -> None:
    s = load_shape(FIX / "chatglm3-6b.json")
    # num_layers 28, multi_query_group_num 2, ffn_hidden_size 13696, padded_vocab_size 65024
    assert (s.layers, s.kv_heads, s.ffn, s.vocab) == (28, 2, 13696, 65024)
    assert s.max_position_embeddings == 8192  # seq_length
    assert s.dtype == "float16"


def test_starcoder2() -> None:
    s = load_shape(FIX / "starcoder2-3b.json")
    assert not s.gated_mlp and s.qkv_bias and s.o_bias and s.mlp_bias and s.norm_bias
    assert (s.kv_heads, s.sliding_layers, s.sliding_window) == (2, 30, 4096)
    assert s.tied_embeddings  # starcoder2 default
    assert s.dtype == "float32"


def test_gpt2_mlp_width_defaults_to_four_times_hidden(tmp_path: Path) -> None:
    # vLLM gpt2.py GPT2Block: inner_dim = n_inner if not None else 4 * hidden_size; the hub's
    # gpt2 config.json has no n_inner key, distilgpt2's writes null
    s = shape("openai-community/gpt2")
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim) == (12, 768, 12, 12, 64)
    assert s.ffn == 4 * 768 == 3072 and not s.gated_mlp
    assert shape("openai-community/gpt2-medium").ffn == 4 * 1024
    base = json.loads(catalog.find("gpt2").config_path.read_text())  # type: ignore[union-attr]
    for n_inner, want in [(None, 4 * 768), (1000, 1000)]:
        p = tmp_path / f"gpt2-{n_inner}.json"
        p.write_text(json.dumps({**base, "n_inner": n_inner, "n_layer": 6}))
        s = load_shape(p)
        assert (s.layers, s.ffn) == (6, want)
    # the default is gpt2's only: another family without an MLP width is still refused
    p = tmp_path / "other.json"
    p.write_text(json.dumps({**base, "model_type": "my_gpt"}))
    with pytest.raises(ConfigError, match="missing field intermediate_size"):
        load_shape(p)


def test_unknown_model_type_and_missing_dtype() -> None:
    s = load_shape(FIX / "unknown-no-dtype.json")
    assert (s.model_type, s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim) == (
        "my_new_llm", 8, 1024, 16, 4, 64)
    assert s.dtype == "float32"  # no torch_dtype: what HF/vLLM see before downcasting
    assert not s.tied_embeddings  # unknown family: assumed untied


def test_deepseek_v3_mla_and_moe() -> None:
    s = shape("deepseek-ai/DeepSeek-V3")
    assert s.mla is not None and s.moe is not None
    # kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, q_lora 1536
    assert (s.mla.kv_lora_rank, s.mla.qk_rope_head_dim, s.mla.qk_nope_head_dim) == (512, 64, 128)
    assert (s.mla.v_head_dim, s.mla.q_lora_rank, s.mla.latent_dim) == (128, 1536, 576)
    assert (s.head_dim, s.head_dim_v) == (192, 128)  # 128 + 64 for q/k; v 128
    # n_routed_experts 256, top-8, moe_intermediate_size 2048, first_k_dense_replace 3 → 58
    assert (s.moe.num_experts, s.moe.experts_per_token, s.moe.expert_ffn) == (256, 8, 2048)
    assert (s.moe.moe_layers, s.dense_layers, s.ffn) == (58, 3, 18432)
    assert (s.moe.num_shared_experts, s.moe.shared_expert_ffn) == (1, 2048)
    assert s.moe.router_bias  # noaux_tc → e_score_correction_bias
    assert s.quant is not None and s.quant.block == (128, 128) and s.quant.method == "fp8"


def test_deepseek_v2_lite_without_q_lora() -> None:
    s = shape("deepseek-ai/DeepSeek-V2-Lite")
    assert s.mla is not None and s.mla.q_lora_rank is None
    assert s.moe is not None and (s.moe.moe_layers, s.moe.num_shared_experts) == (26, 2)
    assert not s.moe.router_bias  # topk_method greedy


def test_deepseek_v32_indexer() -> None:
    s = shape("deepseek-ai/DeepSeek-V3.2")
    assert s.mla is not None and (s.mla.indexer_heads, s.mla.indexer_head_dim) == (64, 128)


def test_kimi_k2() -> None:
    s = shape("moonshotai/Kimi-K2-Instruct")
    assert s.model_type == "kimi_k2" and s.mla is not None and s.moe is not None
    # 384 routed experts, first_k_dense_replace 1 → 60 MoE layers, 64 heads
    assert (s.moe.num_experts, s.moe.moe_layers, s.heads) == (384, 60, 64)


def test_mixtral() -> None:
    s = shape("mistralai/Mixtral-8x7B-v0.1")
    assert s.moe is not None
    # num_local_experts 8, top-2, expert width = intermediate_size 14336, every layer MoE
    assert (s.moe.num_experts, s.moe.experts_per_token, s.moe.expert_ffn) == (8, 2, 14336)
    assert (s.moe.moe_layers, s.ffn) == (32, 0)


def test_qwen3_moe_and_next() -> None:
    s = shape("Qwen/Qwen3-30B-A3B")
    assert s.moe is not None
    # num_experts 128, top-8, moe_intermediate_size 768, decoder_sparse_step 1, no mlp_only
    assert (s.moe.num_experts, s.moe.experts_per_token, s.moe.expert_ffn) == (128, 8, 768)
    assert (s.moe.moe_layers, s.ffn, s.moe.num_shared_experts) == (48, 0, 0)
    n = shape("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert n.moe is not None and n.linear_attn is not None
    # full_attention_interval 4 → 12 full-attention and 36 linear-attention layers
    assert n.linear_attn.layers == 36
    assert (n.linear_attn.num_key_heads, n.linear_attn.num_value_heads) == (16, 32)
    assert (n.moe.num_shared_experts, n.moe.shared_expert_ffn) == (1, 512)
    assert n.moe.shared_expert_gate and n.attn_output_gate
    assert (n.head_dim, n.kv_heads) == (256, 2)


def test_qwen2_moe_shared_expert() -> None:
    s = load_shape(FIX / "qwen1.5-moe-a2.7b.json")
    assert s.moe is not None
    assert (s.moe.num_experts, s.moe.expert_ffn, s.moe.shared_expert_ffn) == (60, 1408, 5632)
    assert s.moe.shared_expert_gate and s.qkv_bias


def test_llama4_wrapper_interleave() -> None:
    mav = shape("meta-llama/Llama-4-Maverick-17B-128E-Instruct")
    assert mav.moe is not None
    # text_config: interleave_moe_layer_step 2 → 24 of 48 layers MoE; dense width is
    # intermediate_size_mlp 16384; experts and the shared expert use intermediate_size 8192
    assert (mav.moe.moe_layers, mav.ffn, mav.moe.expert_ffn) == (24, 16384, 8192)
    assert (mav.moe.num_experts, mav.moe.num_shared_experts, mav.moe.shared_expert_ffn) == (
        128, 1, 8192)
    assert (mav.vocab, mav.hidden, mav.heads, mav.kv_heads) == (202048, 5120, 40, 8)
    scout = shape("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert scout.moe is not None and (scout.moe.moe_layers, scout.ffn) == (48, 0)
    assert not scout.qk_norm  # use_qk_norm is a weightless L2 norm


def test_glm45_air_and_ling() -> None:
    g = shape("zai-org/GLM-4.5-Air")
    assert g.moe is not None
    # n_routed_experts 128, first_k_dense_replace 1 → 45 MoE layers; attention_bias on qkv only
    assert (g.moe.num_experts, g.moe.moe_layers, g.ffn) == (128, 45, 10944)
    assert g.qkv_bias and not g.o_bias and (g.heads, g.kv_heads, g.head_dim) == (96, 8, 128)
    ling = shape("inclusionAI/Ling-flash-2.0")
    assert ling.moe is not None
    moe = ling.moe
    assert (moe.num_experts, moe.moe_layers, moe.shared_expert_ffn) == (256, 31, 1024)
    assert ling.moe.router_bias and ling.qk_norm


def test_magistral_text_config_dtype() -> None:
    s = shape("mistralai/Magistral-Small-2509")
    # outer "dtype": "bfloat16"; text_config: 40 layers, 32/8 heads, head_dim 128 (5120/32=160)
    assert (s.dtype, s.layers, s.heads, s.kv_heads, s.head_dim) == ("bfloat16", 40, 32, 8, 128)
    assert s.model_type == "mistral" and not s.tied_embeddings


def test_phi3_sliding_window_all_layers() -> None:
    s = shape("microsoft/Phi-3-mini-4k-instruct")
    assert (s.kv_heads, s.sliding_window, s.sliding_layers) == (32, 2047, 32)


def test_modelopt_hf_quant_config() -> None:
    s = shape("nvidia/Llama-3.1-70B-Instruct-FP8")
    assert s.quant is not None and s.quant.method == "modelopt-fp8"
    assert "lm_head" in s.quant.excluded


# --- bad input: always ConfigError naming the field and the file ---------------------------

BASE: dict[str, Any] = json.loads((FIX / "unknown-no-dtype.json").read_text())


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("num_hidden_layers", None, "missing field num_hidden_layers"),
        ("num_hidden_layers", "32", "num_hidden_layers must be a positive integer"),
        ("num_hidden_layers", 0, "num_hidden_layers must be a positive integer"),
        ("hidden_size", -4096, "hidden_size must be a positive integer"),
        ("num_attention_heads", math.nan, "num_attention_heads must be a positive integer"),
        ("num_attention_heads", math.inf, "num_attention_heads must be a positive integer"),
        ("num_key_value_heads", 2.5, "num_key_value_heads must be a positive integer"),
        ("num_key_value_heads", True, "num_key_value_heads must be a positive integer"),
        ("vocab_size", None, "missing field vocab_size"),
        ("intermediate_size", None, "missing field intermediate_size"),
        ("intermediate_size", [1], "intermediate_size must be a positive integer"),
        ("torch_dtype", 16, "torch_dtype must be a dtype name"),
        ("torch_dtype", "int3", "unknown dtype"),
        ("tie_word_embeddings", "yes", "tie_word_embeddings must be true or false"),
    ],
)
def test_bad_fields(tmp_path: Path, field: str, value: Any, fragment: str) -> None:
    cfg = dict(BASE)
    if value is None:
        cfg.pop(field, None)
    else:
        cfg[field] = value
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))  # NaN/Infinity are written as JSON's NaN literal
    with pytest.raises(ConfigError) as err:
        load_shape(p)
    msg = str(err.value)
    assert fragment in msg and str(p) in msg and "\n" not in msg


def test_text_config_field_is_named_with_prefix() -> None:
    cfg = json.loads((FIX / "gemma-3-27b-it.json").read_text())
    del cfg["text_config"]["num_hidden_layers"]
    # gemma3_text would take Gemma3TextConfig's 26 layers (config.py _CLASS_DEFAULTS); a text
    # model_type without a defaults table must name the missing field, with its prefix
    cfg["text_config"]["model_type"] = "custom_text"
    with pytest.raises(ConfigError, match=r"gemma.json: missing field text_config\.num_hidden"):
        parse_config(cfg, path="gemma.json")


def test_bad_moe_and_mla_fields() -> None:
    cfg = dict(BASE, num_local_experts=8)
    with pytest.raises(ConfigError, match=r"x\.json: missing field num_experts_per_tok"):
        parse_config(cfg, path="x.json")
    cfg = dict(BASE, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128)
    with pytest.raises(ConfigError, match=r"x\.json: missing field v_head_dim"):
        parse_config(cfg, path="x.json")
    cfg = dict(BASE, quantization_config={"bits": 4})
    with pytest.raises(ConfigError, match=r"missing field quantization_config\.quant_method"):
        parse_config(cfg, path="x.json")
    cfg = dict(BASE, quantization_config={"quant_method": "fp8", "weight_block_size": [128]})
    with pytest.raises(ConfigError, match="weight_block_size"):
        parse_config(cfg, path="x.json")


def test_bad_json_and_non_object() -> None:
    with pytest.raises(ConfigError, match=r"bad-json\.json:2:\d+: invalid JSON"):
        load_config(FIX / "bad-json.json")
    with pytest.raises(ConfigError, match=r"not-an-object\.json: expected a JSON object, got list"):
        load_config(FIX / "not-an-object.json")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(FIX / "does-not-exist.json")
    with pytest.raises(ConfigError, match="<config>: expected a JSON object"):
        parse_config([1, 2])  # type: ignore[arg-type]


def test_name_used_when_no_path() -> None:
    with pytest.raises(ConfigError, match="org/model: missing field num_hidden_layers"):
        parse_config({"hidden_size": 8}, name="org/model")


DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize(("name", "counts"), [
    # the config's hybrid_override_pattern, one character a layer: M Mamba2, * attention,
    # E MoE, - MLP
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "23 Mamba2, 6 attention, 23 MoE, 0 MLP of 52"),
    ("nvidia--Nemotron-H-56B-Base-8K", "54 Mamba2, 10 attention, 0 MoE, 54 MLP of 118"),
])
def test_hybrid_mamba_is_refused(name: str, counts: str) -> None:
    """Read as attention + MLP on every layer, Nemotron-3-Nano-30B-A3B counted 102.3B weights
    (its name says 30B) and a KV cache on all 52 layers where 6 keep one, so the five NemotronH
    entries left the catalog; such a config, pulled or mapped, gets TP000 and no figure."""
    with pytest.raises(ConfigError, match=f"hybrid Mamba layers are not modelled .*{counts}"):
        load_shape(DATA / f"{name}_config.json")
    assert not [m for m in catalog.all_ids()
                if "hybrid_override_pattern" in catalog.find(m).config_path.read_text()]  # type: ignore[union-attr]


def test_hybrid_mamba_tp000_says_nothing_is_wrong_with_the_file(tmp_path: Path) -> None:
    from tpcheck.lint import Linter
    from tpcheck.settings import Settings

    run = tmp_path / "run.sh"
    run.write_text("vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 "
                   "--tensor-parallel-size 2\n")
    cfg = DATA / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16_config.json"
    res = Linter(Settings(offline=True, gpu="h100-sxm", model_config=str(cfg))).run([str(run)])
    [f] = [f for f in res.findings if f.code == "TP000"]
    assert f.message == "config.json found but not usable"
    assert f.fix is not None and f.fix.startswith("nothing to correct in the file")
    assert not [g for g in res.findings if g.code.startswith(("TP1", "TP2"))]
