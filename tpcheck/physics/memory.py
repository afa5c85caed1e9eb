"""The KV pool per GPU and what it holds: pool = M·u − W − R, tokens, concurrency, seats.

Capacity is per GPU: every rank of a TP group holds a slice of every sequence, so the pool of
one GPU (the smallest) is the deployment's capacity (vLLM takes the min over workers).
"""

from __future__ import annotations

import math

# ``X as X``: release facts moved to engines.eras and physics.non_torch (issue 29), still read
# as memory.X
from tpcheck.engines.eras import ERA_V0, ERA_V1, engine_era, moe_workspace_persistent, sampler_era
from tpcheck.engines.eras import ERA_V1_NO_GRAPHS as ERA_V1_NO_GRAPHS
from tpcheck.engines.eras import NON_TORCH_COMMS as NON_TORCH_COMMS
from tpcheck.engines.eras import PRINTED_BLOCKS as PRINTED_BLOCKS
from tpcheck.engines.eras import PRINTED_CAPACITY as PRINTED_CAPACITY
from tpcheck.engines.eras import SAMPLER_FLASHINFER as SAMPLER_FLASHINFER
from tpcheck.engines.eras import SAMPLER_FLASHINFER_010 as SAMPLER_FLASHINFER_010
from tpcheck.engines.eras import SAMPLER_SORT as SAMPLER_SORT
from tpcheck.engines.eras import SAMPLER_TRITON as SAMPLER_TRITON
from tpcheck.engines.eras import VLLM_TOKENS as VLLM_TOKENS
from tpcheck.engines.eras import printed_tokens_release as printed_tokens_release
from tpcheck.formula import GIB, MIB, Formula
from tpcheck.models.shape import ModelShape
from tpcheck.physics.non_torch import NCCL_BYTES_PER_8_RANKS as NCCL_BYTES_PER_8_RANKS
from tpcheck.physics.non_torch import NON_TORCH_FUSION as NON_TORCH_FUSION
from tpcheck.physics.non_torch import NON_TORCH_MNNVL as NON_TORCH_MNNVL
from tpcheck.physics.non_torch import (
    fusion_capability,
    fusion_workspace_bytes,
    non_torch_base,
    non_torch_bytes,
    non_torch_formula,
    non_torch_release,
)
from tpcheck.physics.non_torch import lazy_nccl_bytes as lazy_nccl_bytes

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from tpcheck.formula import Scalar
    from tpcheck.hardware.gpus import GPU

VLLM_BUDGET = "vllm 0.33.0 v1/worker/utils.py request_memory l.716-772; gpu_worker.py l.753-757"
SGL_POOL = "sglang 0.5.23 mem_cache/kv_cache_configurator.py _profile_available_bytes l.2990"
RESERVE_SRC = "vllm 0.33.0 v1/worker/gpu_worker.py determine_available_memory l.641-820"
ACT_SRC = ("vllm 0.33.0 gpu_model_runner.py profile_run l.6072 (_dummy_run of "
           "max_num_batched_tokens); utils/mem_utils.py memory_profiling (transient peak = "
           "torch peak - allocated)")
SAMPLER_SRC = ("vllm 0.33.0 gpu_model_runner.py _dummy_sampler_run l.5866 (top_p 0.9, "
               "top_k V-1: top-k/top-p active), profile_run l.6139; v1/sample/sampler.py "
               "forward (fp32 logits)")
GRAPH_SRC = ("vllm 0.33.0 gpu_model_runner.py profile_cudagraph_memory l.6268; config/vllm.py "
             "_set_cudagraph_sizes l.2398 (1,2,4, 8..248 step 8, 256..min(2*max_num_seqs, 512) "
             "step 16); envs VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (default since v0.21.0)")
MOE_WS_SRC = ("vllm 0.19.0 model_executor/layers/fused_moe/modular_kernel.py l.1036-1070 (one "
              "chunk of M = max_num_batched_tokens; workspace13 shared with the output), "
              "fused_moe.py TritonExperts.workspace_shapes l.1976-1991 ((M, k, max(N/2, K)), "
              "(M, k, max(N, K)), N = 2·f_e/t, K = d, the activation dtype), v1/worker/"
              "workspace.py l.90-110 (one persistent buffer, kept after the forward); 0.33.0 "
              "modular_kernel.py l.1207 (the same manager); unquantized experts only")

# Constants. Each names its ground; those measured from published start-ups say which rows.
# Peak activation of the dummy forward, elements per token: the rank's FFN slice as gate+up
# output (2·f/t) and the activation output (f/t) live together, beside ~3 hidden-width buffers
# (residual, normed input, layer output). Rows 0-1 (V0, N = 20,000 and 29,000): torch peak rose
# by 0.92 GiB over 9,000 tokens = 109,760 B/token; 2·(3·14336 + 3·4096) = 110,592 (0.8% off).
ACT_HIDDEN_BUFFERS = 3
# Sampler warm-up bytes per logit beyond the b-byte logits (one row per dummy request, full
# vocab on every TP rank; logits are gathered, so this term does not shrink with t). Measured
# from published start-ups whose transient peak is the sampler's (bench/calibration_table.py
# refits them leaving each row out):
# - sort-based top-k/top-p (fp32 copy, sorted values, int64 indices, softmax, masks, noise):
#   row 12 (V0, T4, fp16) implies 34.8 B per logit beyond b, rows 21, 22 and 23 (H100,
#   0.12–0.16) 36.4, 36.3 and 36.3: 36 + b = 38 B per logit in bf16.
SAMPLER_BYTES_SORT = 36
# - FlashInfer top-k/top-p sampling, and the Triton top-k/top-p of 0.17–0.20 (in place on the
#   fp32 logits: fp32 copy, probabilities, noise): 4 + 4 + 4 + b, plus kernel scratch, about
#   18 B per logit in bf16. Row 26 (0.19, A100 whose size is assumed) implies 21.7 beyond b.
SAMPLER_BYTES_FAST = 16
# - FlashInfer top-k/top-p as 0.8-0.11 run it: rows 48, 49, 51, 52, 53 (0.10.1.1 on A100,
#   sampler-bound, "Using FlashInfer for top-p & top-k sampling" logged) imply 11.2, 10.7, 9.8,
#   10.1 and 11.0 B per logit beyond b: 11, their median rounded (0.21+ keep the estimate).
SAMPLER_BYTES_FLASHINFER_010 = 11
# - the Triton top-k/top-p of 0.17-0.20: the 0.19 breakdown lines ("A for peak activation") of
#   the sampler-bound rows 29, 34, 38, 39, 40 give (A - N·d·b)/(S·V) - b = 12.9, 12.9, 12.7, 12.7
#   and 12.9 B per logit beyond b (S = 1024 rows, N = 8192; A = 1.89, 2.21, 3.66, 3.65, 2.21
#   GiB): 13 (bench/calibration_table.py refits it leaving each row out).
SAMPLER_BYTES_TRITON = 13


def sampler_impl(version: str | None) -> tuple[str, int, str]:
    """(implementation, bytes per logit beyond b, source) of the release's sampler warm-up."""
    impl, src = sampler_era(version)
    extra = {SAMPLER_SORT: SAMPLER_BYTES_SORT, SAMPLER_TRITON: SAMPLER_BYTES_TRITON,
             SAMPLER_FLASHINFER_010: SAMPLER_BYTES_FLASHINFER_010}.get(impl, SAMPLER_BYTES_FAST)
    return impl, extra, src


# How far the predicted pool may be from the engine's: the calibration bar (issue 19: no
# published start-up off by more than 15 % or 1 GiB without a stated reason). A refusal whose
# shortfall is inside it is a likely refusal, not a certain one.
POOL_ERROR_BAND = GIB

# CUDA graph estimate: first capture + per-graph memory × graphs, per mode
# (FULL_AND_PIECEWISE: one FULL and one PIECEWISE graph per capture size). The per-graph
# figure is not measured by any observation row (every calibrated row predates v0.21).
CUDA_GRAPH_BYTES_PER_GRAPH = 4 * MIB
CUDA_GRAPH_MODES = 2


def v0_batched_tokens(max_model_len: int) -> int:
    """V0's default max_num_batched_tokens: max(max_model_len, 2048) without chunked prefill.

    Past 32K context V0 turns chunked prefill on and then schedules 512 tokens (vllm 0.6.4
    engine/arg_utils.py l.996-1012, config.py SchedulerConfig l.1103-1118).
    """
    return max(max_model_len, 2048) if max_model_len <= 32768 else 512


def cuda_graph_sizes(max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """Number of capture sizes: 1, 2, 4, 8..248 by 8, 256..min(2·S, 512) by 16, ≤ N."""
    top = min(2 * max_num_seqs, 512, max_num_batched_tokens)
    sizes = [x for x in [1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)] if x <= top]
    return len(sizes)


def reserve(
    *,
    hidden: int,
    ffn_per_rank: int,
    vocab: int,
    b: float,
    t: int,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    enforce_eager: bool = False,
    version: str | None = None,
    experts_per_token: int = 0,
    expert_ffn_per_rank: int = 0,
    sampler_bytes: float | None = None,
    gpu: GPU | None = None,
    pp: int = 1,
    dp: int = 1,
    moe_workspace: bool = False,
) -> Formula:
    """R, the non-KV reserve of a vLLM start-up, as named terms.

    The profile's transient peak is the larger of the dummy forward over N tokens and the
    sampler warm-up that follows it (the forward's buffers are freed by then; only its N·d
    output is held). CUDA graphs are subtracted from 0.21 on; non-torch memory grows with t.
    ``ffn_per_rank`` is the dense (or shared-expert) FFN width per rank; MoE layers add
    ``experts_per_token`` slices of ``expert_ffn_per_rank`` per token (fused-MoE caches).
    ``sampler_bytes`` replaces the release's bytes per logit beyond b (calibration refits).
    ``gpu`` (a catalog GPU), ``pp`` and ``dp`` decide whether 0.19+ makes the all-reduce
    fusion workspace (NON_TORCH_RELEASES). ``moe_workspace``: the fused-MoE scratch is the
    modular kernel's persistent workspace (MOE_WS_SRC), held through the sampler warm-up.
    """
    era = engine_era(version)
    n = max_num_batched_tokens
    f = ffn_per_rank
    k, fe = experts_per_token, expert_ffn_per_rank
    ws = 0.0
    if moe_workspace and k:
        ws = n * k * (max(fe, hidden) + max(2 * fe, hidden)) * b
        per_tok = 3 * f + ACT_HIDDEN_BUFFERS * hidden
    else:
        per_tok = 3 * f + k * (3 * fe + hidden) + ACT_HIDDEN_BUFFERS * hidden
    act = n * b * per_tok
    rows = min(max_num_seqs, n)
    impl, table_extra, impl_src = sampler_impl(version)
    extra = table_extra if sampler_bytes is None else sampler_bytes
    per_logit = b + extra
    sampler = rows * vocab * per_logit + n * hidden * b
    peak = max(act, sampler) + ws
    if enforce_eager or era != ERA_V1:
        n_graphs = 0
    else:
        n_graphs = cuda_graph_sizes(max_num_seqs, n) * CUDA_GRAPH_MODES
    graphs = n_graphs * CUDA_GRAPH_BYTES_PER_GRAPH
    how, single, nt_src = non_torch_release(version)
    cap = fusion_capability(gpu)
    fused = (how != NON_TORCH_COMMS and t > 1 and not enforce_eager and era != ERA_V0
             and (not single or (pp <= 1 and dp <= 1)))
    fusion = fusion_workspace_bytes(t=t, hidden=hidden, b=b, max_num_batched_tokens=n,
                                    capability=cap, scheme=how) if fused else 0
    nontorch = non_torch_bytes(version, t, fusion=fusion)
    act_expr = ("N·b·(3·f/t + 3·d)" if not k or ws else
                "N·b·(3·f/t + k·(3·f_e/t + d) + 3·d)")
    act_vals: dict[str, Scalar] = {"N": n, "b": b, "f/t": f, "d": hidden}
    if k and not ws:
        act_vals.update({"k": k, "f_e/t": fe})
    forward = Formula("R_forward", act_expr, act_vals, act, "B", ACT_SRC)
    peak_terms: tuple[Formula, ...] = (forward,)
    samp = Formula("R_sampler", "min(S, N)·V·(b + s) + N·d·b",
                   {"S": max_num_seqs, "N": n, "V": vocab, "b": b, "s": extra,
                    "d": hidden, "sampler": impl}, sampler, "B",
                   f"{SAMPLER_SRC}; {impl}: {impl_src}")
    peak_terms += (samp,)
    peak_vals: dict[str, Scalar] = {"R_forward": act, "R_sampler": sampler, "era": era}
    peak_expr = "max(R_forward, R_sampler)"
    if ws:
        peak_terms += (Formula("R_moe_workspace", "N·k·(max(f_e/t, d) + max(2·f_e/t, d))·b",
                               {"N": n, "k": k, "f_e/t": fe, "d": hidden, "b": b}, ws, "B",
                               MOE_WS_SRC),)
        peak_vals["R_moe_workspace"] = ws
        peak_expr += " + R_moe_workspace"
    terms = (
        Formula("R_activation", peak_expr, peak_vals, peak, "B", ACT_SRC, peak_terms),
        Formula("R_cuda_graphs", "0 if enforce_eager or version < 0.21 else n_graphs·g",
                {"enforce_eager": enforce_eager, "era": era, "n_graphs": n_graphs,
                 "g": CUDA_GRAPH_BYTES_PER_GRAPH}, graphs, "B", GRAPH_SRC),
        non_torch_formula(how, nt_src, non_torch_base(version), t, nontorch, fusion, cap,
                           pp, dp, enforce_eager),
    )
    total = peak + graphs + nontorch
    return Formula("reserve_bytes_per_gpu", "R_activation + R_cuda_graphs + R_non_torch",
                   {x.name: x.result for x in terms}, total, "B", RESERVE_SRC, terms)


def reserve_for(shape: ModelShape, t: int, *, b: float, max_num_batched_tokens: int,
                max_num_seqs: int, enforce_eager: bool = False, version: str | None = None,
                moe_group: int | None = None, expert_parallel: bool = False,
                sampler_bytes: float | None = None, gpu: GPU | None = None, pp: int = 1,
                dp: int = 1) -> Formula:
    """``reserve`` with the FFN widths read from the shape (dense, shared and routed experts).

    Routed experts are split over ``moe_group`` ranks (vLLM: t·dp); shared experts over t.
    With expert parallelism the MoE layer runs at MoE-TP 1 (whole experts per rank), so the
    fused-MoE workspace holds the full expert width (fused_moe/config.py l.1117-1243, 0.33.0).
    """
    moe = shape.moe
    dense = shape.ffn // t if shape.ffn else 0
    k = fe = 0
    ws = moe is not None and shape.quant is None and moe_workspace_persistent(version)
    if moe is not None:
        g = 1 if expert_parallel else (moe_group or t)
        k, fe = moe.experts_per_token, max(moe.expert_ffn // g, 1)
        dense += moe.num_shared_experts * moe.shared_expert_ffn // t
    return reserve(hidden=shape.hidden, ffn_per_rank=dense, vocab=shape.vocab, b=b, t=t,
                   max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
                   enforce_eager=enforce_eager, version=version, experts_per_token=k,
                   expert_ffn_per_rank=fe, sampler_bytes=sampler_bytes, gpu=gpu, pp=pp, dp=dp,
                   moe_workspace=ws)


def fixed_reserve(value: float) -> Formula:
    return Formula("reserve_bytes_per_gpu", "R (given)", {"R": value}, value, "B", "--reserve")


def pool_per_gpu(*, memory: float, utilization: float, weights: float, reserve_bytes: float,
                 engine: str = "vllm") -> Formula:
    """vLLM: ceil(M·u) − W − R. SGLang: M·mem_fraction_static − W (its fraction is the reserve)."""
    if engine == "sglang":
        res = memory * utilization - weights
        return Formula("pool_bytes_per_gpu", "M·mfs − W_gpu",
                       {"M": memory, "mfs": utilization, "W_gpu": weights}, res, "B", SGL_POOL)
    res = math.ceil(memory * utilization) - weights - reserve_bytes
    return Formula("pool_bytes_per_gpu", "M·u − W_gpu − R",
                   {"M": memory, "u": utilization, "W_gpu": weights, "R": reserve_bytes},
                   res, "B", VLLM_BUDGET)


def kv_pool_tokens(pool: float, bytes_per_token: float, block: int) -> Formula:
    """Whole blocks of ``block`` tokens: floor(pool / (kv_B·block))·block (0 when pool ≤ 0)."""
    n = 0 if pool <= 0 or bytes_per_token <= 0 else int(pool // (bytes_per_token * block)) * block
    return Formula("kv_pool_tokens", "floor(pool / (kv_B·block))·block",
                   {"pool": pool, "kv_B": bytes_per_token, "block": block}, n, "tokens",
                   VLLM_TOKENS)


def max_concurrency(tokens: int, context: int, block: int) -> Formula:
    """Sequences of c tokens the pool holds: blocks / ceil(c/block) (vLLM's concurrency line)."""
    need = -(-context // block) if context > 0 else 1
    res = (tokens / block) / need
    return Formula("max_concurrency", "(tokens/block) / ceil(c/block)",
                   {"tokens": tokens, "block": block, "c": context}, res, "x", VLLM_TOKENS)


def printed_tokens(concurrency: float, context: int) -> Formula:
    """The figure of vLLM's "GPU KV cache size: N tokens" line: int(max_concurrency · c).

    Differs from whole-block tokens when c is not a multiple of the block size (vLLM 0.33
    get_kv_cache_capacity); V0 printed "# GPU blocks" instead (tokens = blocks · block).
    """
    n = int(concurrency * context)
    return Formula("printed_kv_tokens", "int(max_concurrency·c)",
                   {"max_concurrency": concurrency, "c": context}, n, "tokens", VLLM_TOKENS)


def seats(concurrency: float) -> Formula:
    return Formula("seats", "floor(max_concurrency)", {"max_concurrency": concurrency},
                   math.floor(concurrency), "sequences", "DESIGN.md")





def hybrid_groups(full_layers: int, sliding_layers: int) -> tuple[int, int]:
    """(group size, groups) of vLLM's hybrid KV cache layout (unify_hybrid_kv_cache_specs).

    One attention type: one group of all its layers. Two: the group size is the fewer layers
    of one type (the more when the larger count is below 1.5× the smaller), and each type is
    padded up to whole groups.
    """
    kinds = [n for n in (full_layers, sliding_layers) if n > 0]
    if not kinds:
        return 0, 0
    if len(kinds) == 1:
        return kinds[0], 1
    lo, hi = min(kinds), max(kinds)
    g = hi if hi < lo * 1.5 else lo
    return g, sum(-(-n // g) for n in kinds)


def engine_printed_tokens(*, version: str | None, pool: float, layer_bytes: float,
                          full_layers: int, sliding_layers: int, block: int,
                          concurrency: float, context: int) -> Formula:
    """The figure of vLLM's "GPU KV cache size: N tokens" line for the release.

    Before 0.21 it is blocks per group: the pool divided by every attention layer's bytes
    (sliding-window layers charged in full, padding layers too). From 0.21 it is the
    group-aware int(max_concurrency · c), the capacity for sequences of c tokens.
    """
    how, src = printed_tokens_release(version)
    if how == PRINTED_CAPACITY:
        f = printed_tokens(concurrency, context)
        return Formula("engine_kv_tokens", f.expression, dict(f.values), f.result, "tokens",
                       src)
    g, groups = hybrid_groups(full_layers, sliding_layers)
    page = block * layer_bytes
    blocks = 0 if pool <= 0 or page <= 0 or g <= 0 else int(pool // page // g)
    n = blocks // groups * block if groups else 0
    return Formula("engine_kv_tokens", "floor(floor(pool / (block·kv_layer_B) / g) / groups)·block",
                   {"pool": pool, "block": block, "kv_layer_B": layer_bytes, "g": g,
                    "groups": groups, "L_full": full_layers, "L_sw": sliding_layers}, n,
                   "tokens", src)
