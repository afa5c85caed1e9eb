"""What PyTorch's CUDA caching allocator counts for the weights, beyond their bytes.

vLLM's "Model loading took X GiB" is ``torch.cuda.max_memory_allocated`` after a peak reset
(vllm 0.19.0 platforms/cuda.py l.206-211, utils/mem_utils.py DeviceMemoryProfiler l.44-63): the
allocator's *block* sizes, not the tensors'. A request of 10 MiB or more gets a new segment
rounded up to 2 MiB, and the block is split only when more than 1 MiB would remain, so a
remainder of at most 1 MiB stays in the block and is counted (PyTorch c10/cuda/
CUDACachingAllocator.cpp: kSmallSize, kMinLargeAlloc, kRoundLarge, get_allocation_size,
should_split; alloc_found_block adds block->size to allocated_bytes). Requests of 1-10 MiB share
20 MiB segments and split (not counted here); with expandable segments every remainder of 512 B
or more is split (vLLM does not set them by default).

Qwen2.5-7B at t = 1: its fused QKV is 31.5 MiB (0.5 MiB counted), gate_up 259 MiB (1), down
129.5 MiB (0.5) on each of 28 layers, embedding and LM head 1039.5 MiB (0.5 each): 57 MiB, what
row 34 logs beyond the checkpoint (14.25 GiB against 14.19).
"""

from __future__ import annotations

from tpcheck.formula import MIB, Formula
from tpcheck.models.shape import ModelShape

ALLOC_SRC = ("PyTorch c10/cuda/CUDACachingAllocator.cpp (kSmallSize 1 MiB, kMinLargeAlloc 10 MiB, "
             "kRoundLarge 2 MiB; get_allocation_size, should_split: a large block splits only "
             "when more than kSmallSize remains; allocated_bytes counts block->size); vllm "
             "0.19.0 platforms/cuda.py l.206-211 (max_memory_allocated after a peak reset), "
             "v1/worker/gpu_model_runner.py l.4746-4824")
MIN_LARGE_ALLOC = 10 * MIB
ROUND_LARGE = 2 * MIB
SMALL_SIZE = 1 * MIB
BLOCK = 512


def block_slack(nbytes: float) -> int:
    """Bytes the allocator counts beyond one fresh tensor of ``nbytes``: the segment's unsplit
    remainder (0 below 10 MiB, and when more than 1 MiB remains)."""
    n = -(-int(nbytes) // BLOCK) * BLOCK
    if n < MIN_LARGE_ALLOC:
        return 0
    rem = -(-n // ROUND_LARGE) * ROUND_LARGE - n
    return rem if rem <= SMALL_SIZE else 0


def _pad64(v: int) -> int:
    return -(-v // 64) * 64


def rank_tensors(shape: ModelShape, t: int, b: float, g: int) -> tuple[
        float, float, tuple[float, ...], tuple[float, ...]] | None:
    """(embedding, LM head, tensors of each MoE layer, tensors of each dense layer) in bytes per
    rank as vLLM allocates them (QKV and gate/up fused, one w13 and one w2 per MoE layer, vocab
    padded to 64), for an unquantized model of the families read; None otherwise."""
    s = shape
    if (s.quant is not None or s.linear_attn is not None or s.compressed is not None
            or s.layer_ffn or s.no_attention_layers):
        return None
    d, h = s.hidden, s.heads
    emb = _pad64(s.vocab) / t * d * b
    head = 0.0 if s.tied_embeddings else emb
    attn: list[float] = []
    if s.mla is not None:
        m = s.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:
            attn += [(m.q_lora_rank + m.latent_dim) * d * b, h * qk / t * m.q_lora_rank * b]
        else:
            attn += [m.latent_dim * d * b, h * qk / t * d * b]
        attn += [h * (m.qk_nope_head_dim + m.v_head_dim) / t * m.kv_lora_rank * b,
                 d * h * m.v_head_dim / t * b]
    else:
        kv = max(s.kv_heads // t, 1) if s.kv_heads < t else s.kv_heads / t
        q = h * s.head_dim * (2 if s.attn_output_gate else 1) / t
        attn += [(q + kv * (s.head_dim + s.head_dim_v)) * d * b, d * h * s.head_dim_v / t * b]
    up = 2 if s.gated_mlp else 1
    dense = tuple(attn) + ((up * s.ffn / t * d * b, d * s.ffn / t * b) if s.ffn else ())
    moe: tuple[float, ...] = ()
    if s.moe is not None and s.moe.moe_layers:
        mo = s.moe
        per = mo.num_experts * mo.expert_ffn * d * b / g
        moe = (*attn, 2 * per, per)
        if mo.num_shared_experts and mo.shared_expert_ffn:
            w = mo.num_shared_experts * mo.shared_expert_ffn
            moe += (2 * w / t * d * b, d * w / t * b)
    return emb, head, moe, dense


def allocator_slack(shape: ModelShape, t: int, b: float, g: int) -> Formula | None:
    """The blocks' unsplit remainders over the rank's weight tensors (see the module)."""
    parts = rank_tensors(shape, t, b, g)
    if parts is None:
        return None
    emb, head, moe, dense = parts
    n_moe = shape.moe.moe_layers if shape.moe is not None else 0
    n_dense = shape.layers - n_moe
    per_moe = sum(block_slack(x) for x in moe)
    per_dense = sum(block_slack(x) for x in dense)
    ends = block_slack(emb) + block_slack(head)
    total = ends + n_moe * per_moe + n_dense * per_dense
    return Formula("W_alloc", "Σ over the rank's tensors of the segment remainder ≤ 1 MiB "
                   "(tensors ≥ 10 MiB)",
                   {"L_moe": n_moe, "per_moe_layer": per_moe, "L_dense": n_dense,
                    "per_dense_layer": per_dense, "embedding+head": ends}, total, "B",
                   ALLOC_SRC)
