"""The options a plan evaluates a layout with, the Evaluation it fills, and what options decide."""

from __future__ import annotations

from operator import attrgetter

from tpcheck.engines.defaults import defaults_for
from tpcheck.formula import Formula
from tpcheck.hardware.gpus import GPU
from tpcheck.hardware.links import Link
from tpcheck.models.shape import ModelShape
from tpcheck.physics import kv
from tpcheck.physics.legality import Refusal
from tpcheck.record import field, record


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
    # vLLM --limit-mm-per-prompt with every modality of the vision tower at 0, or
    # --language-model-only: the tower is not built (tpcheck.physics.weights.VISION_SKIP_SRC).
    vision_off: bool = False

    def __hash__(self) -> int:
        """Computed once and kept: options key the run's memo of evaluations (plan.Memo), and
        every rule's what-if makes new ones. Of the fields the what-ifs and launches vary (equal
        options have equal hashes whichever fields it reads), the GPU by its catalog key: its 13
        fields and 12 aliases, with the other 36 fields, cost a what-if more than its copy."""
        h: int | None = self.__dict__.get("_hash")
        if h is None:
            gpu = self.gpu
            h = self.__dict__["_hash"] = hash((_HASHED(self), None if gpu is None else gpu.key))
        return h


_HASHED = attrgetter("engine", "engine_version", "memory", "utilization", "pp", "dp", "attn_dp",
                     "max_num_seqs", "context", "kv_cache_dtype", "quantization", "batch",
                     "cpu_offload", "kv_connector")


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
    # What ``engine_tokens`` is priced from (``engine_tokens_for``'s arguments), vLLM
    # only: kept by value, so two evaluations are equal exactly when their printed figures are
    printed_from: tuple[object, ...] | None = field(default=None, repr=False)

    @property
    def engine_tokens(self) -> Formula | None:
        """What the release's "GPU KV cache size: N tokens" line prints (vLLM only), priced the
        first time it is read: no rule reads it, and every launch's capacity would price it
        (the plan table, its JSON and the engine-log lines do)."""
        args = self.printed_from
        if args is None:
            return None
        kept: Formula | None = self.__dict__.get("_engine_tokens")
        if kept is None:
            kept = self.__dict__["_engine_tokens"] = engine_tokens_for(*args)  # type: ignore[arg-type]
        return kept

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


def engine_tokens_for(shape: ModelShape, t: int, kv_cache_dtype: str | None,
                      version: str | None, pool: float, block: int, concurrency: float, c: int,
                      pp: int, attn_dp: int) -> Formula:
    """What vLLM's "GPU KV cache size" line prints (memory.engine_printed_tokens), from what
    ``Evaluation.printed_from`` keeps; MLA and compressed caches, whose groups are not
    modelled, print the release's capacity figure."""
    from tpcheck.physics import memory  # (memory reads no plan record)

    split = kv.engine_layer_split(shape, t, kv_cache_dtype=kv_cache_dtype, pp=pp,
                                  attn_dp=attn_dp)
    if split is None:
        f = memory.printed_tokens(concurrency, c)
        return Formula("engine_kv_tokens", f.expression, dict(f.values), f.result, "tokens",
                       memory.VLLM_TOKENS)
    layer_b, full, sw = split
    return memory.engine_printed_tokens(version=version, pool=pool, layer_bytes=layer_b,
                                        full_layers=full, sliding_layers=sw, block=block,
                                        concurrency=concurrency, context=c)


def moe_group_of(t: int, opts: Options) -> int:
    return t * opts.dp if opts.engine == "vllm" else t


def attn_dp_of(opts: Options) -> int:
    return opts.attn_dp if opts.engine == "sglang" else 1


def act_bytes_of(shape: ModelShape, opts: Options) -> float:
    return kv.dtype_bytes(kv.activation_dtype(shape.dtype, opts.dtype))


def release_of(opts: Options) -> str:
    """The engine release the options name, else the newest known (what the step cites)."""
    return opts.engine_version or defaults_for(
        "sglang" if opts.engine == "sglang" else "vllm").version
