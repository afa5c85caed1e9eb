"""Refusals per component group when a checkpoint stores groups in different formats
(``Quant.overrides``: ModelOpt MIXED_PRECISION, DeepSeek-V4's MXFP4 experts beside fp8 blocks)."""

from __future__ import annotations

import copy
import json
from typing import Any

from tpcheck.checks.registry import REFUSAL_CODES
from tpcheck.models import catalog
from tpcheck.models.config import load_shape, parse_config
from tpcheck.models.shape import ModelShape
from tpcheck.physics.legality import group_quant, refusals


def _catalog(model_id: str) -> dict[str, Any]:
    entry = catalog.find(model_id)
    assert entry is not None
    return json.loads(entry.config_path.read_text())  # type: ignore[no-any-return]


# A Llama-style model (hand-written) whose numbers make t = 3 legal except for the quant block:
# 24 heads and 6 KV heads divide by 3; vocab 32064 = 64·501 = 3·10688; FFN 4104 = 3·1368, and
# 1368 = 16·85 + 8 = 32·42 + 24 is neither whole NVFP4 (16) nor MXFP8 (32) blocks.
LLAMA: dict[str, Any] = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16",
    "hidden_size": 1536, "num_attention_heads": 24, "num_key_value_heads": 6,
    "num_hidden_layers": 2, "intermediate_size": 4104, "vocab_size": 32064}


def _mixed(layers: dict[str, dict[str, Any]]) -> ModelShape:
    quant = {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": layers}}
    return parse_config(copy.deepcopy(LLAMA), quant_cfg=quant)


def test_nvfp4_down_proj_refused_where_its_share_is_not_whole_blocks() -> None:
    s = _mixed({"model.layers.0.mlp.down_proj": {"quant_algo": "NVFP4", "group_size": 16}})
    assert s.quant is not None and group_quant(s.quant, "dense_mlp") is not None
    (r,) = refusals(s, 3)
    # 4104 / 3 = 1368; 1368 mod 16 = 8 (vllm modelopt.py KNvfp4Static l.2026-2029)
    assert (REFUSAL_CODES[r.kind], r.check, r.engines) == ("TP103", "quant_block", ("vllm",))
    assert r.engine_message == ("ValueError: Unsupported model when in features size is not "
                                "multiple of 16")
    assert (r.formula.values, r.formula.result) == ({"f": 4104, "t": 3}, 8)


def test_nvfp4_share_at_t2_and_t4() -> None:
    s = _mixed({"model.layers.0.mlp.down_proj": {"quant_algo": "NVFP4", "group_size": 16}})
    # t = 2: 24 % 2, 6 % 2 fine; 4104 / 2 = 2052 and 2052 mod 16 = 4: refused
    assert [r.formula.result for r in refusals(s, 2)] == [4]
    # t = 4: 4104 / 4 = 1026 (4104 mod 4 = 0), 1026 mod 16 = 2; also 6 KV heads mod 4 = 2
    assert {(REFUSAL_CODES[r.kind], r.check) for r in refusals(s, 4)} == {("TP102", "kv_heads"),
                                                           ("TP103", "quant_block")}


def test_mxfp8_mlp_needs_whole_32_blocks() -> None:
    s = _mixed({"model.layers.0.mlp.down_proj": {"quant_algo": "MXFP8"}})
    (r,) = refusals(s, 3)
    # 1368 mod 32 = 24 (vllm modelopt.py KMxfp8Static l.2335-2339)
    assert r.engine_message == "ValueError: MXFP8 requires input size divisible by 32, got 1368"
    assert r.formula.result == 24


def test_groups_stored_otherwise_are_not_refused() -> None:
    # the MLP in per-tensor FP8: no block, no refusal at t = 3
    assert refusals(_mixed({"model.layers.0.mlp.down_proj": {"quant_algo": "FP8"}}), 3) == []
    # only attention listed: the MLP stays unquantized (get_quant_method l.1878-1886)
    s = _mixed({"model.layers.0.self_attn.o_proj": {"quant_algo": "NVFP4", "group_size": 16}})
    assert s.quant is not None and group_quant(s.quant, "dense_mlp") is None
    assert refusals(s, 3) == []


def test_qwen36_nvfp4_shared_expert_at_t64() -> None:
    entry = catalog.find("nvidia/Qwen3.6-35B-A3B-NVFP4")
    assert entry is not None
    s = load_shape(entry.config_path)
    # hf_quant_config: shared_expert gate/up/down W4A16_NVFP4, width 512; 512 / 64 = 8 < 16
    rs = {r.check: r for r in refusals(s, 64)}
    assert rs["quant_block"].formula.values == {"f_shared": 512, "t": 64}
    assert rs["quant_block"].formula.result == 8
    # t = 32: 512 / 32 = 16, whole; 16 heads % 32 refuses (TP101) but not the shared expert
    assert "quant_block" not in {r.check for r in refusals(s, 32)}


def test_deepseek_v4_mxfp4_experts_skip_the_fp8_block_check() -> None:
    cfg = _catalog("deepseek-ai/DeepSeek-V4-Flash")
    cfg["n_shared_experts"] = 0  # isolate the routed experts (2048 wide)
    cfg["o_groups"] = 32  # and from o_groups 8 // 32 = 0 groups a rank (test_legality.py)
    s = parse_config(cfg)
    # t = 32: 64 heads, 1 KV head, padded vocab 129280 = 32·4040 all divide; experts 2048 / 32
    # = 64 < block_n 128, but they are MXFP4 (expert_dtype fp4), which pads instead of refusing
    assert refusals(s, 32) == []
    cfg["expert_dtype"] = "fp8"  # fp8 experts keep the 128x128 blocks: refused
    (r,) = refusals(parse_config(cfg), 32)
    assert r.check == "fp8_block" and r.formula.values == {"f_expert": 2048, "t": 32,
                                                           "block_n": 128}
    assert r.formula.result == 64
