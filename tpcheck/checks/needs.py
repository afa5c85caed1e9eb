"""Groups of Deployment fields the rules' rows name in ``depends_on`` (``checks.registry``).

A rule whose figures depend on one of these says nothing when the file leaves it as an
expression tpcheck cannot evaluate (``--data-parallel-size $((LWS_GROUP_SIZE * N))``) rather
than judge the engine default in its place (issue 18).
"""

from __future__ import annotations

# How the GPUs are split besides t: every per-GPU figure of the layout rules reads them.
LAYOUT = ("pipeline_parallel_size", "data_parallel_size", "attn_dp_size", "ep_size",
          "moe_dense_tp_size", "moe_a2a_backend", "enable_expert_parallel")
# What the KV pool is carved from: the memory budget and the bytes per weight and per token.
MEMORY = ("gpu_memory_utilization", "kv_cache_dtype", "quantization", "dtype", "cpu_offload_gb")
# What the engine schedules into the pool.
BATCH = ("max_num_seqs", "max_model_len", "max_num_batched_tokens")
