"""Weights as the vLLM release loads them (issue 32 items 3-4), each term pinned to the
"Model loading took X GiB" line of a published start-up (fixtures/observations/
vllm-startup.jsonl, row = 0-based line)."""

from __future__ import annotations

import pytest

from tests.physics.test_calibration import CASES, _shape, load_rows, predict
from tpcheck.formula import GIB, MIB
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics import weights as wmod
from tpcheck.physics.plan import Options, evaluate


def _logged(i: int) -> float:
    v = load_rows()[i]["weights_gib"]
    assert isinstance(v, float)
    return v


def _term(f: object, name: str) -> float:
    for x in getattr(f, "terms", ()):
        if x.name == name:
            return float(x.result)
    raise AssertionError(name)


def test_rotary_cache_is_held_whole_on_every_rank() -> None:
    # Llama-3.1-8B: 131,072 positions · 128 · 2 B = 32 MiB on every rank, whatever t. Row 31
    # (TP4, 0.19) logs 3.77 GiB: the checkpoint's quarter (3.74 GiB) + 0.03.
    s = _shape("meta-llama/Llama-3.1-8B-Instruct")
    for t in (1, 2, 4):
        w = evaluate(s, t, Options(engine_version="0.19.0")).weights
        assert _term(w, "W_rope") == 131_072 * 128 * 2 == 32 * MIB
    p = predict(31, load_rows()[31], CASES[31])
    assert round(p.weights_gib, 2) == _logged(31) == 3.77
    # Llama-4-Scout: max_position_embeddings 10,485,760 · 128 · 2 B = 2.5 GiB on each of the 4
    # ranks (row 47 logs 53.12 GiB; the text model's quarter is 50.19): 52.69, -0.8 %.
    p47 = predict(47, load_rows()[47], CASES[47])
    assert int(2.5 * GIB) == 10_485_760 * 128 * 2
    assert abs(p47.weights_gib - _logged(47)) / _logged(47) < 0.01


def test_rotary_cache_dtype_and_families_without_one() -> None:
    # gpt-oss builds its rope in fp32 (models/gpt_oss.py l.82-84): 131,072 · 64 · 4 = 32 MiB;
    # DeepSeek's scaling rope stays fp32 with FlashInfer: 163,840 · 64 (qk_rope_head_dim) · 4.
    assert wmod.rope_cache(max_position=131_072, rotary_dim=64, b=2, fp32=True).result == (
        32 * MIB)
    ds = evaluate(_shape("deepseek-ai/DeepSeek-V2-Lite"), 1,
                  Options(gpu=find_gpu("h100-sxm"))).weights
    assert _term(ds, "W_rope") == 163_840 * 64 * 4
    # On ROCm (no FlashInfer) the cache is cast to bf16: half.
    amd = evaluate(_shape("deepseek-ai/DeepSeek-V2-Lite"), 1,
                   Options(gpu=find_gpu("mi300x"))).weights
    assert _term(amd, "W_rope") == 163_840 * 64 * 2
    assert wmod.rope_cache(max_position=None, rotary_dim=128, b=2) is None
    # gemma-3 rotates its sliding and its global layers with two bases: two caches, 2 · 131,072
    # · 256 · 2 B = 128 MiB (gemma3.py l.167-186); gemma-2 has one (8,192 · 256 · 2 B = 4 MiB).
    g3 = evaluate(_shape("google/gemma-3-12b-it"), 1, Options(gpu=find_gpu("h100-sxm"))).weights
    assert _term(g3, "W_rope") == 2 * 131_072 * 256 * 2 == 128 * MIB
    g2 = evaluate(_shape("google/gemma-2-9b-it"), 1, Options(gpu=find_gpu("h100-sxm"))).weights
    assert _term(g2, "W_rope") == 8192 * 256 * 2


def test_pipeline_stages_hold_the_embedding_first_and_the_head_last() -> None:
    # Row 33: Llama-3.1-8B at PP4 logs rank 0's stage, 4.26 GiB. 32 layers in 4 stages of 8
    # (get_pp_indices); the first holds the embedding 128,256 · 4096 · 2 B = 0.98 GiB, the last
    # the untied LM head of the same size: (W − E − H)·8/32 + E + rope = 4.26 GiB.
    assert wmod.pp_partition(32, 4) == (8, 8, 8, 8)
    assert wmod.pp_partition(61, 2) == (31, 30)  # the remainder on the stages before the last
    assert wmod.pp_partition(10, 4) == (2, 3, 3, 2)
    p = predict(33, load_rows()[33], CASES[33])
    assert round(p.weights_gib, 2) == _logged(33) == 4.26
    s = _shape("meta-llama/Llama-3.1-8B-Instruct")
    w = evaluate(s, 1, Options(pp=4, engine_version="0.19.0")).weights
    first, last = _term(w, "weights_first_stage"), _term(w, "weights_last_stage")
    assert first == pytest.approx(last) == pytest.approx(w.result)
    e = 128_256 * 4096 * 2
    assert first - _term(w, "W_rope") == pytest.approx((w.values["W_read"] * 4 - 2 * e) / 4 + e)
    # What a decode step reads stays the checkpoint's share of the stage: W/p.
    assert wmod.weights_read(w) == pytest.approx(w.values["W_read"])


def test_mxfp4_experts_in_0_19_triton_layout_on_hopper() -> None:
    # Row 43: gpt-oss-20b at TP2 on H100 logs 7.01 GiB. Per layer, I = round_up(1440, 64) =
    # 1472: swizzled w13 32·2944·1472 = 138,674,176 B, w2 32·2880·768 = 70,778,880, swizzled
    # scales 32·3072·90 + 32·3072·46 = 13,369,344, the loaded scales kept 32·2944·90 +
    # 32·2880·46 = 12,718,080, fp32 biases 4·32·(2944 + 2880) = 745,472: 236,285,952 B · 24.
    f = wmod.mxfp4_hopper_experts_019(hidden=2880, expert_ffn=2880, experts=32, layers=24,
                                      g=2, bias=True)
    assert f.result == 24 * (138_674_176 + 70_778_880 + 13_369_344 + 12_718_080 + 745_472)
    p = predict(43, load_rows()[43], CASES[43])
    assert abs(p.weights_gib - _logged(43)) / _logged(43) < 0.005  # 6.99 against 7.01
    # Only on Hopper and only for the releases read so: 0.33 and 0.12 keep the padded layout,
    # an A100 (Marlin) too (row 26: 13.70 against 13.72 GiB logged).
    assert wmod.mxfp4_layout("0.19.0", "h100-sxm") == wmod.MXFP4_TRITON_HOPPER
    assert wmod.mxfp4_layout("0.33.0", "h100-sxm") == wmod.MXFP4_PADDED
    assert wmod.mxfp4_layout("0.12.0", "h100-sxm") == wmod.MXFP4_PADDED
    assert wmod.mxfp4_layout("0.19.0", "a100-sxm-80gb") == wmod.MXFP4_PADDED
    p26 = predict(26, load_rows()[26], CASES[26])
    assert abs(p26.weights_gib - _logged(26)) / _logged(26) < 0.005


def test_weights_within_1_percent_on_the_issue_32_rows() -> None:
    # Issue 32's bar: every row within 1 % except DeepSeek-V2-Lite, which stays 0.11-0.14 GiB
    # short at every t (a part held whole that 0.19's source read here does not show).
    rows = load_rows()
    for i in range(29, 48):
        p = predict(i, rows[i], CASES[i])
        assert p.weights_error is not None
        bar = 0.015 if CASES[i].model == "deepseek-ai/DeepSeek-V2-Lite" else 0.01
        assert abs(p.weights_error) <= bar, (i, p.weights_gib, p.logged_weights_gib)
