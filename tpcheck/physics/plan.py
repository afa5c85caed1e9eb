"""One layout evaluated end to end, and the sweep over t that ``tpcheck plan`` prints.

``evaluate`` is what every capacity rule asks: it assembles the physics' Formulas for one
(model, GPU, t, p, dp) and names each engine default it had to assume.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from operator import attrgetter

from tpcheck.engines.defaults import defaults_for
from tpcheck.formula import Formula
from tpcheck.models.shape import ModelShape
from tpcheck.physics import comm, kv
from tpcheck.physics.legality import refusals
from tpcheck.physics.linkcost import node_price
from tpcheck.physics.load_terms import NO_ROTARY as NO_ROTARY
from tpcheck.physics.load_terms import load_extras, rope_for
from tpcheck.physics.memory import pool_per_gpu as memory_pool
from tpcheck.physics.plan_memory import (
    CONNECTOR_NOTE,
    Budget,
    budget,
    gpu_nvlink,
    kv_pool,
    reserve,
)
from tpcheck.physics.plan_records import (
    Evaluation,
    Options,
    act_bytes_of,
    attn_dp_of,
    moe_group_of,
    release_of,
)
from tpcheck.physics.plan_step import (
    DEFAULT_ALPHA,
    calibrated,
    decode_step,
    intra_link,
    prefill_columns,
    prefill_efficiency,
)
from tpcheck.physics.split import model_params, weight_split
from tpcheck.physics.weights import (
    MXFP4_TRITON_HOPPER,
    mxfp4_hopper_experts_019,
    mxfp4_layout,
    mxfp4_padding,
    weights_per_gpu,
)
from tpcheck.record import fields, replace

CONTEXT_CAP = 32768


def default_context(shape: ModelShape, opts: Options) -> Formula:
    if opts.context:
        return Formula("c", "c (given)", {"c": opts.context}, opts.context, "tokens", "--context")
    mpe = shape.max_position_embeddings or 2048
    c = min(mpe, CONTEXT_CAP)
    return Formula(
        "c",
        "min(max_position_embeddings, 32768)",
        {"max_position_embeddings": mpe},
        c,
        "tokens",
        "config.json (capped by tpcheck)",
    )


MemoKey = tuple[ModelShape, int, Options, bool | None]


class Memo(OrderedDict[MemoKey, Evaluation]):
    """A run's evaluations, shared by its rules and files (manifests repeat layouts; rules ask
    the same what-ifs), keyed by value: (shape, t, options, True) the whole evaluation, False
    without the step, None the layout alone. The ``size`` most recently used are kept, so
    memory stays flat however large the repository."""

    def __init__(self, size: int = 1024) -> None:
        super().__init__()
        self.size = size
        # Parts of layouts, each keyed by what it reads: the weights (``weights_of``: TP205's
        # search and TP101-TP104's ranking price a layout's weights alone, and the layout may
        # be asked after; a third of a run's weights were computed twice) and the reserve
        # (plan_memory.reserve: a quarter of a run's were). The ``2 * size`` latest are kept.
        self.parts: OrderedDict[tuple[object, ...], Formula] = OrderedDict()

    def part(self, key: tuple[object, ...]) -> Formula | None:
        """A kept part, or None."""
        return self.parts.get(key)

    def keep(self, key: tuple[object, ...], value: Formula) -> Formula:
        """``value`` kept under ``key`` (the oldest part forgotten past ``2 * size``)."""
        parts = self.parts
        parts[key] = value
        if len(parts) > 2 * self.size:
            parts.popitem(last=False)
        return value

    def find(self, key: MemoKey) -> Evaluation | None:
        """The entry, now the most recently used; None when it is not kept."""
        found = self.get(key)
        if found is not None:
            self.move_to_end(key)
        return found

    def __setitem__(self, key: MemoKey, value: Evaluation) -> None:
        super().__setitem__(key, value)
        if len(self) > self.size:
            self.popitem(last=False)


def evaluate(shape: ModelShape, t: int, opts: Options, memo: Memo | None = None) -> Evaluation:
    """Every figure of one layout, by concern: what needs no GPU (refusals, weights, KV bytes,
    all-reduce bytes), the memory budget and the defaults it assumes, the reserve, the pool and
    its seats, the prefill, then the decode step. Everything but the step is the same at any
    batch, so a rule that asks the same layout at another batch (TP201's tokens/s at the batch
    each layout admits) reuses the rest from ``memo``."""
    key = (shape, t, opts, True)
    found = memo.find(key) if memo is not None else None
    if found is not None:
        return found
    base = evaluate_capacity(shape, t, opts, memo)
    ev = base if base.memory is None else decode_step(shape, t, opts, base)
    if memo is not None:
        memo[key] = ev
    return ev


def evaluate_capacity(shape: ModelShape, t: int, opts: Options,
                      memo: Memo | None = None) -> Evaluation:
    """``evaluate`` without what depends on the batch (the decode step, the prefill columns):
    all a rule needs that asks whether a layout starts and what pool it leaves (TP204 tries up
    to 14 layouts per finding)."""
    at_one = at_capacity(opts)
    key = (shape, t, at_one, False)
    base = memo.find(key) if memo is not None else None
    if base is None:
        base = capacity(shape, t, at_one, memo)
        if memo is not None:
            memo[key] = base
    return base


# What only the decode step and the prefill columns read (plan_step): the capacity of a layout
# is the same whatever they are, so its memo key leaves them at their defaults. TP201 asks its
# layouts again at the batch each admits and across the nodes it spans; TP301 at another link.
STEP_ONLY = ("batch", "alpha", "custom_all_reduce", "flops", "gpus_per_node", "hbm_bandwidth",
             "link_bandwidth", "link_key", "network")
_AT_CAPACITY = {f.name: f.default for f in fields(Options) if f.name in STEP_ONLY}
# Each options' step-only values read at once, in C, against the defaults (a what-if's options
# are new: a generator over the names cost it more than the memo lookup).
_STEP_VALUES = attrgetter(*_AT_CAPACITY)
_STEP_DEFAULTS = tuple(_AT_CAPACITY.values())


def at_capacity(opts: Options) -> Options:
    """``opts`` with what only the step reads at its defaults: one capacity per layout."""
    kept = opts.__dict__.get("_at_capacity")  # kept on the options, as layout_options' is
    if kept is not None:
        return opts if kept is True else kept
    if _STEP_VALUES(opts) == _STEP_DEFAULTS:
        opts.__dict__["_at_capacity"] = True
        return opts
    out = opts.__dict__["_at_capacity"] = replace(opts, **_AT_CAPACITY)
    return out


# What ``layout`` reads. The release only where it reads one: SGLang's cell, the MXFP4
# experts' layout, vLLM's MLA workspace; the budget, reserve and pool after it are the
# release's own (TP204/TP205 ask each known release whether their verdict holds: one layout
# serves all of them).
LAYOUT_READS = ("engine", "engine_version", "gpu", "pp", "dp", "expert_parallel", "attn_dp",
                "context", "kv_cache_dtype", "quantization", "dtype", "cpu_offload",
                "swa_full_tokens_ratio", "enforce_eager", "vision_off")
_NOT_LAYOUT = {f.name: f.default for f in fields(Options) if f.name not in LAYOUT_READS}
_NOT_LAYOUT_NOR_RELEASE = {**_NOT_LAYOUT, "engine_version": None}
# (the names, their values read at once, their defaults) of each, compared in C as
# at_capacity's are
_BY_RELEASE = (_NOT_LAYOUT, attrgetter(*_NOT_LAYOUT), tuple(_NOT_LAYOUT.values()))
_NOR_RELEASE = (_NOT_LAYOUT_NOR_RELEASE, attrgetter(*_NOT_LAYOUT_NOR_RELEASE),
                tuple(_NOT_LAYOUT_NOR_RELEASE.values()))


def layout_options(shape: ModelShape, opts: Options) -> Options:
    """``opts`` with what ``layout`` does not read at its defaults (its memo key)."""
    q = shape.quant
    # vLLM's MLA weights read the release too (0.19-0.32's FlashInfer workspace, load_terms)
    by_release = opts.engine == "sglang" or (q is not None and q.method == "mxfp4") or (
        shape.is_mla and opts.engine == "vllm")
    # Kept on the (frozen) options, as their hash is: a rule asks the same options' layout
    # for several t, and a copy's fresh hash would cost the memo lookup again.
    slot = "_layout_by_release" if by_release else "_layout"
    kept = opts.__dict__.get(slot)
    if kept is not None:
        return opts if kept is True else kept
    changes, values, defaults = _BY_RELEASE if by_release else _NOR_RELEASE
    if values(opts) == defaults:
        opts.__dict__[slot] = True
        return opts
    out = opts.__dict__[slot] = replace(opts, **changes)
    return out


def memory_of(opts: Options) -> int | None:
    """The bytes per GPU the budget starts from: --memory as given, else the GPU's usable
    memory; None without either."""
    return opts.memory if opts.memory is not None else (
        opts.gpu.usable_bytes if opts.gpu else None)


def capacity(shape: ModelShape, t: int, opts: Options, memo: Memo | None = None) -> Evaluation:
    """``evaluate`` without the decode step (``opts.batch`` is 1); the layout (weights, KV
    bytes, refusals) shared through ``memo`` by every option it does not read."""
    ev = layout_at(shape, t, opts, memo)
    mem = memory_of(opts)
    if mem is None:
        return ev
    bud = budget(shape, t, opts, mem, int(ev.context.result))
    res = reserve(shape, t, opts, bud, memo)
    return kv_pool(shape, t, opts, bud, ev, res)


def layout_at(shape: ModelShape, t: int, opts: Options, memo: Memo | None = None) -> Evaluation:
    """``layout``, shared through ``memo`` by every option it does not read."""
    if memo is None:
        return layout(shape, t, opts)
    key = (shape, t, layout_options(shape, opts), None)
    found = memo.find(key)
    if found is None:
        found = memo[key] = layout(shape, t, key[2], memo)
    return found


def vllm_budget(opts: Options) -> tuple[int, float] | None:
    """(M, u) of a vLLM launch, as ``budget`` sets them (u as given, else the release's
    default); None without a memory figure. Neither depends on the layout."""
    mem = memory_of(opts)
    if mem is None:
        return None
    if opts.utilization is not None:
        return mem, opts.utilization
    d = defaults_for("vllm", opts.engine_version)
    return mem, float(d.gpu_memory_utilization().value)


def starts(shape: ModelShape, t: int, opts: Options, memo: Memo | None = None) -> bool:
    """``evaluate_capacity``'s ``not refusals and fits``: the layout is legal and leaves a KV
    pool. TP205's what-fits-instead search asks it of up to 14 layouts whose weights mostly
    exceed vLLM's M·u: the pool, ceil(M·u) − W − R, is then ≤ 0 whatever the reserve R (never
    negative: activations, graphs and non-torch memory at positive sizes), so the weights alone
    answer, without the rest of the layout, the reserve and the pool. (A refused layout does not
    start either: either way the answer is False. The weights read only what the layout reads,
    so they are the memoised layout's, test_layout_memo.)"""
    if _reserve_not_negative(opts):
        mu = vllm_budget(opts)
        if mu is None:
            return False
        if _weights_at(shape, t, opts, memo) >= math.ceil(mu[0] * mu[1]):
            return False
    legal, fit = _legal_and_fits(shape, t, opts, memo)
    return legal and bool(fit)


def fits(shape: ModelShape, t: int, opts: Options, memo: Memo | None = None) -> bool | None:
    """``evaluate_capacity(...).fits``, priced as far as ``starts`` prices it: a vLLM launch
    whose weights alone reach ceil(M·u) leaves no pool whatever its reserve (TP101-TP104 rank
    the legal sizes near t by it, and the smaller ones mostly do not fit)."""
    if _reserve_not_negative(opts):
        mu = vllm_budget(opts)
        if mu is not None and _weights_at(shape, t, opts, memo) >= math.ceil(mu[0] * mu[1]):
            return False
    return _legal_and_fits(shape, t, opts, memo)[1]


def capacity_weights(shape: ModelShape, t: int, opts: Options, memo: Memo) -> Formula:
    """``evaluate_capacity(...).weights`` (the layout's), without the rest of the layout when
    it is not kept: TP205 names the fp8 weights of a layout whose pool it does not print."""
    lo = layout_options(shape, at_capacity(opts))
    lay = memo.get((shape, t, lo, None))
    return lay.weights if lay is not None else weights_of(shape, t, lo, memo)


def _legal_and_fits(shape: ModelShape, t: int, opts: Options,
                    memo: Memo | None) -> tuple[bool, bool | None]:
    """``evaluate_capacity``'s (not refusals, fits), from the kept evaluation when there is
    one. Else, for vLLM, from what ``capacity`` prices its pool with (the layout's refusals
    and weights, the budget, the reserve) without the rest: the layout's KV bytes and
    all-reduce, the pool's tokens, seats and printed figures (what TP205's and TP101-TP104's
    searches ask of layouts nobody prints). The same functions on the same options as
    ``capacity``: the same answer (test_plan_fits)."""
    at_one = at_capacity(opts)
    kept = memo.get((shape, t, at_one, False)) if memo is not None else None
    if kept is None and memo is not None and opts.engine == "vllm":
        mem = memory_of(at_one)
        lo = layout_options(shape, at_one)
        lay = memo.get((shape, t, lo, None))
        if lay is not None:
            legal, w = not lay.refusals, lay.weights
        else:
            legal = not refusals(shape, t, engine=lo.engine, dp=lo.dp,
                                 expert_parallel=lo.expert_parallel, attn_dp=attn_dp_of(lo))
            w = weights_of(shape, t, lo, memo)
        if mem is None:
            return legal, None
        bud = budget(shape, t, at_one, mem, int(default_context(shape, lo).result))
        res = reserve(shape, t, at_one, bud, memo)
        pool = memory_pool(memory=mem, utilization=bud.u, weights=w.result,
                           reserve_bytes=res.result, engine="vllm")
        return legal, pool.result > 0
    ev = kept if kept is not None else evaluate_capacity(shape, t, opts, memo)
    return not ev.refusals, ev.fits


def _reserve_not_negative(opts: Options) -> bool:
    """A vLLM launch whose reserve is priced (not given) at positive sizes: never below 0."""
    return opts.engine == "vllm" and opts.reserve is None and (
        opts.max_num_seqs is None or opts.max_num_seqs > 0) and (
        opts.max_num_batched_tokens is None or opts.max_num_batched_tokens > 0)


def _weights_at(shape: ModelShape, t: int, opts: Options, memo: Memo | None) -> float:
    """The weights per GPU: the memoised layout's when it is kept, else priced alone (without
    the rest of the layout)."""
    if memo is not None:
        lo = layout_options(shape, opts)
        kept = memo.get((shape, t, lo, None))
        if kept is not None:
            return kept.weights.result
        return weights_of(shape, t, opts, memo, lo).result
    return weights(shape, t, opts).result


def weights_of(shape: ModelShape, t: int, opts: Options, memo: Memo | None,
               lo: Options | None = None) -> Formula:
    """``weights``, kept in ``memo`` by what they read: the layout's options ``lo`` (the
    release among them wherever the weights read it)."""
    if memo is None:
        return weights(shape, t, opts)
    if lo is None:
        lo = layout_options(shape, opts)
    key = ("weights", shape, t, lo)
    kept = memo.part(key)
    return kept if kept is not None else memo.keep(key, weights(shape, t, opts))


def layout(shape: ModelShape, t: int, opts: Options, memo: Memo | None = None) -> Evaluation:
    """What needs no GPU: refusals, context, weights and KV bytes per GPU, all-reduce bytes."""
    eng = opts.engine
    pp = max(opts.pp, 1)
    ctx = default_context(shape, opts)
    c = int(ctx.result)
    attn_dp = attn_dp_of(opts)
    refs = tuple(
        refusals(
            shape, t, engine=eng, dp=opts.dp, expert_parallel=opts.expert_parallel, attn_dp=attn_dp
        )
    )
    w = weights_of(shape, t, opts, memo)
    kvb = kv.kv_bytes_per_token_per_gpu(
        shape, t, kv_cache_dtype=opts.kv_cache_dtype, pp=pp, context=c, attn_dp=attn_dp
    )
    # What the engine's pool divides by: SGLang's own cell (hybrid SWA split, sliding layers in
    # full without it; issue 21); the decode step keeps reading kvb (``KV_READ`` in values).
    cell = kvb
    if eng == "sglang":  # imported here: a vLLM-only run loads none of SGLang's pool physics
        from tpcheck.physics import sglang_pools

        cell = sglang_pools.cell_bytes(shape, t, kv_cache_dtype=opts.kv_cache_dtype, pp=pp,
                                       attn_dp=attn_dp, version=opts.engine_version,
                                       swa_ratio=opts.swa_full_tokens_ratio)
    ar = comm.allreduce_bytes_per_token(kv.stage_layers(shape.layers, pp), shape.hidden,
                                        act_bytes_of(shape, opts), t)
    return Evaluation(
        tp=t,
        refusals=refs,
        context=ctx,
        kv_heads_per_gpu=kv.kv_heads_per_gpu(shape, t),
        kv_replicas=kv.kv_replicas(shape, t),
        weights=w,
        kv_bytes_per_token=cell,
        allreduce=ar,
        defaults={},
        kv_read=kvb,
    )


def weights(shape: ModelShape, t: int, opts: Options) -> Formula:
    """Weight bytes per GPU: the split by dtype, MXFP4 layout by release, MoE and attention
    groups, the pipeline stages (embedding first, LM head last), the rotary cache every rank
    holds, the vision tower of a multimodal checkpoint unless the launch limits its images to 0,
    less what --cpu-offload-gb keeps in CPU memory."""
    eng = opts.engine
    attn_dp = attn_dp_of(opts)
    split = weight_split(shape, dtype=opts.dtype, quantization=opts.quantization)
    pad = experts_gpu = None
    q = shape.quant
    g = moe_group_of(t, opts)
    gpu_key = opts.gpu.key if opts.gpu else None
    if (eng == "vllm" and q is not None and q.method == "mxfp4"
            and opts.quantization in (None, "mxfp4") and shape.moe is not None):
        m = shape.moe
        if mxfp4_layout(opts.engine_version, gpu_key) == MXFP4_TRITON_HOPPER:
            ep = opts.expert_parallel and g > 1
            experts_gpu = mxfp4_hopper_experts_019(
                hidden=shape.hidden, expert_ffn=m.expert_ffn,
                experts=m.num_experts // g if ep else m.num_experts, layers=m.moe_layers,
                g=1 if ep else g, bias=m.expert_bias)
        else:
            # Marlin pads each rank's slice of the width; expert parallelism keeps it whole
            parts = 1 if opts.expert_parallel and g > 1 else g
            pad = mxfp4_padding(shape.hidden, m.expert_ffn, gpu_key, parts)
            split = replace(split, experts=split.experts * pad.result)
    attn_tp = t // attn_dp if attn_dp > 1 and t % attn_dp == 0 else t
    rope = rope_for(shape, opts)
    extras = load_extras(shape, t, opts, g)
    w = weights_per_gpu(
        split,
        t,
        kv_heads=shape.kv_heads,
        pp=max(opts.pp, 1),
        moe_group=g,
        is_mla=shape.is_mla,
        attn_tp=attn_tp,
        layers=shape.layers,
        experts_per_gpu=None if experts_gpu is None else experts_gpu.result,
        whole=rope,
        extras=extras,
    )
    extra = tuple(x for x in (pad, experts_gpu) if x is not None)
    if extra:
        w = replace(w, terms=(*extra, *w.terms))
    if opts.cpu_offload > 0:
        w = Formula(
            "weights_bytes_per_gpu", "W_gpu − offload",
            {"W_gpu": w.result, "offload": opts.cpu_offload}, max(w.result - opts.cpu_offload, 0),
            "B", "vllm 0.33.0 --cpu-offload-gb (weights streamed from CPU memory)", (w,),
        )
    return w


def default_tps(upto: int = 64) -> list[int]:
    return [1 << i for i in range(7) if (1 << i) <= upto]


def sweep(shape: ModelShape, opts: Options, tps: Sequence[int] | None = None) -> list[Evaluation]:
    """Powers of two up to 64 plus every legal non-power up to 64, unless ``tps`` is given."""
    if tps is None:
        pw = set(default_tps())
        extra = {
            t
            for t in range(1, 65)
            if t not in pw
            and not refusals(
                shape, t, engine=opts.engine, dp=opts.dp, expert_parallel=opts.expert_parallel
            )
        }
        tps = sorted(pw | extra)
    return [evaluate(shape, t, opts) for t in tps]


def intensity(shape: ModelShape, t: int, opts: Options) -> tuple[Formula, Formula | None]:
    """Interconnect intensity at t and the break-even t on this GPU's link."""
    b = kv.dtype_bytes(kv.activation_dtype(shape.dtype, opts.dtype))
    p = model_params(shape, active=True)
    it = comm.interconnect_intensity(p, shape.layers, shape.hidden, b, t)
    flops = opts.flops or (opts.gpu.bf16_flops if opts.gpu else None)
    link = opts.link_bandwidth
    if link is None and opts.gpu is not None:  # the bandwidth regime's busbw (collective)
        key, peak = intra_link(opts)
        link = node_price(key, peak, max(t, 2), 1 << 30, engine=None, version=None).bus
    be = (
        comm.breakeven_tp(p, shape.layers, shape.hidden, b, flops, link) if flops and link else None
    )
    return it, be


ENGINE_LOG_SRC = {
    "vllm": ("vllm 0.19.0 v1/worker/gpu_model_runner.py l.4821 ('Model loading took'), "
             "gpu_worker.py l.437 ('Available KV cache memory'), l.640-650 (the breakdown), "
             "v1/core/kv_cache_utils.py l.1319/1325 ('GPU KV cache size', 'Maximum "
             "concurrency'); utils/mem_utils.py l.23 (round(b / GiB, 2))"),
    "sglang": ("sglang 0.5.23 model_runner.py l.1373-1378 ('Load weight end ... mem usage'), "
               "mem_cache/memory_pool.py l.2087-2097 ('KV Cache is allocated'), "
               "managers/scheduler.py l.1268-1275 ('max_total_num_tokens=')"),
}


def engine_log_lines(ev: Evaluation, engine: str) -> tuple[str, ...]:
    """The prediction in the words of the engine's start-up log (rank 0 of the heaviest
    stage), so a user can diff it against the first pod log; () without a pool."""
    if ev.pool is None or ev.tokens is None or ev.fits is not True:
        return ()
    gib = float(1 << 30)
    w = ev.weights.result / gib
    if engine == "sglang":
        n = int(ev.tokens.result)
        kv = n * ev.kv_bytes_per_token.result / gib
        # MLA's pool is one latent buffer ("KV size"); MHA pools log K and V apart.
        latent = "r_kv" in ev.kv_bytes_per_token.values
        sizes = (f"KV size: {kv:.2f} GB" if latent else
                 f"K size: {kv / 2:.2f} GB, V size: {kv / 2:.2f} GB")
        return (f"Load weight end. ... mem usage={w:.2f} GB.",
                f"KV Cache is allocated. #tokens: {n}, {sizes}",
                f"max_total_num_tokens={n}")
    out = [f"Model loading took {round(w, 2)} GiB memory"]
    if ev.reserve is not None and ev.reserve.terms:
        t = {x.name: x.result / gib for x in ev.reserve.terms}
        out.append(f"Actual usage is {round(w, 2)} GiB for weight, "
                   f"{round(t.get('R_activation', 0.0), 2)} GiB for peak activation, "
                   f"{round(t.get('R_non_torch', 0.0), 2)} GiB for non-torch memory, and "
                   f"{round(t.get('R_cuda_graphs', 0.0), 2)} GiB for CUDAGraph memory.")
    out.append(f"Available KV cache memory: {round(ev.pool.result / gib, 2)} GiB")
    printed = ev.engine_tokens if ev.engine_tokens is not None else ev.tokens
    out.append(f"GPU KV cache size: {int(printed.result):,} tokens")
    if ev.concurrency is not None:
        c = int(ev.context.result)
        out.append(f"Maximum concurrency for {c:,} tokens per request: "
                   f"{ev.concurrency.result:.2f}x")
    conn = ev.pool.values.get("kv_connector")
    if conn is not None:
        out.append(f"(not in this prediction: the {conn} connector's buffers, which vLLM "
                   f"makes after sizing this pool, beyond --gpu-memory-utilization)")
    return tuple(out)


__all__ = [
    "CONNECTOR_NOTE", "CONTEXT_CAP", "DEFAULT_ALPHA", "ENGINE_LOG_SRC", "LAYOUT_READS",
    "NO_ROTARY", "STEP_ONLY", "Budget", "Evaluation", "Memo", "Options", "at_capacity",
    "budget", "calibrated", "capacity", "capacity_weights", "decode_step", "default_context",
    "default_tps", "engine_log_lines", "evaluate", "evaluate_capacity", "fits",
    "gpu_nvlink", "intensity", "intra_link", "kv_pool", "layout", "layout_at", "layout_options",
    "prefill_columns", "prefill_efficiency", "release_of", "reserve", "starts", "sweep",
    "vllm_budget", "weights",
]
