"""The link a TP group's all-reduces run over, and what a prefill chunk and TP cost on it.

Context-free physics shared by TP301/TP302 (tpcheck.checks._links) and ``tpcheck plan --link``.
"""

from __future__ import annotations

from tpcheck.engines.defaults import defaults_for, sglang_chunked_prefill
from tpcheck.formula import MIB, Formula
from tpcheck.hardware.gpus import GPU
from tpcheck.hardware.links import Link
from tpcheck.hardware.network import HGX_NETWORK, Network
from tpcheck.models.shape import ModelShape
from tpcheck.physics import collective, comm
from tpcheck.physics import step as stepmodel
from tpcheck.physics.kv import activation_dtype, dtype_bytes
from tpcheck.physics.split import model_params
from tpcheck.record import record

# Only a link taken as a bare class (``link_use``: plan --link with a network class, TP303's
# one-NIC share) keeps links.py's α; inside a node and across nodes the collective model's
# fitted α applies (``node_use``, ``network_use``).
ALPHA_NOTE = (
    "ASSUMPTION (hardware/links.py): α per link class is not measured; "
    "10 µs NVLink, 20 µs PCIe, 30 µs network/cross-socket"
)


@record
class LinkUse:
    """The link a TP group's all-reduces run over, and why tpcheck believes so."""

    link: Link
    bandwidth: Formula  # B, bytes/s one way per GPU
    alpha: Formula  # α, seconds
    assumed: bool  # the bandwidth is a default, not read from the deployment or topology
    # Across nodes: the group the collective model prices per message size (at_size); the
    # bandwidth and α above are then its bandwidth-regime B and latency-regime α.
    group: collective.Group | None = None
    alpha_given: bool = False
    # On one node: the engine release whose own kernels (custom all-reduce, FlashInfer,
    # symmetric memory) price the small messages (``collective.engine_kernel``).
    engine: str | None = None
    version: str | None = None
    custom: bool = True

    @property
    def label(self) -> str:
        if self.group is not None:  # the collective model's bus bandwidth (1 GiB)
            gb = self.bandwidth.result / 1e9
            return f"{self.link.name}, busbw ≈ {gb:,.0f} GB/s" if gb >= 100 else (
                f"{self.link.name}, busbw ≈ {gb:,.1f} GB/s")
        gbps = self.bandwidth.result * 8 / 1e9
        extra = f" = {gbps:,.0f} Gb/s" if self.link.inter_node else ""
        return f"{self.link.name}, B ≈ {self.bandwidth.result / 1e9:,.1f} GB/s per GPU{extra}"


def link_use(
    link: Link,
    *,
    bandwidth: Formula | None = None,
    assumed: bool = False,
    why: str = "",
    alpha: float | None = None,
) -> LinkUse:
    """Wrap a catalog link (or a measured bandwidth) with its α, the override winning."""
    bw = bandwidth or Formula(
        "B",
        "B (link class)",
        {"link": link.key},
        link.bandwidth,
        "B/s",
        (("ASSUMPTION: " + why + "; ") if assumed else "") + link.source,
        assumed=assumed,
        link=link.name if link.inter_node else "",
    )
    if alpha is None:
        af = Formula("α", "α (per link class)", {"link": link.key}, link.alpha, "s", ALPHA_NOTE)
    else:
        af = Formula("α", "α (given)", {"α": alpha}, alpha, "s", "alpha override")
    return LinkUse(link, bw, af, assumed)


# The one assumed network (TP301's message, TP201's and ``plan``'s step): named here only.
NETWORK_ASSUMED = ("no network named for the nodes (no instance type in the manifest); "
                   "an HGX node's 8 × 400 Gb/s InfiniBand, rail-optimized (one ConnectX-7 "
                   "port per GPU, as on DGX/HGX H100 and DGX B200)")


def at_size(use: LinkUse, size: float) -> tuple[float, float]:
    """(B, α) the all-reduce of ``size`` bytes runs at on this link: the collective model's
    cheapest algorithm × protocol across nodes, the link class's figures inside one."""
    if use.group is None:
        return use.bandwidth.result, use.alpha.result
    p = collective.allreduce(use.group, size, engine=use.engine, version=use.version,
                             custom=use.custom)
    return p.bus, (use.alpha.result if use.alpha_given else p.alpha)


def node_group(link_key: str, link_bw: float, t: int, *, p2p: bool = True
               ) -> collective.Group:
    """A TP group of t ranks inside one node on this link class."""
    return collective.group_of(link_key, link_bw, t, 1, t, None, p2p)


def node_price(link_key: str, link_bw: float, t: int, size: float, *, engine: str | None,
               version: str | None, custom: bool = True, p2p: bool = True
               ) -> collective.Priced:
    """One all-reduce of ``size`` bytes inside one node, as the engine release runs it."""
    return collective.allreduce(node_group(link_key, link_bw, t, p2p=p2p), size,
                                engine=engine, version=version, custom=custom)


def node_use(link: Link, t: int, *, engine: str | None, version: str | None,
             custom: bool = True, p2p: bool = True, alpha: float | None = None,
             assumed: bool = False, why: str = "") -> LinkUse:
    """A link inside one node as a LinkUse priced by ``physics.collective`` at each message
    size: B is the bandwidth regime's bus bandwidth (1 GiB, NCCL), α the latency regime's
    (8 KiB, the engine's own kernel where the release uses one)."""
    g = node_group(link.key, link.bandwidth, max(t, 2), p2p=p2p)
    big = collective.allreduce(g, 1 << 30, engine=engine, version=version, custom=custom)
    small = collective.allreduce(g, 8 << 10, engine=engine, version=version, custom=custom)
    lk = Link(link.key, link.name, big.bus, small.alpha, False, link.source)
    bw = Formula("B", "busbw of the cheapest path at 1 GiB (physics.collective)",
                 {"link": link.key, "link_peak": link.bandwidth, "t": g.ranks,
                  "algorithm": big.algorithm, "p2p": p2p},
                 big.bus, "B/s", (("ASSUMPTION: " + why + "; ") if assumed else "")
                 + link.source + "; " + big.formula.source, assumed=assumed)
    if alpha is None:
        af = Formula("α", "α of the cheapest path at 8 KiB (physics.collective)",
                     {"path": small.protocol, "t": g.ranks}, small.alpha, "s",
                     small.formula.source)
    else:
        af = Formula("α", "α (given)", {"α": alpha}, alpha, "s", "alpha override")
    return LinkUse(lk, bw, af, assumed, g, alpha is not None, engine, version, custom)


def network_use(group: collective.Group, name: str, source: str, *, assumed: bool,
                alpha: float | None = None) -> LinkUse:
    """The network between a group's nodes as a LinkUse priced by ``physics.collective``:
    B is the bandwidth regime's bus bandwidth (1 GiB), α the latency regime's (8 KiB)."""
    net = group.network
    assert net is not None
    big = collective.allreduce(group, 1 << 30)
    small = collective.allreduce(group, 8 << 10)
    lk = Link(f"{net.kind}-{net.nics}x{net.gbps:g}", name, big.bus, small.alpha, True, source)
    why = (NETWORK_ASSUMED + "; ") if assumed else ""
    bw = Formula("B", "busbw of the cheapest algorithm at 1 GiB (physics.collective)",
                 {"nics": net.nics, "nic_Gbps": net.gbps, "nodes": group.nodes,
                  "gpus_per_node": group.per_node, "algorithm": big.algorithm,
                  "network_assumed": assumed},
                 big.bus, "B/s", ("ASSUMPTION: " if assumed else "") + why
                 + ("" if assumed else source + "; ") + big.formula.source)
    if alpha is None:
        af = Formula("α", "α of the cheapest protocol at 8 KiB (physics.collective)",
                     {"protocol": small.protocol, "nodes": group.nodes}, small.alpha, "s",
                     small.formula.source)
    else:
        af = Formula("α", "α (given)", {"α": alpha}, alpha, "s", "alpha override")
    return LinkUse(lk, bw, af, assumed, group, alpha is not None)


def network_group(gpu: GPU | None, t: int, per_node: int,
                  net: Network) -> collective.Group:
    nodes = -(-t // max(per_node, 1))
    link, bw = (gpu.link, gpu.link_bandwidth) if gpu is not None else ("nvlink4", 450e9)
    return collective.group_of(link, bw, t, nodes, per_node, net)


def assumed_network(alpha: float | None = None, *, gpu: GPU | None = None, t: int = 16,
                    per_node: int = 8) -> LinkUse:
    """An HGX node's 8×400G InfiniBand, marked assumed: what a TP group across nodes runs on
    when nothing names the network. ``alpha`` overrides α (``[tool.tpcheck] alpha``)."""
    g = network_group(gpu, max(t, per_node + 1), per_node, HGX_NETWORK)
    return network_use(g, "InfiniBand 8 × 400 Gb/s per node",
                       HGX_NETWORK.source, assumed=True, alpha=alpha)


def node_network(gpu: GPU | None, t: int, *, gpus_per_node: int | None = None,
                 network: Link | None = None) -> LinkUse | None:
    """The network a TP group of t ranks all-reduces over when it spans nodes, else None.

    A node (or NVLink domain) holds ``gpus_per_node`` GPUs; unknown, an NVLink part's own domain
    (8 on HGX boards, 72 on GB200 NVL72); PCIe parts have no known node size, so None. Ring
    all-reduce runs at its slowest hop: once the ranks span nodes, every ring crosses the
    network, so B is the network's per-GPU rate (``network``, else ``assumed_network``).
    """
    per_node = gpus_per_node
    if per_node is None and gpu is not None and gpu.link.startswith("nvlink"):
        per_node = gpu.nvlink_domain
    if per_node is None or per_node < 1 or t <= per_node:
        return None
    if network is not None:  # a per-GPU network (an instance type's share): the node has
        # that rate per GPU, so per_node NICs of it
        net = Network(per_node, network.bandwidth * 8 / 1e9, _kind(network.key),
                                 network.source)
        return network_use(network_group(gpu, t, per_node, net), network.name, network.source,
                           assumed=False)
    return assumed_network(gpu=gpu, t=t, per_node=per_node)


def _kind(key: str) -> str:
    """The collective model's network kind for a link key or instance network."""
    for k in ("tcpxo", "efa", "roce", "tcp"):
        if k in key:
            return k
    return "ib"


def prefill_tokens(
    engine: str,
    version: str | None,
    entrypoint: str,
    gpu: GPU | None,
    memory: int | None,
    given: int | None,
    max_model_len: int | None = None,
) -> tuple[int, str]:
    """Tokens in one prefill chunk: the flag when set, else the engine's default rule."""
    if given:
        flag = "--chunked-prefill-size" if engine == "sglang" else "--max-num-batched-tokens"
        return given, flag
    mem = memory if memory is not None else (gpu.usable_bytes if gpu else None)
    if mem is None:
        return 8192, "assumed 8192 (no GPU memory to apply the engine default rule to)"
    if engine == "sglang":
        return (
            sglang_chunked_prefill(mem / MIB),
            "default chunked_prefill_size (sglang 0.5.23 memory_hook.py, by GPU memory)",
        )
    d = defaults_for("vllm", version)
    _, toks = d.batch_defaults(
        mem, gpu.name if gpu else "", "llm" if entrypoint == "llm" else "serve", max_model_len
    )
    return int(toks.value), f"default max_num_batched_tokens ({toks.source})"


def _b(shape: ModelShape, dtype: str | None) -> float:
    return dtype_bytes(activation_dtype(shape.dtype, dtype))


def chunk_efficiency(shape: ModelShape, engine: str, version: str | None,
                     gpu_key: str) -> tuple[float, str]:
    """(η, its source): the share of dense FLOP/s a prefill chunk's matmuls reach, for
    TP301/TP302's prefill share and ``plan --link`` — the one place it is chosen.

    ``step.prefill_efficiency`` for this engine release and GPU class; MoE and MLA models keep
    the assumed η, as ``plan``'s prefill columns do (the calibration rows are dense).
    """
    if shape.moe is not None or shape.is_mla:
        return stepmodel.PREFILL_EFFICIENCY, stepmodel.PREFILL_SOURCE
    return stepmodel.prefill_efficiency(engine, version, gpu_key)


def prefill_share(
    shape: ModelShape,
    t: int,
    gpu: GPU,
    use: LinkUse,
    tokens: int,
    tokens_source: str,
    dtype: str | None = None,
    *,
    engine: str = "vllm",
    version: str | None = None,
) -> Formula:
    """What the all-reduces add to the rest of one prefill chunk of n tokens (the first, c0 = 0)
    on this link: T_comm / (T_chunk − T_comm), the chunk on ``step.prefill_chunk`` (matmuls
    and causal attention at η of π, plus 2L+1 all-reduces of n·d·b at this link's B and α).

    The same ratio as the decode share (what the collectives add to the rest of the step), so
    it passes 100% where they outlast the compute.
    """
    eta, eta_source = chunk_efficiency(shape, engine, version, gpu.key)
    bw, alpha = at_size(use, tokens * shape.hidden * _b(shape, dtype))
    model = stepmodel.Prefill(model_params(shape, active=True), shape.layers, shape.heads,
                              shape.head_dim, shape.hidden, _b(shape, dtype), t,
                              gpu.bf16_flops, bw, alpha)
    chunk = stepmodel.prefill_chunk(model, tokens, 0, eta, eta_source)
    t_comm = next(x.result for x in chunk.terms if x.name == "T_comm")
    rest = chunk.result - t_comm
    return Formula(
        "prefill_comm_share",
        "T_comm / (T_chunk − T_comm)",
        {"n": tokens, "n_source": tokens_source, "T_comm": t_comm, "T_chunk": chunk.result,
         "η": eta, "t": t, "B": bw, "α": alpha},
        t_comm / rest if rest > 0 else 0.0,
        "",
        chunk.source,
        (chunk,),
        assumed=eta_source == stepmodel.PREFILL_SOURCE,
        calibrated=eta_source != stepmodel.PREFILL_SOURCE,
        link=use.link.name if use.link.inter_node else "",
    )


def breakeven(shape: ModelShape, gpu: GPU, use: LinkUse, dtype: str | None = None) -> Formula:
    return comm.breakeven_tp(
        model_params(shape, active=True),
        shape.layers,
        shape.hidden,
        _b(shape, dtype),
        gpu.bf16_flops,
        use.bandwidth.result,
    )
