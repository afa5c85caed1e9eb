"""SGLang's cell and hybrid pools term by term, each pinned to the release line it was read
from (issue 21): MLA's single latent, the hybrid SWA split, the linear-attention state pool."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from tpcheck.formula import GIB
from tpcheck.hardware.gpus import find_gpu
from tpcheck.models import catalog
from tpcheck.models.config import load_config, parse_config
from tpcheck.models.shape import LinearAttention, ModelShape
from tpcheck.physics import sglang_memory as sm
from tpcheck.physics import sglang_pools as sp
from tpcheck.physics.plan import Options, evaluate

GPT_OSS = "openai/gpt-oss-120b"
SCOUT = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
GEMMA2 = "google/gemma-2-9b-it"
NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"


@lru_cache(maxsize=16)
def shape(model_id: str) -> ModelShape:
    e = catalog.find(model_id)
    assert e is not None, model_id
    return parse_config(load_config(e.config_path), name=model_id)


@pytest.mark.parametrize(("version", "read"), [
    (None, "0.5.23"), ("0.4.3", "0.4.6"), ("0.4.10.post2", "0.4.10"), ("0.5.2", "0.5.2"),
    ("0.5.9", "0.5.2"), ("0.5.10.post1", "0.5.10"), ("0.5.23", "0.5.23"),
])
def test_hybrid_release_is_the_nearest_read_at_or_below(version: str | None, read: str) -> None:
    assert sp.hybrid_release(version) == read


@pytest.mark.parametrize(("model", "version", "split"), [
    # 0.5.10 model_config.py is_hybrid_swa_model l.1438-1448: gpt-oss by layer_types (18/18)
    (GPT_OSS, "0.5.10", (18, 18)),
    (GPT_OSS, "0.5.23", (18, 18)),
    # 0.5.2 server_args.py l.2488 switches the hybrid pool off for gpt-oss
    (GPT_OSS, "0.5.2", None),
    # get_hybrid_layer_ids l.1451-1462: Llama-4's full layers are (i + 1) % 4 == 0: 12 of 48
    (SCOUT, "0.5.10", (12, 36)),
    # 0.4.10 model_runner.py l.287-295: not Llama-4 unless --hybrid-kvcache-ratio
    (SCOUT, "0.4.10", None),
    # gemma-2 is switched off in every release (0.5.10 server_args.py l.1865-1877)
    (GEMMA2, "0.5.10", None),
    (GEMMA2, "0.4.10", None),
    (GPT_OSS, "0.4.6", None),  # 0.4.6 has no hybrid pool
])
def test_which_models_the_release_splits(model: str, version: str,
                                         split: tuple[int, int] | None) -> None:
    assert sp.swa_split(shape(model), version) == split


def test_swa_cell_is_full_plus_ratio_times_swa() -> None:
    """0.5.10 mixin _resolve_hybrid_swa_tokens l.287-371: full_tokens = rest/(F·n_full +
    r·S·n_swa). gpt-oss-120b at t = 2: F = S = (8/2 heads)·(64 + 64)·2 B = 1,024 B a layer,
    so one full-pool token costs 1,024·(18 + 0.8·18) = 33,177.6 B."""
    c = sp.cell_bytes(shape(GPT_OSS), 2, version="0.5.10")
    assert c.result == pytest.approx(1024 * (18 + 0.8 * 18))
    assert "l.287-371" in c.source
    assert c.values["r"] == 0.8 and c.values["L_full"] == 18 and c.values["L_swa"] == 18


def test_swa_ratio_flag_changes_the_cell() -> None:
    """--swa-full-tokens-ratio 0.2 (0.5.10 server_args.py l.360, default 0.8)."""
    c = sp.cell_bytes(shape(GPT_OSS), 2, version="0.5.23", swa_ratio=0.2)
    assert c.result == pytest.approx(1024 * (18 + 0.2 * 18))
    assert "HybridSWAPoolConfigurator" in c.source


def test_without_the_split_sliding_layers_cost_a_full_layer() -> None:
    """gemma-2-9b on SGLang: every one of the 42 layers in full (0.5.10 mixin l.125-131),
    42·8 heads·(256 + 256)·2 B = 344,064 B at t = 1, not vLLM's window-averaged figure."""
    c = sp.cell_bytes(shape(GEMMA2), 1, version="0.5.10")
    assert c.result == 42 * 8 * 512 * 2
    assert "l.125-131" in c.source


@pytest.mark.parametrize("t", [1, 8])
@pytest.mark.parametrize("model", ["deepseek-ai/DeepSeek-V3", "moonshotai/Kimi-K2-Instruct"])
def test_mla_cell_is_one_latent_whatever_t(model: str, t: int) -> None:
    """0.5.10 mixin l.77-82, 0.5.23 pool_configurator.py l.376-384: (kv_lora_rank +
    qk_rope_head_dim)·L·b on every rank: 61·(512 + 64)·2 = 70,272 B; logged as one KV size."""
    c = sp.cell_bytes(shape(model), t, version="0.5.10")
    assert c.result == 61 * 576 * 2


def test_linear_attention_cell_counts_the_full_layers_only() -> None:
    """Qwen3-Next: 12 of 48 layers are full attention (full_attention_interval 4; 0.5.10
    mixin l.155-164): 12·max(1, 2/4)·(256 + 256)·2 = 12,288 B at t = 4."""
    assert sp.cell_bytes(shape(NEXT), 4).result == 12 * 1 * 512 * 2


@pytest.mark.parametrize(("t", "expected"), [
    # conv (16·128·2 + 32·128)/t·(4 − 1)·2 B + temporal (32/t)·128·128·4 B, 36 linear layers
    (1, 36 * ((8192 * 3 * 2) + 32 * 128 * 128 * 4)),  # 77,266,944 B ≈ 73.7 MiB
    (4, 36 * ((2048 * 3 * 2) + 8 * 128 * 128 * 4)),  # 19,316,736 B
])
def test_state_per_request(t: int, expected: int) -> None:
    """configs/qwen3_next.py l.282-302, mamba_utils.py l.115-177: bf16 conv, fp32 temporal."""
    s = sp.mamba_state_per_request(shape(NEXT), t)
    assert s is not None and s.result == expected
    assert "mamba_utils.py" in s.source


def test_no_state_without_linear_layers() -> None:
    assert sp.mamba_state_per_request(shape(GPT_OSS), 1) is None


S4 = 36 * ((2048 * 3 * 2) + 8 * 128 * 128 * 4)  # Qwen3-Next's state per request at t = 4


@pytest.mark.parametrize(("version", "slots", "charged", "line"), [
    # 0.5.10 mixin l.214-238: K = floor(rest·0.9/1.9 / s) = floor(5,086,275,610.9 / s) = 263
    ("0.5.10", 263, 263, "l.214-238"),
    # 0.5.23 kv_cache_configurator.py l.3346-3409: K = floor((budget − s)/s) = 262, (K + 1)·s
    ("0.5.23", 262, 263, "l.3346-3409"),
    # 0.5.2 model_runner.py l.312-318: 512 slots whatever the memory
    ("0.5.2", 512, 512, "l.312-318"),
])
def test_state_pool_by_release(version: str, slots: int, charged: int, line: str) -> None:
    per = sp.mamba_state_per_request(shape(NEXT), 4)
    assert per is not None
    k, state = sp.mamba_slots_and_state(10 * GIB, per, version=version)
    assert k == slots
    assert state.result == charged * S4
    assert line in state.source


def test_request_cap_is_slots_over_three() -> None:
    """0.5.10 mixin l.64, l.853-857: min(max_num_reqs, K // 3) with the radix cache on."""
    cap = sp.mamba_request_cap(263, "0.5.10")
    assert cap is not None and cap.result == 87
    cap052 = sp.mamba_request_cap(512, "0.5.2")
    assert cap052 is not None and cap052.result == 512
    assert sp.mamba_request_cap(None, "0.5.10") is None


def test_plan_takes_the_state_out_before_the_kv() -> None:
    """plan --engine sglang on Qwen3-Next, 4 × H100, 0.5.10 rules, mfs 0.8: rest = T·0.8 − W,
    state = K·s with K = floor(rest·0.9/1.9/s), tokens = floor((rest − state)/12,288)."""
    gpu = find_gpu("h100-sxm")
    assert gpu is not None
    ev = evaluate(shape(NEXT), 4, Options(engine="sglang", engine_version="0.5.10", gpu=gpu,
                                          utilization=0.8))
    assert ev.pool is not None and ev.tokens is not None and ev.max_num_seqs is not None
    t_free = gpu.usable_bytes - sm.baseline_overhead(4, True).result
    rest = t_free * 0.8 - ev.weights.result
    k = int(rest * 0.9 / 1.9 // S4)
    assert ev.pool.result == pytest.approx(rest - k * S4)
    assert ev.tokens.result == int((rest - k * S4) // 12_288)
    assert ev.max_num_seqs.result == min(k // 3, 2048)
    assert "K // 3" in ev.defaults["max_running_requests"]


def test_plan_divides_by_the_swa_cell() -> None:
    """gpt-oss-120b, 2 × H100 under 0.5.10: #tokens = rest / (F·18 + 0.8·F·18)."""
    gpu = find_gpu("h100-sxm")
    ev = evaluate(shape(GPT_OSS), 2, Options(engine="sglang", engine_version="0.5.10", gpu=gpu,
                                             utilization=0.85))
    assert ev.pool is not None and ev.tokens is not None
    assert ev.kv_bytes_per_token.result == pytest.approx(1024 * 32.4)
    assert ev.tokens.result == int(ev.pool.result // (1024 * 32.4))


def test_vllm_keeps_its_own_cell() -> None:
    """The SGLang cell does not leak into vLLM's figures (sliding layers window-averaged)."""
    gpu = find_gpu("h100-sxm")
    ev = evaluate(shape(GEMMA2), 1, Options(engine="vllm", gpu=gpu))
    assert ev.kv_bytes_per_token.result < 42 * 8 * 512 * 2


def reduced_qwen35() -> ModelShape:
    """Row 12's model as its write-up states it: 8 layers (6 Gated DeltaNet + 2 full
    attention), 2 KV heads of 256, linear 16 key / 32 value heads of 128, conv kernel 4.
    Widths the pool does not read (hidden, heads, vocab) are placeholders."""
    return ModelShape(
        model_type="qwen3_5_moe", layers=8, hidden=2048, heads=16, kv_heads=2, head_dim=256,
        ffn=0, vocab=1, tied_embeddings=False, dtype="bfloat16", max_position_embeddings=None,
        linear_attn=LinearAttention(layers=6, num_key_heads=16, num_value_heads=32,
                                    key_head_dim=128, value_head_dim=128, conv_kernel=4),
    )


def _row(i: int) -> dict[str, object]:
    from tests.physics.test_sglang_calibration import load_rows

    return load_rows()[i]


def test_state_per_request_matches_a_published_log() -> None:
    """Row 12 (--max-mamba-cache-size 512, tp 1): 'conv_state size: 0.14GB, ssm_state size:
    6.01GB'. Per request and layer: conv (32·128 + 2·16·128)·3 bf16 = 49,152 B, temporal
    32·128·128 fp32 = 2,097,152 B; the pool holds K + 1 = 513 slots (memory_pool.py l.255,
    l.269): 6·513·2,097,152 B = 6.0117 GiB and 6·513·49,152 B = 0.1409 GiB. With 512 slots
    the log would have said 6.00."""
    row = _row(12)
    shape = reduced_qwen35()
    s = sp.mamba_state_per_request(shape, 1)
    assert s is not None and s.result == 6 * (49_152 + 2_097_152)  # 12,877,824 B = 12.28 MiB
    slots = int(row["mamba_slots"])  # type: ignore[call-overload]
    ssm = 6 * (slots + 1) * 2_097_152 / GIB
    conv = 6 * (slots + 1) * 49_152 / GIB
    assert round(ssm, 2) == row["mamba_ssm_gib"] and round(conv, 2) == row["mamba_conv_gib"]
    assert round(6 * slots * 2_097_152 / GIB, 2) != row["mamba_ssm_gib"]
    _, state = sp.mamba_slots_and_state(0.0, s, version="0.5.23", max_mamba_cache_size=slots)
    assert state.result == (slots + 1) * s.result


def test_linear_attention_cell_matches_the_logged_k_size() -> None:
    """Row 12: 'K size: 30.15 GB' for 15,809,808 tokens is 2,048 B of K a token: the 2 full
    layers only (2·2 heads·256·2 B), so the cell (K and V) is 4,096 B, not 8 layers' 16,384."""
    row = _row(12)
    c = sp.cell_bytes(reduced_qwen35(), 1)
    assert c.result == 4096
    tokens = int(row["kv_tokens"])  # type: ignore[call-overload]
    assert round(tokens * c.result / 2 / GIB, 2) == row["k_size_gib"]


def test_mla_single_kv_size_matches_a_published_log() -> None:
    """Row 13 (Kimi-K2.6, 8 × H20, --tp-size 8, 0.5.12): 'KV Cache is allocated. #tokens:
    209413, KV size: 13.71 GB' on every rank: one latent of 61·(512 + 64)·2 = 70,272 B a
    token, not divided by t (209,413 · 70,272 B = 13.705 GiB; 60 layers would print 13.48)."""
    row = _row(13)
    kimi = shape("moonshotai/Kimi-K2-Instruct")  # Kimi-K2.6's text model has K2's MLA shape
    c8 = sp.cell_bytes(kimi, 8, version="0.5.12")
    assert c8.result == sp.cell_bytes(kimi, 1, version="0.5.12").result == 61 * 576 * 2
    tokens = int(row["kv_tokens"])  # type: ignore[call-overload]
    assert round(tokens * c8.result / GIB, 2) == row["kv_size_gib"]
    assert round(tokens * 60 * 576 * 2 / GIB, 2) != row["kv_size_gib"]


@pytest.mark.parametrize(("full", "ratio", "page", "swa"), [
    # sgl-project/sglang#18039 (MiMo-V2-Flash, --page-size 64, default ratio): "Use sliding
    # window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288"
    (375_360, 0.8, 64, 300_288),
    # public write-up, find_string id 55801756965 (Gemma 4 QAT): full 1710, swa 1368
    (1_710, 0.8, 1, 1_368),
    # public notes, find_string id 65739849880 (--swa-full-tokens-ratio 0.05): 181760 → 9088
    (181_760, 0.05, 1, 9_088),
])
def test_swa_pool_is_the_ratio_of_the_full_pool(full: int, ratio: float, page: int,
                                                swa: int) -> None:
    """0.5.10 mixin l.365-366, 0.5.23 pool_configurator.py l.880-881: the SWA pool is
    int(full·r) floored to pages, whatever the window; published start-ups print the pair."""
    assert sp.swa_pool_tokens(full, swa_ratio=ratio, page_size=page).result == swa


def _plan(*args: str) -> str:
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([sys.executable, "-m", "tpcheck.cli", "plan", *args], capture_output=True,
                       text=True, cwd=Path(__file__).resolve().parents[2], env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_plan_prints_the_state_pool_and_the_hybrid_cells() -> None:
    """tpcheck plan --engine sglang: the budget names the state pool of a linear-attention
    model, and the JSON rows carry SGLang's cells (Qwen3-Next 12,288 B at t = 4; gpt-oss-120b
    1,024·(18 + 0.8·18) = 33,177.6 B at t = 2 under 0.5.10)."""
    text = _plan(NEXT, "--gpu", "h100-sxm", "--engine", "sglang", "--engine-version", "0.5.10",
                 "--tp", "4")
    assert "pool = T·mfs − W_gpu − state" in text and "mamba_state_bytes" in text
    doc = json.loads(_plan(GPT_OSS, "--gpu", "h100-sxm", "--engine", "sglang",
                           "--engine-version", "0.5.10", "--tp", "2", "--format", "json"))
    assert doc["rows"][0]["kv_bytes_per_token_per_gpu"] == pytest.approx(1024 * 32.4)


def test_options_carry_the_hybrid_flags() -> None:
    """--swa-full-tokens-ratio 0.5, --max-mamba-cache-size 100 (0.5.10: charged K·s) reach the
    pool through Options, for the lead's Deployment → Options wiring."""
    gpu = find_gpu("h100-sxm")
    ev = evaluate(shape(GPT_OSS), 2, Options(engine="sglang", engine_version="0.5.10", gpu=gpu,
                                             swa_full_tokens_ratio=0.5))
    assert ev.kv_bytes_per_token.result == pytest.approx(1024 * (18 + 0.5 * 18))
    ev2 = evaluate(shape(NEXT), 4, Options(engine="sglang", engine_version="0.5.10", gpu=gpu,
                                           utilization=0.8, max_mamba_cache_size=100))
    assert ev2.pool is not None
    assert ev2.pool.values["state"] == 100 * S4


def test_launch_flags_reach_the_pool(tmp_path: Path) -> None:
    """The three SGLang flags written in a launch are read into the deployment and reach the
    pool through CheckContext.options; plan takes the same flags. gpt-oss-120b at t = 2 on
    0.5.10: cell = F·(18 full + r·18 sliding) with F = 1024 B per layer-token (as above), so
    r = 0.5 gives 1024·27 = 27,648 B a token against 1024·32.4 = 33,177.6 at the default 0.8."""
    from tpcheck.checks.context import CheckContext
    from tpcheck.settings import Settings
    from tpcheck.sources import read_path

    p = tmp_path / "serve.sh"
    p.write_text("python -m sglang.launch_server --model-path openai/gpt-oss-120b --tp 2 "
                 "--swa-full-tokens-ratio 0.5 --mamba-full-memory-ratio 0.7 "
                 "--max-mamba-cache-size 64\n", encoding="utf-8")
    (dep,) = read_path(str(p)).deployments
    assert (dep.swa_full_tokens_ratio, dep.mamba_full_memory_ratio,
            dep.max_mamba_cache_size) == (0.5, 0.7, 64)
    ctx = CheckContext(dep, shape=shape(GPT_OSS), gpu=find_gpu("h100-sxm"),
                       settings=Settings(offline=True, engine_version="0.5.10"))
    assert ctx.options.swa_full_tokens_ratio == 0.5
    assert ctx.options.max_mamba_cache_size == 64
    assert ctx.evaluation.kv_bytes_per_token.result == pytest.approx(1024 * 27)


def test_plan_takes_the_swa_ratio(tmp_path: Path) -> None:
    """`tpcheck plan --engine sglang --swa-full-tokens-ratio 0.5`: the row's KV bytes per token
    is the 0.5 cell, 1024·(18 + 0.5·18) = 27,648 B (gpt-oss-120b, 0.5.10)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "tpcheck", "plan", "openai/gpt-oss-120b", "--offline",
         "--engine", "sglang", "--engine-version", "0.5.10", "--gpu", "h100-sxm", "--tp", "2",
         "--swa-full-tokens-ratio", "0.5", "--format", "json"],
        capture_output=True, text=True, check=True)
    (row,) = json.loads(out.stdout)["rows"]
    assert row["kv_bytes_per_token_per_gpu"] == 1024 * 27
