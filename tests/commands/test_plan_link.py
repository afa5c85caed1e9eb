"""``tpcheck plan --link``: the all-reduce share per t, and the seeds' PCIe Gen5 prefill claim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tpcheck.physics import comm

ROOT = Path(__file__).resolve().parents[2]
# DESIGN.md's plan row keys: all still there (keys may be added, none renamed)
ROW_KEYS = {"tp", "legal", "refusals", "kv_heads_per_gpu", "kv_replicas", "weights_bytes_per_gpu",
            "kv_bytes_per_token_per_gpu", "pool_bytes_per_gpu", "kv_pool_tokens",
            "max_concurrency", "seats", "allreduce_bytes_per_token_per_gpu",
            "decode_step_seconds", "comm_share"}
MODEL = "meta-llama/Llama-3.1-70B-Instruct"  # L = 80, d = 8192, bf16, P = 70.55e9 (catalog)


def plan(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "tpcheck.cli", "plan", *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


def plan_json(*args: str) -> dict[str, object]:
    p = plan(MODEL, "--gpu", "h100-sxm", "--format", "json", *args)
    assert p.returncode == 0, p.stderr
    doc: dict[str, object] = json.loads(p.stdout)
    return doc


def test_link_json_keys_and_prefill_share_pcie5() -> None:
    doc = plan_json("--link", "pcie5", "--tp", "2,4,8", "--batch", "256")
    link = doc["link"]
    assert isinstance(link, dict)
    # PCIe Gen5 x16, 64 GB/s one way, priced by physics.collective: 8 PCIe ranks run NCCL
    # (no custom kernel past 2 PCIe GPUs), ring busbw ETA_PCIE·64 = 0.624·64 = 39.94 GB/s,
    # α 42 µs (nccl#1530's 8-byte row); links.py's assumed 20 µs and the 64 GB/s peak before
    assert (link["key"], link["alpha"]) == ("pcie5", 42e-6)
    assert link["bandwidth"] == pytest.approx(0.624 * 64e9)
    rows = doc["rows"]
    assert isinstance(rows, list)
    p = 70_553_706_496  # Llama-3.1-70B parameters as tpcheck counts them (physics/split.py)
    for r in rows:
        assert set(r) >= ROW_KEYS
        t = r["tp"]
        # prefill chunk of 8192 tokens (vLLM 0.33 serve default on an 80 GB H100), the first
        # (c0 = 0) on step.prefill_chunk: the rest = (2·P·n + 4·L·h·d_h·n(n+1)/2)/(t·π·η) with
        # L = 80, h = 64, d_h = 128, η = 0.6; comm (2L+1)·(α + 2(t−1)/t·n·d·b/B)
        rest = (2 * p * 8192 + 4 * 80 * 64 * 128 * 8192 * 8193 / 2) / (t * 989.4e12 * 0.6)
        # 128 MiB all-reduces: NCCL ring/Simple on PCIe at any t, 42 µs + bytes/39.94 GB/s
        comm_t = 161 * (42e-6 + 2 * (t - 1) / t * 8192 * 8192 * 2 / (0.624 * 64e9))
        assert r["prefill_tokens"] == 8192
        assert r["prefill_comm_share"] == pytest.approx(comm_t / rest, rel=1e-9)
    shares = {r["tp"]: r["prefill_comm_share"] for r in rows}
    # what the all-reduces add to the rest of the chunk: TP2 0.548/1.048 s ≈ 52%, TP4
    # 0.818/0.524 s ≈ 156%, TP8 0.954/0.262 s ≈ 364% (at the x16 peak and 20 µs: 33%, 97%,
    # 227%; see the next test for the seeds' "about half", a share of the whole chunk at peak)
    assert shares[2] == pytest.approx(0.523, abs=0.005)
    assert shares[4] == pytest.approx(1.562, abs=0.005)
    assert shares[8] == pytest.approx(3.641, abs=0.005)


def test_seeds_pcie5_prefill_about_half_is_the_break_even_point() -> None:
    # The issue's reading of the seeds: "on PCIe Gen5 the prefill chunk spends about half its
    # time adding partial sums". No seed line says this with a t; it follows from the chapter's
    # intensity argument: prefill comm/compute = (π/B) / I(t), so comm is exactly half the
    # chunk's time (bandwidth term, α = 0) where I(t) = π/B, i.e. at the break-even t.
    p, layers, d, b, flops, bw = 70e9, 80, 8192, 2, 989.4e12, 64e9  # the seeds' Llama-3-70B
    be = comm.breakeven_tp(p, layers, d, b, flops, bw).result
    # t* = 1 + 70e9·64e9 / (2·80·8192·2·989.4e12) = 1 + 1.727 = 2.73
    assert be == pytest.approx(2.727, abs=0.005)

    def share(t: float) -> float:
        # the same chunk at a fractional t, embedding all-reduce left out as in the seed's 4L
        compute = 2 * p / (t * flops)
        comm_s = 2 * layers * 2 * (t - 1) / t * d * b / bw
        return comm_s / (compute + comm_s)

    assert share(be) == pytest.approx(0.5, abs=1e-9)
    # Through the public function at whole t (α = 0, n = 8192): TP2 below half, TP4 above,
    # so "about half" holds for TP 2-4 on PCIe Gen5 and is an understatement at TP 8 (80%).
    f2, f4, f8 = (comm.prefill_chunk(params_active=p, tokens=8192, t=t, flops=flops,
                                     layers=layers, hidden=d, b=b, link_bw=bw, alpha=0.0).result
                  for t in (2, 4, 8))
    assert f2 == pytest.approx(0.367, abs=0.005)
    assert f4 == pytest.approx(0.635, abs=0.005)
    assert f8 == pytest.approx(0.802, abs=0.005)


def test_link_decode_share_matches_the_step_model() -> None:
    doc = plan_json("--link", "ib-ndr", "--tp", "16", "--batch", "1")
    rows = doc["rows"]
    assert isinstance(rows, list) and len(rows) == 1
    r: dict[str, float] = rows[0]
    # T_comm / T_weights with 161 all-reduces of α = 30 µs + 2·15/16·8192·2 B / 50 GB/s
    t_comm = 161 * (30e-6 + 2 * 15 / 16 * 8192 * 2 / 50e9)
    # the step reads the checkpoint's share: the row's weights less the 32 MiB rotary cache
    # (131,072 positions · 128 · 2 B) every rank holds but does not read whole, and less the
    # caching allocator's block slack, counted but never read: the embedding's and the LM
    # head's 128,256/16 = 8,016 rows · 8,192 · 2 B = 125.25 MiB each sit in 126 MiB blocks
    # (0.75 MiB each; QKV 12, gate_up 56, down 28 MiB are whole 2 MiB multiples, o_proj 8 MiB
    # is below the 10 MiB large-block size: physics/alloc.py)
    slack = 2 * (126 * 2**20 - 8016 * 8192 * 2)
    assert slack == 1_572_864
    t_w = (r["weights_bytes_per_gpu"] - 131_072 * 128 * 2 - slack) / 3.35e12
    assert r["comm_share"] == pytest.approx(t_comm / t_w, rel=1e-9)


def test_default_link_is_the_gpus_own() -> None:
    doc = plan_json("--tp", "8")
    link = doc["link"]
    assert isinstance(link, dict)
    # H100 SXM: NVLink 4, 450 GB/s one way, priced by physics.collective for vLLM 0.33 at 8
    # ranks: B at 1 GiB is NCCL's NVLS, 0.60·450·7/4 = 472.5 GB/s busbw; α at 8 KiB is
    # FlashInfer's all-reduce priced as the custom kernel, 9 µs (the plan's 10 µs before)
    assert (link["key"], link["alpha"]) == ("nvlink4", 9e-6)
    assert link["bandwidth"] == pytest.approx(472.5e9)


def test_text_table_has_the_comm_column() -> None:
    p = plan(MODEL, "--gpu", "h100-sxm", "--link", "pcie5", "--tp", "1,8", "--batch", "256",
             "--width", "300")  # the legend on one line
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "comm dec/pre" in out
    assert "link PCIe Gen5 x16, busbw ≈ 39.9 GB/s" in out  # 0.624·64 GB/s, NCCL ring
    row8 = next(ln for ln in out.splitlines() if ln.split()[:2] == ["8", "yes"])
    doc = plan_json("--link", "pcie5", "--tp", "8", "--batch", "256")
    rows = doc["rows"]
    assert isinstance(rows, list) and len(rows) == 1
    r: dict[str, float] = rows[0]
    cell = f"{r['comm_share'] * 100:,.0f}%/{r['prefill_comm_share'] * 100:,.0f}%"
    assert cell in row8


def test_unknown_link_is_a_usage_error() -> None:
    p = plan(MODEL, "--gpu", "h100-sxm", "--link", "carrier-pigeon")
    assert p.returncode == 2
    assert "unknown link 'carrier-pigeon'" in p.stderr and "Traceback" not in p.stderr


def test_nodes_and_network_price_the_spanning_rows() -> None:
    """``--nodes 2 --network 4x200G-roce``: the sweep stops at 2 × 8 GPUs, and TP 16 crosses
    the given network (physics.collective), not the assumed 8 × 400G InfiniBand."""
    doc = plan_json("--nodes", "2", "--network", "4x200G-roce")
    rows = doc["rows"]
    assert isinstance(rows, list)
    assert max(r["tp"] for r in rows) == 16 and 16 in {r["tp"] for r in rows}
    r16 = next(r for r in rows if r["tp"] == 16)
    # the node's 800 Gb/s as the physics holds it: one share per GPU, 8 × 100 Gb/s
    assert r16["allreduce_link"] == "roce-8x100"
    # the prefill chunk's 161 all-reduces of 8192·8192·2 B = 128 MiB: NVLS-tree over the two
    # nodes at min(0.90·4·25 GB/s·15/8, 472.5) = 168.75 GB/s, α 115 µs (RoCE takes IB's α)
    # = 115 + 1.875·128 MiB/168.75 GB/s = 1,606.3 µs each
    p = 70_553_706_496
    compute = (2 * p * 8192 + 4 * 80 * 64 * 128 * 8192 * 8193 / 2) / (16 * 989.4e12 * 0.6)
    comm_t = 161 * (115e-6 + 1.875 * 8192 * 8192 * 2 / 168.75e9)
    assert r16["prefill_chunk_seconds"] == pytest.approx(compute + comm_t, rel=1e-9)
    assert r16["prefill_comm_share"] == pytest.approx(comm_t / compute, rel=1e-9)
    assert comm_t == pytest.approx(0.2586, rel=1e-3)
    # the assumed 8 × 400G: NVLS-capped at 472.5 GB/s, 115 + 532.6 µs each
    base = next(r for r in plan_json("--tp", "16")["rows"])  # type: ignore[union-attr]
    assert base["prefill_chunk_seconds"] == pytest.approx(
        compute + 161 * (115e-6 + 1.875 * 8192 * 8192 * 2 / 472.5e9), rel=1e-9)
    # the text names the given network, not the assumed one
    out = plan(MODEL, "--gpu", "h100-sxm", "--nodes", "2", "--network", "4x200G-roce").stdout
    assert "spans nodes: the network (4×200G roce per node, given;" in " ".join(out.split())


def test_nodes_bound_the_tp_sizes() -> None:
    p = plan(MODEL, "--gpu", "h100-sxm", "--nodes", "1", "--tp", "16")
    assert p.returncode == 2 and "TP 16 needs more than the 8 GPUs of 1 node(s)" in p.stderr
    doc = plan_json("--nodes", "4", "--gpus-per-node", "4", "--tp", "8")
    [r] = doc["rows"]  # type: ignore[misc]
    # 4 GPUs per node: TP 8 spans 2 nodes, on the assumed HGX network (no --network)
    assert r["allreduce_link"] == "ib-8x400"
    q = plan(MODEL, "--gpu", "h100-sxm", "--network", "lots")
    assert q.returncode == 2 and "'lots' is not a network" in q.stderr
