"""Keys a config.json leaves to its transformers config class (``_CLASS_DEFAULTS``), and the
MoE key Gemma 4 spells its own way: what vLLM's instantiated config reads, tpcheck reads too."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tpcheck.models import catalog
from tpcheck.models.config import ConfigError, load_shape, parse_config
from tpcheck.models.params import param_counts
from tpcheck.models.shape import ModelShape


def shape(model_id: str) -> ModelShape:
    entry = catalog.find(model_id)
    assert entry is not None, model_id
    return load_shape(entry.config_path, name=model_id)


def test_gemma3_27b_hub_file_without_vocab_reads_the_class_default() -> None:
    cfg = json.loads(catalog.find("google/gemma-3-27b-it").config_path.read_text())  # type: ignore[union-attr]
    assert "vocab_size" not in cfg["text_config"]  # the hub file, as shipped
    s = shape("google/gemma-3-27b-it")
    # transformers 5.20.2 Gemma3TextConfig: vocab_size 262_208 (l.74), 131_072 positions (l.82)
    assert (s.vocab, s.max_position_embeddings) == (262_208, 131_072)
    # the file's own: 62 layers, d 5376, 32/16 heads of 128, FFN 21504, window 1024;
    # pattern 6 (class default): layers 5, 11, ..., 59 global = 10, so 62 - 10 = 52 slide
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.ffn) == (
        62, 5376, 32, 16, 128, 21504)
    assert (s.sliding_window, s.sliding_layers, s.tied_embeddings) == (1024, 52, True)


def test_gemma3_12b_head_dim_is_the_class_default_not_d_over_h() -> None:
    s = shape("google/gemma-3-12b-it")
    # no head_dim in the file: Gemma3TextConfig's 256 (l.80), not 3840 / 16 = 240
    assert (s.hidden, s.heads, s.kv_heads, s.head_dim) == (3840, 16, 8, 256)
    # 48 layers, pattern 6: 8 global (5, 11, ..., 47), 40 sliding
    assert (s.layers, s.sliding_layers, s.vocab) == (48, 40, 262_208)
    p = param_counts(s)
    # q and o: 3840·16·256 = 15,728,640 a layer ·48 = 754,974,720 each (240 would give 707,788,800)
    assert p.attn_q == p.attn_o == 754_974_720
    # embedding 262,208·3840 = 1,006,878,720 (tied: no separate LM head)
    assert (p.embedding, p.lm_head) == (1_006_878_720, 0)
    # MLP 3·3840·15360·48 = 8,493,465,600
    assert p.dense_mlp == 8_493_465_600


def test_a_value_the_file_sets_is_never_replaced() -> None:
    cfg = {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "hidden_size": 1152, "num_attention_heads": 4,
        "num_key_value_heads": 1, "num_hidden_layers": 26, "intermediate_size": 6912,
        "head_dim": 256, "vocab_size": 262_144, "sliding_window": 512,
        "max_position_embeddings": 32_768}}
    s = parse_config(cfg)
    # gemma-3-1b's own numbers (262,144 rows, 32k positions, window 512), not the class's
    assert (s.vocab, s.max_position_embeddings, s.sliding_window) == (262_144, 32_768, 512)


def test_a_text_config_without_model_type_takes_its_wrappers_class() -> None:
    # Gemma3Config.sub_configs_defaults: text_config is a Gemma3TextConfig (l.201-202)
    cfg = {"model_type": "gemma3", "text_config": {
        "hidden_size": 2560, "num_hidden_layers": 34, "intermediate_size": 10240,
        "sliding_window": 1024}}
    s = parse_config(cfg)
    # gemma-3-4b's text_config sets only these four; heads 8, KV 4, head_dim 256, vocab 262208
    # are Gemma3TextConfig's (l.74-80)
    assert (s.heads, s.kv_heads, s.head_dim, s.vocab) == (8, 4, 256, 262_208)


def test_a_family_without_a_table_still_needs_its_keys() -> None:
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
           "num_hidden_layers": 32, "intermediate_size": 14336}
    with pytest.raises(ConfigError, match=r"x\.json: missing field vocab_size"):
        parse_config(cfg, path="x.json")


# A Gemma 4 MoE text config shaped like gemma-4-26B-A4B (hand-written: the keys vLLM 0.33.0
# model_executor/models/gemma4.py reads; num_experts / top_k_experts / moe_intermediate_size).
GEMMA4_MOE: dict[str, Any] = {
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
    "dtype": "bfloat16",
    "text_config": {
        "model_type": "gemma4_text", "hidden_size": 2816, "intermediate_size": 2112,
        "num_hidden_layers": 30, "num_attention_heads": 16, "num_key_value_heads": 8,
        "head_dim": 256, "vocab_size": 262_144, "sliding_window": 1024,
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5,
        "enable_moe_block": True, "num_experts": 128, "top_k_experts": 8,
        "moe_intermediate_size": 704}}


def test_gemma4_top_k_experts_is_read() -> None:
    s = parse_config(GEMMA4_MOE)
    assert s.moe is not None
    # 128 experts of width 704, 8 a token (top_k_experts), on all 30 layers
    assert (s.moe.num_experts, s.moe.experts_per_token, s.moe.expert_ffn, s.moe.moe_layers) == (
        128, 8, 704, 30)
    # layer_types: 5 of every 6 slide, 25 of 30
    assert s.sliding_layers == 25


def test_gemma4_dense_mlp_beside_the_experts_is_counted() -> None:
    s = parse_config(GEMMA4_MOE)
    assert s.moe is not None
    # the MLP runs beside the experts on every layer (gemma4.py:737-755): one always-on
    # "shared expert" of intermediate_size 2112
    assert (s.moe.num_shared_experts, s.moe.shared_expert_ffn, s.ffn) == (1, 2112, 0)
    p = param_counts(s)
    # 3·2816·2112·30 = 535,265,280 (gated MLP, 30 layers)
    assert p.shared_experts == 535_265_280
    # 128·3·2816·704·30 = 22,837,985,280 routed; 8 of 128 active: 1,427,374,080
    assert p.routed_experts == 22_837_985_280
    assert p.active_routed_experts == 1_427_374_080


def test_gemma4_without_top_k_experts_names_it() -> None:
    cfg = copy.deepcopy(GEMMA4_MOE)
    del cfg["text_config"]["top_k_experts"]
    with pytest.raises(ConfigError, match=r"missing field text_config\.num_experts_per_tok "
                                          r"\(or .*top_k_experts\)"):
        parse_config(cfg, path="g4.json")
