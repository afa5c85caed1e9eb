"""KV cache per token per GPU: what tensor parallelism divides, and where it stops dividing.

GQA/MHA/MQA: 2·L·max(1, floor(h_kv/t))·d_h·b_kv — the ``max(1, …)`` is the cliff: past
t = h_kv every rank keeps one KV head and the cache is replicated t/h_kv times.
MLA: L·(r_kv + d_rope)·b_kv on every rank, whatever t (vLLM ``MLAAttentionSpec``,
``max_tp_shards=1``; SGLang ``_compute_cell_size``).
DeepSeek-V4 (compressed sparse attention, cached as MLA on every rank): one latent state per r
tokens on each layer of compress ratio r > 1, an indexer K cache on the r = 4 layers, and the
last w tokens' latents on every layer (``compressed_kv_bytes``).
"""

from __future__ import annotations

from tpcheck.formula import Formula
from tpcheck.models.shape import ModelShape

KV_HEADS_SRC = "vllm 0.33.0 config/model.py ModelConfig.get_num_kv_heads l.1663-1683"
PAGE_SRC = ("vllm 0.33.0 v1/kv_cache_interface.py AttentionSpec.page_size_bytes l.552-616; "
            "sglang 0.5.23 model_executor/pool_configurator.py _compute_cell_size l.340-497")
MLA_SRC = "vllm 0.33.0 layers/attention/mla_attention.py get_kv_cache_spec l.1371-1395"
V4_SRC = ("vllm 0.33.0 models/deepseek_v4/attention.py get_kv_cache_spec l.860-883 (compressed "
          "state, 584 B fp8_ds_mla), l.911-925 and l.1020-1029 (indexer, 132 B), "
          "l.94-129 (dtype), v1/attention/backends/mla/sparse_swa.py l.86, l.120-146 (window); "
          "v1/kv_cache_interface.py AttentionSpec tokens_per_state l.558-590")
V4_SGLANG_SRC = ("sglang 0.5.23 model_executor/pool_configurator.py l.1100-1115 (584 B "
                 "latent, 132 B indexer), l.1372-1404 (per SWA and per full token), "
                 "l.1437-1446, l.1046-1054 (swa ratio 0.1 unless --swa-full-tokens-ratio); "
                 "mem_cache/deepseek_v4_memory_pool.py "
                 "l.53-57, l.79-80 (c4 ring 8); arg_groups/model_overrides/deepseek_v4.py l.51 "
                 "(page 256); environ.py l.1832 (fp32 compress state)")
V4_SGLANG_SWA_RATIO = 0.1  # sglang 0.5.23 pool_configurator.py:1046 (DSV4_DEFAULT_SWA_...)

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
    if shape.latent_cache:  # MLA, DeepSeek-V4: one latent, no head axis
        src = MLA_SRC if shape.is_mla else V4_SRC
        return Formula("kv_heads_per_gpu", "1 (MLA: one latent, every rank)", {}, 1, "", src)
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
    if shape.latent_cache:
        src = MLA_SRC if shape.is_mla else V4_SRC
        return Formula("kv_replicas", "t (MLA latent on every rank)", {"t": t}, t, "", src)
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
    if shape.compressed is not None:
        return compressed_kv_bytes(shape, kv_cache_dtype=kv_cache_dtype, pp=pp, context=context)
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


def _stage_ratios(ratios: tuple[int, ...], pp: int) -> list[tuple[int, ...]]:
    """The layers' ratios cut into ``pp`` stages as vLLM cuts them: L // pp each, the remainder
    one more each on the stages before the last, counting back from it (vllm 0.33.0
    distributed/utils.py get_pp_indices l.225-230)."""
    sizes = [len(ratios) // pp] * pp
    for i in range(2, len(ratios) % pp + 2):
        sizes[-i] += 1
    out, at = [], 0
    for size in sizes:
        out.append(ratios[at:at + size])
        at += size
    return out


def compressed_kv_bytes(
    shape: ModelShape,
    *,
    kv_cache_dtype: str | None = None,
    pp: int = 1,
    context: int | None = None,
    sglang_swa_ratio: float | None = None,
) -> Formula:
    """DeepSeek-V4's cache bytes per token of context on each GPU (every rank holds it all: the
    specs say ``max_tp_shards=1``), on the largest pipeline stage.

    A layer of ratio r > 1 stores one state of s bytes per r tokens; the r = 4 layers add an
    indexer K cache of i bytes per 4 tokens; every layer keeps the last w tokens at s bytes.
    vLLM (FlashMLA, its default on sm90/sm100) stores fp8_ds_mla: s = (d − d_rope) fp8 +
    d_rope bf16 + 8 scale bytes = 584 for d = 512, whatever fp8 name or ``auto`` is asked;
    ``bfloat16`` is a plain 2·d row (FlashInfer backend). The window is charged min(c, w)/c.
    SGLang (``sglang_swa_ratio`` given) always stores the 584-byte latent and sizes its SWA
    pool as a fraction r of the full pool, with the c4 layers' fp32 compress-state ring priced
    per SWA token: r·(L·s + n_4·(8/256)·(4·d + 4·d_i)·4).
    """
    comp = shape.compressed
    assert comp is not None
    d, rope, di = comp.head_dim, comp.rope_head_dim, comp.indexer_head_dim
    packed = (d - rope) + 2 * rope + 8  # 448 fp8 NoPE + 64 bf16 RoPE + 8 B of UE8M0 scales
    name = (kv_cache_dtype or "auto").lower()
    if sglang_swa_ratio is not None or name == "auto" or name.startswith("fp8"):
        name, state = "fp8_ds_mla", packed
    else:
        kv_dtype_bytes(kv_cache_dtype, shape.dtype)  # an unknown name is refused as elsewhere
        name, state = "bfloat16", 2 * d
    idx = di + di // 128 * 4  # fp8 keys + one fp32 scale per 128
    stages = _stage_ratios(comp.ratios, pp)

    def cost(rs: tuple[int, ...]) -> float:
        per = sum(state / r for r in rs if r > 1) + sum(1 for r in rs if r == 4) * idx / 4
        if sglang_swa_ratio is not None:
            ring = 8 / 256 * (2 * 2 * d * 4 + 2 * 2 * di * 4)
            return per + sglang_swa_ratio * (len(rs) * state + sum(1 for r in rs if r == 4) * ring)
        if context:
            return per + len(rs) * state * min(context, comp.window) / context
        return per + len(rs) * state

    worst = max(stages, key=cost)
    values: dict[str, int | float | str] = {}
    terms = []
    for r in sorted({r for r in worst if r > 1}):
        values[f"n_{r}"] = sum(1 for x in worst if x == r)
        terms.append(f"n_{r}·s/{r}")
    if 4 in worst:
        terms.append("n_4·i/4")
        values["i"] = idx
    values.update({"s": state, "L": len(worst)})
    if sglang_swa_ratio is not None:
        terms.append("r·(L·s + n_4·ring)")
        ring = 8 / 256 * (2 * 2 * d * 4 + 2 * 2 * di * 4)  # 320 B for d = 512, d_i = 128
        values.update({"r": sglang_swa_ratio, "ring": int(ring) if ring.is_integer() else ring})
        src = V4_SGLANG_SRC
    elif context:
        terms.append("L·s·min(c, w)/c")
        values.update({"w": comp.window, "c": context})
        src = V4_SRC
    else:
        terms.append("L·s")
        src = V4_SRC
    values["kv_cache_dtype"] = name
    res = cost(worst)
    return Formula("kv_bytes_per_token_per_gpu", " + ".join(terms), values,
                   int(res) if float(res).is_integer() else res, "B", src)


def engine_layer_split(shape: ModelShape, t: int, *, kv_cache_dtype: str | None = None,
                       pp: int = 1, attn_dp: int = 1) -> tuple[float, int, int] | None:
    """(bytes of one attention layer per token per GPU, full layers, sliding layers) of the
    largest stage, as vLLM's KV cache groups count them; None for MLA and compressed caches,
    whose groups this does not model."""
    if shape.compressed is not None or shape.mla is not None:
        return None
    _, b = kv_dtype_bytes(kv_cache_dtype, shape.dtype)
    L = stage_layers(attention_layers(shape), pp)
    sw = min(shape.sliding_layers, L) if shape.sliding_window else 0
    ta = t // attn_dp if attn_dp > 1 and t % attn_dp == 0 else t
    per_layer = max(1, shape.kv_heads // ta) * (shape.head_dim + shape.head_dim_v) * b
    return per_layer, L - sw, sw
