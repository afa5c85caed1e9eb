"""Prefill per chunk (issue 22, item 3): compute at an assumed efficiency + attention + all-reduces.

No published batch-1 TTFT row states prompt length, GPU, t and release together, so η is the
assumed 0.6 of the decode compute term (step.PREFILL_EFFICIENCY) and the figure is a stated
floor; every expected time below is derived beside its assertion from the catalog figures:
H100 SXM 989.4e12 dense BF16 FLOP/s, NVLink 4 450 GB/s with α = 10 µs, IB NDR 50 GB/s, 30 µs.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.physics.test_step import shape_of
from tpcheck.engines.defaults import sglang_chunked_prefill
from tpcheck.formula import MIB
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics import step
from tpcheck.physics.plan import Options, evaluate
from tpcheck.physics.split import model_params

LLAMA70 = "meta-llama/Meta-Llama-3-70B-Instruct"  # L 80, d 8192, h 64, d_h 128
P70 = 70_553_706_496  # its parameters as tpcheck counts them (physics/split.py)
PI, NVL, NDR = 989.4e12, 450e9, 50e9
# causal attention over n new tokens after c0 cached: Σ_i (c0 + i) = n·c0 + n(n+1)/2 keys
KEYS_8192 = 8192 * 8193 // 2  # 33,558,528
ATT = 4 * 80 * 64 * 128  # 4·L·h·d_h = 2,621,440 FLOP per (query, key) pair over the model


def by_hand_chunk(n: int, c0: int, t: int, bw: float, alpha: float) -> float:
    lin = 2 * P70 * n / (t * PI)
    attn = ATT * (n * c0 + n * (n + 1) / 2) / (t * PI)
    comm = 161 * (alpha + 2 * (t - 1) / t * n * 8192 * 2 / bw)  # 2L+1 = 161 all-reduces
    return (lin + attn) / 0.6 + comm


def test_one_chunk_by_hand() -> None:
    assert model_params(shape_of(LLAMA70), active=True) == P70
    m = step.Prefill(P70, 80, 64, 128, 8192, 2, 8, PI, NVL, 10e-6)
    f = step.prefill_chunk(m, 8192)
    terms = {x.name: x.result for x in f.terms}
    # T_linear = 2·70.55e9·8192 / (8·989.4e12) = 146.03 ms
    assert terms["T_linear"] == pytest.approx(0.14603, rel=1e-4)
    # T_attn = 2,621,440·33,558,528 / (8·989.4e12) = 11.11 ms
    assert terms["T_attn"] == pytest.approx(ATT * KEYS_8192 / (8 * PI), rel=1e-12)
    assert terms["T_attn"] == pytest.approx(0.011114, rel=1e-4)
    # T_comm = 161·(10 µs + 2·7/8·8192·8192·2 B / 450 GB/s) = 161·532.0 µs = 85.65 ms
    assert terms["T_comm"] == pytest.approx(0.085645, rel=1e-4)
    # (146.03 + 11.11)/0.6 + 85.65 = 347.57 ms
    assert f.result == pytest.approx(0.34757, rel=1e-4)
    assert f.result == pytest.approx(by_hand_chunk(8192, 0, 8, NVL, 10e-6), rel=1e-12)
    assert f.values["η"] == step.PREFILL_EFFICIENCY == 0.6
    assert "assumed" in f.source


def test_attention_grows_with_the_context_already_cached() -> None:
    m = step.Prefill(P70, 80, 64, 128, 8192, 2, 8, PI, NVL, 10e-6)
    first, late = step.prefill_chunk(m, 2048, 0), step.prefill_chunk(m, 2048, 30720)
    a0 = next(x.result for x in first.terms if x.name == "T_attn")
    a1 = next(x.result for x in late.terms if x.name == "T_attn")
    # keys: 2048·2049/2 = 2,098,176 vs 2048·30720 + 2,098,176 = 65,012,736 → 30.99× the FLOPs
    assert a1 / a0 == pytest.approx(65_012_736 / 2_098_176, rel=1e-12)
    assert late.result > first.result


def test_a_whole_prompt_is_the_sum_of_its_chunks() -> None:
    m = step.Prefill(P70, 80, 64, 128, 8192, 2, 8, PI, NVL, 10e-6)
    f = step.prefill_prompt(m, 32768, 8192)
    assert f.values["chunks"] == 4
    expect = sum(by_hand_chunk(8192, c0, 8, NVL, 10e-6) for c0 in (0, 8192, 16384, 24576))
    assert f.result == pytest.approx(expect, rel=1e-12)
    # chunking does not change the attention total: Σ keys = c(c+1)/2 = 536,887,296, so
    # T = (4·T_linear(8192) + 4·L·h·d_h·c(c+1)/2/(t·π))/η + 4·T_comm = 1,612.5 ms
    lin4 = 4 * 2 * P70 * 8192 / (8 * PI)
    attn = ATT * 536_887_296 / (8 * PI)
    comm4 = 4 * 161 * (10e-6 + 1.75 * 8192 * 8192 * 2 / NVL)
    assert f.result == pytest.approx((lin4 + attn) / 0.6 + comm4, rel=1e-12)
    assert f.result == pytest.approx(1.6125, rel=1e-4)
    # a prompt that is not a whole number of chunks ends with a short one
    odd = step.prefill_prompt(m, 10000, 8192)
    assert odd.values["chunks"] == 2 and odd.terms[0].values["n"] == 1808


def test_evaluate_reports_the_engines_chunk_and_the_spanning_link() -> None:
    gpu = find_gpu("h100-sxm")
    shape = shape_of(LLAMA70)
    base = Options(engine_version="0.33.0", gpu=gpu, context=32768)
    ev = evaluate(shape, 8, base)
    assert ev.prefill is not None and ev.prefill_prompt is not None
    # vLLM 0.33 serve default max_num_batched_tokens on an 80 GB H100: 8192 (engine defaults)
    assert ev.prefill.values["n"] == 8192
    assert ev.prefill.result == pytest.approx(by_hand_chunk(8192, 0, 8, NVL, 10e-6), rel=1e-9)
    assert ev.prefill_prompt.result == pytest.approx(1.6125, rel=1e-4)
    flag = evaluate(shape, 8, Options(engine_version="0.33.0", gpu=gpu, context=32768,
                                      max_num_batched_tokens=2048))
    assert flag.prefill is not None and flag.prefill.values["n"] == 2048
    assert flag.prefill.values["n_source"] == "--max-num-batched-tokens"
    # t = 16 spans two HGX nodes: its 161 all-reduces of 8192·8192·2 B run on IB NDR
    sixteen = evaluate(shape, 16, base)
    assert sixteen.prefill is not None
    assert sixteen.prefill.result == pytest.approx(by_hand_chunk(8192, 0, 16, NDR, 30e-6),
                                                   rel=1e-9)
    # SGLang's chunk is --chunked-prefill-size, by default its rule on the GPU's memory
    sg = evaluate(shape, 8, Options(engine="sglang", gpu=gpu, context=32768))
    assert gpu is not None and sg.prefill is not None
    assert sg.prefill.values["n"] == sglang_chunked_prefill(gpu.usable_bytes / MIB)


def _plan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpcheck", "plan", "meta-llama/Meta-Llama-3-70B",
                           "--offline", "--gpu", "h100-sxm", "--engine-version", "0.33.0",
                           "--context", "32768", *args], capture_output=True, text=True,
                          check=False)


def test_plan_json_and_text_show_the_prefill_figures() -> None:
    p = _plan("--tp", "1,8", "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = {r["tp"]: r for r in json.loads(p.stdout)["rows"]}
    assert rows[8]["prefill_chunk_seconds"] == pytest.approx(0.34757, rel=1e-4)
    assert rows[8]["prefill_prompt_seconds"] == pytest.approx(1.6125, rel=1e-4)
    assert rows[8]["allreduce_link"] == "nvlink4"
    # t = 1: no all-reduce; (2·P·8192 + ATT·33,558,528) / (989.4e12·0.6) = 1,217.3 + 148.2 ms
    assert rows[1]["prefill_tokens"] == 8192
    assert rows[1]["prefill_chunk_seconds"] == pytest.approx(
        (2 * P70 * 8192 + ATT * KEYS_8192) / (PI * 0.6), rel=1e-9)
    t = _plan("--tp", "8")
    assert t.returncode == 0, t.stderr
    assert "prefill ms" in t.stdout and "one 8,192-token chunk / a whole 32,768-token" in t.stdout
    assert " 348/1,613 " in t.stdout  # 347.57 ms and 1,612.5 ms rounded
