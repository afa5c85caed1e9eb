"""Per-family readers of one config feature (KV heads, MLA, MoE, windows, norms)."""

from __future__ import annotations

from collections.abc import Mapping

from tpcheck.models.fields import ConfigError, Reader, is_list
from tpcheck.models.shape import MLA, CompressedAttention, LinearAttention, MoE

_FALCON_TYPES = frozenset({"falcon", "RefinedWeb", "RefinedWebModel"})
_KV_HEAD_KEYS = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)
# GPT-2 configs, whose MLP width is n_inner, or 4·n_embd when it is absent or null.
_N_INNER_DEFAULT_4D = frozenset({"gpt2"})


def parse_kv_heads(r: Reader, family: str, hidden: int, heads: int) -> int:
    if family in _FALCON_TYPES:
        new_arch = r.flag("new_decoder_architecture", False)
        if family != "falcon" and hidden == 8192:
            new_arch = True  # vLLM RWConfig: "Hack for falcon-40b"
        if not new_arch and r.flag("multi_query", True):
            return 1
        if family != "falcon" and not r.has("n_head_kv") and not r.has("num_kv_heads"):
            return 1  # RWConfig: n_head_kv defaults to 1
    value = r.first_int(*_KV_HEAD_KEYS)
    return heads if value is None else value


def parse_nas_blocks(
    r: Reader, layers: int, hidden: int, heads: int
) -> tuple[int, int, tuple[int, ...]]:
    """nemotron-nas (DeciLM) ``block_configs``: one attention and one MLP spec per layer.

    vLLM 0.33.0 model_executor/models/nemotron_nas.py: a no-op attention has no weights and no
    KV cache (l.148, 300); KV heads are ``num_attention_heads // n_heads_in_group`` (l.149-150;
    the KV-head count vLLM reports is the first non-no-op block's, convertor l.498-505); the MLP
    width is ``ffn.intermediate_size`` or ``ffn_mult`` rounded by ``_ffn_mult_to_intermediate_size``
    (l.60-70: int(2·ffn_mult·d/3) up to a multiple of 256), 0 for a no-op MLP.
    """
    blocks = r.cfg.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != layers:
        got = len(blocks) if isinstance(blocks, list) else type(blocks).__name__
        raise ConfigError(f"{r.where}: field {r.prefix}block_configs must list one block per "
                          f"layer ({layers}), got {got}")
    kv_heads = 0
    no_attention = 0
    widths: list[int] = []
    for i, block in enumerate(blocks):
        where = f"block_configs[{i}]"
        attn = block.get("attention") if isinstance(block, Mapping) else None
        ffn = block.get("ffn") if isinstance(block, Mapping) else None
        if not isinstance(attn, Mapping) or not isinstance(ffn, Mapping):
            raise ConfigError(f"{r.where}: field {r.prefix}{where} needs attention and ffn "
                              "objects")
        a, f = Reader(attn, r.where, f"{r.prefix}{where}.attention."), Reader(
            ffn, r.where, f"{r.prefix}{where}.ffn.")
        if a.flag("no_op"):
            no_attention += 1
        elif not kv_heads:
            group = a.need("n_heads_in_group")
            if heads % group:
                raise ConfigError(f"{r.where}: field {a.prefix}n_heads_in_group {group} does not "
                                  f"divide {heads} attention heads")
            kv_heads = heads // group
        if f.flag("no_op"):
            widths.append(0)
        elif f.has("intermediate_size"):
            widths.append(f.need("intermediate_size"))
        else:
            mult = ffn.get("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or not (
                    0 < mult < 1e6):
                raise ConfigError(f"{r.where}: field {f.prefix}ffn_mult must be a positive "
                                  f"number, got {mult!r}")
            width = int(2 * mult * hidden / 3)
            widths.append(width if width % 256 == 0 else width + 256 - width % 256)
    if not kv_heads:
        raise ConfigError(f"{r.where}: every block_configs attention is a no-op")
    if not any(widths):
        raise ConfigError(f"{r.where}: every block_configs ffn is a no-op")
    return kv_heads, no_attention, tuple(widths)


def parse_mla(r: Reader) -> MLA | None:
    if not r.has("kv_lora_rank"):
        return None
    return MLA(
        kv_lora_rank=r.need("kv_lora_rank"),
        qk_rope_head_dim=r.need("qk_rope_head_dim"),
        qk_nope_head_dim=r.need("qk_nope_head_dim"),
        v_head_dim=r.need("v_head_dim"),
        q_lora_rank=r.int_or_none("q_lora_rank"),
        indexer_heads=r.int_default("index_n_heads", 0, minimum=0),
        indexer_head_dim=r.int_default("index_head_dim", 0, minimum=0),
    )


def parse_compressed_attention(r: Reader, layers: int, head_dim: int) -> CompressedAttention:
    """DeepSeek-V4's per-layer compress ratios: ``compress_ratios`` (MTP layers listed last), or
    the upstream config's ``layer_types`` mapped through ``compress_rates`` (vllm 0.33.0
    transformers_utils/deepseek_v4_utils.py get_compress_ratios l.6-18)."""
    ratios = r.int_list("compress_ratios")
    if not ratios:
        types = r.str_list("layer_types") or []
        rates = r.cfg.get("compress_rates")
        if not types or not isinstance(rates, Mapping):
            raise ConfigError(f"{r.where}: DeepSeek-V4 config needs {r.prefix}compress_ratios "
                              "(or layer_types with compress_rates)")
        ratios = [rates.get(t, 0) for t in types]
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in ratios):
            raise ConfigError(f"{r.where}: field {r.prefix}compress_rates must map layer types "
                              "to integers")
    if len(ratios) < layers or any(x < 0 for x in ratios):
        raise ConfigError(f"{r.where}: field {r.prefix}compress_ratios must give each of the "
                          f"{layers} layers a ratio >= 0, got {len(ratios)}")
    return CompressedAttention(
        window=r.need("sliding_window"),
        head_dim=head_dim,
        rope_head_dim=r.need("qk_rope_head_dim"),
        ratios=tuple(ratios[:layers]),
        indexer_head_dim=r.int_default("index_head_dim", 128),
        q_lora_rank=r.int_default("q_lora_rank", 0, minimum=0),
        o_lora_rank=r.int_default("o_lora_rank", 0, minimum=0),
        o_groups=r.int_default("o_groups", 0, minimum=0),
        indexer_heads=r.int_default("index_n_heads", 0, minimum=0),
        hc_mult=r.int_default("hc_mult", 0, minimum=0),
        hash_layers=r.int_default("num_hash_layers", 0, minimum=0),
    )


def parse_moe_and_ffn(r: Reader, family: str, layers: int, hidden: int) -> tuple[MoE | None, int]:
    """MoE widths and the dense FFN width; ``ffn`` is 0 when no layer is dense."""
    experts = r.first_int("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
    if not experts:
        if family in _FALCON_TYPES:
            return None, r.first_int("ffn_hidden_size") or 4 * hidden
        if family in _N_INNER_DEFAULT_4D:
            # vLLM gpt2.py GPT2Block: inner_dim = n_inner if not None else 4 * hidden_size
            # (vllm-project/vllm@0176894, vllm/model_executor/models/gpt2.py); GPT2Config's
            # n_inner defaults to None, and gpt2/distilgpt2 configs omit it or write null.
            return None, r.first_int("n_inner") or 4 * hidden
        return None, r.need("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim")
    # kimi_linear (Kimi-K3's text_config) spells it num_experts_per_token (vllm 0.33.0
    # models/kimi_k3/amd/linear.py:210); gemma4_text top_k_experts (vllm 0.33.0
    # model_executor/models/gemma4.py:648, transformers 5.20.2 Gemma4TextConfig l.182)
    top_k = r.need("num_experts_per_tok", "experts_per_token", "moe_topk",
                   "num_experts_per_token", "top_k_experts")
    if family.startswith("gemma4"):
        # Gemma 4 MoE layers run the dense MLP (intermediate_size) *and* the experts on every
        # token and add them (vllm 0.33.0 gemma4.py:609-615, 630-655, 737-755): priced as one
        # always-on shared expert of the MLP's width, which TP shards the same way.
        expert_ffn = r.need("moe_intermediate_size", "expert_intermediate_size")
        moe = MoE(num_experts=experts, experts_per_token=top_k, expert_ffn=expert_ffn,
                  moe_layers=layers, num_shared_experts=1,
                  shared_expert_ffn=r.need("intermediate_size"))
        return moe, 0
    expert_ffn = r.need("moe_intermediate_size" if r.has("moe_intermediate_size")
                        else "intermediate_size")
    is_moe = _moe_layer_pattern(r, family, layers)
    moe_layers = sum(is_moe)
    dense_layers = layers - moe_layers
    ffn = 0
    if dense_layers:
        # llama4: intermediate_size_mlp; minimax_m3: dense_intermediate_size (vllm 0.33.0
        # models/minimax_m3/nvidia/model.py:750, the dense layers' MLP width)
        key = next((k for k in ("intermediate_size_mlp", "dense_intermediate_size") if r.has(k)),
                   "intermediate_size")
        ffn = r.need(key)

    shared_n = 0
    shared_w = 0
    if r.has("n_shared_experts"):  # deepseek, kimi, glm4_moe: n × moe_intermediate_size
        shared_n = r.int_default("n_shared_experts", 0, minimum=0)
        shared_w = expert_ffn if shared_n else 0
    elif r.has("num_shared_experts"):  # bailing (Ling)
        shared_n = r.int_default("num_shared_experts", 0, minimum=0)
        shared_w = r.int_default("moe_shared_expert_intermediate_size", expert_ffn, minimum=0)
    elif r.has("shared_expert_intermediate_size"):  # qwen2_moe, qwen3_next
        shared_w = r.int_default("shared_expert_intermediate_size", 0, minimum=0)
        shared_n = 1 if shared_w else 0
    elif family.startswith("llama4"):  # one shared expert of the expert width
        shared_n, shared_w = 1, expert_ffn
    if not shared_n or not shared_w:
        shared_n = shared_w = 0

    router_bias = (
        family == "gpt_oss"
        or r.cfg.get("topk_method") == "noaux_tc"
        or r.flag("moe_router_enable_expert_bias", False)
        or family == "glm4_moe"  # noaux_tc routing: e_score_correction_bias
    )
    moe = MoE(
        num_experts=experts,
        experts_per_token=top_k,
        expert_ffn=expert_ffn,
        moe_layers=moe_layers,
        num_shared_experts=shared_n,
        shared_expert_ffn=shared_w,
        router_bias=router_bias,
        expert_bias=family == "gpt_oss",
        shared_expert_gate=bool(shared_n) and family in ("qwen2_moe", "qwen3_next"),
    )
    return moe, ffn


def _moe_layer_pattern(r: Reader, family: str, layers: int) -> list[bool]:
    """Which layers route to experts, per family (the modeling files' own conditions)."""
    if r.has("mlp_only_layers") or r.has("decoder_sparse_step"):  # qwen2_moe/qwen3_moe/next
        dense = set(r.int_list("mlp_only_layers"))
        step = r.int_default("decoder_sparse_step", 1)
        return [i not in dense and (i + 1) % step == 0 for i in range(layers)]
    if is_list(r.cfg, "moe_layer_freq"):
        # mimo_v2_flash, minimax_m3: one 0/1 per layer, non-zero = MoE (vllm 0.33.0
        # model_executor/models/mimo_v2.py:492-497, models/minimax_m3/nvidia/model.py:110-115)
        flags = r.int_list_01("moe_layer_freq")
        if len(flags) != layers:
            raise ConfigError(f"{r.where}: field {r.prefix}moe_layer_freq lists {len(flags)} "
                              f"layers, the model has {layers}")
        return [bool(f) for f in flags]
    if r.has("first_k_dense_replace") or r.has("moe_layer_freq"):  # deepseek, glm4_moe, bailing
        k = r.int_default("first_k_dense_replace", 0, minimum=0)
        freq = r.int_default("moe_layer_freq", 1)
        return [i >= k and i % freq == 0 for i in range(layers)]
    if r.has("moe_layers"):  # llama4 explicit list
        chosen = set(r.int_list("moe_layers"))
        return [i in chosen for i in range(layers)]
    if r.has("interleave_moe_layer_step"):  # llama4: layers step-1, 2·step-1, ...
        step = r.int_default("interleave_moe_layer_step", 1)
        return [(i + 1) % step == 0 for i in range(layers)]
    return [True] * layers  # mixtral, gpt-oss, unknown: every layer


def parse_biases(r: Reader, family: str) -> tuple[bool, bool, bool]:
    """(qkv_bias, o_bias, mlp_bias) — each family names them differently."""
    if family in ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"):
        return True, False, False  # Qwen2 attention always has q/k/v biases
    if family == "starcoder2":
        b = r.flag("use_bias", True)
        return b, b, b
    if family in _FALCON_TYPES:
        b = r.flag("bias", False)
        return b, b, b
    if family.startswith("bailing"):
        return r.flag("use_qkv_bias", False), r.flag("use_bias", False), False
    if family == "gpt2":  # vllm gpt2.py:84-135: c_attn, c_proj, c_fc, mlp c_proj bias=True
        return True, True, True
    if family == "opt":  # vllm opt.py:140-161: bias=config.enable_bias (OPTConfig default true)
        b = r.flag("enable_bias", True)
        return b, b, b
    if family in ("glm4_moe", "glm4", "glm"):
        return r.flag("attention_bias", family != "glm4_moe"), False, False
    attn = r.flag("attention_bias", False) or r.flag("qkv_bias", False)
    return attn, r.flag("attention_bias", False), r.flag("mlp_bias", False)


def parse_sliding_layers(r: Reader, family: str, layers: int, window: int | None) -> int:
    types = r.str_list("layer_types")
    if types is not None:
        return sum(1 for t in types[:layers] if t in ("sliding_attention", "chunked_attention"))
    if window is None:
        return 0
    if family == "gemma2":
        return (layers + 1) // 2  # layers 0, 2, 4, ... slide
    if family.startswith("gemma3"):
        pattern = r.int_default("sliding_window_pattern", 6)
        return sum(1 for i in range(layers) if (i + 1) % pattern != 0)
    if r.has("use_sliding_window"):  # qwen2-style: off unless asked
        if not r.flag("use_sliding_window"):
            return 0
        start = r.int_default("max_window_layers", layers, minimum=0)
        return max(0, layers - start)
    return layers


def parse_linear_attention(r: Reader, family: str, layers: int) -> LinearAttention | None:
    if not r.has("linear_num_value_heads"):
        return None
    types = r.str_list("layer_types")
    if types is not None:
        count = sum(1 for t in types[:layers] if t == "linear_attention")
    else:  # qwen3_next: every full_attention_interval-th layer is full attention
        interval = r.int_default("full_attention_interval", 4)
        count = sum(1 for i in range(layers) if (i + 1) % interval != 0)
    return LinearAttention(
        layers=count,
        num_key_heads=r.need("linear_num_key_heads"),
        num_value_heads=r.need("linear_num_value_heads"),
        key_head_dim=r.need("linear_key_head_dim"),
        value_head_dim=r.need("linear_value_head_dim"),
        conv_kernel=r.int_default("linear_conv_kernel_dim", 4),
    )


def parse_norms(r: Reader, family: str) -> tuple[int, bool]:
    """(d-wide norm vectors per layer, LayerNorm-with-bias)."""
    if family == "gemma2" or family.startswith("gemma3"):
        return 4, False  # input, post_attention, pre_feedforward, post_feedforward
    if family in _FALCON_TYPES:
        new_arch = r.flag("new_decoder_architecture", False) or (
            family != "falcon" and r.cfg.get("hidden_size") == 8192
        )
        if new_arch:
            return r.int_default("num_ln_in_parallel_attn", 2), True
        return (1 if r.flag("parallel_attn", True) else 2), True
    if family in ("starcoder2", "gpt2", "opt"):
        return 2, True  # LayerNorm with a bias (vllm gpt2.py:160-164, opt.py:147-166)
    return 2, False


def parse_qk_norm(r: Reader, family: str) -> bool:
    if family in ("qwen3", "qwen3_moe", "qwen3_next") or family.startswith("gemma3"):
        return True
    if family.startswith("llama4"):
        return False  # use_qk_norm is a weightless L2 norm
    return r.flag("use_qk_norm", False)
