"""Predicted SGLang pools against SGLang start-ups that users published (issue 21).

Each row of ``fixtures/observations/sglang-startup.jsonl`` (row = 0-based line number, ``ref``
says where it was published) is in CASES, with every assumption named, or in EXCLUDED with the
reason. The logged pool is ``#tokens`` × the cell SGLang sizes per token (exact; its "K size" is
rounded to 0.01 GiB). Acceptance (issue 21): leave-one-out median |error| ≤ 5 %, none worse
than 15 % or 1 GiB without a stated reason, the vllm#21348 row within 3 %. The terms are pinned
to their SGLang source lines in test_sglang_memory.py.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from tpcheck.formula import GIB
from tpcheck.hardware.gpus import find_gpu
from tpcheck.models import catalog
from tpcheck.models.config import load_config, parse_config
from tpcheck.models.shape import ModelShape
from tpcheck.physics import sglang_memory
from tpcheck.physics.plan import Options, evaluate

FIXTURE = (Path(__file__).resolve().parents[2] / "fixtures" / "observations"
           / "sglang-startup.jsonl")
MEDIAN_TOL, WORST_TOL, WORST_BYTES, ANCHOR_TOL = 0.05, 0.15, GIB, 0.03
ANCHOR = 0  # vllm-project/vllm#21348: Qwen3-235B-A22B-FP8, 4 × H100, mfs 0.93


@dataclass(frozen=True)
class Case:
    """What a row needs beyond its own fields; every value here is an assumption, named."""

    model: str  # catalog id (the architecture's stand-in where the row's model is not there)
    gpu: str | None  # catalog key; None when the row gives gpu_mem_gib and the card is unnamed
    version: str  # the release the row's date implies
    quantization: str | None = None
    note: str = ""
    pool_miss: str = ""  # a stated reason the row may miss the 15 % / 1 GiB bar


CASES: dict[int, Case] = {
    0: Case("Qwen/Qwen3-235B-A22B-FP8", "h100-sxm", "0.4.9", quantization="fp8",
            note="July 2025 (0.4.9); FP8 checkpoint"),
    1: Case("Qwen/Qwen2.5-32B", "l4", "0.4.3",
            note="QwQ-32B is Qwen2.5-32B's architecture (64 layers, 8 KV heads, d 5120, "
                 "f 27648, V 152064)"),
    2: Case("meta-llama/Llama-3.1-8B-Instruct", "h100-sxm", "0.4.1"),
    3: Case("meta-llama/Llama-3.1-8B-Instruct", "h100-sxm", "0.4.4"),
    4: Case("Qwen/Qwen2.5-7B", "rtx-3090", "0.4.2",
            note="DeepSeek-R1-Distill-Qwen-7B is Qwen2.5-7B's architecture",
            pool_miss="a desktop card under Windows/WSL2: 0.82 GiB was gone before SGLang "
                      "started (23.58 − 22.76), twice the context of the datacenter rows"),
    5: Case("Qwen/Qwen3-14B", None, "0.4.6",
            note="card not named: the row's gpu_mem_gib (47.54 GiB, 49,140 MiB parts)"),
}

EXCLUDED: dict[int, str] = {
    6: "GPU and model not named (a LlamaForCausalLM 8B on some 24 GB card)",
    7: "four SGLang servers share one GPU: T is what the others left, not the card",
    8: "hybrid GDN model with CPU experts (ktransformers); model not in the catalog",
    9: "hybrid linear-attention NVFP4 model with a draft pool; model not named",
    10: "DP attention with a sparse-attention indexer in the pool (DeepSeek-V3.2-Exp)",
    11: "no pool line: a baseline measurement only (it fixes NVLINK_COMM_BYTES and C)",
    12: "state pool only: a reduced 8-layer Qwen3.5-MoE with dummy weights, not in the catalog "
        "(it pins the linear-attention state and cell in test_sglang_pools.py)",
    13: "MLA KV size only: Kimi-K2.6's INT4 compressed-tensors weights and the H20's memory are "
        "not in the catalog, and its weights per card are an estimate, not a logged figure (it "
        "pins MLA's single KV size in test_sglang_pools.py)",
}


def load_rows(path: Path = FIXTURE) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@lru_cache(maxsize=16)
def _shape(model_id: str) -> ModelShape:
    e = catalog.find(model_id)
    assert e is not None, f"{model_id} not in the catalog"
    return parse_config(load_config(e.config_path), name=model_id)


def _num(row: dict[str, object], key: str) -> float | None:
    v = row.get(key)
    return float(v) if isinstance(v, (int, float)) else None


@dataclass(frozen=True)
class Prediction:
    row: int
    model: str
    version: str
    pool_gib: float
    tokens: int
    logged_tokens: int
    cell_bytes: float
    weights_gib: float
    logged_weights_gib: float | None

    @property
    def logged_pool_gib(self) -> float:
        return self.logged_tokens * self.cell_bytes / GIB

    @property
    def pool_error(self) -> float:
        return (self.pool_gib - self.logged_pool_gib) / self.logged_pool_gib

    @property
    def pool_miss_bytes(self) -> float:
        return abs(self.pool_gib - self.logged_pool_gib) * GIB

    @property
    def tokens_error(self) -> float:
        return (self.tokens - self.logged_tokens) / self.logged_tokens


def memory_of(row: dict[str, object], case: Case) -> int:
    gib = _num(row, "gpu_mem_gib")
    if gib is not None:
        return round(gib * GIB)
    gpu = find_gpu(case.gpu or "")
    assert gpu is not None, case.gpu
    return gpu.usable_bytes


def predict(i: int, row: dict[str, object], case: Case,
            context_bytes: float | None = None) -> Prediction:
    shape = _shape(case.model)
    gpu = find_gpu(case.gpu) if case.gpu else None
    mem = memory_of(row, case)
    t = int(row.get("tp") or 1)  # type: ignore[call-overload]
    mfs = _num(row, "mem_fraction_static")
    assert mfs is not None, f"row {i}: mem_fraction_static missing"
    opts = Options(engine="sglang", engine_version=case.version, gpu=gpu, memory=mem,
                   utilization=mfs, quantization=case.quantization)
    ev = evaluate(shape, t, opts)
    assert ev.pool is not None and ev.tokens is not None
    pool = ev.pool.result
    if context_bytes is not None:  # the same budget with a refitted context
        pool = sglang_memory.pool_per_gpu(
            memory=mem, mfs=mfs, weights=ev.weights.result, t=t,
            nvlink=gpu is None or gpu.link.startswith("nvlink"), version=case.version,
            context_bytes=context_bytes).result
    cell = ev.kv_bytes_per_token.result
    tokens = int(sglang_memory.pool_tokens(pool, cell, 1, case.version).result)
    logged = row.get("kv_tokens")
    assert isinstance(logged, int)
    return Prediction(i, case.model, case.version, pool / GIB, tokens, logged, cell,
                      ev.weights.result / GIB, _num(row, "weights_gib"))


def measured_context(i: int, row: dict[str, object]) -> float | None:
    """The row's own M − 'avail mem' before load − dist-init usage (bytes), where measurable."""
    before = _num(row, "avail_before_load_gib")
    if before is None or i in (4, 5, 7):  # desktop under WSL2; card not named; shared GPU
        return None
    gpu_key = CASES[i].gpu if i in CASES else ("h200" if i == 11 else None)
    gpu = find_gpu(gpu_key or "")
    if gpu is None:
        return None
    return gpu.usable_bytes - (before + (_num(row, "dist_init_gib") or 0.0)) * GIB


def leave_one_out() -> list[tuple[Prediction, float]]:
    """Each row predicted with the context refitted (median) on the other rows measuring it."""
    rows = load_rows()
    ctx = {i: c for i in range(len(rows)) if (c := measured_context(i, rows[i])) is not None}
    out = []
    for i, case in sorted(CASES.items()):
        fit = statistics.median([c for j, c in ctx.items() if j != i])
        out.append((predict(i, rows[i], case, context_bytes=fit), fit))
    return out


def table() -> list[Prediction]:
    rows = load_rows()
    return [predict(i, rows[i], c) for i, c in sorted(CASES.items())]


# ----------------------------------------------------------------------------------- tests


def test_every_row_is_used_or_excluded_with_a_reason() -> None:
    rows = load_rows()
    assert len(rows) >= 10
    assert set(CASES) | set(EXCLUDED) == set(range(len(rows)))
    assert not set(CASES) & set(EXCLUDED)
    assert all(isinstance(r.get("ref"), str) and r["ref"] for r in rows)


def test_logged_k_size_is_tokens_times_the_cell() -> None:
    """SGLang's "K size" (GiB, memory_pool.py GB = 1024³) is #tokens × half the cell: the
    cell tpcheck computes is SGLang's (K and V of every layer at the rank's KV heads)."""
    rows = load_rows()
    for p in table():
        k = _num(rows[p.row], "k_size_gib")
        assert k is not None
        assert p.logged_tokens * p.cell_bytes / 2 / GIB == pytest.approx(k, abs=0.006), p.row


def test_anchor_row_within_3_percent() -> None:
    """vllm#21348: 367,404 tokens, K 8.23 GiB; before issue 21 tpcheck said 18.54 GiB (+12.6 %)."""
    p = predict(ANCHOR, load_rows()[ANCHOR], CASES[ANCHOR])
    assert abs(p.pool_error) <= ANCHOR_TOL, (p.pool_gib, p.logged_pool_gib)
    assert abs(p.tokens_error) <= ANCHOR_TOL, (p.tokens, p.logged_tokens)


def test_leave_one_out_median_and_worst() -> None:
    errs = [(p, abs(p.pool_error)) for p, _ in leave_one_out()]
    assert statistics.median(e for _, e in errs) <= MEDIAN_TOL, [(p.row, e) for p, e in errs]
    for p, e in errs:
        if CASES[p.row].pool_miss:
            continue
        assert e <= WORST_TOL or p.pool_miss_bytes <= WORST_BYTES, (p.row, e)


@pytest.mark.parametrize("i", sorted(CASES))
def test_row_within_15_percent_or_1_gib(i: int) -> None:
    p = predict(i, load_rows()[i], CASES[i])
    assert abs(p.pool_error) <= WORST_TOL or p.pool_miss_bytes <= WORST_BYTES, (
        p.pool_gib, p.logged_pool_gib)


def test_the_t_fraction_is_what_the_log_solves_to() -> None:
    """Row 1 printed everything between the two measurements: T = 21.63 GiB free before the
    weights, 6.09 GiB free after them, mfs 0.85; SGLang's rest = 6.09 − 21.63·0.15 =
    2.8455 GiB, which at Qwen2.5-32B's 64 KiB cell at TP 4 (64 layers · 2 heads · 128 · 2 · 2 B)
    is 46,620 tokens: the log says 46,611 (its GB figures are rounded to 0.01)."""
    rest = 6.09 - 21.63 * (1 - 0.85)
    assert int(rest * GIB // (64 * 2 * 128 * 2 * 2)) == pytest.approx(46611, rel=5e-4)
