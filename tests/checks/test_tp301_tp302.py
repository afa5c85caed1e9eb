"""TP301 (TP across nodes) and TP302 (across sockets / off NVLink), figures derived here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.checks import BY_CODE, tp_crosses_nodes
from tpcheck.checks.base import Finding
from tpcheck.checks.context import CheckContext
from tpcheck.hardware.gpus import find_gpu
from tpcheck.hardware.topology import parse_topology
from tpcheck.lint import Linter
from tpcheck.models import catalog
from tpcheck.models.config import load_config, parse_config
from tpcheck.models.shape import ModelShape
from tpcheck.physics.plan import Options, evaluate
from tpcheck.physics.split import model_params
from tpcheck.settings import Settings
from tpcheck.sources.base import Deployment, Span

ROOT = Path(__file__).resolve().parents[2]
MAN = ROOT / "fixtures" / "manifests" / "topology"
TOPO = ROOT / "fixtures" / "topology"

H100 = find_gpu("h100-sxm")
L40S = find_gpu("l40s")
assert H100 is not None and L40S is not None


def lint(path: Path, code: str, topology: Path | None = None) -> list[Finding]:
    s = Settings(offline=True, select=(code,), topology=str(topology) if topology else None)
    res = Linter(s).run([str(path)])
    assert not res.errors, res.errors
    return [f for f in res.findings if f.code == code]


def shape(model_id: str) -> ModelShape:
    e = catalog.find(model_id)
    assert e is not None
    return parse_config(load_config(e.config_path), name=model_id)


def col_of(path: Path, line: int, token: str) -> int:
    """1-based column of ``token`` on ``line`` (derived from the fixture, not hard-coded)."""
    return path.read_text().splitlines()[line - 1].index(token) + 1


def share_decode(w_gpu: float, hbm: float, t: int, batch: int, d: int, layers: int,
                 bw: float, alpha: float) -> float:
    # n_AR·(α + 2(t−1)/t·batch·d·b/B) / (W_gpu/β), b = 2 (bf16), n_AR = 2L + 1
    return (2 * layers + 1) * (alpha + 2 * (t - 1) / t * batch * d * 2 / bw) / (w_gpu / hbm)


def share_prefill(p: float, n: int, t: int, flops: float, eta: float, layers: int, heads: int,
                  head_dim: int, d: int, bw: float, alpha: float) -> float:
    # The first chunk (c0 = 0) on step.prefill_chunk, b = 2 (bf16):
    # T_comm = (2L+1)·(α + 2(t−1)/t·n·d·b/B); rest = (2·P·n + 4·L·h·d_h·n(n+1)/2)/(t·π·η)
    rest = (2 * p * n + 4 * layers * heads * head_dim * n * (n + 1) / 2) / (t * flops * eta)
    comm = (2 * layers + 1) * (alpha + 2 * (t - 1) / t * n * d * 2 / bw)
    return comm / rest


# ---------------------------------------------------------------------------- TP301
def test_tp301_fires_for_tp16_over_two_8_gpu_pods() -> None:
    path = MAN / "lws-tp16-2x8-h100.yaml"
    [f] = lint(path, "TP301")
    # line 22 is `--tensor-parallel-size 16` in the folded args; the finding underlines the 16
    assert (f.severity.value, f.span.line, f.span.column) == (
        "warning", 22, col_of(path, 22, "16"))
    assert "TP ranks 0–7 on node 0; TP ranks 8–15 on node 1" in f.text
    assert "8 GPUs per pod, 2 pods" in f.text
    # no instance type: an HGX node's 8 × 400G InfiniBand, stated as assumed; B the bandwidth
    # regime's NVLS-tree busbw, min(0.90·8·50·15/8, 0.60·450·7/4) = 472.5 GB/s
    assert "InfiniBand 8 × 400 Gb/s per node, busbw ≈ 472 GB/s (assumed" in f.text
    s = shape("meta-llama/Llama-3.1-70B-Instruct")
    assert H100 is not None
    # the step reads the checkpoint's share, not the 32 MiB rotary cache every rank holds
    w = evaluate(s, 16, Options(gpu=H100)).weights.result - 131_072 * 128 * 2
    # decode: 161 all-reduces over W_gpu/3.35 TB/s, each priced at its size
    # (physics.collective): batch 1, 16 KiB: ring/LL, α = 31 µs, B = 0.12·400 GB/s;
    # batch 256, 4 MiB: NVLS-tree/Simple, α = 115 µs, B = 472.5 GB/s (131.6 µs, against
    # 136.8 µs for the ring and 211.8 µs for LL)
    d1 = share_decode(w, 3.35e12, 16, 1, 8192, 80, 48e9, 31e-6)
    d256 = share_decode(w, 3.35e12, 16, 256, 8192, 80, 472.5e9, 115e-6)  # --max-num-seqs 256
    # 161·31.64 µs = 5.094 ms vs 8.99 GB/3.35 TB/s = 2.683 ms (31 + 17 µs gave 2.92)
    assert d1 == pytest.approx(1.898, abs=0.01)
    assert f"{d1 * 100:,.0f}% at batch 1, {d256 * 100:,.0f}% at batch 256" in f.text
    # prefill: vLLM 0.33 serve default max_num_batched_tokens on an H100 (≥ 70 GiB) = 8192
    p = model_params(s, active=True)
    # P = 70.55e9, n = 8192, t = 16, π = 989.4 TFLOP/s, η = 0.6 (step.PREFILL_EFFICIENCY),
    # L = 80, h = 64, d_h = 128, d = 8192, b = 2; the 128 MiB messages run NVLS-tree/Simple,
    # B = 472.5 GB/s, α = 115 µs:
    # T_linear = 2·70.55e9·8192 / (16·989.4e12) = 73.02 ms; T_attn = 4·80·64·128·8192·8193/2
    # / (16·989.4e12) = 5.557 ms; rest = (73.02 + 5.557)/0.6 = 131.0 ms
    # T_comm = 161·(115 µs + 1.875·8192·8192·2 / 472.5e9) = 161·647.6 µs = 104.3 ms
    pre = share_prefill(p, 8192, 16, 989.4e12, 0.6, 80, 64, 128, 8192, 472.5e9, 115e-6)
    assert pre == pytest.approx(104.3 / 131.0, rel=1e-3)  # 0.80: 80% (one NIC's 50 GB/s
    # and 30 µs gave 622%)
    assert (f"they add {pre * 100:,.0f}% to the rest of a 8,192-token prefill chunk "
            "(compute at η = 0.6, assumed)") in f.text
    share = next(x for x in f.formulas if x.name == "prefill_comm_share")
    assert share.result == pytest.approx(pre, rel=1e-9)
    assert share.terms[0].name == "prefill_chunk_seconds"
    assert share.values["T_chunk"] == pytest.approx((104.3 + 131.0) / 1000, rel=1e-3)
    # break-even t = 1 + P·B / (2·L·d·b·π) = 1 + 70.55e9·472.5e9/(2·80·8192·2·989.4e12)
    # ≈ 13.85 (the seed's 2.35 is one NIC's 50 GB/s)
    be = 1 + p * 472.5e9 / (2 * 80 * 8192 * 2 * 989.4e12)
    assert be == pytest.approx(13.85, abs=0.01)
    assert f"TP stops paying past t ≈ {be:.2f}" in f.text
    assert f.fix is not None and f.fix.startswith(
        "use --tensor-parallel-size 8 --pipeline-parallel-size 2 (TP = GPUs per node, PP = nodes)")
    assert "2 data-parallel replicas of TP 8" in f.fix
    names = [x.name for x in f.formulas]
    assert names[:3] == ["nodes", "B", "α"] and "breakeven_tp" in names
    assert f.formulas[1].source.startswith("ASSUMPTION")
    # the node size came from the pod's GPU limit: related span on `nvidia.com/gpu: "8"`
    assert f.related and f.related[0][0].line == 27


def test_tp301_quiet_for_tp8_pp2_over_two_8_gpu_pods() -> None:
    assert lint(MAN / "lws-tp8-pp2-2x8-h100.yaml", "TP301") == []


def test_tp301_p5_network_from_the_instance_type() -> None:
    [f] = lint(MAN / "lws-tp16-2x8-p5.yaml", "TP301")
    # AWS P5 page: 3,200 Gb/s EFA for 8 H100 → 8 NICs of 400 Gb/s, not assumed: the same
    # NVLS-tree busbw as the assumed HGX node, min(0.90·400·15/8, 0.60·450·7/4) = 472.5 GB/s
    assert "p5.48xlarge network (3,200 Gb/s for 8 GPUs), busbw ≈ 472 GB/s" in f.text
    assert "(assumed: no instance type" not in f.text  # only the prefill η is assumed
    b = next(x for x in f.formulas if x.name == "B")
    assert b.result == pytest.approx(472.5e9) and "P5" in b.source
    assert b.values["nics"] == 8 and b.values["nic_Gbps"] == 3200 / 8


def test_tp301_sglang_nnodes() -> None:
    path = MAN / "sglang-nnodes.sh"
    [f] = lint(path, "TP301")
    # line 5 `    --tp 16`: the 16 is at column 5 + len("--tp ") = 10
    assert (f.span.line, f.span.column) == (5, col_of(path, 5, "16")) == (5, 10)
    # t·p·dp / nnodes = 16 / 2 = 8 GPUs per node
    assert "8 GPUs per node (t·p·dp = 16 over --nnodes 2)" in f.text
    assert f.fix is not None and f.fix.startswith("use --tp-size 8 --pp-size 2")
    assert lint(MAN / "sglang-nnodes-pp.sh", "TP301") == []


def test_tp301_rack_scale_nvlink_is_the_boundary() -> None:
    # GB200 NVL72: 2 trays of 4 GPUs, TP 8 — one NVLink domain of 72, so no finding
    assert lint(MAN / "lws-gb200-tp8.yaml", "TP301") == []


def _dep(**kw: object) -> Deployment:
    span = Span("m.yaml", 3, 5, 3, 7)
    return Deployment(path="m.yaml", engine="vllm", span=span,
                      spans={"tensor_parallel_size": span}, **kw)  # type: ignore[arg-type]


def _tp301(d: Deployment) -> list[Finding]:
    return list(BY_CODE["TP301"].check(CheckContext(d, shape=None, settings=Settings())))


def test_tp301_group_straddling_a_node_boundary() -> None:
    # TP 4 × PP 3 = 12 ranks on 2 pods of 6 GPUs: ranks 0-3 node 0, 4-7 → 4,5 on node 0 and
    # 6,7 on node 1, 8-11 node 1: one of three TP groups straddles
    [f] = _tp301(_dep(tensor_parallel_size=4, pipeline_parallel_size=3, gpus_requested=6,
                      group_size=2, model="x"))
    assert "1 of 3 TP groups spans nodes — TP ranks 0–1 on node 0; TP ranks 2–3 on node 1" in (
        f.text)
    assert "config.json was not found" in f.text  # no shape: layout only, no cost figures
    assert tp_crosses_nodes.split_groups(4, 3, 6)[1] == [(0, 0, 1), (1, 2, 3)]


def test_tp301_pod_too_small_for_the_group_means_another_pod() -> None:
    # Ray: TP 16 with an 8-GPU head pod and no group size in the manifest
    [f] = _tp301(_dep(tensor_parallel_size=16, gpus_requested=8, ray_cluster=True))
    assert "Ray cluster" in f.text
    # the same without Ray: the pod cannot start (TP401 says so), it does not span nodes
    assert _tp301(_dep(tensor_parallel_size=16, gpus_requested=8)) == []
    # one pod of 16 GPUs holds the whole group: nothing to say
    assert _tp301(_dep(tensor_parallel_size=16, gpus_requested=16)) == []
    # nothing says how many GPUs a node has: nothing to say
    assert _tp301(_dep(tensor_parallel_size=16)) == []


# ---------------------------------------------------------------------------- TP302
def test_tp302_fires_for_tp4_across_sockets_on_l40s() -> None:
    path = MAN / "l40s-tp4-across-sockets.yaml"
    [f] = lint(path, "TP302", TOPO / "l40s-2socket-8.txt")
    assert (f.severity.value, f.span.line, f.span.column) == (
        "warning", 15, col_of(path, 15, '"4"') + 1)
    # GPUs 2,3 on socket 0 and 4,5 on socket 1: the first SYS pair in order is GPU2–GPU4
    assert "the TP group [2, 3, 4, 5] (from CUDA_VISIBLE_DEVICES=2,3,4,5)" in f.text
    assert "GPU2–GPU4, joined across the CPU sockets (SYS" in f.text
    # L40S: PCIe Gen4 x16, 32 GB/s one way, an upper bound across sockets. Four PCIe GPUs:
    # no custom kernel (vLLM 0.33 custom_all_reduce.py: off for > 2 PCIe-only GPUs), so NCCL
    # (physics.collective): ring/Simple at ETA_PCIE·32 = 0.624·32 = 19.97 GB/s busbw, α 42 µs
    assert "PCIe Gen4 x16 across CPU sockets (SYS), busbw ≈ 20.0 GB/s (upper bound" in f.text
    assert f.message.endswith("all-reduces run at 20.0 GB/s")
    s = shape("Qwen/Qwen3-32B")
    assert L40S is not None
    p = model_params(s, active=True)
    # vLLM 0.33 serve default chunk on a 44.4 GiB card (< 70 GiB) = 2048 tokens
    # P = 32.76e9, n = 2048, t = 4, π = 362.05 TFLOP/s (L40S), η = 0.6, L = 64, h = 64,
    # d_h = 128, d = 5120, b = 2, B = 19.97 GB/s, α = 42 µs:
    # T_linear = 2·32.76e9·2048 / (4·362.05e12) = 92.66 ms; T_attn = 4·64·64·128·2048·2049/2
    # / (4·362.05e12) = 3.038 ms; rest = (92.66 + 3.038)/0.6 = 159.5 ms
    # T_comm = 129·(42 µs + 1.5·2048·5120·2 / 19.97e9) = 129·1.617 ms = 208.6 ms
    # (30 µs and the x16 peak 32 GB/s gave 130.7 ms, 82%)
    assert (s.layers, s.heads, s.head_dim, s.hidden) == (64, 64, 128, 5120)
    bus = 0.624 * 32e9
    pre = share_prefill(p, 2048, 4, L40S.bf16_flops, 0.6, 64, 64, 128, 5120, bus, 42e-6)
    assert pre == pytest.approx(208.6 / 159.5, rel=1e-3)  # 1.308: 131%
    assert (f"they add {pre * 100:,.0f}% to the rest of a 2,048-token prefill chunk "
            "(compute at η = 0.6, assumed)") in f.text
    be = 1 + p * bus / (2 * s.layers * s.hidden * 2 * L40S.bf16_flops)
    assert f"TP stops paying past t ≈ {be:.2f}" in f.text
    assert f.fix == ("set CUDA_VISIBLE_DEVICES=0,1,2,3: those 4 GPUs are joined by NODE at "
                     "worst (one socket)")


def test_tp302_quiet_inside_one_socket() -> None:
    topo = TOPO / "l40s-2socket-8.txt"
    assert lint(MAN / "l40s-tp4-one-socket.yaml", "TP302", topo) == []


def _tp302(d: Deployment, topo_file: str, gpu: str | None = None) -> list[Finding]:
    topo = parse_topology((TOPO / topo_file).read_text(), topo_file)
    ctx = CheckContext(d, shape=None, settings=Settings(), topology=topo,
                       gpu=find_gpu(gpu) if gpu else None)
    return list(BY_CODE["TP302"].check(ctx))


def test_tp302_default_group_and_pipeline_stages() -> None:
    # no CUDA_VISIBLE_DEVICES: TP 4 takes GPUs 0-3 (NODE, one socket) — quiet
    assert _tp302(_dep(tensor_parallel_size=4), "l40s-2socket-8.txt") == []
    # TP 4 × PP 2: the second stage's group is GPUs 4-7, also one socket — quiet
    assert _tp302(_dep(tensor_parallel_size=4, pipeline_parallel_size=2),
                  "l40s-2socket-8.txt") == []
    # TP 8 needs both sockets; no 8 GPUs avoid SYS, so the fix is a smaller TP on one socket
    [f] = _tp302(_dep(tensor_parallel_size=8), "l40s-2socket-8.txt")
    assert f.fix is not None and "use TP 4 on CUDA_VISIBLE_DEVICES=0,1,2,3" in f.fix


def test_tp302_nvlink_boxes() -> None:
    # DGX H100: NV18 between every pair — quiet at TP 8
    assert _tp302(_dep(tensor_parallel_size=8), "dgx-h100.txt") == []
    # NV4 pairs on two sockets: TP 2 on a pair is NVLink, TP 4 crosses SYS
    assert _tp302(_dep(tensor_parallel_size=2), "mixed-nvlink-pairs.txt") == []
    [f] = _tp302(_dep(tensor_parallel_size=4), "mixed-nvlink-pairs.txt")
    assert "GPU0–GPU2, joined across the CPU sockets" in f.text
    # PCIe-only g5.12xlarge: PHB is all the box has, nothing better to pick — quiet
    assert _tp302(_dep(tensor_parallel_size=4), "g5-12xlarge-a10g.txt") == []


def test_tp302_pcie_where_nvlink_was_expected() -> None:
    text = ("\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
            "GPU0\t X \tNV12\tPIX\tPIX\t0-31\t0\n"
            "GPU1\tNV12\t X \tPIX\tPIX\t0-31\t0\n"
            "GPU2\tPIX\tPIX\t X \tNV12\t0-31\t0\n"
            "GPU3\tPIX\tPIX\tNV12\t X \t0-31\t0\n")
    topo = parse_topology(text, "pairs.txt")
    ctx = CheckContext(_dep(tensor_parallel_size=4), shape=None, settings=Settings(),
                       topology=topo, gpu=find_gpu("a100-sxm-80gb"))
    [f] = BY_CODE["TP302"].check(ctx)
    # A100 SXM's host interface is PCIe Gen4: 32 GB/s one way instead of NVLink 3's 300 GB/s;
    # four ranks on PCIe run NCCL's ring at 0.624·32 = 19.97 GB/s busbw (physics.collective)
    assert "over PCIe (PIX), not NVLink" in f.text
    assert "PCIe Gen4 x16, busbw ≈ 20.0 GB/s instead of NVLink 3 (Ampere) at 300 GB/s" in (
        f.text)


def test_prefill_clause_says_whether_eta_is_assumed_or_calibrated() -> None:
    from tpcheck.checks._links import describe
    from tpcheck.formula import Formula
    from tpcheck.physics.step import PREFILL_SOURCE

    def clause(source: str, eta: float, assumed: bool) -> str:
        # share 0.5 of a 2,048-token chunk: "they add 50% to the rest of …"
        f = Formula("prefill_comm_share", "T_comm / (T_chunk − T_comm)",
                    {"n": 2048, "η": eta}, 0.5, "", source, assumed=assumed,
                    calibrated=not assumed)
        [said] = describe((f,))
        return said

    assert clause(PREFILL_SOURCE, 0.6, True).endswith("(compute at η = 0.6, assumed)")
    assert clause("η = 0.45 calibrated: sglang 0.4–0.5.x on hopper, 2 rows of …",
                  0.45, False).endswith("(compute at η = 0.45, calibrated)")
    # the flag decides, not a word in the source text
    assert clause("assumed somewhere in the text", 0.45, False).endswith("calibrated)")


def _hgx_with_nics(near: dict[int, int], extra: int) -> str:
    """An 8-GPU NV18 matrix whose NIC columns put NIC j at PXB from the GPUs of ``near``
    (GPU → NIC) and ``extra`` more NICs at NODE (storage, management)."""
    k = max(near.values()) + 1 + extra
    head = "\t".join(["", *(f"GPU{i}" for i in range(8)), *(f"NIC{j}" for j in range(k)),
                      "CPU Affinity", "NUMA Affinity"])
    rows = [head]
    for g in range(8):
        cells = ["X" if h == g else "NV18" for h in range(8)]
        cells += ["PXB" if near.get(g) == j else "NODE" for j in range(k)]
        rows.append("\t".join([f"GPU{g}", *cells, "0-55", "0"]))
    return "\n".join(rows) + "\n"


def test_tp301_reads_the_nics_of_a_saved_topology(tmp_path: Path) -> None:
    # DGX H100's matrix: NIC0–NIC7 at PIX (one per GPU), NIC8/NIC9 at NODE/SYS (storage):
    # 8 GPU NICs; topo -m names no speed, so Hopper's usual 400 Gb/s, said to be assumed
    [f] = lint(MAN / "lws-tp16-2x8-h100.yaml", "TP301", TOPO / "dgx-h100.txt")
    assert "8 × 400 Gb/s per node (the NICs of" in f.text and "speed assumed" in f.text
    bw = next(x for x in f.formulas if x.name == "B")
    assert bw.values["nics"] == 8 and "NIC0, NIC1" in bw.source and "NIC8" not in bw.source
    # A node with 4 GPU NICs (one per GPU pair, PXB) and 2 storage NICs: NVLS-tree across the
    # two nodes at min(0.90·4·50·15/8, 472.5) = 337.5 GB/s busbw (physics.collective)
    topo = tmp_path / "four-nics.txt"
    topo.write_text(_hgx_with_nics({g: g // 2 for g in range(8)}, 2))
    [g] = lint(MAN / "lws-tp16-2x8-h100.yaml", "TP301", topo)
    assert "4 × 400 Gb/s per node (the NICs of" in g.text
    bw4 = next(x for x in g.formulas if x.name == "B")
    assert bw4.values["nics"] == 4 and bw4.result == pytest.approx(0.90 * 200e9 * 15 / 8)
    assert "busbw ≈ 338 GB/s" in g.text


def test_tp301_reads_gke_multi_networking_annotations() -> None:
    # The pod's networking.gke.io/interfaces lists eth0 (the default interface) and eth1–eth8:
    # 8 GPU NICs, the count of A3 Mega, whose 1,600 Gb/s makes 200 Gb/s each over
    # GPUDirect-TCPXO (machines.py). NVLS-tree over 2 nodes: min(0.90·8·25·15/8, 472.5)
    # = 337.5 GB/s busbw; α at 8 KiB: TCPXO LL 125 µs (a3-megagpu ×2 rows, 8 B–4 KiB)
    [f] = lint(MAN / "lws-tp16-2x8-gke-multinet.yaml", "TP301")
    assert "8 × 200 Gb/s per node (GKE multi-networking, 8 interfaces)" in f.text
    bw = next(x for x in f.formulas if x.name == "B")
    assert (bw.values["nics"], bw.values["nic_Gbps"]) == (8, 200)
    assert bw.result == pytest.approx(0.90 * 200e9 * 15 / 8)
    assert "networking.gke.io/interfaces=8" in bw.source and "a3-megagpu-8g" in bw.source
    alpha = next(x for x in f.formulas if x.name == "α")
    assert alpha.result == pytest.approx(125e-6)
    # without the annotation the same manifest is the assumed HGX 8 × 400G InfiniBand
    [g] = lint(MAN / "lws-tp16-2x8-h100.yaml", "TP301")
    assert "assumed" in g.text and "GKE" not in g.text
