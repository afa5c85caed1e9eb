"""The batch side of a plan: the decode step, its all-reduces' links and the prefill columns."""

from __future__ import annotations

from tpcheck.formula import Formula
from tpcheck.models.shape import ModelShape
from tpcheck.physics import comm, kv
from tpcheck.physics import step as stepmodel
from tpcheck.physics.linkcost import (
    LinkUse,
    at_size,
    chunk_efficiency,
    node_network,
    node_price,
)
from tpcheck.physics.plan_records import Evaluation, Options, act_bytes_of, release_of
from tpcheck.physics.split import model_params
from tpcheck.physics.weights import weights_read
from tpcheck.record import replace

DEFAULT_ALPHA = 10e-6  # seeds' assumed fixed all-reduce cost (tp-inference-deployer.txt §7)


def _links(shape: ModelShape, t: int, opts: Options, ntok: int
           ) -> tuple[float | None, float, float | None, float, str | None, LinkUse | None]:
    """The all-reduces' link bandwidth and α for the decode step and for a prefill chunk, the
    link key and the network (the group spans nodes: priced per message size, collective)."""
    gpu = opts.gpu
    b = act_bytes_of(shape, opts)
    link = opts.link_bandwidth or (gpu.link_bandwidth if gpu else None)
    alpha = DEFAULT_ALPHA if opts.alpha is None else opts.alpha
    net = None if opts.link_bandwidth else node_network(
        gpu, t, gpus_per_node=opts.gpus_per_node, network=opts.network)
    link_key = (None if opts.link_bandwidth or gpu is None or t == 1
                else opts.link_key or gpu.link)
    pre_link, pre_alpha = link, alpha
    if net is not None:  # the TP group spans nodes: priced per message size (collective)
        link_key = net.link.key
        link, alpha = at_size(net, opts.batch * shape.hidden * b)
        pre_link, pre_alpha = at_size(net, ntok * shape.hidden * b)
        if opts.alpha is not None:
            alpha = pre_alpha = opts.alpha
    elif gpu is not None and t > 1 and not opts.link_bandwidth:
        # one node: NCCL or the engine release's own kernel, per message size (collective)
        key, peak = intra_link(opts)

        def price(size: float) -> tuple[float, float]:
            p = node_price(key, peak, t, size, engine=opts.engine,
                           version=release_of(opts), custom=opts.custom_all_reduce)
            return p.bus, p.alpha if opts.alpha is None else opts.alpha

        link, alpha = price(opts.batch * shape.hidden * b)
        pre_link, pre_alpha = price(ntok * shape.hidden * b)
    return link, alpha, pre_link, pre_alpha, link_key, net


def intra_link(opts: Options) -> tuple[str, float]:
    """The link class a TP group inside one node runs on and its one-way peak: ``--link``'s
    class, else the GPU's own."""
    if opts.link_key:
        from tpcheck.hardware.links import find_link

        lk = find_link(opts.link_key)
        if lk is not None:
            return lk.key, lk.bandwidth
    assert opts.gpu is not None
    return opts.gpu.link, opts.gpu.link_bandwidth


def prefill_columns(shape: ModelShape, t: int, opts: Options, base: Evaluation,
                    link: float | None, pre_link: float | None,
                    pre_alpha: float) -> tuple[Formula | None, Formula | None]:
    """One chunk of max-num-batched-tokens from an empty cache, and a whole context-length
    prompt chunk by chunk (None without FLOPs or a link)."""
    gpu = opts.gpu
    flops = opts.flops or (gpu.bf16_flops if gpu else None)
    if not (flops and link):
        return None, None
    assert base.ntok is not None and base.ntok_source is not None
    ntok, c = base.ntok, int(base.context.result)
    # One request's chunk passes every pipeline stage in turn: the whole model at t.
    pre = stepmodel.Prefill(model_params(shape, active=True), shape.layers, shape.heads,
                            shape.head_dim, shape.hidden, act_bytes_of(shape, opts), t, flops,
                            pre_link or link, pre_alpha)
    eta, eta_src = prefill_efficiency(shape, opts)
    prefill = stepmodel.prefill_chunk(pre, ntok, efficiency=eta, source=eta_src)
    prefill = replace(prefill, values={**prefill.values, "n_source": base.ntok_source})
    prompt = stepmodel.prefill_prompt(pre, c, ntok, efficiency=eta, source=eta_src)
    return prefill, prompt


def decode_step(shape: ModelShape, t: int, opts: Options, base: Evaluation) -> Evaluation:
    """``base`` (a ``capacity``) with what depends on ``opts.batch``: the decode step (the
    weight-read floor, its calibration for the release and GPU, the all-reduces' share) and
    the prefill columns (the network's price follows the message sizes)."""
    pp = max(opts.pp, 1)
    gpu = opts.gpu
    hbm_bw = opts.hbm_bandwidth or (gpu.hbm_bandwidth if gpu else None)
    assert base.ntok is not None
    link, alpha, pre_link, pre_alpha, link_key, net = _links(shape, t, opts, base.ntok)
    step = share = floor = None
    assert base.kv_read is not None
    if hbm_bw and link:
        floor = comm.decode_step(
            weights_per_gpu=weights_read(base.weights),
            hbm_bw=hbm_bw,
            batch=opts.batch,
            context=int(base.context.result),
            kv_bytes_per_token_per_gpu=base.kv_read.result,
            layers=kv.stage_layers(shape.layers, pp),
            hidden=shape.hidden,
            b=act_bytes_of(shape, opts),
            t=t,
            link_bw=link,
            alpha=alpha,
        )
        step, share = calibrated(shape, t, opts, floor, pp, network=net)
    prefill, prompt = prefill_columns(shape, t, opts, base, link, pre_link, pre_alpha)
    return replace(base, step=step, comm_share=share, floor=floor, batch=opts.batch,
                   allreduce_link=link_key, prefill=prefill, prefill_prompt=prompt)


def prefill_efficiency(shape: ModelShape, opts: Options) -> tuple[float, str]:
    """η of the prefill columns for this engine release and GPU, chosen as TP301/TP302 choose
    it (``linkcost.chunk_efficiency``), the release resolved like the decode step's era."""
    gpu = opts.gpu
    if gpu is None:
        return stepmodel.PREFILL_EFFICIENCY, stepmodel.PREFILL_SOURCE
    return chunk_efficiency(shape, opts.engine, release_of(opts), gpu.key)


def calibrated(shape: ModelShape, t: int, opts: Options, floor: Formula,
               pp: int = 1, network: LinkUse | None = None) -> tuple[Formula, Formula]:
    """The decode step calibrated for this engine release and GPU (floor when none), and the
    all-reduces' share of it; ``network``: the TP group spans nodes and all-reduces on it."""
    gpu = opts.gpu
    era = stepmodel.era_for(opts.engine, release_of(opts), gpu.key) if gpu is not None else None
    dense = shape.moe is None and not shape.is_mla
    why = stepmodel.NO_SWEEP if dense or era is None else stepmodel.NOT_DENSE
    era = era if dense else None
    flops = opts.flops or (gpu.bf16_flops if gpu else None)
    compute = None
    if flops:
        compute = stepmodel.compute_time(model_params(shape, active=True) / pp, opts.batch, t,
                                         flops)
    off_nvlink = None
    if t > 1 and opts.link_bandwidth:
        off_nvlink = f"a link of {opts.link_bandwidth / 1e9:g} GB/s per GPU (given)"
    elif t > 1 and opts.link_key and not opts.link_key.startswith("nvlink"):
        off_nvlink = f"{opts.link_key} (given)"
    elif t > 1 and gpu is not None and not opts.link_key and not gpu.link.startswith("nvlink"):
        off_nvlink = f"{gpu.link} (the {gpu.key}'s link)"
    st = stepmodel.calibrated_step(floor, layers=kv.stage_layers(shape.layers, pp), era=era,
                                   compute=compute, why=why,
                                   network=None if network is None else network.label + (
                                       " (assumed: no network named for the nodes)"
                                       if network.assumed else ""),
                                   off_nvlink=off_nvlink)
    return st, stepmodel.comm_share(st)
