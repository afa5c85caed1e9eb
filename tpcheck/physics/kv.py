"""KV cache per token per GPU: what tensor parallelism divides, and where it stops dividing.

GQA/MHA/MQA: 2·L·max(1, floor(h_kv/t))·d_h·b_kv — the ``max(1, …)`` is the cliff: past
t = h_kv every rank keeps one KV head and the cache is replicated t/h_kv times.
MLA: L·(r_kv + d_rope)·b_kv on every rank, whatever t (vLLM ``MLAAttentionSpec``,
``max_tp_shards=1``; SGLang ``_compute_cell_size``).
"""

from __future__ import annotations

from tpcheck.formula import Formula
from tpcheck.models.shape import ModelShape

KV_HEADS_SRC = "vllm 0.33.0 config/model.py ModelConfig.get_num_kv_heads l.1663-1683"
PAGE_SRC = ("vllm 0.33.0 v1/kv_cache_interface.py AttentionSpec.page_size_bytes l.552-616; "
            "sglang 0.5.23 model_executor/pool_configurator.py _compute_cell_size l.340-497")
MLA_SRC = "vllm 0.33.0 layers/attention/mla_attention.py get_kv_cache_spec l.1371-1395"

DTYPE_BYTES: dict[str, float] = {
    "float32": 4,
    "fp32": 4,
    "float": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "mxfp8": 1.03125,
    "nvfp4": 0.5625,
    "fp4_mx_block16": 0.5625,
}


def activation_dtype(model_dtype: str, override: str | None = None) -> str:
    """The dtype the engine runs in: float32 checkpoints run in bf16 on CUDA (vLLM, SGLang)."""
    d = (override or "auto").lower()
    if d in ("auto", ""):
        d = model_dtype.lower()
        if d in ("float32", "fp32", "float"):
            return "bfloat16"
    return {"half": "float16", "float": "float32"}.get(d, d)


def dtype_bytes(dtype: str) -> float:
    return DTYPE_BYTES.get(dtype.lower(), 2)


def kv_dtype_bytes(kv_cache_dtype: str | None, model_dtype: str) -> tuple[str, float]:
    """(name, bytes per element) of the KV cache; ``auto`` is the model's activation dtype.

    An unknown name is a ValueError: vLLM's and SGLang's argparse refuse it too (their
    ``choices``); vLLM's experimental 3-/4-bit caches are not modelled and say so.
    """
    name = (kv_cache_dtype or "auto").lower()
    if name == "auto":
        name = activation_dtype(model_dtype)
    if name not in DTYPE_BYTES:
        raise ValueError(f"kv-cache-dtype {kv_cache_dtype!r} is not one tpcheck models "
                         f"(known: auto, {', '.join(sorted(DTYPE_BYTES))})")
    return name, dtype_bytes(name)


def kv_heads_per_gpu(shape: ModelShape, t: int) -> Formula:
    if shape.is_mla:
        return Formula("kv_heads_per_gpu", "1 (MLA: one latent, every rank)", {}, 1, "", MLA_SRC)
    return Formula(
        "kv_heads_per_gpu",
        "max(1, floor(h_kv / t))",
        {"h_kv": shape.kv_heads, "t": t},
        max(1, shape.kv_heads // t),
        "",
        KV_HEADS_SRC,
    )


def kv_replicas(shape: ModelShape, t: int) -> Formula:
    """How many ranks hold each KV head (MLA: all t ranks hold the one latent)."""
    if shape.is_mla:
        return Formula("kv_replicas", "t (MLA latent on every rank)", {"t": t}, t, "", MLA_SRC)
    return Formula(
        "kv_replicas",
        "max(1, t / h_kv)",
        {"t": t, "h_kv": shape.kv_heads},
        max(1, t // shape.kv_heads) if shape.kv_heads else 1,
        "",
        "vllm 0.33.0 layers/linear.py QKVParallelLinear num_kv_head_replicas",
    )


def attention_layers(shape: ModelShape) -> int:
    """Layers that keep a per-token KV cache (hybrid linear-attention layers keep a fixed state;
    nemotron-nas no-op attention layers keep nothing, vllm 0.33.0 config/model.py:1749-1750)."""
    linear = shape.linear_attn.layers if shape.linear_attn else 0
    return shape.layers - linear - shape.no_attention_layers


def stage_layers(layers: int, pp: int) -> int:
    """Layers on the largest pipeline stage (vLLM ``get_pp_indices`` spreads the remainder)."""
    return layers // pp + (1 if layers % pp else 0)


def kv_bytes_per_token_per_gpu(
    shape: ModelShape,
    t: int,
    *,
    kv_cache_dtype: str | None = None,
    pp: int = 1,
    context: int | None = None,
    attn_dp: int = 1,
) -> Formula:
    """Bytes one token of context costs on each GPU of the TP group (largest PP stage).

    Sliding-window layers are charged min(c, w)/c of a full layer when ``context`` is given,
    i.e. averaged over a sequence of c tokens.
    """
    kvname, b = kv_dtype_bytes(kv_cache_dtype, shape.dtype)
    L = stage_layers(attention_layers(shape), pp)
    sw = min(shape.sliding_layers, L) if shape.sliding_window else 0
    bkv: int | float = int(b) if float(b).is_integer() else b
    if shape.mla is not None:
        r = shape.mla.kv_lora_rank
        rope = shape.mla.qk_rope_head_dim
        res = L * (r + rope) * b
        return Formula(
            "kv_bytes_per_token_per_gpu",
            "L·(r_kv + d_rope)·b_kv",
            {"L": L, "r_kv": r, "d_rope": rope, "b_kv": bkv, "kv_cache_dtype": kvname},
            int(res) if float(res).is_integer() else res,
            "B",
            MLA_SRC,
        )
    ta = t // attn_dp if attn_dp > 1 and t % attn_dp == 0 else t
    heads = max(1, shape.kv_heads // ta)
    dk, dv = shape.head_dim, shape.head_dim_v
    per_layer = heads * (dk + dv) * b
    values: dict[str, int | float | str] = {"L": L, "h_kv": shape.kv_heads, "t": ta}
    if dk == dv:
        expr = "2·L·max(1, floor(h_kv/t))·d_h·b_kv"
        values.update({"d_h": dk})
    else:
        expr = "L·max(1, floor(h_kv/t))·(d_k + d_v)·b_kv"
        values.update({"d_k": dk, "d_v": dv})
    values.update({"b_kv": bkv, "kv_cache_dtype": kvname})
    if sw and context:
        w = shape.sliding_window or 0
        frac = min(context, w) / context
        res = per_layer * ((L - sw) + sw * frac)
        expr = expr.replace("2·L·", "2·(L_full + L_sw·min(c, w)/c)·").replace(
            "L·max", "(L_full + L_sw·min(c, w)/c)·max"
        )
        values.update({"L_full": L - sw, "L_sw": sw, "w": w, "c": context})
        del values["L"]
        return Formula("kv_bytes_per_token_per_gpu", expr, values, res, "B", PAGE_SRC)
    res = L * per_layer
    return Formula(
        "kv_bytes_per_token_per_gpu",
        expr,
        values,
        int(res) if float(res).is_integer() else res,
        "B",
        PAGE_SRC,
    )
