"""Prefill per chunk (issue 22, item 3): compute at an assumed efficiency + attention + all-reduces.

No published batch-1 TTFT row states prompt length, GPU, t and release together, so η is the
assumed 0.6 of the decode compute term (step.PREFILL_EFFICIENCY) and the figure is a stated
floor; every expected time below is derived beside its assertion from the catalog figures:
H100 SXM 989.4e12 dense BF16 FLOP/s, NVLink 4 450 GB/s with α = 10 µs, IB NDR 50 GB/s, 30 µs.

The published TTFT rows of ``fixtures/observations/prefill-sweeps.jsonl`` are checked at the end:
each row's predicted time, the η it implies, and why one η does not fit them (no era), and
``step.prefill_efficiency``'s lookup and its wiring into plan's prefill columns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.physics.test_step import shape_of
from tpcheck.engines.defaults import sglang_chunked_prefill
from tpcheck.formula import MIB
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics import plan, step
from tpcheck.physics.linkcost import node_price
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
    # one node, 8 ranks, 8192·8192·2 B = 128 MiB: above every vLLM 0.33 kernel's limit
    # (FlashInfer 0.5 MiB, symm mem 64 MiB), so NCCL's cheapest, NVLS/Simple (physics.
    # collective): B = 0.60·450·7/4 = 472.5 GB/s, α = 24 µs → 24 + 1.75·128 MiB/472.5 GB/s
    # = 521.1 µs per all-reduce (10 µs + the link's 450 GB/s gave 532.0)
    assert ev.prefill.result == pytest.approx(by_hand_chunk(8192, 0, 8, 472.5e9, 24e-6),
                                              rel=1e-9)
    assert ev.prefill_prompt.result == pytest.approx(
        sum(by_hand_chunk(8192, c0, 8, 472.5e9, 24e-6) for c0 in (0, 8192, 16384, 24576)),
        rel=1e-9)
    assert ev.prefill_prompt.result == pytest.approx(1.6055, rel=1e-4)
    flag = evaluate(shape, 8, Options(engine_version="0.33.0", gpu=gpu, context=32768,
                                      max_num_batched_tokens=2048))
    assert flag.prefill is not None and flag.prefill.values["n"] == 2048
    assert flag.prefill.values["n_source"] == "--max-num-batched-tokens"
    # t = 16 spans two HGX nodes (assumed 8 × 400G IB each): its 161 all-reduces of
    # 8192·8192·2 B = 128 MiB run as NVLS-tree/Simple (physics.collective), B =
    # min(0.90·400·15/8, 0.60·450·7/4) = 472.5 GB/s, α = 115 µs: 235 ms, where one NIC's
    # 50 GB/s and 30 µs gave 946 ms (nccl-tests#309: 469 GB/s measured on such a pair)
    sixteen = evaluate(shape, 16, base)
    assert sixteen.prefill is not None
    assert sixteen.prefill.result == pytest.approx(by_hand_chunk(8192, 0, 16, 472.5e9, 115e-6),
                                                   rel=1e-9)
    assert sixteen.prefill.result == pytest.approx(0.2352, rel=1e-3)
    assert by_hand_chunk(8192, 0, 16, NDR, 30e-6) == pytest.approx(0.9461, rel=1e-3)
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
    # NCCL NVLS at 128 MiB, as in the test above: 24 µs + 1.75·S/472.5 GB/s per all-reduce
    assert rows[8]["prefill_chunk_seconds"] == pytest.approx(
        by_hand_chunk(8192, 0, 8, 472.5e9, 24e-6), rel=1e-9)
    assert rows[8]["prefill_chunk_seconds"] == pytest.approx(0.34582, rel=1e-4)
    assert rows[8]["prefill_prompt_seconds"] == pytest.approx(1.6055, rel=1e-4)
    assert rows[8]["allreduce_link"] == "nvlink4"
    # t = 1: no all-reduce; (2·P·8192 + ATT·33,558,528) / (989.4e12·0.6) = 1,217.3 + 148.2 ms
    assert rows[1]["prefill_tokens"] == 8192
    assert rows[1]["prefill_chunk_seconds"] == pytest.approx(
        (2 * P70 * 8192 + ATT * KEYS_8192) / (PI * 0.6), rel=1e-9)
    t = _plan("--tp", "8")
    assert t.returncode == 0, t.stderr
    assert "prefill ms" in t.stdout and "one 8,192-token chunk / a whole 32,768-token" in t.stdout
    assert " 346/1,606 " in t.stdout  # 345.82 ms and 1,605.5 ms rounded


# Published TTFT rows (issue 22): what they imply for η, and why no prefill era.
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "observations" / "prefill-sweeps.jsonl"
LOO_BAR = 0.15  # the decode bar: an η that misses a left-out row by more calibrates nothing


def load_rows() -> list[dict[str, object]]:
    with FIXTURE.open() as f:
        return [json.loads(line) for line in f if line.strip()]


ROWS = load_rows()
BY_ID = {str(r["id"]): r for r in ROWS}


def terms(row: dict[str, object]) -> tuple[float, float, float]:
    """(T_linear + T_attn at peak FLOP/s, T_comm, measured seconds) of one prefill batch.

    Every prompt multiplies every weight (T_linear over the summed tokens); each attends only to
    itself (T_attn summed per prompt); one set of 2L+1 all-reduces carries the whole batch.
    """
    shape = shape_of(str(row["model"]))
    gpu = find_gpu(str(row["gpu"]))
    assert gpu is not None and gpu.bf16_flops and gpu.link_bandwidth
    lens = [int(n) for n in row["input_lens"]]  # type: ignore[attr-defined]
    t = int(str(row["tp"]))
    # the batch's all-reduces as the row's release runs them on one node (physics.collective)
    ar = node_price(gpu.link, gpu.link_bandwidth, t, sum(lens) * shape.hidden * 2,
                    engine=str(row["engine"]), version=str(row["version"]))
    m = step.Prefill(model_params(shape, active=True), shape.layers, shape.heads, shape.head_dim,
                     shape.hidden, 2, t, gpu.bf16_flops, ar.bus or gpu.link_bandwidth, ar.alpha)
    lin, _, comm = m.terms(sum(lens), 0)
    attn = sum(m.terms(n, 0)[1] for n in lens)
    return lin + attn, comm, float(str(row["measured_ms"])) / 1000


def test_every_row_is_cited_complete_and_says_why_it_calibrates_nothing() -> None:
    for r in ROWS:
        for key in ("id", "series", "ref", "engine", "version", "model", "gpu", "tp", "batch",
                    "input_lens", "measured_ms", "how", "uncalibrated"):
            assert r.get(key) not in (None, ""), (r.get("id"), key)
        assert sum(r["input_lens"]) == r["input_tokens"]  # type: ignore[arg-type]
    assert len(BY_ID) == len(ROWS) == 3
    # no era stands on these rows, so no era exists at all
    assert step.PREFILL_ERAS == ()


def test_each_rows_predicted_time_at_the_assumed_eta() -> None:
    # Llama-3-8B, t = 1, H100 (π = 989.4e12): T_linear = 2·8.030e9·1369 / 989.4e12 = 22.22 ms,
    # T_attn = Σ 4·32·32·128·n(n+1)/2 / π = 0.11 ms, no all-reduce; at η = 0.6:
    # 22.33 / 0.6 = 37.22 ms against 62.19 measured (1.67×).
    x, c, y = terms(BY_ID["lambda-ttft-llama3-8b-h100-tp1"])
    assert (x, c) == (pytest.approx(22.334e-3, rel=1e-3), 0.0)
    assert x / 0.6 + c == pytest.approx(37.22e-3, rel=1e-3) and y == 62.1947e-3
    # Llama-3-70B, t = 2: T_linear = 2·70.554e9·1369 / (2·989.4e12) = 97.62 ms, T_attn 0.28 ms;
    # each all-reduce is 1369·8192·2 = 22.43e6 B, above vLLM 0.5.4's 8 MiB custom kernel, so
    # NCCL's ring/Simple on 2 H100 (physics.collective: α 24 µs, B 0.80·450 = 360 GB/s):
    # T_comm = 161·(24 µs + 2·(2−1)/2·22.43e6 B / 360e9 B/s) = 161·86.30 µs = 13.90 ms;
    # 97.90 / 0.6 + 13.90 = 177.06 ms against 218.92 (1.24×). (10 µs and the link's 450 GB/s
    # gave 9.63 ms.)
    x, c, y = terms(BY_ID["lambda-ttft-llama3-70b-h100-tp2"])
    assert c == pytest.approx(161 * (24e-6 + 22_429_696 / 360e9), rel=1e-9)
    assert c == pytest.approx(13.895e-3, rel=1e-3)
    assert x / 0.6 + c == pytest.approx(177.06e-3, rel=1e-3)
    # t = 8: T_linear 24.41 ms, T_attn 0.07 ms; NCCL's NVLS/Simple on 8 H100: T_comm =
    # 161·(24 µs + 1.75·22.43e6 B / 472.5e9) = 161·107.07 µs = 17.24 ms; 24.48 / 0.6 + 17.24
    # = 58.03 ms against 122.28 (2.11×).
    x, c, y = terms(BY_ID["lambda-ttft-llama3-70b-h100-tp8"])
    assert c == pytest.approx(161 * (24e-6 + 1.75 * 22_429_696 / 472.5e9), rel=1e-9)
    assert x / 0.6 + c == pytest.approx(58.03e-3, rel=1e-3)
    assert y / (x / 0.6 + c) == pytest.approx(2.107, abs=0.005)


def test_one_eta_does_not_fit_the_rows_so_none_is_fitted() -> None:
    """η implied per row, (T_linear + T_attn) / (measured − T_comm): 22.33/62.19 = 0.359,
    97.90/(218.92 − 13.90) = 0.478, 24.48/(122.28 − 17.24) = 0.233 — a 2× spread within one engine
    release and GPU. Leave-one-out: η from the other two rows misses by −12 %, +47 % and −39 %:
    far past the bar, hence ``uncalibrated`` and the assumed η."""
    pts = [terms(r) for r in ROWS]
    implied = [x / (y - c) for x, c, y in pts]
    assert implied == [pytest.approx(v, abs=0.002) for v in (0.359, 0.478, 0.233)]
    errs = []
    for i, (x, c, y) in enumerate(pts):
        eta = step.fit_efficiency([p for j, p in enumerate(pts) if j != i])
        errs.append((x / eta + c) / y - 1)
    assert errs == [pytest.approx(v, abs=0.005) for v in (-0.116, 0.469, -0.386)]
    assert max(abs(e) for e in errs) > LOO_BAR


def test_fit_efficiency_recovers_a_known_eta() -> None:
    # y = x/0.5 + c exactly: 10 ms at peak + 2 ms comm → 22 ms; 30 + 0 → 60 ms
    assert step.fit_efficiency([(0.010, 0.002, 0.022), (0.030, 0.0, 0.060)]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        step.fit_efficiency([])


ERA = step.PrefillEra("sglang", (0, 4), (0, 6), "hopper", efficiency=0.45,
                      rows=("row-a", "row-b"), source="a made-up era for the lookup")


def test_prefill_efficiency_falls_back_to_the_assumed_eta() -> None:
    eta, src = step.prefill_efficiency("vllm", "0.5.4", "h100-sxm")
    assert (eta, src) == (0.6, step.PREFILL_SOURCE) and "assumed" in src
    # an era matches engine, release and GPU class (H200 is Hopper), nothing else
    eta, src = step.prefill_efficiency("sglang", "0.5.2", "h200", eras=(ERA,))
    assert eta == 0.45 and src.startswith("η = 0.45 calibrated: sglang 0.4–0.5.x on hopper, 2 rows")
    for engine, version, gpu in (("vllm", "0.5.2", "h200"), ("sglang", "0.6.0", "h200"),
                                 ("sglang", "0.5.2", "a100-sxm-80gb"), ("sglang", None, "h200")):
        assert step.prefill_efficiency(engine, version, gpu, eras=(ERA,))[0] == 0.6


def test_plan_prefill_columns_take_eta_from_prefill_efficiency(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunk's compute part scales with 1/η: at η = 0.45 instead of 0.6 it is 0.6/0.45 = 4/3
    of the assumed figure, the all-reduces unchanged; the source names the era."""
    shape = shape_of("meta-llama/Meta-Llama-3-70B-Instruct")
    opts = Options(engine="sglang", engine_version="0.5.2", gpu=find_gpu("h100-sxm"), batch=8,
                   context=8192)
    base = evaluate(shape, 4, opts)
    assert base.prefill is not None and base.prefill.values["η"] == 0.6
    assert base.prefill.source == step.PREFILL_SOURCE
    monkeypatch.setattr(step, "PREFILL_ERAS", (ERA,))
    cal = evaluate(shape, 4, opts)
    assert cal.prefill is not None and cal.prefill_prompt is not None
    assert cal.prefill.values["η"] == 0.45 and "calibrated: sglang" in cal.prefill.source
    t_comm = next(x.result for x in base.prefill.terms if x.name == "T_comm")
    assert cal.prefill.result - t_comm == pytest.approx((base.prefill.result - t_comm) * 4 / 3)
    assert cal.prefill_prompt.source == cal.prefill.source
    # MoE keeps the assumed η even where an era matches (the rows are dense)
    moe = evaluate(shape_of("mistralai/Mixtral-8x7B-v0.1"), 2, opts)
    assert moe.prefill is not None and moe.prefill.values["η"] == 0.6
    assert plan.prefill_efficiency(shape, opts)[0] == 0.45
