"""The memory side of a plan: M, the engine defaults assumed for it, the reserve and the KV pool."""

from __future__ import annotations

from tpcheck.engines.defaults import (
    EngineDefaults,
    defaults_for,
    sglang_mem_fraction,
)
from tpcheck.formula import Formula
from tpcheck.hardware.gpus import GPU
from tpcheck.models.shape import ModelShape
from tpcheck.physics import memory
from tpcheck.physics.linkcost import prefill_tokens
from tpcheck.physics.plan_records import (
    Evaluation,
    Options,
    act_bytes_of,
    attn_dp_of,
    moe_group_of,
)
from tpcheck.record import record, replace

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Protocol

    class Parts(Protocol):
        """Where a run keeps the parts of its layouts (plan.Memo)."""

        def part(self, key: tuple[object, ...]) -> Formula | None: ...

        def keep(self, key: tuple[object, ...], value: Formula) -> Formula: ...


def gpu_nvlink(gpu: GPU | None) -> bool:
    """Whether SGLang sets up custom all-reduce/NVLink buffers: NVLink parts (unknown: yes)."""
    return gpu is None or (gpu.link.startswith("nvlink") and gpu.nvlink_domain > 1)


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
    attn_dp = attn_dp_of(opts)
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
        from tpcheck.physics import sglang_memory  # SGLang's physics only for an SGLang launch

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


def reserve(shape: ModelShape, t: int, opts: Options, bud: Budget,
            memo: Parts | None = None) -> Formula:
    """What the engine keeps outside the weights and the KV pool (vLLM's activation peak,
    CUDA graphs, ...; SGLang's is inside its own pool formula). Kept in ``memo`` by what it
    reads: layouts that differ only in what the reserve does not read (the context, the KV
    cache dtype, another release's budget) share one."""
    if opts.reserve is not None:
        return memory.fixed_reserve(opts.reserve)
    if opts.engine == "sglang":
        return memory.fixed_reserve(0)
    b, g, pp = act_bytes_of(shape, opts), moe_group_of(t, opts), max(opts.pp, 1)
    version = bud.defaults.version
    key = ("reserve", shape, t, b, bud.ntok, bud.seqs, opts.enforce_eager, version, g,
           opts.expert_parallel, opts.gpu, pp, opts.dp)
    kept = memo.part(key) if memo is not None else None
    if kept is not None:
        return kept
    res = memory.reserve_for(
        shape, t, b=b, max_num_batched_tokens=bud.ntok, max_num_seqs=bud.seqs,
        enforce_eager=opts.enforce_eager, version=version, moe_group=g,
        expert_parallel=opts.expert_parallel, gpu=opts.gpu, pp=pp, dp=opts.dp,
    )
    return memo.keep(key, res) if memo is not None else res


def kv_pool(shape: ModelShape, t: int, opts: Options, bud: Budget, ev: Evaluation,
            res: Formula) -> Evaluation:
    """The KV pool per GPU, its tokens, the sequences it seats and max-num-seqs (SGLang's
    max-running-requests, which its pool decides): ``ev`` (a ``layout``) with them."""
    eng = opts.engine
    pp = max(opts.pp, 1)
    attn_dp = attn_dp_of(opts)
    d, block, mem, u, c = bud.defaults, bud.block, bud.mem, bud.u, bud.context
    w, cell, kvb = ev.weights, ev.kv_bytes_per_token, ev.kv_read
    assert kvb is not None
    defaults = dict(bud.assumed)
    seqs = bud.seqs
    mamba_slots: int | None = None  # SGLang's state slots (hybrid linear attention)
    if eng == "sglang":  # SGLang's physics only for an SGLang launch
        from tpcheck.physics import sglang_memory, sglang_pools
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
    # vLLM's printed KV size is priced when read (Evaluation.engine_tokens): no rule reads it,
    # only ``tpcheck plan``'s table, its JSON and the engine-log lines
    printed = (shape, t, opts.kv_cache_dtype, d.version, pool.result, block, conc.result, c,
               pp, attn_dp) if eng == "vllm" else None
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
                   pool=pool, tokens=tokens, printed_from=printed, concurrency=conc,
                   seats=seatsf, max_num_seqs=seqf,
                   block=block, ntok=bud.ntok, ntok_source=bud.ntok_src)



CONNECTOR_NOTE = ("a KV-transfer connector's own GPU buffers are not modelled and not in the "
                  "pool: the worker makes the connector after the pool is sized (vllm 0.19.0 "
                  "v1/worker/gpu_worker.py initialize_from_config l.515-527, after "
                  "determine_available_memory; 0.33.0 l.866-887), so they come out of the "
                  "memory beyond --gpu-memory-utilization, not out of the printed pool; NIXL "
                  "stages through host buffers (nixl_connector.py l.1380-1418, "
                  "kv_buffer_device cpu) or the KV cache itself; config/kv_transfer.py "
                  "l.33-39: kv_buffer_size 1e9 B for the connectors that stage through one; "
                  "releases before 0.19 not read")
