"""DeepSeek-V4's KV cache per token per GPU, as vLLM 0.33.0 and SGLang 0.5.23 allocate it.

V4 attention is cached as MLA (one latent row, ``max_tp_shards=1``: every TP rank holds it all),
not as GQA with one KV head of 512: a layer of compress ratio r > 1 stores one 584-byte
fp8_ds_mla state per r tokens (448 fp8 NoPE + 64·2 bf16 RoPE + 8 scale bytes), the ratio-4
layers add a 132-byte indexer key per 4 tokens (128 fp8 + one fp32 scale), and every layer keeps
the last 128 tokens (vllm deepseek_v4/attention.py l.860-925, 1020-1029; sparse_swa.py l.86).
"""

from __future__ import annotations

import json

import pytest

from tpcheck.models import catalog
from tpcheck.models.config import ConfigError, load_shape, parse_config
from tpcheck.models.shape import ModelShape
from tpcheck.physics import kv, sglang_pools
from tpcheck.record import replace


def shape(model_id: str) -> ModelShape:
    entry = catalog.find(model_id)
    assert entry is not None, model_id
    return load_shape(entry.config_path, name=model_id)


def test_flash_layers_by_ratio() -> None:
    c = shape("deepseek-ai/DeepSeek-V4-Flash").compressed
    assert c is not None
    # compress_ratios: 0, 0, then (4, 128) twenty times, then 4 for layer 42; the 44th entry
    # (0) is the MTP layer, dropped: 21 ratio-4 layers, 20 ratio-128, 2 window-only
    assert (len(c.ratios), c.ratios.count(4), c.ratios.count(128), c.ratios.count(0)) == (
        43, 21, 20, 2)
    assert (c.window, c.head_dim, c.rope_head_dim, c.indexer_head_dim, c.indexed_layers) == (
        128, 512, 64, 128, 21)


def test_vllm_flash_bytes_per_token_at_4096() -> None:
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    f = kv.kv_bytes_per_token_per_gpu(s, 8, context=4096)
    # 21·584/4 = 3066, 20·584/128 = 91.25, 21·132/4 = 693: 3850.25 compressed;
    # window: 43·584·128/4096 = 784.75; total 4635
    assert f.result == 4635
    assert f.values["kv_cache_dtype"] == "fp8_ds_mla"  # auto on FlashMLA is fp8_ds_mla
    assert f.expression == "n_4·s/4 + n_128·s/128 + n_4·i/4 + L·s·min(c, w)/c"
    assert "deepseek_v4/attention.py" in f.source


def test_every_rank_holds_it_all() -> None:
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    # max_tp_shards=1 on every V4 spec: t does not divide the cache
    assert {kv.kv_bytes_per_token_per_gpu(s, t, context=4096).result for t in (1, 2, 8, 16)} == {
        4635}


def test_vllm_pro_long_context() -> None:
    s = shape("deepseek-ai/DeepSeek-V4-Pro")
    f = kv.kv_bytes_per_token_per_gpu(s, 8, context=65536)
    # 30·146 = 4380, 31·4.5625 = 141.4375, 30·33 = 990, window 61·584·128/65536 = 69.578125
    assert f.result == pytest.approx(4380 + 141.4375 + 990 + 69.578125)
    assert f.result == pytest.approx(5581.015625)


def test_old_gqa_reading_was_far_too_small() -> None:
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    gqa = replace(s, compressed=None)
    # read as GQA (1 KV head of 512, bf16, all 43 layers sliding at w = 128): 2·512·2 = 2048 a
    # layer, ·43·128/65536 = 172 B; the compressed latents alone are 3850.25 B
    assert kv.kv_bytes_per_token_per_gpu(gqa, 8, context=65536).result == 172
    assert kv.kv_bytes_per_token_per_gpu(s, 8, context=65536).result == pytest.approx(
        3850.25 + 43 * 584 * 128 / 65536)


def test_fp8_names_and_bf16() -> None:
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    fp8 = kv.kv_bytes_per_token_per_gpu(s, 8, kv_cache_dtype="fp8", context=4096)
    assert fp8.result == 4635  # fp8 is written back as fp8_ds_mla (attention.py l.118-123)
    bf = kv.kv_bytes_per_token_per_gpu(s, 8, kv_cache_dtype="bfloat16", context=4096)
    # plain bf16 row of 512 (FlashInfer): s = 1024; 21·256 + 20·8 + 693 + 43·1024/32 = 7605
    assert (bf.values["s"], bf.result) == (1024, 21 * 256 + 20 * 8 + 693 + 43 * 1024 // 32)
    assert bf.result == 7605
    with pytest.raises(ValueError, match="kv-cache-dtype"):
        kv.kv_bytes_per_token_per_gpu(s, 8, kv_cache_dtype="int3", context=4096)


def test_pipeline_stage_is_the_larger_half() -> None:
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    f = kv.kv_bytes_per_token_per_gpu(s, 8, context=65536, pp=2)
    # stage 0: layers 0-21 (22 = 0, 0, 10 × (4, 128)): 10·146 + 10·4.5625 + 10·33 = 1835.625,
    # window 22·584/512 = 25.09375: 1860.71875; stage 1: layers 22-42 (21 = (4, 128) ×10, 4):
    # 11·146 + 10·4.5625 + 11·33 = 2014.625, window 21·584/512 = 23.953125: 2038.578125 (larger)
    assert (f.values["n_4"], f.values["n_128"], f.values["L"]) == (11, 10, 21)
    assert f.result == pytest.approx(2038.578125)


def test_pipeline_remainder_goes_before_the_last_stage() -> None:
    # get_pp_indices: 43 = 3·14 + 1, the extra layer on stage 1 (the one before the last):
    # stages [0, 14), [14, 29), [29, 43); stage 1 holds layers 14-28 = 8 ratio-4 and 7 ratio-128
    # (odd layers from 3 are 128; 14..28 has 14, 16, ..., 28 at ratio 4)
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    assert [len(x) for x in kv._stage_ratios(s.compressed.ratios, 3)] == [14, 15, 14]  # type: ignore[union-attr]
    f = kv.kv_bytes_per_token_per_gpu(s, 8, context=65536, pp=3)
    # stage 2 (layers 29-42: ratio 4 at 30, 32, ..., 42 = 7; ratio 128 at 29, ..., 41 = 7)
    # costs 7·179 + 7·4.5625 + 14·584/512 = 1284.9063; stage 1 (8, 7, 15 layers):
    # 8·179 + 7·4.5625 + 15·584/512 = 1480.0469, the largest
    assert (f.values["n_4"], f.values["n_128"], f.values["L"]) == (8, 7, 15)
    assert f.result == pytest.approx(8 * 179 + 7 * 4.5625 + 15 * 584 / 512)


def test_without_a_context_the_window_counts_in_full() -> None:
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    # an upper bound, as for other sliding layers: 3850.25 + 43·584 = 28962.25
    assert kv.kv_bytes_per_token_per_gpu(s, 8).result == 28962.25


def test_sglang_cell() -> None:
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    f = sglang_pools.cell_bytes(s, 8)
    # 3850.25 + r·(L·s + n_4·ring), r = 0.1, ring = 8/256·(4·512·4 + 4·128·4) = 320:
    # 0.1·(43·584 + 21·320) = 0.1·31832 = 3183.2; total 7033.45
    assert f.values["ring"] == 320 and f.values["r"] == 0.1
    assert f.result == pytest.approx(7033.45)
    assert "pool_configurator.py" in f.source
    # --swa-full-tokens-ratio 0.5: 3850.25 + 0.5·31832 = 19766.25
    assert sglang_pools.cell_bytes(s, 8, swa_ratio=0.5).result == pytest.approx(19766.25)


def test_upstream_layer_types_with_compress_rates() -> None:
    cfg = json.loads(catalog.find("deepseek-ai/DeepSeek-V4-Flash").config_path.read_text())  # type: ignore[union-attr]
    ratios = cfg.pop("compress_ratios")[:43]
    names = {0: "sliding_attention", 4: "compressed_sparse_attention",
             128: "heavily_compressed_attention"}
    cfg["layer_types"] = [names[r] for r in ratios]
    cfg["compress_rates"] = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    s = parse_config(cfg)
    assert s.compressed is not None and s.compressed.ratios == tuple(ratios)
    assert kv.kv_bytes_per_token_per_gpu(s, 8, context=4096).result == 4635


def test_a_v4_config_without_ratios_is_refused() -> None:
    cfg = json.loads(catalog.find("deepseek-ai/DeepSeek-V4-Flash").config_path.read_text())  # type: ignore[union-attr]
    del cfg["compress_ratios"]
    with pytest.raises(ConfigError, match=r"v4\.json: DeepSeek-V4 config needs compress_ratios"):
        parse_config(cfg, path="v4.json")
    cfg["compress_ratios"] = [4] * 10  # fewer than the 43 layers
    with pytest.raises(ConfigError, match="43 layers"):
        parse_config(cfg, path="v4.json")


def test_sgl_project_fp8_release_is_read_as_v4() -> None:
    # model_type deepseek_ref, the same compress_ratios as DeepSeek-V4-Flash
    s = shape("sgl-project/DeepSeek-V4-Flash-FP8")
    assert s.compressed is not None and s.compressed.ratios.count(4) == 21
    assert kv.kv_bytes_per_token_per_gpu(s, 8, context=4096).result == 4635


def test_v4_heads_and_replicas_are_the_latent_not_gqa() -> None:
    """h_kv = 1 in V4's config is its one compressed latent (ModelShape.latent_cache), not a
    GQA head: the per-GPU head count and the replicas cite V4's cache spec, as MLA's cite MLA's."""
    s = shape("deepseek-ai/DeepSeek-V4-Flash")
    assert s.latent_cache and not s.is_mla and s.kv_heads == 1
    heads, reps = kv.kv_heads_per_gpu(s, 8), kv.kv_replicas(s, 8)
    assert (heads.result, reps.result) == (1, 8)  # one latent, held by all 8 ranks
    assert heads.source == reps.source == kv.V4_SRC
    assert reps.expression == "t (MLA latent on every rank)"  # not max(1, t / h_kv)
    v3 = shape("deepseek-ai/DeepSeek-V3")
    assert v3.latent_cache and kv.kv_replicas(v3, 8).source == kv.MLA_SRC
