"""One all-reduce priced as NCCL (or the engine's custom all-reduce) runs it, per topology.

The seeds' T_AR = α + 2(t−1)/t·S/B with B one link's rate and one α fits neither end of
published ``all_reduce_perf`` tables (``fixtures/observations/allreduce.jsonl``): across
nodes a ring runs at the node's aggregate NIC bandwidth (every channel crosses the node
boundary on its own rail), not one NIC's; small messages pay NCCL's protocol latency, which
is larger than the seeds' 10 µs. So, like NCCL's own tuner, every (algorithm, protocol) pair
available on the topology is priced as α_p + 2(t−1)/t·S/B_p and the cheapest wins:

- algorithms: ring (intra-node links, or the nodes' NICs together); NVLS (NVLink SHARP, on
  NVSwitch-3/4 parts) inside a node; NVLS-tree on two NVLS nodes, which moves half the bytes
  a ring does across the network;
- protocols: LL (low latency, half the link's rate inside a node, a small share of the
  NICs' across nodes) and Simple (full rate, a larger fixed cost);
- vLLM's and SGLang's custom all-reduce on one node of P2P-capable GPUs below the release's
  size limit (the wheels' ``should_custom_ar``), unless ``--disable-custom-all-reduce``.

B is a bus bandwidth (nccl-tests' busbw): the sent-byte convention of the seeds, so
algbw = S/T and busbw = algbw·2(t−1)/t. Every constant names the rows it was fitted on;
``tests/physics/test_collective.py`` pins each to them and ``bench/allreduce_table.py``
prints every row predicted against measured, with leave-one-out for the fitted ones.
"""

from __future__ import annotations

import math

# ``X as X``: the release table moved to engines.eras (issue 29), still read as collective.X
from tpcheck.engines.eras import Paths as Paths
from tpcheck.engines.eras import vllm_paths as vllm_paths
from tpcheck.formula import MIB, Formula
from tpcheck.hardware.network import Network
from tpcheck.record import record

ROWS = "fixtures/observations/allreduce.jsonl"
GB = 1e9

# ---- bandwidth: what share of the wire each algorithm reaches (bandwidth regime, ≥ 64 MiB)
# Ring over NVLink: 368 GB/s of H100's 450 (nccl#1455, ring 2–8 GPUs; nccl-tests#212
# "effective NVLink bandwidth of 370GB/s"), 232.5 of A100's 300 (nccl-tests#175).
ETA_RING_NVLINK = 0.80
ETA_RING_NVLINK_SRC = f"{ROWS}: nccl#1455 ring 368 of 450 GB/s, nccl-tests#175 A100 232.5 of 300"
# NVLS: the NVSwitch reduces, algbw ≈ 60% of the one-way link whatever t (nccl#1455:
# algbw 258–273 GB/s at 5–8 H100; nccl-tests#212 "algbw ~275GB/s"; nccl#1374 H800 215 busbw).
NVLS_ALGBW = 0.60
NVLS_SRC = f"{ROWS}: nccl#1455 NVLS busbw 420/440/460/480 at 5–8 H100, nccl-tests#212, #272"
# PCIe boxes are bounded by the host (sjeaugey, nccl#1639): 0.44 (8×5090, 28 of 64 GB/s),
# 0.55 (4×5090) and 0.81 (4×4090 with P2P) of the x16 rate, a 1.85× spread; 0.624 is the
# one share that keeps all three sources within 30% of the measured time.
ETA_PCIE = 0.624
ETA_PCIE_SRC = f"{ROWS}: nccl#1639 (8×/4× RTX 5090), tinygrad open-gpu-kernel-modules#36"
# Rings across nodes: ~48 GB/s per 400G NIC, 24 per 200G (maintainers, nccl-tests#119, #319;
# #309 ring 393 of 8×50 GB/s; #119 96.45 of 4×25 GB/s).
ETA_NET = 0.96
ETA_NET_SRC = f"{ROWS}: nccl-tests#119 (96.45 of 100 GB/s), #309 ring 393 of 400, #319 396"
# NVLS-tree on two nodes sends S, not 2(t−1)/t·S, across the network per node: busbw up to
# 2(t−1)/t of the NICs' rate, capped by the node's NVLS. GCP a3-megagpu ×2 (8×200G TCPXO)
# reaches 338.8 GB/s = 0.90·200·15/8; nccl-tests#309 (8×400G IB) 469, NVLS-capped.
ETA_TREE2 = 0.90
ETA_TREE2_SRC = f"{ROWS}: a3-megagpu-8g ×2 8 GiB 338.8 GB/s busbw, nccl-tests#309 469 GB/s"

# ---- latency: LL protocol carries 4 data bytes per 8-byte line (NCCL's LL), so half the
# Simple rate inside a node; across nodes LL runs at a small share of the NICs' rate
# (a3-megagpu rows 8 KiB–1 MiB: 131.6 → 203.2 µs, 0.12 of 200 GB/s).
E_LL = 0.5
E_LL_NET = 0.12
E_LL_SRC = f"NCCL LL protocol (8-byte lines with 4-byte flags); {ROWS}: a3-megagpu 8 KiB–1 MiB"

# α per link class and protocol, seconds (2 nodes for the network classes).
ALPHA: dict[tuple[str, str], float] = {
    # vLLM pynccl under CUDA graphs, H100 TP4: 0.5 MiB 21 µs, 1 MiB 23 µs (LL); 4 MiB 39 µs
    ("nvlink", "LL"): 17e-6,
    ("nvlink", "Simple"): 24e-6,
    # 8× RTX 4090, 8 B: 42.14 µs (nccl#1530); no published mid-size PCIe row: same α
    ("pcie", "LL"): 42e-6,
    ("pcie", "Simple"): 42e-6,
    # the wire between two nodes, LL: two DGX Spark (one GPU each, one 200G RoCE link),
    # 8–32 KiB: 31.7–39.6 µs; two HGX H100 of 8 GPUs, 8×400G IB (nccl-tests#309, NCCL 2.26):
    # 8 KiB 32.1 µs, 1 MiB 71.9 µs = 31 + 1.875·1 MiB/48 GB/s, so the NVLink step inside each
    # node adds nothing measurable on a current NCCL (2 nodes of 8 H20 on an older one, nccl#1244,
    # 46–48 µs at 8–512 B, sit 1.5× above: below the latency regime, left unscored)
    ("ib", "LL"): 31e-6,
    # the same fabric 1–64 MiB (nccl#1244, default algorithm): intercept 115 µs
    ("ib", "Simple"): 115e-6,
    # GCP a3-megagpu ×2, GPUDirect-TCPXO: 8 B–4 KiB 123–127 µs; 64 MiB–8 GiB intercept 934 µs
    ("tcpxo", "LL"): 125e-6,
    ("tcpxo", "Simple"): 930e-6,
}
ALPHA_SRC = {
    "nvlink": f"{ROWS}: vLLM PR 24532 pynccl, H100 TP4 (0.5–4 MiB, CUDA graphs)",
    "pcie": f"{ROWS}: nccl#1530 (8× RTX 4090, 8 B)",
    "ib": f"{ROWS}: DGX Spark ×2 (dgx-spark-playbooks#103), nccl-tests#309 (2×8 H100, 8×NDR), "
          "nccl#1244 (2×8 H20, 8×NDR)",
    "tcpxo": f"{ROWS}: a3-megagpu-8g ×2 all_reduce_perf (8 B–8 GiB)",
}
# Network classes without rows of their own take InfiniBand's α (RoCE, EFA, plain TCP).
NET_KIND = {"ib": "ib", "roce": "ib", "efa": "ib", "tcpxo": "tcpxo", "tcp": "tcpxo"}
# More nodes: NCCL's latency grows with the tree's depth, log2 of the nodes: α(n) =
# α(2)·log2(2n)/2, 1.5× at 4 nodes and 2× at 8. nccl-tests#309 (8×400G IB, NCCL 2.26): 8 KiB
# takes 32.12 µs on 2 nodes and 46.84 on 4 (1.46×); the 8-node run there starts at 1 MiB.
ALPHA_NODES_NOTE = (f"α(n) = α(2)·log2(2n)/2 (tree depth; {ROWS}: nccl-tests#309 8 KiB 2 → 4 "
                    "nodes 32.12 → 46.84 µs)")

# ---- custom all-reduce (one node, P2P): fitted per engine on the published kernel rows.
# vLLM: CUDA-graph rows of PR 24532/24111 (2-stage, 0.5–4 MiB: 17→42 µs at TP4, 15→37 at
# TP6) for B; its ≤ 32 KiB rows (SGLang PR 2904, 8.5–11.8 µs) for α.
# SGLang: its own kernel's rows in PR 2904 (3.7–7.8 µs ≤ 32 KiB, 19.9–33.8 µs at 1 MiB).
CUSTOM: dict[str, tuple[float, float, str]] = {
    "vllm": (9e-6, 250 * GB, f"{ROWS}: vLLM PR 24532/24111 ca_2stage, SGLang PR 2904 'vllm'"),
    "sglang": (4.5e-6, 62 * GB, f"{ROWS}: SGLang PR 2904 'custom allreduce' (H100)"),
}
# The rows are H100's (NVLink 4, 450 GB/s one way): on another link the kernel's B scales
# with the link (ASSUMPTION: no published custom all-reduce row off H100).
CUSTOM_LINK = 450 * GB
CUSTOM_SCALED = "B_ca scaled by the link from H100's (assumed: no custom all-reduce row off H100)"
# Limits, read from the wheels: vLLM 0.33 custom_all_reduce.py l.118 (world sizes 2, 4, 6,
# 8, 16; l.497 none above 8), l.138 max_size 8 MiB (strict <, l.510), l.248 min with
# all_reduce_utils.py l.31 CUSTOM_ALL_REDUCE_MAX_SIZES when torch symmetric memory is on
# (envs.py l.277 VLLM_ALLREDUCE_USE_SYMM_MEM default 1), l.266 off for more than two
# PCIe-only GPUs, l.281 off without P2P, l.233 off across nodes (no MNNVL).
# SGLang 0.5.23 custom_all_reduce.py l.41–42 world sizes 2, 4, 6, 8, 8 MiB (≤, l.273);
# custom_all_reduce_utils.py l.460 off across nodes, l.495 off for > 2 PCIe-only GPUs.
# SGLang 0.5.23 keeps its symmetric-memory paths off by default (fields/exec_.py l.718
# enable_symm_mem, l.736 enable_torch_symm_mem: False), so it runs its custom kernel, then NCCL.
CUSTOM_WORLD = {"vllm": (2, 4, 6, 8), "sglang": (2, 4, 6, 8)}
CUSTOM_MAX = 8 * MIB
VLLM_SM_MAX = {  # all_reduce_utils.py CUSTOM_ALL_REDUCE_MAX_SIZES
    "9.0": {2: 64 * MIB, 4: 32 * MIB, 6: MIB // 2, 8: MIB // 4},
    "10.0": {2: 2 * MIB, 4: 2 * MIB, 6: 1 * MIB, 8: 1 * MIB},
    "10.3": {2: 4 * MIB, 4: 4 * MIB, 6: 8 * MIB, 8: 4 * MIB},
}
CUSTOM_SRC = {"vllm": "vllm 0.33.0 custom_all_reduce.py should_custom_ar (l.496–510)",
              "sglang": "sglang 0.5.23 custom_all_reduce.py should_custom_ar (l.260–280)"}

# ---- what a vLLM release runs on one node by default, read from its wheel (the order of
# cuda_communicator.py all_reduce): FlashInfer's all-reduce, then the custom kernel, then
# torch symmetric memory, then NCCL (pynccl). NCCL's own symmetric path
# (VLLM_USE_NCCL_SYMM_MEM) is off by default in every release read, so it is not modelled.
# Which release turns which on is data in engines.eras (VLLM_PATHS, vllm_paths).




# FlashInfer's standalone all-reduce (vLLM 0.33 flashinfer_all_reduce.py l.420–446: inclusive
# limit FI_ALLREDUCE_FUSION_MAX_SIZE_MB per capability and world size, allreduce_rms_fusion.py
# l.104–126; on one node the MNNVL backend, l.156–163, which needs NVSwitch multicast).
FI_MAX = {
    "9.0": {2: 64 * MIB, 4: 2 * MIB, 8: MIB // 2},
    "10.0": {2: 64 * MIB, 4: 32 * MIB, 8: 1 * MIB},
}
FI_SRC = ("vllm 0.33.0 flashinfer_all_reduce.py should_use_fi_ar (l.468–496), "
          "allreduce_rms_fusion.py FI_ALLREDUCE_FUSION_MAX_SIZE_MB (l.104–126); priced as the "
          "custom kernel (ASSUMPTION: no published FlashInfer all-reduce row collected)")
# torch symmetric memory (symm_mem.py: l.113–121 size ≤ SYMM_MEM_ALL_REDUCE_MAX_SIZES,
# all_reduce_utils.py l.58–76; multimem for the world sizes of l.26–31, else two-shot).
SYMM_MAX = {
    "9.0": {2: 64 * MIB, 4: 32 * MIB, 6: 64 * MIB, 8: 64 * MIB},
    "10.0": {2: 8 * MIB, 4: 32 * MIB, 6: 128 * MIB, 8: 128 * MIB},
}
SYMM_MULTIMEM = {"9.0": (4, 6, 8), "10.0": (6, 8)}
# Fitted on vLLM PR 24111 (TP6) and PR 24532 (TP4) symm_mem_multimem, H100, 0.5–4 MiB:
# TP6 13 → 31 µs, TP4 15 → 28 µs (3 MiB); two-shot (2 ranks) priced the same (assumed).
SYMM: tuple[float, float] = (11e-6, 320 * GB)
SYMM_SRC = (f"{ROWS}: vLLM PR 24111/24532 symm_mem_multimem (H100, 0.5–4 MiB); "
            "vllm symm_mem.py should_use_symm_mem (l.113–121)")

# NVLink SHARP: NVSwitch 3 (Hopper HGX) and 4 (Blackwell HGX / NVL72).
NVLS_LINKS = ("nvlink4", "nvlink5")
# GPUs whose NVLink is a bridge between pairs, not an NVSwitch (no NVLS).
_SM = {"nvlink4": "9.0", "nvlink5": "10.0"}


@record
class Group:
    """A collective group: t ranks over n nodes of g GPUs, the link inside, the NICs out."""

    ranks: int
    nodes: int
    per_node: int
    intra: str  # link key inside a node: nvlink4, pcie5, …
    intra_bw: float  # one-way per-GPU bytes/s of that link
    network: Network | None = None  # None on one node
    p2p: bool = True  # GPU peer-to-peer works (custom all-reduce's precondition)

    @property
    def nvls(self) -> bool:
        return self.intra in NVLS_LINKS and self.per_node > 2


@record
class Priced:
    """One all-reduce of ``size`` bytes: its time and what ran it."""

    size: float
    seconds: float
    algorithm: str  # ring | nvls | nvlstree | custom | flashinfer | symm-mem
    protocol: str  # LL | Simple | custom-1stage/2stage
    path: str  # nvlink | pcie | network
    alpha: float
    bus: float  # B_p, bytes/s
    formula: Formula

    @property
    def algbw(self) -> float:
        return self.size / self.seconds if self.seconds else 0.0

    def busbw(self, t: int) -> float:
        return self.algbw * 2 * (t - 1) / t if t > 1 else 0.0


def _factor(t: int) -> float:
    return 2 * (t - 1) / t if t > 1 else 0.0


def intra_class(key: str) -> str:
    return "nvlink" if key.startswith(("nvlink", "nv", "infinity")) else "pcie"


def ring_bus(g: Group) -> tuple[float, str]:
    """Ring busbw inside one node of g.per_node GPUs."""
    if intra_class(g.intra) == "nvlink":
        return ETA_RING_NVLINK * g.intra_bw, ETA_RING_NVLINK_SRC
    return ETA_PCIE * g.intra_bw, ETA_PCIE_SRC


def nvls_bus(g: Group, t: int) -> float:
    return NVLS_ALGBW * g.intra_bw * _factor(t)


def alpha_for(cls: str, proto: str, nodes: int) -> float:
    a = ALPHA[(cls, proto)]
    if nodes > 2:
        a *= math.log2(2 * nodes) / 2
    return a


def candidates(g: Group) -> list[tuple[str, str, str, float, float, str]]:
    """(algorithm, protocol, path class, α, B, source) for each pair NCCL could pick."""
    t = g.ranks
    out: list[tuple[str, str, str, float, float, str]] = []
    ring, ring_src = ring_bus(g)
    if g.nodes <= 1 or g.network is None:
        cls = intra_class(g.intra)
        buses = [("ring", ring, ring_src)]
        if g.nvls:
            buses.append(("nvls", nvls_bus(g, t), NVLS_SRC))
        for algo, bus, src in buses:
            out.append((algo, "Simple", cls, alpha_for(cls, "Simple", 1), bus, src))
            out.append((algo, "LL", cls, alpha_for(cls, "LL", 1), E_LL * bus,
                        f"{src}; {E_LL_SRC}"))
        return out
    net = g.network
    cls = NET_KIND.get(net.kind, "ib")
    agg = net.aggregate
    intra_cap = nvls_bus(g, g.per_node) if g.nvls else ring
    bus = min(ETA_NET * agg, ring)
    out.append(("ring", "Simple", cls, alpha_for(cls, "Simple", g.nodes), bus, ETA_NET_SRC))
    ll = min(E_LL_NET * agg, E_LL * ring)
    out.append(("ring", "LL", cls, alpha_for(cls, "LL", g.nodes), ll, E_LL_SRC))
    if g.nodes == 2 and g.nvls:
        tree = min(ETA_TREE2 * agg * _factor(t), intra_cap)
        out.append(("nvlstree", "Simple", cls, alpha_for(cls, "Simple", 2), tree,
                    f"{ETA_TREE2_SRC}; {NVLS_SRC}"))
    return out


def custom_limit(engine: str, g: Group, sm: str | None = None,
                 version: str | None = None) -> tuple[int, str] | None:
    """The largest message the engine's custom all-reduce takes on this group, or None."""
    if engine not in CUSTOM or g.nodes > 1 or g.network is not None:
        return None
    t = g.ranks
    if t not in CUSTOM_WORLD[engine] or not g.p2p:
        return None
    if t > 2 and intra_class(g.intra) != "nvlink":
        return None
    limit = CUSTOM_MAX
    why = CUSTOM_SRC[engine]
    if engine == "vllm":
        paths = vllm_paths(version)
        why = f"{why}; {paths.source}" if version else why
        sm = sm or _SM.get(g.intra)
        cap = VLLM_SM_MAX.get(sm or "", {}).get(t) if paths.symm_mem and _multicast(g) else None
        if cap is not None and cap < limit:
            limit = cap
            why += f"; all_reduce_utils.py CUSTOM_ALL_REDUCE_MAX_SIZES[{sm}][{t}]"
    return limit, why


def _multicast(g: Group) -> bool:
    """NVSwitch multicast on one node (FlashInfer's MNNVL and torch symm mem need it)."""
    return g.intra in NVLS_LINKS and g.nodes <= 1 and g.network is None


def _kernel(g: Group, size: float, algo: str, proto: str, a: float, bus: float,
            inputs: dict[str, float | int | str], src: str) -> Priced:
    """An engine kernel's price, α + 2(t−1)/t·S/B (one node)."""
    t = g.ranks
    sec = a + _factor(t) * size / bus
    fm = Formula("T_AR", "α_k + 2(t−1)/t·S/B_k",
                 {"kernel": proto, "α_k": a, "t": t, "S": size, "B_k": bus, **inputs},
                 sec, "s", src)
    return Priced(size, sec, algo, proto, "nvlink" if intra_class(g.intra) == "nvlink"
                  else "pcie", a, bus, fm)


def engine_kernel(g: Group, size: float, engine: str, *, sm: str | None = None,
                  version: str | None = None, custom: bool = True) -> Priced | None:
    """What the engine release runs on one node instead of NCCL for this message, if anything:
    vLLM's FlashInfer all-reduce, custom kernel or torch symmetric memory (in that order, as
    its release has them on by default), SGLang's custom kernel."""
    if g.ranks <= 1 or g.nodes > 1 or g.network is not None:
        return None
    t = g.ranks
    scale = g.intra_bw / CUSTOM_LINK if g.intra_bw else 1.0
    sm = sm or _SM.get(g.intra)
    paths = vllm_paths(version) if engine == "vllm" else None
    if paths is not None and paths.flashinfer and _multicast(g):
        fi = FI_MAX.get(sm or "", {}).get(t)
        if fi is not None and size <= fi:
            a, bus, src = CUSTOM["vllm"]
            return _kernel(g, size, "flashinfer", "vllm-flashinfer", a, bus * scale,
                           {"limit": fi}, f"{FI_SRC}; {src}; {paths.source}")
    lim = custom_limit(engine, g, sm, version) if custom else None
    if lim is not None and (size < lim[0] if engine == "vllm" else size <= lim[0]):
        a, bus, src = CUSTOM[engine]
        note = "" if scale == 1.0 else f"; {CUSTOM_SCALED}"
        return _kernel(g, size, "custom", f"{engine}-custom", a, bus * scale,
                       {"limit": lim[0]}, f"{src}; {lim[1]}{note}")
    if paths is not None and paths.symm_mem and _multicast(g):
        cap = SYMM_MAX.get(sm or "", {}).get(t)
        if cap is not None and size <= cap and g.p2p:
            kind = "multimem" if t in SYMM_MULTIMEM.get(sm or "", ()) else "two-shot"
            a, bus = SYMM
            return _kernel(g, size, "symm-mem", f"vllm-symm-{kind}", a, bus * scale,
                           {"limit": cap}, f"{SYMM_SRC}; {paths.source}")
    return None


def allreduce(g: Group, size: float, *, engine: str | None = None,
              custom: bool = True, sm: str | None = None,
              version: str | None = None) -> Priced:
    """The cheapest way this group all-reduces ``size`` bytes, NCCL's choice or the engine
    release's own kernel (``custom=False``: ``--disable-custom-all-reduce``, which in vLLM
    turns off the custom kernel only; FlashInfer and symmetric memory keep their own switches)."""
    t = g.ranks
    f = _factor(t)
    if t <= 1:
        zero = Formula("T_AR", "0 (one rank)", {"t": t}, 0.0, "s", "nothing to reduce")
        return Priced(size, 0.0, "none", "none", "local", 0.0, 0.0, zero)
    if engine:
        k = engine_kernel(g, size, engine, sm=sm, version=version, custom=custom)
        if k is not None:
            return k
    best: tuple[float, tuple[str, str, str, float, float, str]] | None = None
    for c in candidates(g):
        sec = c[3] + f * size / c[4]
        if best is None or sec < best[0]:
            best = (sec, c)
    assert best is not None
    sec, (algo, proto, cls, a, bus, src) = best
    path = "network" if g.nodes > 1 else cls
    fm = Formula("T_AR", "α_p + 2(t−1)/t·S/B_p (cheapest NCCL algorithm × protocol)",
                 {"algorithm": algo, "protocol": proto, "α_p": a, "t": t, "S": size,
                  "B_p": bus, "nodes": g.nodes, "alpha_nodes_assumed": g.nodes > 2,
                  "network_assumed": bool(g.network and g.network.assumed)},
                 sec, "s", src + ("; " + ALPHA_NODES_NOTE if g.nodes > 2 else ""))
    return Priced(size, sec, algo, proto, path, a, bus, fm)


def default_sizes() -> list[int]:
    """8 B to 1 GiB, doubling (all_reduce_perf -b 8 -e 1G -f 2)."""
    return [8 << i for i in range(28)]


def group_of(gpu_link: str, gpu_link_bw: float, ranks: int, nodes: int = 1,
             per_node: int | None = None, network: Network | None = None,
             p2p: bool = True) -> Group:
    """A group from a GPU's catalog link and the node count (ranks spread evenly)."""
    per = per_node or max(1, math.ceil(ranks / max(nodes, 1)))
    return Group(ranks, nodes, per, gpu_link, gpu_link_bw,
                 network if nodes > 1 else None, p2p)


