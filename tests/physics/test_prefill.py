"""Prefill efficiency η against published TTFT rows (issue 22): what they imply, and why no era.

Rows: ``fixtures/observations/prefill-sweeps.jsonl`` (README beside it). Each row's predicted time
is T = (T_linear + T_attn)/η + (2L+1)·T_AR with the plan's own inputs (``step.Prefill``); the
arithmetic is written beside each assertion.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.physics.test_step import find_gpu, shape_of
from tpcheck.physics import plan, step
from tpcheck.physics.plan import DEFAULT_ALPHA, Options, evaluate
from tpcheck.physics.split import model_params

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
    m = step.Prefill(model_params(shape, active=True), shape.layers, shape.heads, shape.head_dim,
                     shape.hidden, 2, int(str(row["tp"])), gpu.bf16_flops, gpu.link_bandwidth,
                     DEFAULT_ALPHA)
    lens = [int(n) for n in row["input_lens"]]  # type: ignore[attr-defined]
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
    # T_comm = 161·(10 µs + 2·(2−1)/2·1369·8192·2 B / 450e9 B/s) = 161·59.84 µs = 9.63 ms;
    # 97.90 / 0.6 + 9.63 = 172.80 ms against 218.92 (1.27×).
    x, c, y = terms(BY_ID["lambda-ttft-llama3-70b-h100-tp2"])
    assert c == pytest.approx(9.635e-3, rel=1e-3)
    assert x / 0.6 + c == pytest.approx(172.80e-3, rel=1e-3)
    # t = 8: T_linear 24.41 ms, T_attn 0.07 ms; T_comm = 161·(10 µs + 1.75·22.43e6 B / 450e9)
    # = 161·97.2 µs = 15.65 ms; 24.48 / 0.6 + 15.65 = 56.45 ms against 122.28 (2.17×).
    x, c, y = terms(BY_ID["lambda-ttft-llama3-70b-h100-tp8"])
    assert c == pytest.approx(15.653e-3, rel=1e-3)
    assert x / 0.6 + c == pytest.approx(56.45e-3, rel=1e-3)
    assert y / (x / 0.6 + c) == pytest.approx(2.166, abs=0.005)


def test_one_eta_does_not_fit_the_rows_so_none_is_fitted() -> None:
    """η implied per row, (T_linear + T_attn) / (measured − T_comm): 22.33/62.19 = 0.359,
    97.90/(218.92 − 9.63) = 0.468, 24.48/(122.28 − 15.65) = 0.230 — a 2× spread within one engine
    release and GPU. Leave-one-out: η from the other two rows predicts 56.0 ms (−10 %), 318.7 ms
    (+46 %) and 74.2 ms (−39 %): far past the bar, hence ``uncalibrated`` and the assumed η."""
    pts = [terms(r) for r in ROWS]
    implied = [x / (y - c) for x, c, y in pts]
    assert implied == [pytest.approx(v, abs=0.002) for v in (0.359, 0.468, 0.230)]
    errs = []
    for i, (x, c, y) in enumerate(pts):
        eta = step.fit_efficiency([p for j, p in enumerate(pts) if j != i])
        errs.append((x / eta + c) / y - 1)
    assert errs == [pytest.approx(v, abs=0.005) for v in (-0.099, 0.456, -0.393)]
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
