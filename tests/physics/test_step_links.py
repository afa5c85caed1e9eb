"""The step's all-reduces run on the TP group's real link: the network once the group spans nodes.

Issue 22, item 1: TP201's speed figure used NVLink for a t=16 group over 2×8 H100. Every expected
time is derived beside its assertion from the catalog figures it stands on: InfiniBand NDR
400 Gb/s = 50 GB/s per GPU and α = 30 µs across nodes, NVLink 4 450 GB/s and α = 10 µs inside.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.physics.test_step import shape_of
from tpcheck.hardware.gpus import find_gpu
from tpcheck.hardware.links import find_link
from tpcheck.physics import step
from tpcheck.physics.plan import Options, evaluate
from tpcheck.record import replace

LLAMA70 = "meta-llama/Meta-Llama-3-70B-Instruct"  # L = 80, d = 8192, bf16
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "manifests" / "topology"


def _opts(**kw: object) -> Options:
    base: dict[str, object] = {"engine_version": "0.5.4", "gpu": find_gpu("h100-sxm"),
                               "batch": 8, "context": 512}
    base.update(kw)
    return Options(**base)  # type: ignore[arg-type]


def test_tp16_over_two_hgx_h100_nodes_all_reduces_on_the_network() -> None:
    ev = evaluate(shape_of(LLAMA70), 16, _opts())
    assert ev.floor is not None and ev.step is not None
    assert ev.allreduce_link == "ib-8x400"  # the assumed HGX node: 8 × 400G InfiniBand
    # n_AR = 2·80 + 1 = 161 all-reduces of S = batch·d·b = 8·8192·2 = 131,072 B each, a
    # latency-regime message: ring/LL across the nodes (physics.collective), α = 31 µs
    # (nccl-tests#309's 2 × 8 H100 rows), B = 0.12 · 8·50 GB/s = 48 GB/s
    assert ev.floor.values["B"] == 48e9 and ev.floor.values["α"] == pytest.approx(31e-6)
    # T_AR = 31 µs + 2·15/16·131,072 / 48e9 = 31 + 5.12 = 36.12 µs; 161 · 36.12 µs = 5.815 ms
    t_comm = next(x for x in ev.floor.terms if x.name == "T_comm").result
    assert t_comm == pytest.approx(5.815e-3, rel=1e-3)
    # Calibrated (vLLM 0.5.x on Hopper, k = 1): a·T_mem + c·L + n_AR·α + k·T_bw.
    era = step.era_for("vllm", "0.5.4", "h100-sxm")
    assert era is not None and era.k == 1.0
    t_mem = sum(x.result for x in ev.floor.terms if x.name in ("T_weights", "T_kv"))
    expect = era.a * t_mem + era.c * 80 + 161 * 31e-6 + 161 * 1.875 * 131_072 / 48e9
    assert ev.step.result == pytest.approx(expect, rel=1e-9)
    assert "all-reduces across nodes on InfiniBand 8 × 400 Gb/s per node" in ev.step.source
    assert "assumed" in ev.step.source
    # Inside one node the same group of 8 stays on NVLink, where vLLM 0.5.4 runs its custom
    # kernel below 8 MiB (physics.collective, α 9 µs, B 250 GB/s): 161·(9 µs + 2·7/8·131,072
    # / 250e9) = 161·9.918 µs = 1.597 ms (10 µs and the link's 450 GB/s gave 1.692 ms)
    eight = evaluate(shape_of(LLAMA70), 8, _opts())
    assert eight.allreduce_link == "nvlink4" and eight.floor is not None
    t8 = next(x for x in eight.floor.terms if x.name == "T_comm").result
    assert t8 == pytest.approx(161 * (9e-6 + 1.75 * 131_072 / 250e9), rel=1e-9)
    assert t8 == pytest.approx(1.597e-3, rel=1e-3)


def test_the_node_size_and_network_given_win() -> None:
    efa = find_link("efa-400")
    assert efa is not None
    # 4 GPUs per node: t = 8 already spans two nodes; the named network (EFA 400 Gb/s per GPU)
    # is used: 4 NICs per node, ring/LL at 0.12 · 4·50 GB/s = 24 GB/s for batch 8's 128 KiB
    ev = evaluate(shape_of(LLAMA70), 8, _opts(gpus_per_node=4, network=efa))
    assert ev.allreduce_link == "efa-4x400" and ev.floor is not None
    assert ev.floor.values["B"] == 24e9
    # An explicit link (plan --link) is the user's statement about the whole group: kept.
    given = evaluate(shape_of(LLAMA70), 16, _opts(link_bandwidth=450e9))
    assert given.floor is not None and given.floor.values["B"] == 450e9
    assert given.allreduce_link is None
    # GB200 NVL72: the NVLink domain is 72 GPUs, so TP 16 is still NVLink
    gb = evaluate(shape_of(LLAMA70), 16, _opts(gpu=find_gpu("gb200")))
    assert gb.allreduce_link == "nvlink5"


def test_k_fitted_on_nvlink_is_not_carried_across_nodes() -> None:
    # vLLM 0.7.x on A100 fits k > 1 on NVLink rows; across nodes the step uses k = 1 and says so
    era = step.era_for("vllm", "0.7.2", "a100-sxm-80gb")
    assert era is not None and era.k > 1
    ev = evaluate(shape_of("Qwen/QwQ-32B"), 16,
                  _opts(engine_version="0.7.2", gpu=find_gpu("a100-sxm-80gb")))
    assert ev.step is not None and ev.step.values["k"] == 1.0
    assert f"the sweeps' k = {era.k:g} is NVLink's" in ev.step.source


def test_tp201_speed_uses_the_instance_network_for_the_spanning_group() -> None:
    """TP 16 over two p5.48xlarge pods: the t=16 side all-reduces on EFA (3,200 Gb/s for 8
    GPUs: 8 NICs of 400 Gb/s), the 2 replicas of TP 8 on NVLink; the gain is redone here."""
    from tpcheck.lint import Linter
    from tpcheck.settings import Settings

    res = Linter(Settings(offline=True, select=("TP201",), gpu="h100-sxm")).run(
        [str(FIXTURES / "lws-tp16-2x8-p5.yaml")])
    assert not res.errors, res.errors
    [f] = res.findings
    assert "t=16 spans nodes, its all-reduces run on p5.48xlarge network" in f.text
    speed = next(x for x in f.formulas if x.name == "decode_speed_gain")
    alt, mine = speed.terms
    t16, t8 = mine.terms[0], alt.terms[0]
    # batch 12: 12·8192·2 = 196,608 B, ring/LL at 0.12 · 8·50 GB/s = 48 GB/s, α = 31 µs
    assert t16.terms[0].values["B"] == 48e9
    assert t16.terms[0].values["α"] == pytest.approx(31e-6)
    # the t=8 side: batch b8·8192·2 B ≤ 0.5 MiB, vLLM 0.33's FlashInfer all-reduce, priced as
    # the custom kernel (physics.collective.FI_SRC): B = 250 GB/s, α = 9 µs
    assert t8.terms[0].values["B"] == 250e9 and t8.terms[0].values["α"] == 9e-6
    b16, b8 = int(str(speed.values["batch(t)"])), int(str(speed.values["batch(h_kv)"]))
    shape = shape_of("meta-llama/Llama-3.1-70B-Instruct")
    base = Options(engine_version="0.33.0", gpu=find_gpu("h100-sxm"), context=131072,
                   max_num_seqs=256)
    ndr = find_link("efa-400")  # the p5 network per GPU: 3,200 Gb/s / 8 = 400 Gb/s of EFA
    assert ndr is not None
    net = replace(ndr, key="efa-p5.48xlarge-network")
    s16 = evaluate(shape, 16, replace(base, batch=b16, gpus_per_node=8, network=net)).step
    s8 = evaluate(shape, 8, replace(base, batch=b8)).step
    assert s16 is not None and s8 is not None
    assert speed.result == pytest.approx((2 * b8 / s8.result) / (b16 / s16.result), rel=1e-9)
    # On NVLink (the old figure) the t=16 step was shorter, so the gain was smaller.
    nv = evaluate(shape, 16, replace(base, batch=b16, link_bandwidth=450e9)).step
    assert nv is not None and nv.result < s16.result


def test_tp201_speed_honours_the_users_alpha() -> None:
    """``[tool.tpcheck] alpha`` reaches both steps of TP201's tokens/s gain: the t=16 group
    (across nodes, assumed network) and the 2 replicas of TP 8 (NVLink). Before, only TP301/TP302
    used it; TP201 ran on the link classes' 30 µs and 10 µs."""
    from tpcheck.lint import Linter
    from tpcheck.settings import Settings

    def speed(alpha: float | None) -> tuple[float, float, float, int, int]:
        res = Linter(Settings(offline=True, select=("TP201",), gpu="h100-sxm", alpha=alpha)).run(
            [str(FIXTURES / "lws-tp16-2x8-h100.yaml")])
        assert not res.errors, res.errors
        [f] = res.findings
        g = next(x for x in f.formulas if x.name == "decode_speed_gain")
        alt, mine = g.terms
        a16 = float(str(mine.terms[0].terms[0].values["α"]))
        a8 = float(str(alt.terms[0].terms[0].values["α"]))
        return (g.result, a16, a8, int(str(g.values["batch(t)"])),
                int(str(g.values["batch(h_kv)"])))

    gain0, a16, a8, _, _ = speed(None)
    # the assumed 8×400G network's LL α (31 µs, nccl-tests#309), and on one node
    # vLLM 0.33's FlashInfer all-reduce priced as the custom kernel (9 µs)
    assert (a16, a8) == (pytest.approx(31e-6), 9e-6)
    gain, a16, a8, b16, b8 = speed(100e-6)
    assert (a16, a8) == (100e-6, 100e-6)
    # Redone on the physics with α = 100 µs on both links: gain = (2·b8/T8) / (b16/T16)
    shape = shape_of("meta-llama/Llama-3.1-70B-Instruct")
    base = Options(engine_version="0.33.0", gpu=find_gpu("h100-sxm"), context=131072,
                   max_num_seqs=256, alpha=100e-6)
    s16 = evaluate(shape, 16, replace(base, batch=b16, gpus_per_node=8)).step
    s8 = evaluate(shape, 8, replace(base, batch=b8)).step
    assert s16 is not None and s8 is not None
    assert s16.terms[0].values["B"] == 48e9  # still the network: α changed, not the link
    assert gain == pytest.approx((2 * b8 / s8.result) / (b16 / s16.result), rel=1e-9)
    # 161 fixed costs per step: +70 µs each on t=16, +90 µs on TP 8, so the gain moves
    assert gain != pytest.approx(gain0, rel=1e-3)


def test_one_assumed_network_for_tp301_and_the_step() -> None:
    """TP301's link (checks/_nodes.network) and the step's (linkcost.node_network) are the same
    assumed HGX network (8 × 400G InfiniBand per node), with one "why"."""
    from tpcheck.checks._nodes import network
    from tpcheck.checks.context import CheckContext
    from tpcheck.physics import linkcost
    from tpcheck.settings import Settings
    from tpcheck.sources.base import Deployment, Span

    span = Span("m.yaml", 3, 5, 3, 7)
    d = Deployment(path="m.yaml", engine="vllm", span=span, tensor_parallel_size=16,
                   gpus_requested=8, group_size=2)
    rule = network(CheckContext(d, shape=None, settings=Settings()))
    phys = linkcost.node_network(find_gpu("h100-sxm"), 16)
    assert phys is not None and rule == phys == linkcost.assumed_network(
        gpu=find_gpu("h100-sxm"))
    # B: the bandwidth regime's NVLS-tree, min(0.90·8·50·15/8, 0.60·450·7/4) = 472.5 GB/s;
    # α: the latency regime's ring/LL, 31 µs (nccl-tests#309 2 × 8 H100); said to be assumed
    assert rule.bandwidth.result == pytest.approx(472.5e9)
    assert (rule.alpha.result, rule.assumed) == (pytest.approx(31e-6), True)
    assert rule.bandwidth.source.startswith("ASSUMPTION: " + linkcost.NETWORK_ASSUMED)
    # the user's α replaces the network's and says so
    mine = network(CheckContext(d, shape=None, settings=Settings(alpha=5e-5)))
    assert mine.alpha.result == 5e-5 and mine.alpha.source == "alpha override"
    assert mine.bandwidth == rule.bandwidth


def test_prefill_share_is_the_chunk_models() -> None:
    """linkcost.prefill_share (TP301/TP302, plan --link) on step.prefill_chunk, by hand:
    Llama-3-70B at t = 8 on NVLink 4, n = 2048 tokens, the first chunk (c0 = 0)."""
    from tpcheck.physics import linkcost

    shape = shape_of(LLAMA70)
    gpu = find_gpu("h100-sxm")
    nvl = find_link("nvlink4")
    assert gpu is not None and nvl is not None
    f = linkcost.prefill_share(shape, 8, gpu, linkcost.link_use(nvl), 2048, "given")
    # P = 70.55e9, n = 2048, t = 8, π = 989.4e12, η = 0.6, L = 80, h = 64, d_h = 128:
    # rest = (2·P·n + 4·L·h·d_h·n(n+1)/2) / (t·π·η)
    #      = (2.8899e14 + 2621440·2,098,176) / (8·989.4e12·0.6) = 2.9449e14 / 4.7491e15 = 62.01 ms
    # T_comm = 161·(10 µs + 2·7/8·2048·8192·2 / 450e9) = 161·(10 + 130.5) µs = 22.62 ms
    p = 70_553_706_496
    rest = (2 * p * 2048 + 4 * 80 * 64 * 128 * 2048 * 2049 / 2) / (8 * 989.4e12 * 0.6)
    comm = 161 * (10e-6 + 1.75 * 2048 * 8192 * 2 / 450e9)
    assert rest == pytest.approx(62.01e-3, rel=1e-3)
    assert comm == pytest.approx(22.62e-3, rel=1e-3)
    assert f.result == pytest.approx(comm / rest, rel=1e-9)  # 0.365: 36%
    assert f.values["η"] == step.PREFILL_EFFICIENCY == 0.6
    assert f.terms[0] == step.prefill_chunk(
        step.Prefill(p, 80, 64, 128, 8192, 2, 8, 989.4e12, 450e9, 10e-6), 2048, 0, 0.6)
