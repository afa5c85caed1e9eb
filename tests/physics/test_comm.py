"""The seeds' communication figures, reproduced through the public physics functions."""

from __future__ import annotations

import pytest

from tpcheck.formula import MIB
from tpcheck.physics import comm

# Llama-3-70B as the seeds use it (tp-engines-chapter.txt): L = 80, d = 8192, bf16, P = 70e9.
L, D, B = 80, 8192, 2
P_SEED = 70.0e9


def test_allreduce_bytes_per_token_tp8_is_4_375_mib() -> None:
    # 2L · 2(t−1)/t · d·b = 160 · 1.75 · 16 KiB = 4.375 MiB (seed, "one token's residual slice")
    f = comm.allreduce_bytes_per_token(L, D, B, 8)
    layers = next(x for x in f.terms if x.name == "allreduce_layers")
    assert layers.result == pytest.approx(4.375 * MIB)
    # plus the vocab embedding's single all-reduce: 1.75 · 16 KiB = 28 KiB
    assert f.result == pytest.approx(4.375 * MIB + 1.75 * 16 * 1024)
    # at 450 GB/s one way: 4.375 MiB / 450e9 = 10.19 µs (seed)
    assert layers.result / 450e9 == pytest.approx(10.19e-6, rel=1e-3)


def test_allreduce_is_zero_at_tp1() -> None:
    assert comm.allreduce_bytes_per_token(L, D, B, 1).result == 0
    assert comm.allreduce_time(1e6, 1, 450e9, 10e-6).result == 0


def test_interconnect_intensity_tp8() -> None:
    # I = P / (2·L·(t−1)·d·b) = 70e9 / (2·80·7·8192·2) = 3,814.6 FLOP/B (seed: 3,815)
    f = comm.interconnect_intensity(P_SEED, L, D, B, 8)
    assert f.result == pytest.approx(70e9 / (2 * 80 * 7 * 8192 * 2))
    assert f.result == pytest.approx(3815, rel=1e-3)


@pytest.mark.parametrize(
    ("link_bw", "expected"),
    [
        # NVLink 4: π/B = 989.4e12 / 450e9 = 2,198.7 → t* = 1 + 70e9/(2·80·8192·2·2198.7) ≈ 13.1
        (450e9, 13.1),
        # InfiniBand NDR 400 Gb/s = 50 GB/s: π/B = 19,788 → t* ≈ 2.35 (seed)
        (50e9, 2.35),
    ],
)
def test_breakeven_tp(link_bw: float, expected: float) -> None:
    f = comm.breakeven_tp(P_SEED, L, D, B, 989.4e12, link_bw)
    assert f.result == pytest.approx(expected, abs=0.05)


def _step(t: int, batch: int, alpha: float, weights: float, kv_b: float, ctx: int) -> float:
    return comm.decode_step(
        weights_per_gpu=weights, hbm_bw=3.35e12, batch=batch, context=ctx,
        kv_bytes_per_token_per_gpu=kv_b, layers=L, hidden=D, b=B, t=t, link_bw=450e9,
        alpha=alpha, embedding_allreduce=False,
    ).result


def test_comm_share_of_decode_floor_batch_256() -> None:
    # Seed: at batch 256 the comm bill is 49.8 % of the floor at TP8 and 220 % at TP32, where the
    # floor is 131 GiB / t / 3.35 TB/s and comm is the bandwidth term only (α = 0, no KV read).
    w = 131 * (1 << 30)
    for t, expected in ((8, 0.498), (32, 2.20)):
        step = comm.decode_step(
            weights_per_gpu=w / t, hbm_bw=3.35e12, batch=256, context=0,
            kv_bytes_per_token_per_gpu=0, layers=L, hidden=D, b=B, t=t, link_bw=450e9,
            alpha=0.0, embedding_allreduce=False,
        )
        assert comm.comm_share(step).result == pytest.approx(expected, rel=0.01)


def test_deployer_cost_model_table() -> None:
    # tp-inference-deployer.txt §7: WEIGHT_BYTES = 70.6e9·2, KV_PER_TOKEN = 320 KiB whole model,
    # CTX 4096, α = 10 µs, HBM 3.35 TB/s, NVLink 450 GB/s; KV per GPU = 320 KiB / min(t, 8).
    def step(t: int, batch: int) -> float:
        return _step(t, batch, 10e-6, 70.6e9 * 2 / t, 320 * 1024 / min(t, 8), 4096)

    assert step(8, 64) * 1e3 == pytest.approx(10.73, abs=0.01)
    assert step(1, 1) * 1e3 == pytest.approx(42.55, abs=0.01)
    assert step(8, 1) * 1e3 == pytest.approx(6.93, abs=0.01)
    # "TP 1 → 8 cuts single-request step time from 42.6 ms to 6.9 ms, about 6.1×"
    assert step(1, 1) / step(8, 1) == pytest.approx(6.1, abs=0.05)
