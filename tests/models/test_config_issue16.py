"""parse_config on the real configs issue 16 brought in: gpt2/opt defaults, list-valued
``moe_layer_freq``, MoE keys under ``text_config``, ModelOpt MIXED_PRECISION, Nemotron
``block_configs`` and DeepSeek-V4 ``expert_dtype``; and the catalog ids added with them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tpcheck.checks.registry import REFUSAL_CODES
from tpcheck.lint import Linter
from tpcheck.models import catalog
from tpcheck.models.config import ConfigError, load_config, load_shape, parse_config, parse_quant
from tpcheck.models.params import Tensor, param_counts
from tpcheck.models.quant import tensor_bytes, weight_bytes
from tpcheck.models.shape import ModelShape
from tpcheck.physics.kv import attention_layers, kv_bytes_per_token_per_gpu
from tpcheck.physics.legality import refusals
from tpcheck.settings import Settings


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
    # GPT-2 small has 124,439,808 weights (the hub's safetensors), of which the learned
    # position embeddings are 1024 x 768 = 786,432 (vLLM gpt2.py:210, replicated per rank)
    assert s.extra_params == 786_432 and total(s) == 124_439_808
    # distilgpt2: 81,912,576 on the hub (82M)
    d = shape("distilbert/distilgpt2")
    assert (d.layers, d.hidden, d.heads, d.ffn, d.vocab) == (6, 768, 12, 3072, 50257)
    assert d.tied_embeddings and total(d) == 81_912_576


def test_opt_ties_and_biases_and_an_explicit_false_still_wins(tmp_path: Path) -> None:
    # OPTConfig: tie_word_embeddings true, enable_bias true (transformers 5.20.2
    # configuration_opt.py:72-74); vLLM opt.py:361-362 ties, opt.py:140-161 biases.
    s = shape("facebook/opt-1.3b")
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.ffn, s.vocab) == (
        24, 2048, 32, 32, 8192, 50272)
    assert s.tied_embeddings and s.qkv_bias and s.o_bias and s.mlp_bias and s.norm_bias
    assert not s.gated_mlp and s.dtype == "float16"
    # facebook/opt-1.3b: 1,315,758,080 weights on the hub, of which (2048 + 2) x 2048 =
    # 4,198,400 are learned positions (OPT offsets them by 2, vLLM opt.py:62-66)
    assert s.extra_params == 4_198_400 and total(s) == 1_315_758_080
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


# --- MoE keys the readers missed --------------------------------------------------------------

DATA = Path(__file__).with_name("data")


def test_moe_layer_freq_as_a_per_layer_list() -> None:
    # MiMo-V2-Flash: "moe_layer_freq": [0, 1, 1, ...] over 48 layers -> layer 0 dense, 47 MoE
    # (vLLM mimo_v2.py:492-497 reads moe_layer_freq[layer_idx])
    s = load_shape(DATA / "XiaomiMiMo--MiMo-V2-Flash_config.json")
    assert s.moe is not None and (s.layers, s.moe.moe_layers, s.dense_layers) == (48, 47, 1)
    assert (s.moe.num_experts, s.moe.experts_per_token, s.moe.expert_ffn) == (256, 8, 2048)
    assert s.ffn == 16384  # intermediate_size: the one dense layer's MLP
    # MiniMax-M3: [0, 0, 0, 1, ...] over 60 layers; its dense layers use dense_intermediate_size
    # 12288 while intermediate_size 3072 is the expert width (vLLM minimax_m3/nvidia/model.py:750)
    m = load_shape(DATA / "MiniMaxAI--MiniMax-M3_config.json")
    assert m.moe is not None and (m.layers, m.moe.moe_layers, m.dense_layers) == (60, 57, 3)
    assert (m.ffn, m.moe.expert_ffn, m.moe.num_experts, m.moe.experts_per_token) == (
        12288, 3072, 128, 4)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ([0, 1], "lists 2 layers, the model has 48"),
        ([2] * 48, "a list of 0/1 flags"),
        (["1"] * 48, "a list of 0/1 flags"),
    ],
)
def test_moe_layer_freq_list_errors(value: object, fragment: str) -> None:
    cfg = json.loads((DATA / "XiaomiMiMo--MiMo-V2-Flash_config.json").read_text())
    with pytest.raises(ConfigError, match=fragment):
        parse_config({**cfg, "moe_layer_freq": value}, name="mimo")


def test_top_k_and_experts_under_text_config() -> None:
    # Kimi-K3 wraps a kimi_linear text_config that spells top-k num_experts_per_token
    # (vLLM kimi_k3/amd/linear.py:210): 896 experts, 16 per token, first_k_dense_replace 1
    s = load_shape(DATA / "moonshotai--Kimi-K3_config.json")
    assert s.model_type == "kimi_linear" and s.moe is not None
    assert (s.moe.num_experts, s.moe.experts_per_token, s.moe.expert_ffn) == (896, 16, 3072)
    assert (s.layers, s.moe.moe_layers, s.ffn) == (93, 92, 33792)
    assert s.mla is not None and s.mla.kv_lora_rank == 512


# --- mixed precision: DeepSeek-V4 experts, ModelOpt MIXED_PRECISION ---------------------------


def test_deepseek_v4_experts_are_mxfp4_beside_fp8_blocks() -> None:
    # config: quant_method fp8 blocks [128, 128], expert_dtype fp4 -> vLLM's
    # DeepseekV4FP8Config gives the routed experts Mxfp4MoEMethod (quant_config.py:217-227)
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    assert s.quant is not None and s.quant.method == "fp8" and s.quant.block == (128, 128)
    assert [(g, q.method, q.weight_bits) for g, q in s.quant.overrides] == [
        ("routed_experts", "mxfp4", 4)]
    w = weight_bytes(s, param_counts(s))
    # 43 layers x 256 experts = 11008 copies of gate_up (2*2048 x 4096) and down (4096 x 2048);
    # MXFP4: half a byte per weight + one 1-byte scale per 32:
    # gate_up 16,777,216 / 2 + 16,777,216 / 32 = 8,912,896; down 4,456,448
    assert w.routed_experts == 11008 * (8_912_896 + 4_456_448) == 147_169_738_752
    # the head-split query projection wq_b (q_lora_rank 1024 -> 64 heads x 512) stays fp8 with
    # one fp32 scale per 128 x 128 block:
    # 32768 x 1024 + (32768/128) x (1024/128) x 4 = 33,554,432 + 8,192 = 33,562,624 per layer
    assert w.attn_q == 43 * 33_562_624 == 1_443_192_832
    cfg = json.loads(catalog.find("deepseek-ai/DeepSeek-V4-Flash").config_path.read_text())  # type: ignore[union-attr]
    fp8 = parse_config({**cfg, "expert_dtype": "fp8"})
    assert fp8.quant is not None and fp8.quant.overrides == ()
    absent = parse_config({k: v for k, v in cfg.items() if k != "expert_dtype"})
    assert absent.quant == s.quant  # vLLM defaults expert_dtype to "fp4" (quant_config.py:97)
    with pytest.raises(ConfigError, match="expert_dtype must be fp4 or fp8"):
        parse_config({**cfg, "expert_dtype": "int4"}, name="v4")


def test_deepseek_v4_nvfp4_experts() -> None:
    # nvidia's checkpoint: the same fp8 blocks with moe_quant_algo NVFP4 -> ModelOptNvFp4FusedMoE
    s = shape("nvidia/DeepSeek-V4-Pro-NVFP4")
    assert s.quant is not None
    assert [(g, q.method, q.group_size) for g, q in s.quant.overrides] == [
        ("routed_experts", "modelopt-nvfp4", 16)]


def test_modelopt_mixed_precision_per_component() -> None:
    # nvidia/Qwen3.6-35B-A3B-NVFP4: quantized_layers lists self_attn.* and linear_attn.* as FP8,
    # mlp.experts, mlp.shared_expert.* and lm_head as W4A16_NVFP4 (group 16)
    s = shape("nvidia/Qwen3.6-35B-A3B-NVFP4")
    assert s.quant is not None and s.quant.method == "modelopt-mixed"
    assert {g: q.method for g, q in s.quant.overrides} == {
        "attn": "modelopt-fp8", "linear_attn": "modelopt-fp8", "lm_head": "modelopt-nvfp4",
        "routed_experts": "modelopt-nvfp4", "shared_experts": "modelopt-nvfp4"}
    w = weight_bytes(s, param_counts(s))
    # routed: 40 layers x 256 experts = 10240 copies; gate_up 1024 x 2048 in NVFP4 =
    # 2,097,152/2 + 1024 x 2048/16 fp8 scales + 2 fp32 globals = 1,179,656; down 2048 x 512 =
    # 524,288 + 65,536 + 8 = 589,832
    assert w.routed_experts == 10240 * (1_179_656 + 589_832) == 18_119_557_120
    # lm_head is listed, so it is NVFP4 too: 248320 x 2048 / 2 + 248320 x 128 + 8
    assert w.lm_head == 254_279_680 + 31_784_960 + 8
    # q_proj (4096 x 2048, 10 full-attention layers) ModelOpt FP8: 1 B + 2 fp32 scales
    assert w.attn_q == 10 * (4096 * 2048 + 8)
    # the same algos come from hf_quant_config.json alone
    cfg = load_config(catalog.find("nvidia/Qwen3.6-35B-A3B-NVFP4").config_path)  # type: ignore[union-attr]
    qc = load_config(catalog.CATALOG_DIR / "nvidia--Qwen3.6-35B-A3B-NVFP4" / "hf_quant_config.json")
    bare = {k: v for k, v in cfg.items() if k != "quantization_config"}
    text = {k: v for k, v in cfg["text_config"].items() if k != "quantization_config"}
    alone = parse_config({**bare, "text_config": text}, quant_cfg=qc)
    assert alone.quant is not None and alone.quant.overrides == s.quant.overrides


def test_modelopt_mixed_precision_errors() -> None:
    with pytest.raises(ConfigError, match="MIXED_PRECISION without quantized_layers"):
        parse_quant({}, {"quantization": {"quant_algo": "MIXED_PRECISION"}}, "q.json")
    with pytest.raises(ConfigError, match="unsupported ModelOpt quant_algo 'INT8_SQ'"):
        parse_quant({}, {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
            "model.layers.0.mlp.down_proj": {"quant_algo": "INT8_SQ"}}}}, "q.json")
    # a group no layer lists stays unquantized: bf16 bytes for the dense MLP here
    q = parse_quant({}, {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}}}}, "q.json")
    assert q is not None and [g for g, _ in q.overrides] == ["attn"]
    mlp = Tensor("dense_mlp", "linear", "down_proj", 4096, 14336, 32)
    assert tensor_bytes(mlp, q, 2) == 4096 * 14336 * 32 * 2
    qp = Tensor("attn_q", "linear", "q_proj", 4096, 4096, 32)
    assert tensor_bytes(qp, q, 2) == 32 * (4096 * 4096 + 8)


# --- nemotron-nas block_configs ---------------------------------------------------------------


def test_nemotron_nas_block_configs() -> None:
    # nvidia/Llama-3_3-Nemotron-Super-49B-v1: 80 DeciLM blocks, 31 with a no-op attention; the
    # rest have n_heads_in_group 8 -> 64 / 8 = 8 KV heads (vLLM nemotron_nas.py:149-150).
    # ffn_mult m -> int(2·m·8192/3) rounded up to a multiple of 256 (nemotron_nas.py:60-70):
    # 5.25 -> 28672, 2.625 -> 14336, 3.28125 -> 17920, 1.3125 -> 7168, 1.0 -> 5461 -> 5632,
    # 0.5 -> 2730 -> 2816
    s = load_shape(DATA / "nvidia--Llama-3_3-Nemotron-Super-49B-v1_config.json")
    assert (s.layers, s.heads, s.kv_heads, s.head_dim) == (80, 64, 8, 128)
    assert s.no_attention_layers == 31 and attention_layers(s) == 49
    width_counts = {w: s.layer_ffn.count(w) for w in set(s.layer_ffn)}
    assert width_counts == {28672: 49, 14336: 6, 17920: 1, 7168: 10, 5632: 8, 2816: 6}
    assert s.ffn == 28672 and s.moe is None
    # weights: untied embedding + lm_head, 49 attention layers (q, o 8192x8192; k, v 1024x8192),
    # gate+up+down 3·w·8192 per MLP, one RMSNorm per non-no-op attention and MLP, final norm
    d = 8192
    expected = (
        2 * 128256 * d
        + 49 * (2 * d * d + 2 * 1024 * d)
        + sum(n * 3 * w * d for w, n in width_counts.items())
        + (49 + 80) * d + d
    )
    assert total(s) == expected == 49_867_145_216
    # KV cache: only the 49 attention layers keep one, 2·49·8·128·2 B per token at t=1
    assert kv_bytes_per_token_per_gpu(s, 1).result == 2 * 49 * 8 * 128 * 2


def test_nemotron_nas_widths_decide_tp103(tmp_path: Path) -> None:
    cfg = json.loads((DATA / "nvidia--Llama-3_3-Nemotron-Super-49B-v1_config.json").read_text())
    # one MLP of intermediate_size 1000: 1000 mod 16 = 8, so t=16 is refused even though every
    # ffn_mult width divides 16
    blocks = list(cfg["block_configs"])
    blocks[5] = {**blocks[5], "ffn": {"no_op": False, "intermediate_size": 1000}}
    s = parse_config({**cfg, "block_configs": blocks})
    assert 1000 in s.layer_ffn
    assert [REFUSAL_CODES[r.kind] for r in refusals(s, 8, engine="vllm")] == []
    assert [REFUSAL_CODES[r.kind] for r in refusals(s, 16, engine="vllm")] == ["TP103"]
    assert refusals(parse_config(cfg), 16, engine="vllm") == []


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda b: b[:3], r"must list one block per layer \(80\), got 3"),
        (lambda b: [{**x, "attention": {"no_op": True}} for x in b],
         "every block_configs attention is a no-op"),
        (lambda b: [{**b[0], "ffn": {"ffn_mult": "big"}}, *b[1:]],
         r"block_configs\[0\].ffn.ffn_mult must be a positive number"),
        (lambda b: [{**b[0], "attention": {"n_heads_in_group": 7}}, *b[1:]],
         "n_heads_in_group 7 does not divide 64"),
    ],
)
def test_nemotron_nas_bad_blocks(change: Any, fragment: str) -> None:
    cfg = json.loads((DATA / "nvidia--Llama-3_3-Nemotron-Super-49B-v1_config.json").read_text())
    with pytest.raises(ConfigError, match=fragment):
        parse_config({**cfg, "block_configs": change(cfg["block_configs"])}, name="nas")


def test_modelopt_keys_without_quant_method() -> None:
    # quantization_config {"quant_algo": "FP8", "config_groups": ..., "ignore": ["lm_head"],
    # "producer": {"name": "modelopt"}} and no quant_method: vLLM picks ModelOpt FP8 from
    # quant_algo (modelopt.py:453-459)
    s = load_shape(DATA / "Qwen--Qwen3-32B-FP8-Static-PerTensor_config.json")
    assert s.quant is not None and (s.quant.method, s.quant.weight_bits) == ("modelopt-fp8", 8)
    assert (s.layers, s.hidden, s.heads, s.kv_heads) == (64, 5120, 64, 8)


def test_tp104_names_one_matrix_for_a_tied_vocabulary(tmp_path: Path) -> None:
    # facebook/opt-13b at t=2 (vllm-project/aibrix's rayjob tutorial): 50272 rows pad to
    # ceil(50272/64)·64 = 50304; the 32 padding rows are one tied matrix, 32 x 5120 x 2 B
    p = tmp_path / "run.sh"
    p.write_text("vllm serve facebook/opt-13b --tensor-parallel-size 2\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    [f] = [f for f in res.findings if f.code == "TP104"]
    assert "32 vocabulary padding rows at t=2 hold 320.00 KiB" in f.message
    assert "padding rows are in the embedding, which is also the lm_head" in f.text
    assert f.formulas[-1].result == 32 * 5120 * 2 == 327_680


@pytest.mark.parametrize(
    ("model_id", "weights"),
    [
        # microsoft/phi-4: 14.7B on its model card; 40 x (q 5120², kv 2·1280·5120, o 5120²,
        # gate/up/down 3·17920·5120, 2 norms) + 2 x 100352 x 5120 + final norm
        ("microsoft/phi-4", 14_659_507_200),
        # DeepSeek-R1-Distill-Qwen-1.5B: 1.78B on the hub (untied, q/k/v biases)
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1_777_088_000),
    ],
)
def test_new_catalog_entries_match_published_sizes(model_id: str, weights: int) -> None:
    assert total(shape(model_id)) == weights
