"""TP201 kv-head-cliff, every branch: past the cliff with seats (capacity gain, DP replicas, fp8),
with no GPU (no seats), when the weights leave no pool at t (no seats quoted), and when
t = h_kv alone does not fit (pipeline stages instead); quiet at or below h_kv and for MLA.
The tokens/s clause is pinned in tests/physics (step time) and test_rules_acceptance.py."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only, values
from tpcheck.checks.base import Finding, Severity

Q32 = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16 --max-model-len 8192"
# Qwen3-32B: L = 64, h_kv = 8, d_h = 128, bf16 cache. Past the cliff each GPU keeps
# max(1, floor(8/16)) = 1 head: kv_B = 2·64·1·128·2 = 32,768 B per token, as at t = 8.
Q235 = "vllm serve Qwen/Qwen3-235B-A22B --tensor-parallel-size 8 --max-model-len 8192"
# Qwen3-235B-A22B: L = 94, h_kv = 4, d_h = 128: kv_B = 2·94·1·128·2 = 48,128 B at t = 8.


def _t_span(text: str, t: str) -> tuple[int, int, int]:
    at = text.index(f"--tensor-parallel-size {t}") + len("--tensor-parallel-size ") + 1
    return 1, at, at + len(t)


def _kv(f: Finding, L: int, b: int) -> None:
    """kv_B past the cliff: one KV head per GPU, d_h = 128, 2-byte cache."""
    kvb = next(x for x in f.formulas if x.name == "kv_bytes_per_token_per_gpu")
    assert kvb.expression == "2·L·max(1, floor(h_kv/t))·d_h·b_kv"
    assert kvb.result == 2 * L * 1 * 128 * 2 == b


def test_past_the_cliff_with_seats() -> None:
    f = only(lint_text(Q32), "TP201")
    assert f.severity == Severity.WARNING
    assert (f.span.line, f.span.column, f.span.end_column) == _t_span(Q32, "16")
    _kv(f, 64, 32768)
    assert f.formula is not None and f.formula.name == "capacity_gain"
    assert f.formula.expression == "seats(t) / seats(h_kv)"
    g = dict(f.formula.values)
    seats_t, seats_h = g["seats(t)"], g["seats(h_kv)"]
    assert isinstance(seats_t, int) and isinstance(seats_h, int)
    assert (g["t"], g["h_kv"]) == (16, 8)
    assert f.formula.result == seats_t / seats_h
    # the same KV bytes per token at t = 16 as at 8: the extra GPUs add only the weight room
    # they free, far from 2× the seats
    assert 1 < f.formula.result < 1.2
    concurrency = values(f, "seats_at_h_kv")["max_concurrency"]
    assert isinstance(concurrency, float) and seats_h == int(concurrency)
    # 2 replicas of TP 8 seat 2·seats(h_kv)
    assert (f"{seats_t} seats at t=16 vs {seats_h} at t=8 — {f.formula.result:.2f}× the "
            "sequences for 2× the GPUs") in f.text
    assert (f"the same 16 GPUs as 2 replicas of TP 8 seat {2 * seats_h} "
            f"({2 * seats_h / seats_t:.2f}×)") in f.text
    # the headline: the verdict with its numbers, one clause
    assert f.message == (f"TP 16 > 8 KV heads: {seats_t} seats vs {seats_h} at TP 8 "
                         f"({f.formula.result:.2f}× for 2× the GPUs)")
    assert [a.figures for a in f.alternatives][:1] == [(("seats", 2 * seats_h),)]
    assert f.fix == ("use --tensor-parallel-size 8 and run 2 replicas (data parallel), or keep "
                     "one replica of TP 8 with an fp8 KV cache")
    assert [e.new_text for e in f.edits][:1] == ["8"]


def test_no_gpu_no_seats() -> None:
    f = only(lint_text(Q32, gpu=None), "TP201")
    assert f.severity == Severity.WARNING
    assert "no GPU known: pass --gpu for seats" in f.notes
    # formulas: the replication, max(1, t / h_kv) = 16 / 8 = 2, and kv_B
    assert f.formula is not None and f.formula.name == "kv_replicas"
    assert f.formula.result == 16 / 8 == 2
    _kv(f, 64, 32768)


def test_weights_leave_no_pool_at_t() -> None:
    # On an L4 (24 GB: 22.05 GiB reported, u = 0.92 → 20.29 GiB) 54.91 GiB of weights per GPU
    # at t = 8 leave no pool: TP205 says so, TP201 still names the cliff without seats.
    found = lint_text(Q235, gpu="l4")
    f = only(found, "TP201")
    assert "TP205" in {x.code for x in found}
    assert "no seats quoted: at t=8 the weights leave no KV pool — weights 54.9 GiB per GPU" \
        in f.text
    _kv(f, 94, 48128)


def test_t_equal_h_kv_does_not_fit_so_pipeline_stages() -> None:
    # On an H100 t = 4 holds 109.55 GiB of weights per GPU (109.54 of checkpoint + the rotary
    # cache, 40,960 positions · 128 · 2 B = 10 MiB; > 79.19·0.92 = 72.86 GiB): no
    # replica of TP 4 starts, so the alternative is TP 4 × PP 8/4 = 2 on the same 8 GPUs.
    f = only(lint_text(Q235), "TP201")
    assert f.severity == Severity.WARNING
    assert (f.span.column, f.span.end_column) == _t_span(Q235, "8")[1:]
    _kv(f, 94, 48128)
    w = next(x for x in f.formulas if x.name == "weights_at_h_kv")
    assert w.values["t"] == 4 and w.result > 0.92 * 85031714816  # M·u of an H100 SXM
    assert "t=4 alone does not fit (109.55 GiB of weights per GPU, no seat)" in f.text
    assert f.fix == ("use --tensor-parallel-size 4 --pipeline-parallel-size 2: the same 8 GPUs, "
                     "the cache divided by h_kv")


@pytest.mark.parametrize("text", [
    "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8 --max-model-len 8192",  # t = h_kv
    # MLA caches one latent per token on every rank: TP202's case, not a KV-head cliff
    "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 16 --max-model-len 8192",
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text) if f.code == "TP201"] == []
