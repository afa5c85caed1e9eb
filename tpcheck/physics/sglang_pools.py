"""SGLang's cell per token and its hybrid pools: MLA, sliding-window (SWA) and linear attention.

The budget ``rest = T·mfs − W`` is ``sglang_memory``'s; this module says what SGLang divides it
by, and what it takes out first. Read in the released wheels (facts only, file:line per release;
``mixin`` = model_executor/model_runner_kv_cache_mixin.py of 0.5.10.post1):

- MLA (DeepSeek V2/V3/R1, Kimi K2): one latent of kv_lora_rank + qk_rope_head_dim elements per
  token per layer on every attention-TP rank, logged as one "KV size": 0.4.10 model_runner.py
  l.970-976, 0.5.10 mixin l.77-82, 0.5.23 pool_configurator.py _compute_cell_size l.376-384.
  (DeepSeek V3.2's sparse-attention indexer and its fp8 layout depend on the attention backend
  and are not modelled: mixin l.97-108, l.240-285.)
- Hybrid SWA: the release keeps a full pool and an SWA pool with swa_tokens = r·full_tokens
  (r = --swa-full-tokens-ratio, default 0.8), so one full-pool token costs
  (F·n_full + r·S·n_swa) bytes: 0.5.10 mixin _resolve_hybrid_swa_tokens l.287-371 (cell
  l.110-124), 0.5.23 pool_configurator.py HybridSWAPoolConfigurator l.656-905 (cell l.786-802),
  0.4.10 model_runner.py set_num_token_hybrid l.992-1072 (the same split of an all-layer cell).
  Which models: 0.5.10 configs/model_config.py is_hybrid_swa_model l.1438-1448 and 0.5.23
  l.2651-2692 (Llama4ForConditionalGeneration, GptOssForCausalLM; Llama-4's full layers are
  every fourth, get_hybrid_layer_ids l.1451-1462); gemma-2/3 switch it off (0.5.10
  server_args.py l.1865-1877, 0.5.23 arg_groups/model_overrides/gemma2_gemma3.py l.13-26,
  0.4.10 server_args.py l.1939-1943 for gemma-2); 0.5.2 also switches it off for gpt-oss
  (server_args.py l.2488) and 0.4.10/0.5.2 split only models with a sliding window method
  (gemma); 0.4.6 has no split. Without the split every layer is charged in full, sliding or
  not (0.5.10 mixin l.125-131).
- Hybrid linear attention (Qwen3-Next, Qwen3.5: Gated DeltaNet): only the full-attention layers
  hold per-token KV (0.5.10 mixin profile_max_num_token l.155-164; 0.5.2 model_runner.py
  l.1105-1106); the state pool is taken from rest first. Per request and rank, every linear
  layer keeps a conv state (conv_dim/t)·(kernel − 1) in bf16 and a temporal state
  (h_v/t)·d_v·d_k in fp32 (0.5.10 configs/mamba_utils.py l.47-107, l.115-125, l.141-177;
  configs/qwen3_next.py l.282-302; environ.py l.467; 0.5.2 configs/qwen3_next.py l.284-313,
  server_args.py l.396). Slots K: 0.5.2 a fixed 512 (or --max-running-requests;
  model_runner.py l.312-318, state K·s l.1126-1131); 0.5.10 K = floor(rest·ρ/(1 + ρ) / s),
  ρ = --mamba-full-memory-ratio 0.9 (mixin handle_max_mamba_cache l.214-238, server_args.py
  l.550); 0.5.23 K = floor((rest·ρ/(1 + ρ) − s)/s) with the padding slot charged, (K + 1)·s
  (mem_cache/kv_cache_configurator.py _handle_max_mamba_cache l.3229, l.3346-3409). The
  scheduler then admits at most K // 3 requests (mixin l.64, l.373-385, l.853-857).
"""

from __future__ import annotations

from tpcheck.engines.sglang_rules import (
    MAMBA_BUDGET,
    MAMBA_BUDGET_PAD,
    MAMBA_STATE_SRC,
    SWA_GEMMA3,
    SWA_LLAMA4_GPTOSS,
    sglang_hybrid,
)
from tpcheck.formula import GIB, Formula
from tpcheck.models.shape import ModelShape
from tpcheck.physics import kv

SWA_FULL_TOKENS_RATIO = 0.8  # 0.4.10 server_args.py l.88; 0.5.10 l.360; 0.5.23 schedule.py l.160
MAMBA_FULL_MEMORY_RATIO = 0.9  # 0.5.10 server_args.py l.550; 0.5.23 fields/schedule.py l.225
MAMBA_SLOTS_052 = 512  # 0.5.2 model_runner.py l.318
MAMBA_REQUEST_RATIO = 3  # 0.5.10 mixin l.64: mamba slots per admitted request (radix cache on)
CONV_BYTES, SSM_BYTES = 2, 4  # bf16 conv state, fp32 temporal state (mamba_utils.py l.68, l.71)

FULL_CELL_SRC = ("sglang 0.5.10.post1 model_executor/model_runner_kv_cache_mixin.py "
                 "get_cell_size_per_token l.125-131 (no hybrid SWA pool: every layer in full)")
_GEMMA = ("Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
          "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration")


def hybrid_release(version: str | None) -> str:
    """The release whose hybrid rules apply: the nearest read at or below (newest if None)."""
    return sglang_hybrid(version).release


def swa_split(shape: ModelShape, version: str | None) -> tuple[int, int] | None:
    """(full layers, SWA layers) when the release keeps separate pools for this model."""
    rules = sglang_hybrid(version)
    arch = set(shape.architectures)
    if rules.swa_models == SWA_LLAMA4_GPTOSS:
        if "Llama4ForConditionalGeneration" in arch:  # every fourth layer is full attention
            n_full = shape.layers // 4
            return n_full, shape.layers - n_full
        if "GptOssForCausalLM" in arch and shape.sliding_layers:
            return shape.layers - shape.sliding_layers, shape.sliding_layers
        return None
    # 0.4.10 and 0.5.2 split only models with a sliding-window method (gemma): gemma-2 is
    # switched off in both, gemma-3 in 0.5.2 too (server_args.py l.2500-2511)
    gemma3 = arch & (set(_GEMMA) - {"Gemma2ForCausalLM"})
    if (rules.swa_models == SWA_GEMMA3 and gemma3 and shape.sliding_window
            and shape.sliding_layers):
        return shape.layers - shape.sliding_layers, shape.sliding_layers
    return None


def cell_bytes(shape: ModelShape, t: int, *, kv_cache_dtype: str | None = None, pp: int = 1,
               attn_dp: int = 1, version: str | None = None,
               swa_ratio: float | None = None) -> Formula:
    """Bytes one token of SGLang's (full) pool costs on each GPU: what #tokens divides.

    MLA and dense models: the same cell as ``kv.kv_bytes_per_token_per_gpu`` (sliding layers
    charged in full, as SGLang does without a hybrid pool). Hybrid SWA: F·n_full + r·S·n_swa.
    Hybrid linear attention: the full-attention layers only (``kv.attention_layers``).
    """
    if shape.compressed is not None:  # DeepSeek-V4: its own pools (kv.compressed_kv_bytes)
        return kv.compressed_kv_bytes(
            shape, kv_cache_dtype=kv_cache_dtype, pp=pp,
            sglang_swa_ratio=kv.V4_SGLANG_SWA_RATIO if swa_ratio is None else swa_ratio)
    base = kv.kv_bytes_per_token_per_gpu(shape, t, kv_cache_dtype=kv_cache_dtype, pp=pp,
                                         attn_dp=attn_dp)
    split = None if shape.is_mla else swa_split(shape, version)
    if split is None:
        if shape.sliding_window and shape.sliding_layers and not shape.is_mla:
            return Formula(base.name, base.expression, base.values, base.result, "B",
                           FULL_CELL_SRC)
        return base
    r = SWA_FULL_TOKENS_RATIO if swa_ratio is None else swa_ratio
    n_full = kv.stage_layers(split[0], pp)
    n_swa = kv.stage_layers(split[1], pp)
    per_layer = base.result / kv.stage_layers(kv.attention_layers(shape), pp)
    res = per_layer * (n_full + r * n_swa)
    values = {k: v for k, v in base.values.items() if k != "L"}
    values = {"L_full": n_full, "L_swa": n_swa, "r": r, **values}
    expr = base.expression.replace("2·L·", "2·(L_full + r·L_swa)·").replace(
        "L·max", "(L_full + r·L_swa)·max")
    return Formula("kv_bytes_per_token_per_gpu", expr, values,
                   int(res) if float(res).is_integer() else res, "B",
                   sglang_hybrid(version).swa_src)


def mamba_state_per_request(shape: ModelShape, t: int, *, pp: int = 1,
                            attn_dp: int = 1) -> Formula | None:
    """s: bytes of conv + temporal state one request holds on each rank (None: no such layers).

    conv_dim = h_v·d_v + 2·h_k·d_k (groups padded to t when h_k is not a multiple of t).
    """
    la = shape.linear_attn
    if la is None or la.layers <= 0:
        return None
    ta = t // attn_dp if attn_dp > 1 and t % attn_dp == 0 else t
    groups = la.num_key_heads
    if groups % ta:
        groups = ta  # + (t − h_k) groups: mamba_utils.py extra_groups_for_head_shards l.29-38
    conv_dim = la.num_value_heads * la.value_head_dim + 2 * groups * la.key_head_dim
    conv = conv_dim // ta * (la.conv_kernel - 1) * CONV_BYTES
    ssm = max(la.num_value_heads // ta, 1) * la.value_head_dim * la.key_head_dim * SSM_BYTES
    layers = kv.stage_layers(la.layers, pp)
    return Formula(
        "mamba_state_per_request",
        "L_lin·((h_v·d_v + 2·h_k·d_k)/t·(k − 1)·2 + (h_v/t)·d_v·d_k·4)",
        {"L_lin": layers, "h_v": la.num_value_heads, "d_v": la.value_head_dim,
         "h_k": groups, "d_k": la.key_head_dim, "k": la.conv_kernel, "t": ta},
        layers * (conv + ssm), "B", MAMBA_STATE_SRC,
    )


def mamba_slots_and_state(rest: float, per_request: Formula, *, version: str | None = None,
                          max_running_requests: int | None = None,
                          ratio: float | None = None,
                          max_mamba_cache_size: int | None = None) -> tuple[int, Formula]:
    """(K slots, bytes of the state pool) that the release takes out of rest before the KV.

    ``max_mamba_cache_size`` is the flag: K is then given, charged K·s (0.5.10 mixin l.201-205)
    or (K + 1)·s (0.5.23 l.3296-3304, l.3404-3408; the pool allocates K + 1 slots in every
    release, memory_pool.py l.255, l.269).
    """
    rules = sglang_hybrid(version)
    s = float(per_request.result)
    rho = MAMBA_FULL_MEMORY_RATIO if ratio is None else ratio
    if max_mamba_cache_size is not None:
        k = max_mamba_cache_size
        pad = 1 if rules.mamba == MAMBA_BUDGET_PAD else 0
        return k, Formula("mamba_state_bytes", "(K + 1)·s" if pad else "K·s",
                          {"K": k, "s": s}, (k + pad) * s, "B", rules.mamba_src, (per_request,))
    if not rules.mamba_from_budget:  # 0.5.2 (Qwen3-Next's first releases): fixed slots
        k = max_running_requests or MAMBA_SLOTS_052
        return k, Formula("mamba_state_bytes", "K·s", {"K": k, "s": s}, k * s, "B",
                          rules.mamba_src, (per_request,))
    budget = max(rest, 0.0) * rho / (1 + rho)
    if rules.mamba == MAMBA_BUDGET:
        k = int(budget // s)
        return k, Formula("mamba_state_bytes", "K·s, K = floor(rest·ρ/(1 + ρ)/s)",
                          {"rest": rest, "rho": rho, "s": s, "K": k}, k * s, "B",
                          rules.mamba_src, (per_request,))
    k = max(int((budget - s) // s), 0)
    return k, Formula("mamba_state_bytes", "(K + 1)·s, K = floor((rest·ρ/(1 + ρ) − s)/s)",
                      {"rest": rest, "rho": rho, "s": s, "K": k}, (k + 1) * s, "B",
                      rules.mamba_src, (per_request,))


def pool_after_state(pool: Formula, state: Formula) -> Formula:
    """The KV part of rest once the state pool is taken out (what the full layers divide)."""
    return Formula("pool_bytes_per_gpu", "T·mfs − W_gpu − state",
                   {**pool.values, "state": state.result}, pool.result - state.result, "B",
                   pool.source, (*pool.terms, state))


def state_gib(state: Formula) -> float:
    """The state pool in SGLang's "GB" (GiB), as its "Mamba Cache is allocated" line sums it."""
    return float(state.result) / GIB


def mamba_request_cap(slots: int | None, version: str | None) -> Formula | None:
    """The scheduler's cap from the state pool: K // 3 (0.5.10+, radix cache on), K (0.5.2)."""
    if slots is None:
        return None
    if sglang_hybrid(version).mamba_from_budget:
        return Formula("max_running_requests", "K // 3", {"K": slots}, slots // MAMBA_REQUEST_RATIO,
                       "sequences", "sglang 0.5.10.post1 model_executor/"
                       "model_runner_kv_cache_mixin.py l.64, l.373-385, l.853-857")
    return Formula("max_running_requests", "K", {"K": slots}, slots, "sequences",
                   "sglang 0.5.2 model_executor/model_runner.py l.1262-1263")


def swa_pool_tokens(full_tokens: int, *, swa_ratio: float | None = None, page_size: int = 1,
                    version: str | None = None) -> Formula:
    """The SWA pool beside a hybrid full pool: floor(floor(full·r) / page)·page tokens."""
    r = SWA_FULL_TOKENS_RATIO if swa_ratio is None else swa_ratio
    page = max(page_size, 1)
    n = int(full_tokens * r) // page * page
    return Formula("swa_pool_tokens", "floor(floor(full·r) / page)·page",
                   {"full": full_tokens, "r": r, "page": page}, n, "tokens",
                   sglang_hybrid(version).swa_src)
