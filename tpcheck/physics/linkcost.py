"""The link a TP group's all-reduces run over, and what a prefill chunk and TP cost on it.

Context-free physics shared by TP301/TP302 (tpcheck.checks._links) and ``tpcheck plan --link``.
"""

from __future__ import annotations

from tpcheck.engines.defaults import defaults_for, sglang_chunked_prefill
from tpcheck.formula import MIB, Formula
from tpcheck.hardware.gpus import GPU
from tpcheck.hardware.links import Link, find_link
from tpcheck.models.shape import ModelShape
from tpcheck.physics import comm
from tpcheck.physics import step as stepmodel
from tpcheck.physics.kv import activation_dtype, dtype_bytes
from tpcheck.physics.split import model_params
from tpcheck.record import record

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

    @property
    def label(self) -> str:
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
    )
    if alpha is None:
        af = Formula("α", "α (per link class)", {"link": link.key}, link.alpha, "s", ALPHA_NOTE)
    else:
        af = Formula("α", "α (given)", {"α": alpha}, alpha, "s", "alpha override")
    return LinkUse(link, bw, af, assumed)


# The one assumed network (TP301's message, TP201's and ``plan``'s step): named here only.
NETWORK_ASSUMED = ("no network named for the nodes (no instance type in the manifest); "
                   "InfiniBand NDR 400 Gb/s per GPU (one ConnectX-7 port per GPU, as on "
                   "DGX/HGX H100 and DGX B200)")


def assumed_network(alpha: float | None = None) -> LinkUse:
    """InfiniBand NDR, marked assumed: what a TP group across nodes runs on when nothing names
    the network. ``alpha`` overrides the network's α (``[tool.tpcheck] alpha``)."""
    ndr = find_link("ib-ndr")
    assert ndr is not None
    return link_use(ndr, assumed=True, why=NETWORK_ASSUMED, alpha=alpha)


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
    if network is not None:
        return link_use(network)
    return assumed_network()


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
    model = stepmodel.Prefill(model_params(shape, active=True), shape.layers, shape.heads,
                              shape.head_dim, shape.hidden, _b(shape, dtype), t,
                              gpu.bf16_flops, use.bandwidth.result, use.alpha.result)
    chunk = stepmodel.prefill_chunk(model, tokens, 0, eta, eta_source)
    t_comm = next(x.result for x in chunk.terms if x.name == "T_comm")
    rest = chunk.result - t_comm
    return Formula(
        "prefill_comm_share",
        "T_comm / (T_chunk − T_comm)",
        {"n": tokens, "n_source": tokens_source, "T_comm": t_comm, "T_chunk": chunk.result,
         "η": eta, "t": t, "B": use.bandwidth.result, "α": use.alpha.result},
        t_comm / rest if rest > 0 else 0.0,
        "",
        chunk.source,
        (chunk,),
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
