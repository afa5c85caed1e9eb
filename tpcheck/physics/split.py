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


def weight_split(shape: ModelShape, *, dtype: str | None = None,
                 quantization: str | None = None) -> WeightSplit:
    """The checkpoint's bytes by placement at ``dtype`` and ``quantization``, kept on the (frozen)
    shape as its hash is: every layout's weights ask it (~1,700 times a 1,000-file run), and the
    shared cache's key compares a shape of another name field by field."""
    kept: dict[tuple[str | None, str | None], WeightSplit] | None = shape.__dict__.get("_splits")
    if kept is None:
        kept = shape.__dict__["_splits"] = {}
    split = kept.get((dtype, quantization))
    if split is None:
        split = kept[(dtype, quantization)] = _weight_split(shape, dtype, quantization)
    return split


@lru_cache(maxsize=1024)
def _weight_split(shape: ModelShape, dtype: str | None, quantization: str | None) -> WeightSplit:
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
