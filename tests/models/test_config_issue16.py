"""parse_config on the real configs issue 16 brought in: gpt2/opt defaults, list-valued
``moe_layer_freq``, MoE keys under ``text_config``, ModelOpt MIXED_PRECISION, Nemotron
``block_configs`` and DeepSeek-V4 ``expert_dtype``; and the catalog ids added with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tpcheck.models import catalog
from tpcheck.models.config import load_shape, parse_config
from tpcheck.models.params import param_counts
from tpcheck.models.shape import ModelShape


def shape(model_id: str) -> ModelShape:
    entry = catalog.find(model_id)
    assert entry is not None, model_id
    return load_shape(entry.config_path, name=model_id)


def total(s: ModelShape) -> int:
    return param_counts(s).total


# --- gpt2 / opt: tied LM head, biases, LayerNorms with a bias ---------------------------------


def test_gpt2_family_ties_the_lm_head_when_the_key_is_absent() -> None:
    # GPT2Config's tie_word_embeddings defaults to true (transformers 5.20.2
    # configuration_gpt2.py:103) and the hub's config.json omits the key; vLLM then uses the
    # embedding as the LM head (gpt2.py:285-286), so no second 50257 x 768 matrix.
    s = shape("openai-community/gpt2")
    assert s.tied_embeddings and s.qkv_bias and s.o_bias and s.mlp_bias and s.norm_bias
    # GPT-2 small has 124,439,808 weights (the hub's safetensors); tpcheck does not model the
    # 1024 x 768 = 786,432 learned position embeddings: 124,439,808 - 786,432 = 123,653,376
    assert total(s) == 123_653_376
    # distilgpt2: 81,912,576 on the hub (82M), minus the same 786,432 position weights
    d = shape("distilbert/distilgpt2")
    assert (d.layers, d.hidden, d.heads, d.ffn, d.vocab) == (6, 768, 12, 3072, 50257)
    assert d.tied_embeddings and total(d) == 81_126_144


def test_opt_ties_and_biases_and_an_explicit_false_still_wins(tmp_path: Path) -> None:
    # OPTConfig: tie_word_embeddings true, enable_bias true (transformers 5.20.2
    # configuration_opt.py:72-74); vLLM opt.py:361-362 ties, opt.py:140-161 biases.
    s = shape("facebook/opt-1.3b")
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.ffn, s.vocab) == (
        24, 2048, 32, 32, 8192, 50272)
    assert s.tied_embeddings and s.qkv_bias and s.o_bias and s.mlp_bias and s.norm_bias
    assert not s.gated_mlp and s.dtype == "float16"
    # facebook/opt-1.3b: 1,315,758,080 weights on the hub; minus the (2048 + 2) x 2048 =
    # 4,198,400 learned positions (OPT offsets them by 2) = 1,311,559,680
    assert total(s) == 1_311_559_680
    cfg = json.loads(catalog.find("facebook/opt-13b").config_path.read_text())  # type: ignore[union-attr]
    untied = parse_config({**cfg, "tie_word_embeddings": False, "enable_bias": False})
    assert not untied.tied_embeddings and not untied.qkv_bias and not untied.mlp_bias
    # the untied copy carries one more 50272 x 5120 matrix and drops the biases
    tied = parse_config(cfg)
    biases = 40 * (3 * 5120 + 5120 + 20480 + 5120)  # q,k,v + out_proj + fc1 + fc2 per layer
    assert total(untied) - total(tied) == 50272 * 5120 - biases


@pytest.mark.parametrize(
    ("model_id", "folder"),
    [
        ("Qwen/Qwen2.5-0.5B-Instruct", "gensyn--Qwen2.5-0.5B-Instruct"),
    ],
)
def test_same_shape_aliases(model_id: str, folder: str) -> None:
    found = catalog.find(model_id)
    assert found is not None and found.folder.name == folder and found.model_id == model_id
