"""Bridge from the model's parameter counts to how tensor parallelism places the bytes."""

from __future__ import annotations

from functools import lru_cache

from tpcheck.models.params import ParamCounts, param_counts
from tpcheck.models.quant import weight_bytes
from tpcheck.models.shape import ModelShape
from tpcheck.physics.kv import activation_dtype
from tpcheck.physics.weights import WeightSplit

# Components by placement (see tpcheck.models.params for what each holds).
SHARDED = ("embedding", "lm_head", "linear_attn", "dense_mlp", "shared_experts")
ATTENTION = ("attn_q", "attn_o")
KV = ("attn_kv",)
EXPERTS = ("routed_experts",)
REPLICATED = ("mla_other", "router", "norms", "other")


@lru_cache(maxsize=256)
def counts(shape: ModelShape) -> ParamCounts:
    return param_counts(shape)


@lru_cache(maxsize=1024)
def weight_split(shape: ModelShape, *, dtype: str | None = None,
                 quantization: str | None = None) -> WeightSplit:
    # The engine runs float32 checkpoints in bf16 (vLLM _resolve_auto_dtype); price them so.
    wb = weight_bytes(shape, counts(shape), dtype_override=activation_dtype(shape.dtype, dtype),
                      quantization_override=quantization)
    return WeightSplit(
        sharded=sum(wb.component(c) for c in SHARDED),
        attention=sum(wb.component(c) for c in ATTENTION),
        kv=sum(wb.component(c) for c in KV),
        experts=sum(wb.component(c) for c in EXPERTS),
        replicated=sum(wb.component(c) for c in REPLICATED),
        embedding=wb.component("embedding"),
        lm_head=wb.component("lm_head"),
    )


def model_params(shape: ModelShape, *, active: bool = False) -> int:
    """Total parameters, or those one token touches (MoE: top-k routed experts)."""
    c = counts(shape)
    return c.active if active else c.total
