"""The figure vLLM's "GPU KV cache size: N tokens" line prints, per release (issue 32), beside
tpcheck's effective capacity for sequences of c tokens (kv_pool_tokens)."""

from __future__ import annotations

from tests.physics.test_reserve_release import _shape
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics import kv, memory
from tpcheck.physics.plan import Options, evaluate


def test_hybrid_groups_as_vllm_lays_them_out() -> None:
    # unify_hybrid_kv_cache_specs (0.19.0 l.1043-1060): group size = the fewer layers of one
    # type, the more when the larger count is below 1.5× the smaller; types padded to groups.
    assert memory.hybrid_groups(12, 12) == (12, 2)  # gpt-oss-20b: 12 full + 12 sliding
    assert memory.hybrid_groups(10, 52) == (10, 7)  # gemma-3-27b: 1 full + 6 sliding groups
    assert memory.hybrid_groups(12, 13) == (13, 2)  # 13 < 1.5·12: pad to 13 each
    assert memory.hybrid_groups(32, 0) == (32, 1)  # one attention type: one group


def test_gpt_oss_20b_at_tp2_prints_the_pool_over_every_layer() -> None:
    # gpt-oss-20b at t = 2: 8 KV heads / 2 = 4 per GPU, d_h 64, bf16:
    # one layer 4·(64 + 64)·2 = 1,024 B per token; 24 layers = 24,576 B (issue 32).
    s = _shape("openai/gpt-oss-20b")
    split = kv.engine_layer_split(s, 2)
    assert split == (1024, 12, 12)
    pool = 60 * 2**30  # a 60 GiB pool
    f = memory.engine_printed_tokens(version="0.19.0", pool=pool, layer_bytes=1024,
                                     full_layers=12, sliding_layers=12, block=16,
                                     concurrency=0.0, context=0)
    # blocks = floor(60 GiB / (16·1,024) / 12) = 327,680; // 2 groups = 163,840; ·16
    assert f.result == 327_680 // 2 * 16 == 2_621_440
    assert f.result == pool // (24 * 1024)  # = the pool over all 24 layers' bytes
    assert "0.19.0 v1/core/kv_cache_utils.py _report_kv_cache_config" in f.source


def test_from_0_21_the_line_prints_the_group_aware_capacity() -> None:
    f = memory.engine_printed_tokens(version="0.21.0", pool=60 * 2**30, layer_bytes=1024,
                                     full_layers=12, sliding_layers=12, block=16,
                                     concurrency=40.5, context=131072)
    assert f.result == int(40.5 * 131072)  # int(max_concurrency · max_model_len), l.1697-1710
    assert memory.printed_tokens_release("0.20.0")[0] == memory.PRINTED_BLOCKS
    assert memory.printed_tokens_release("0.21.0")[0] == memory.PRINTED_CAPACITY
    assert memory.printed_tokens_release(None)[0] == memory.PRINTED_CAPACITY  # newest


def _row(model: str, t: int, version: str) -> dict[str, object]:
    opts = Options(gpu=find_gpu("h100-sxm"), engine_version=version)
    return evaluate(_shape(model), t, opts).to_row()


def test_plan_rows_carry_both_figures() -> None:
    # 0.19, gpt-oss-20b at t = 2: the engine's figure is the pool over 24,576 B per token;
    # kv_pool_tokens (effective: sliding layers charged min(c, w)/c) is about twice that.
    r = _row("openai/gpt-oss-20b", 2, "0.19.0")
    pool, printed, eff = r["pool_bytes_per_gpu"], r["engine_kv_tokens"], r["kv_pool_tokens"]
    assert isinstance(pool, float) and isinstance(printed, int) and isinstance(eff, int)
    assert printed == int(pool // (16 * 1024) // 12) // 2 * 16
    assert 1.9 < eff / printed < 2.1
    # gemma-2-27b at t = 1: 23 full + 23 sliding layers of 16·(128 + 128)·2 = 8,192 B:
    # printed = pool over 46·8,192 = 376,832 B (the logged ratio: 376,813 B).
    g = _row("google/gemma-2-27b", 1, "0.19.0")
    gp, gt = g["pool_bytes_per_gpu"], g["engine_kv_tokens"]
    assert isinstance(gp, float) and isinstance(gt, int)
    assert gt == int(gp // (16 * 8192) // 23) // 2 * 16
    # A model without sliding layers prints what kv_pool_tokens holds, in every release.
    for v in ("0.19.0", "0.33.0"):
        d = _row("meta-llama/Llama-3.1-8B-Instruct", 2, v)
        assert d["engine_kv_tokens"] == d["kv_pool_tokens"]


def test_plan_text_names_the_engine_figure_and_non_torch_by_t() -> None:
    from tpcheck.report.plan_text import _engine_tokens, _non_torch_by_t

    opts = Options(gpu=find_gpu("h100-sxm"), engine_version="0.19.0")
    s = _shape("openai/gpt-oss-20b")
    rows = [evaluate(s, t, opts) for t in (1, 2)]
    lines = _engine_tokens(rows)
    printed = [r.engine_tokens.result for r in rows if r.engine_tokens is not None]
    assert len(printed) == 2
    assert lines[1].startswith("  vLLM prints 'GPU KV cache size: N tokens' as t=1 ")
    # t = 2 on H100 SXM: 0.25 GiB (0.19 at t = 1) + 3 × 512 MiB fusion workspace + 0.32 GiB
    # (the TP group's lazily made NCCL communicator) = 2.07 GiB
    assert _non_torch_by_t(rows, rows[0]) == ["    R_non_torch by t (GiB): t=2 2.07"]
    # a model without sliding layers: the column is the engine's figure, no extra line
    llama = [evaluate(_shape("meta-llama/Llama-3.1-8B-Instruct"), t, opts) for t in (1, 2)]
    assert _engine_tokens(llama) == []
