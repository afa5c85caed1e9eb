"""The KV pool per GPU and what it holds: pool = M·u − W − R, tokens, concurrency, seats.

Capacity is per GPU: every rank of a TP group holds a slice of every sequence, so the pool of
one GPU (the smallest) is the deployment's capacity (vLLM takes the min over workers).
"""

from __future__ import annotations

import math

from tpcheck.formula import GIB, Formula

VLLM_BUDGET = "vllm 0.33.0 v1/worker/utils.py request_memory l.716-772; gpu_worker.py l.753-757"
VLLM_TOKENS = "vllm 0.33.0 v1/core/kv_cache_utils.py get_kv_cache_capacity l.1119-1126"
SGL_POOL = "sglang 0.5.23 mem_cache/kv_cache_configurator.py _profile_available_bytes l.2990"
RESERVE_SRC = "tpcheck estimate (see rules/TP204.md); vllm 0.33.0 gpu_worker.py determine_available_memory"

# Constants of the reserve estimate: each is a documented assumption, overridable with --reserve.
SAMPLER_COPIES = 3  # fp32 logits, probabilities and the sort of top-k/top-p during profiling
CUDA_GRAPH_BYTES = 1 * GIB  # vLLM's CUDA graph estimate, typical for full+piecewise capture
NON_TORCH_BYTES = GIB // 4  # cuBLAS workspace and allocator slack
NCCL_BYTES_PER_8_RANKS = GIB // 4  # NCCL / custom all-reduce buffers grow with t


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
) -> Formula:
    """R, the non-KV reserve of a vLLM start-up, as four named terms.

    Peak activation of the profiling forward over N = max_num_batched_tokens tokens
    (gate/up and activation of the rank's FFN slice plus a few residual-width buffers),
    the sampler's fp32 logits for max_num_seqs rows, CUDA graphs and non-torch memory.
    """
    n = max_num_batched_tokens
    act = n * b * (3 * ffn_per_rank + 4 * hidden)
    sampler = min(max_num_seqs, n) * vocab * 4 * SAMPLER_COPIES
    graphs = 0 if enforce_eager else CUDA_GRAPH_BYTES
    nontorch = NON_TORCH_BYTES + (NCCL_BYTES_PER_8_RANKS * t / 8 if t > 1 else 0)
    terms = (
        Formula("R_activation", "N·b·(3·f/t + 4·d)",
                {"N": n, "b": b, "f/t": ffn_per_rank, "d": hidden}, act, "B", RESERVE_SRC),
        Formula("R_sampler", "min(S, N)·V·4·k",
                {"S": max_num_seqs, "N": n, "V": vocab, "k": SAMPLER_COPIES}, sampler, "B",
                RESERVE_SRC),
        Formula("R_cuda_graphs", "0 if enforce_eager else G",
                {"enforce_eager": enforce_eager, "G": CUDA_GRAPH_BYTES}, graphs, "B", RESERVE_SRC),
        Formula("R_non_torch", "C + c_nccl·t/8 (t > 1)",
                {"C": NON_TORCH_BYTES, "c_nccl": NCCL_BYTES_PER_8_RANKS, "t": t}, nontorch, "B",
                RESERVE_SRC),
    )
    total = sum(x.result for x in terms)
    return Formula("reserve_bytes_per_gpu", "R_activation + R_sampler + R_cuda_graphs + R_non_torch",
                   {x.name: x.result for x in terms}, total, "B", RESERVE_SRC, terms)


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
    if pool <= 0 or bytes_per_token <= 0:
        n = 0
    else:
        n = int(pool // (bytes_per_token * block)) * block
    return Formula("kv_pool_tokens", "floor(pool / (kv_B·block))·block",
                   {"pool": pool, "kv_B": bytes_per_token, "block": block}, n, "tokens",
                   VLLM_TOKENS)


def max_concurrency(tokens: int, context: int, block: int) -> Formula:
    """Sequences of c tokens the pool holds: blocks / ceil(c/block) (vLLM's concurrency line)."""
    need = -(-context // block) if context > 0 else 1
    res = (tokens / block) / need
    return Formula("max_concurrency", "(tokens/block) / ceil(c/block)",
                   {"tokens": tokens, "block": block, "c": context}, res, "x", VLLM_TOKENS)


def seats(concurrency: float) -> Formula:
    return Formula("seats", "floor(max_concurrency)", {"max_concurrency": concurrency},
                   math.floor(concurrency), "sequences", "DESIGN.md")
