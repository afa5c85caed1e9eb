"""One layout evaluated end to end, and the sweep over t that ``tpcheck plan`` prints.

``evaluate`` is what every capacity rule asks: it assembles the physics' Formulas for one
(model, GPU, t, p, dp) and names each engine default it had to assume.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from tpcheck.engines.defaults import (
    EngineDefaults,
    defaults_for,
    sglang_mem_fraction,
)
from tpcheck.formula import Formula
from tpcheck.hardware.gpus import GPU
from tpcheck.hardware.links import Link
from tpcheck.models.shape import ModelShape
from tpcheck.physics import comm, kv, memory, sglang_memory, sglang_pools
from tpcheck.physics import step as stepmodel
from tpcheck.physics.legality import Refusal, refusals
from tpcheck.physics.linkcost import (
    LinkUse,
    at_size,
    chunk_efficiency,
    node_network,
    node_price,
    prefill_tokens,
)
from tpcheck.physics.split import model_params, weight_split
from tpcheck.physics.weights import (
    MXFP4_TRITON_HOPPER,
    mxfp4_hopper_experts_019,
    mxfp4_layout,
    mxfp4_padding,
    rope_cache,
    weights_per_gpu,
    weights_read,
)
from tpcheck.record import field, record, replace

CONTEXT_CAP = 32768
DEFAULT_ALPHA = 10e-6  # seeds' assumed fixed all-reduce cost (tp-inference-deployer.txt §7)


@record
class Options:
    """Everything about a layout that is not the model: engine, GPU, flags as set or None."""

    engine: str = "vllm"
    engine_version: str | None = None
    entrypoint: str = "serve"
    gpu: GPU | None = None
    memory: int | None = None  # bytes per GPU; overrides the GPU's usable memory
    utilization: float | None = None
    pp: int = 1
    dp: int = 1
    expert_parallel: bool = False
    attn_dp: int = 1
    max_num_seqs: int | None = None
    block_size: int | None = None  # as written; else the release's default
    max_num_batched_tokens: int | None = None
    reserve: int | None = None
    context: int | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    dtype: str | None = None
    enforce_eager: bool = False
    cpu_offload: int = 0  # bytes of weights per GPU vLLM keeps in CPU memory (--cpu-offload-gb)
    batch: int = 1
    alpha: float | None = None
    custom_all_reduce: bool = True  # False: --disable-custom-all-reduce
    link_key: str | None = None  # a link class inside a node instead of the GPU's (--link)
    link_bandwidth: float | None = None  # overrides the GPU's link
    hbm_bandwidth: float | None = None
    flops: float | None = None
    # SGLang's hybrid pools (issue 21); None = the release's default (sglang_pools)
    swa_full_tokens_ratio: float | None = None
    mamba_full_memory_ratio: float | None = None
    max_mamba_cache_size: int | None = None
    # Where a TP group stops being one NVLink domain (default: the GPU's own) and the network
    # past it (default: InfiniBand NDR, assumed): the step's all-reduces run on it beyond.
    gpus_per_node: int | None = None
    network: Link | None = None
    # vLLM --kv-transfer-config's connector ("" when it names none): its buffers are not in the
    # pool (issue 32 item 6), and the pool says so.
    kv_connector: str | None = None


@record
class Evaluation:
    """Every figure for one layout; memory figures are None without a GPU or --hbm."""

    tp: int
    refusals: tuple[Refusal, ...]
    context: Formula
    kv_heads_per_gpu: Formula
    kv_replicas: Formula
    weights: Formula
    kv_bytes_per_token: Formula
    allreduce: Formula
    defaults: dict[str, str] = field(default_factory=dict)  # what was assumed, and from where
    utilization: Formula | None = None
    memory: Formula | None = None
    reserve: Formula | None = None
    pool: Formula | None = None
    # kv_pool_tokens: whole blocks of the pool at the effective per-token cost (sliding-window
    # layers charged min(c, w)/c), the capacity for sequences of c tokens. engine_tokens: the
    # figure the release's "GPU KV cache size: N tokens" line prints (vLLM only).
    tokens: Formula | None = None
    engine_tokens: Formula | None = None
    concurrency: Formula | None = None
    seats: Formula | None = None
    max_num_seqs: Formula | None = None
    step: Formula | None = None
    comm_share: Formula | None = None
    block: int = 16
    floor: Formula | None = None  # the weight-read floor; ``step`` is calibrated (issue 22)
    batch: int = 1
    allreduce_link: str | None = None  # link key the all-reduces run on (None: t = 1, or --link)
    prefill: Formula | None = None  # one chunk of max-num-batched-tokens from an empty cache
    prefill_prompt: Formula | None = None  # a whole context-length prompt, chunk by chunk
    kv_read: Formula | None = None  # KV bytes per token the decode step reads (vLLM's: the cell)
    ntok: int | None = None  # tokens per prefill chunk, as set or the release's default
    ntok_source: str | None = None  # where that figure comes from

    @property
    def legal(self) -> bool:
        return not self.refusals

    @property
    def fits(self) -> bool | None:
        """Whether the weights (and the reserve) leave a KV pool: False means the engine does
        not start (CUDA OOM loading, or vLLM's "No available memory for the cache blocks").
        None without a memory figure. Seats and gains of a row that does not fit mean nothing."""
        if self.pool is None:
            return None
        return self.pool.result > 0

    @property
    def budget(self) -> Formula | None:
        """What the weights must fit in: vLLM's M·u; SGLang's T·mfs, T being the free memory
        after the CUDA context and communicators that its pool formula names (issue 21)."""
        if self.memory is None or self.utilization is None:
            return None
        m, u = self.memory.result, self.utilization.result
        t_free = self.pool.values.get("T") if self.pool is not None else None
        if self.pool is not None and isinstance(t_free, (int, float)):
            return Formula("budget_bytes", "T·mfs", {"T": t_free, "mfs": u}, t_free * u, "B",
                           self.pool.source, self.pool.terms)
        return Formula("budget_bytes", "M·u", {"M": m, "u": u}, m * u, "B", self.memory.source)

    def fit_reason(self) -> str:
        """Why a row does not start, in one clause (empty when it fits or memory is unknown)."""
        budget = self.budget
        if self.fits is not False or budget is None:
            return ""
        gib = float(1 << 30)
        w, b = self.weights.result, budget.result
        memory, fraction = (float(v or 0) for v in budget.values.values())  # M or T; u or mfs
        if w > b:
            return (f"weights {w / gib:.1f} GiB per GPU > {budget.expression} = "
                    f"{memory / gib:.1f}·{fraction:g} = {b / gib:.1f} GiB")
        r = self.reserve.result if self.reserve is not None else 0.0
        return (f"weights {w / gib:.1f} GiB + reserve {r / gib:.1f} GiB per GPU leave no KV pool "
                f"of {budget.expression} = {b / gib:.1f} GiB")

    def to_row(self) -> dict[str, object]:
        """DESIGN.md's plan row shape."""

        def r(f: Formula | None) -> object:
            return None if f is None else f.result

        return {
            "tp": self.tp,
            "legal": self.legal,
            "fits": self.fits,
            "fit_reason": self.fit_reason() or None,
            "refusals": [
                {"kind": x.kind, "check": x.check, "message": x.engine_message}
                for x in self.refusals
            ],
            "kv_heads_per_gpu": r(self.kv_heads_per_gpu),
            "kv_replicas": r(self.kv_replicas),
            "weights_bytes_per_gpu": r(self.weights),
            "kv_bytes_per_token_per_gpu": r(self.kv_bytes_per_token),
            "pool_bytes_per_gpu": r(self.pool),
            "kv_pool_tokens": r(self.tokens),
            "engine_kv_tokens": r(self.engine_tokens),
            "max_concurrency": r(self.concurrency),
            "seats": r(self.seats),
            "allreduce_bytes_per_token_per_gpu": r(self.allreduce),
            "decode_step_seconds": r(self.step),
            "decode_floor_seconds": r(self.floor),
            "decode_tokens_per_second": None if self.step is None or not self.step.result
            else self.batch / self.step.result,
            "decode_tokens_per_second_per_gpu": None if self.step is None or not self.step.result
            else self.batch / self.step.result / self.tp,
            "comm_share": r(self.comm_share),
            "allreduce_link": self.allreduce_link,
            "prefill_chunk_seconds": r(self.prefill),
            "prefill_prompt_seconds": r(self.prefill_prompt),
            "reserve": None
            if self.reserve is None
            else {t.name: t.result for t in (self.reserve.terms or (self.reserve,))},
        }


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


def gpu_nvlink(gpu: GPU | None) -> bool:
    """Whether SGLang sets up custom all-reduce/NVLink buffers: NVLink parts (unknown: yes)."""
    return gpu is None or (gpu.link.startswith("nvlink") and gpu.nvlink_domain > 1)


class Memo(OrderedDict[tuple[ModelShape, int, Options, bool], Evaluation]):
    """A run's evaluations, shared by its rules and files (manifests repeat layouts; rules ask
    the same what-ifs), keyed by value (shape, t, options, whole or without the step). Only
    the most recent ``size`` are kept, so memory stays flat however large the repository."""

    def __init__(self, size: int = 1024) -> None:
        super().__init__()
        self.size = size

    def __setitem__(self, key: tuple[ModelShape, int, Options, bool], value: Evaluation) -> None:
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
    if memo is not None and key in memo:
        return memo[key]
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
    at_one = opts if opts.batch == 1 else replace(opts, batch=1)
    key = (shape, t, at_one, False)
    base = memo.get(key) if memo is not None else None
    if base is None:
        base = capacity(shape, t, at_one)
        if memo is not None:
            memo[key] = base
    return base


def capacity(shape: ModelShape, t: int, opts: Options) -> Evaluation:
    """``evaluate`` without the decode step (``opts.batch`` is 1)."""
    ev = layout(shape, t, opts)
    mem = opts.memory if opts.memory is not None else (opts.gpu.usable_bytes if opts.gpu else None)
    if mem is None:
        return ev
    bud = budget(shape, t, opts, mem, int(ev.context.result))
    res = reserve(shape, t, opts, bud)
    return kv_pool(shape, t, opts, bud, ev, res)


def _moe_group(t: int, opts: Options) -> int:
    return t * opts.dp if opts.engine == "vllm" else t


def _attn_dp(opts: Options) -> int:
    return opts.attn_dp if opts.engine == "sglang" else 1


def _act_bytes(shape: ModelShape, opts: Options) -> float:
    return kv.dtype_bytes(kv.activation_dtype(shape.dtype, opts.dtype))


def layout(shape: ModelShape, t: int, opts: Options) -> Evaluation:
    """What needs no GPU: refusals, context, weights and KV bytes per GPU, all-reduce bytes."""
    eng = opts.engine
    pp = max(opts.pp, 1)
    ctx = default_context(shape, opts)
    c = int(ctx.result)
    attn_dp = _attn_dp(opts)
    refs = tuple(
        refusals(
            shape, t, engine=eng, dp=opts.dp, expert_parallel=opts.expert_parallel, attn_dp=attn_dp
        )
    )
    w = weights(shape, t, opts)
    kvb = kv.kv_bytes_per_token_per_gpu(
        shape, t, kv_cache_dtype=opts.kv_cache_dtype, pp=pp, context=c, attn_dp=attn_dp
    )
    # What the engine's pool divides by: SGLang's own cell (hybrid SWA split, sliding layers in
    # full without it; issue 21); the decode step keeps reading kvb (``KV_READ`` in values).
    cell = (sglang_pools.cell_bytes(shape, t, kv_cache_dtype=opts.kv_cache_dtype, pp=pp,
                                    attn_dp=attn_dp, version=opts.engine_version,
                                    swa_ratio=opts.swa_full_tokens_ratio)
            if eng == "sglang" else kvb)
    ar = comm.allreduce_bytes_per_token(kv.stage_layers(shape.layers, pp), shape.hidden,
                                        _act_bytes(shape, opts), t)
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


# Families whose positions are learned or ALiBi, not rotary: no cos/sin cache.
NO_ROTARY = frozenset({"gpt2", "gpt_bigcode", "bloom", "mpt", "opt"})


def weights(shape: ModelShape, t: int, opts: Options) -> Formula:
    """Weight bytes per GPU: the split by dtype, MXFP4 layout by release, MoE and attention
    groups, the pipeline stages (embedding first, LM head last), the rotary cache every rank
    holds, less what --cpu-offload-gb keeps in CPU memory."""
    eng = opts.engine
    attn_dp = _attn_dp(opts)
    split = weight_split(shape, dtype=opts.dtype, quantization=opts.quantization)
    pad = experts_gpu = None
    q = shape.quant
    g = _moe_group(t, opts)
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
            pad = mxfp4_padding(shape.hidden, m.expert_ffn, gpu_key)
            split = replace(split, experts=split.experts * pad.result)
    attn_tp = t // attn_dp if attn_dp > 1 and t % attn_dp == 0 else t
    rope = None
    if eng == "vllm" and shape.compressed is None and shape.model_type not in NO_ROTARY:
        # (DeepSeek-V4's rotary: not read)
        rot = shape.mla.qk_rope_head_dim if shape.mla is not None else shape.head_dim
        # DeepSeek's scaling rope stays fp32 where FlashInfer is (CUDA), not on ROCm.
        amd = opts.gpu is not None and opts.gpu.link == "infinity-fabric"
        two = (shape.model_type.startswith("gemma3")
               and 0 < shape.sliding_layers < shape.layers)
        rope = rope_cache(max_position=shape.max_position_embeddings, rotary_dim=rot,
                          b=_act_bytes(shape, opts),
                          fp32=shape.model_type == "gpt_oss" or (shape.mla is not None
                                                                 and not amd),
                          copies=2 if two else 1)
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


@record(frozen=False)
class Budget:
    """The memory a layout has and the engine defaults it had to assume for it."""

    defaults: EngineDefaults
    block: int
    mem: int
    memf: Formula
    seqs: int  # max-num-seqs (SGLang's max-running-requests comes with the pool)
    ntok: int  # tokens per prefill chunk
    ntok_src: str
    u: float
    uf: Formula
    assumed: dict[str, str]  # what was assumed, and from where (Evaluation.defaults)
    context: int


def budget(shape: ModelShape, t: int, opts: Options, mem: int, c: int) -> Budget:
    """M, the block size, max-num-seqs, the prefill chunk and the memory fraction, each as set
    or as the engine release's default (named in ``assumed``)."""
    eng = opts.engine
    pp = max(opts.pp, 1)
    attn_dp = _attn_dp(opts)
    assumed: dict[str, str] = {}
    gpu_name = opts.gpu.name if opts.gpu else ""
    d = defaults_for("vllm" if eng == "vllm" else "sglang", opts.engine_version)
    block = opts.block_size or int(d.block_size().value)
    memf = Formula(
        "M",
        "M",
        {"M": mem},
        mem,
        "B",
        "--hbm" if opts.memory is not None else (opts.gpu.source if opts.gpu else ""),
    )
    seqs_d, _ = d.batch_defaults(mem, gpu_name, "llm" if opts.entrypoint == "llm" else "serve",
                                 c)
    if opts.max_num_seqs is not None:
        seqs = opts.max_num_seqs
    else:
        seqs = int(seqs_d.value)
        assumed["max_num_seqs"] = f"{seqs} ({seqs_d.source})"
    ntok, ntok_src = prefill_tokens(eng, opts.engine_version, opts.entrypoint, opts.gpu, mem,
                                    opts.max_num_batched_tokens, c)
    if opts.max_num_batched_tokens is None:
        name = "chunked_prefill_size" if eng == "sglang" else "max_num_batched_tokens"
        # prefill_tokens says "default NAME (SOURCE)"; the table of defaults names it once.
        bare = ntok_src.removeprefix(f"default {name} (")
        assumed[name] = f"{ntok} ({bare[:-1] if bare != ntok_src else ntok_src})"
    if opts.utilization is not None:
        u = opts.utilization
        uf = Formula("u", "u (given)", {"u": u}, u, "", "flag")
    elif eng == "sglang":
        dm = (sglang_memory.default_mem_fraction(d.version, mem, t, pp, attn_dp)
              or sglang_mem_fraction(mem, t, pp, attn_dp))
        u = float(dm.value)
        uf = Formula(
            "mem_fraction_static", "round((M − reserved)/M, 3)", {"M": mem}, u, "", dm.source
        )
        assumed["mem_fraction_static"] = f"{u} ({dm.source})"
    else:
        du = d.gpu_memory_utilization()
        u = float(du.value)
        uf = Formula("u", "default", {"engine_version": d.version}, u, "", du.source)
        assumed["gpu_memory_utilization"] = f"{u} ({du.source})"
    return Budget(defaults=d, block=block, mem=mem, memf=memf, seqs=seqs, ntok=ntok,
                  ntok_src=ntok_src, u=u, uf=uf, assumed=assumed, context=c)


def reserve(shape: ModelShape, t: int, opts: Options, bud: Budget) -> Formula:
    """What the engine keeps outside the weights and the KV pool (vLLM's activation peak,
    CUDA graphs, ...; SGLang's is inside its own pool formula)."""
    if opts.reserve is not None:
        return memory.fixed_reserve(opts.reserve)
    if opts.engine == "sglang":
        return memory.fixed_reserve(0)
    return memory.reserve_for(
        shape, t, b=_act_bytes(shape, opts), max_num_batched_tokens=bud.ntok,
        max_num_seqs=bud.seqs, enforce_eager=opts.enforce_eager, version=bud.defaults.version,
        moe_group=_moe_group(t, opts), expert_parallel=opts.expert_parallel, gpu=opts.gpu,
        pp=max(opts.pp, 1), dp=opts.dp,
    )


def kv_pool(shape: ModelShape, t: int, opts: Options, bud: Budget, ev: Evaluation,
            res: Formula) -> Evaluation:
    """The KV pool per GPU, its tokens, the sequences it seats and max-num-seqs (SGLang's
    max-running-requests, which its pool decides): ``ev`` (a ``layout``) with them."""
    eng = opts.engine
    pp = max(opts.pp, 1)
    attn_dp = _attn_dp(opts)
    d, block, mem, u, c = bud.defaults, bud.block, bud.mem, bud.u, bud.context
    w, cell, kvb = ev.weights, ev.kv_bytes_per_token, ev.kv_read
    assert kvb is not None
    defaults = dict(bud.assumed)
    seqs = bud.seqs
    mamba_slots: int | None = None  # SGLang's state slots (hybrid linear attention)
    if eng == "sglang" and opts.reserve is None:
        # SGLang's own budget: T (free after context and communicators) · mfs − W.
        nvlink = gpu_nvlink(opts.gpu)
        pool = sglang_memory.pool_per_gpu(memory=mem, mfs=u, weights=w.result, t=t,
                                          nvlink=nvlink, version=d.version)
        per_req = sglang_pools.mamba_state_per_request(shape, t, pp=pp, attn_dp=attn_dp)
        if per_req is not None:  # hybrid linear attention: the state pool comes out first
            mamba_slots, state = sglang_pools.mamba_slots_and_state(
                pool.result, per_req, version=d.version, max_running_requests=opts.max_num_seqs,
                ratio=opts.mamba_full_memory_ratio, max_mamba_cache_size=opts.max_mamba_cache_size)
            pool = sglang_pools.pool_after_state(pool, state)
        tokens = sglang_memory.pool_tokens(pool.result, cell.result, block, d.version)
    else:
        pool = memory.pool_per_gpu(
            memory=mem, utilization=u, weights=w.result, reserve_bytes=res.result, engine=eng
        )
        if opts.kv_connector is not None:
            pool = replace(pool, values={**pool.values,
                                         "kv_connector": opts.kv_connector or "unnamed"},
                           source=f"{pool.source}; {CONNECTOR_NOTE}")
        tokens = memory.kv_pool_tokens(pool.result, kvb.result, block)
    conc = memory.max_concurrency(int(tokens.result), c, block)
    seatsf = memory.seats(conc.result)
    printed = engine_tokens(shape, t, opts, d.version, pool.result, block, conc.result, c, pp,
                            attn_dp) if eng == "vllm" else None
    if eng == "sglang" and opts.max_num_seqs is None:
        from tpcheck.engines.defaults import sglang_max_running_requests

        md = (sglang_memory.default_max_running_requests(d.version, int(tokens.result), c)
              or sglang_max_running_requests(int(tokens.result), c))
        seqs = int(md.value)
        cap = sglang_pools.mamba_request_cap(mamba_slots, d.version)
        if cap is not None and cap.result < seqs:
            seqs = int(cap.result)
            md = replace(md, source=f"{cap.expression}, {cap.source}")
        defaults["max_running_requests"] = f"{seqs} ({md.source})"
        defaults.pop("max_num_seqs", None)
    seqf = Formula(
        "max_num_seqs",
        "max_num_seqs",
        {"max_num_seqs": seqs},
        seqs,
        "sequences",
        defaults.get("max_num_seqs", defaults.get("max_running_requests", "flag")),
    )
    return replace(ev, defaults=defaults, utilization=bud.uf, memory=bud.memf, reserve=res,
                   pool=pool, tokens=tokens, engine_tokens=printed, concurrency=conc,
                   seats=seatsf, max_num_seqs=seqf,
                   block=block, ntok=bud.ntok, ntok_source=bud.ntok_src)


def _links(shape: ModelShape, t: int, opts: Options, ntok: int
           ) -> tuple[float | None, float, float | None, float, str | None, LinkUse | None]:
    """The all-reduces' link bandwidth and α for the decode step and for a prefill chunk, the
    link key and the network (the group spans nodes: priced per message size, collective)."""
    gpu = opts.gpu
    b = _act_bytes(shape, opts)
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
                            shape.head_dim, shape.hidden, _act_bytes(shape, opts), t, flops,
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
            b=_act_bytes(shape, opts),
            t=t,
            link_bw=link,
            alpha=alpha,
        )
        step, share = calibrated(shape, t, opts, floor, pp, network=net)
    prefill, prompt = prefill_columns(shape, t, opts, base, link, pre_link, pre_alpha)
    return replace(base, step=step, comm_share=share, floor=floor, batch=opts.batch,
                   allreduce_link=link_key, prefill=prefill, prefill_prompt=prompt)


def engine_tokens(shape: ModelShape, t: int, opts: Options, version: str | None, pool: float,
                  block: int, concurrency: float, c: int, pp: int, attn_dp: int) -> Formula:
    """What vLLM's "GPU KV cache size" line prints (memory.engine_printed_tokens); MLA and
    compressed caches, whose groups are not modelled, print the release's capacity figure."""
    split = kv.engine_layer_split(shape, t, kv_cache_dtype=opts.kv_cache_dtype, pp=pp,
                                  attn_dp=attn_dp)
    if split is None:
        f = memory.printed_tokens(concurrency, c)
        return Formula("engine_kv_tokens", f.expression, dict(f.values), f.result, "tokens",
                       memory.VLLM_TOKENS)
    layer_b, full, sw = split
    return memory.engine_printed_tokens(version=version, pool=pool, layer_bytes=layer_b,
                                        full_layers=full, sliding_layers=sw, block=block,
                                        concurrency=concurrency, context=c)


def release_of(opts: Options) -> str:
    """The engine release the options name, else the newest known (what the step cites)."""
    return opts.engine_version or defaults_for(
        "sglang" if opts.engine == "sglang" else "vllm").version


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


CONNECTOR_NOTE = ("a KV-transfer connector's own GPU buffers are not modelled: the pool is "
                  "before them (vllm 0.19.0 config/kv_transfer.py l.33-39: kv_buffer_device, "
                  "kv_buffer_size 1e9 B for the connectors that stage through one; "
                  "distributed/kv_transfer/kv_connector/v1/: each connector its own)")

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
                   f"takes from the same memory)")
    return tuple(out)
