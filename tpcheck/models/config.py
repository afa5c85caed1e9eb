"""Read a Hugging Face ``config.json`` into a :class:`~tpcheck.models.shape.ModelShape`.

API:

- ``load_config(path) -> dict`` reads the JSON (never executes anything, never follows
  ``auto_map``); bad JSON or a non-object raises ``ConfigError`` naming the file.
- ``parse_config(cfg, *, name="", path="", quant_cfg=None) -> ModelShape``; ``quant_cfg`` is the
  optional ``hf_quant_config.json`` (ModelOpt) found beside config.json.
- ``load_shape(path) -> ModelShape`` does both, picking up ``hf_quant_config.json`` beside it.

Every failure is a ``ConfigError`` (a ``ValueError``) whose one-line message names the field and
the file. The rules follow what vLLM's ``hf_text_config`` sees:

- Multimodal wrappers: the language model is read from ``text_config`` / ``language_config`` /
  ``llm_config``; ``torch_dtype``/``dtype`` is taken from the outer config first, then the text
  config (vLLM ``_get_and_verify_dtype``). A config with no dtype records ``float32``, which is what
  vLLM sees before it downcasts float32 to the platform dtype (bf16 on Ampere+); that downcast is
  physics, not parsing.
- KV heads, first key present wins: ``n_head_kv``, ``num_kv_heads``, ``num_key_value_heads``,
  ``multi_query_group_num``, ``num_attention_groups``; else ``num_attention_heads`` (MHA).
  Falcon (``falcon``/``RefinedWeb``/``RefinedWebModel``): not ``new_decoder_architecture`` and
  ``multi_query`` (default true) means one KV head; vLLM's RWConfig forces the new architecture
  when ``hidden_size == 8192`` (falcon-40b) and defaults ``n_head_kv`` to 1.
- Keys the file leaves out that its transformers config class defaults (``_CLASS_DEFAULTS``,
  per text model_type: gemma3_text, gemma4_text, gpt2, opt) take that default, as vLLM's
  instantiated config does: Gemma 3's text_config has no vocab_size (262208), the 12B's no
  head_dim (256); GPT-2 and OPT leave tie_word_embeddings (true) to the class.
- ``head_dim`` is the config's when positive, else ``hidden_size // num_attention_heads``. For MLA
  models it is ``qk_nope_head_dim + qk_rope_head_dim`` (the q/k head) and ``v_head_dim`` is set.
- ``ffn`` is the dense MLP width (``intermediate_size``; Llama 4 ``intermediate_size_mlp``), 0 when
  every layer is MoE. Falcon without ``ffn_hidden_size`` and gpt2 without
  ``n_inner`` (absent or null) use 4·d.
- Sliding-window layers: ``layer_types`` when present; gemma2 alternates (even layers slide);
  gemma3 ``sliding_window_pattern`` (default 6: every 6th layer is global); qwen2-style configs
  only when ``use_sliding_window`` (layers from ``max_window_layers`` on); other families with an
  integer ``sliding_window`` use it on every layer (Mistral v0.1, Phi-3).
- ``tie_word_embeddings`` absent: true for gemma*, starcoder2, falcon, gpt2 and opt (their config
  classes' defaults), false otherwise (an unknown family is assumed untied: the larger weight
  estimate).
- gpt2 and opt: every linear layer has a bias, the norms are LayerNorms with a bias, and the
  learned position embeddings are ``extra_params``.
- MoE layers: ``moe_layer_freq`` as a per-layer 0/1 list (mimo_v2_flash, minimax_m3) marks
  each layer; dense layers' width is ``dense_intermediate_size`` when present (minimax_m3).
- Mixed precision: DeepSeek-V4 fp8 checkpoints keep routed experts in MXFP4 (``expert_dtype``
  fp4, the default) or NVFP4 (``moe_quant_algo``); ModelOpt ``MIXED_PRECISION`` takes each
  component group's algo from ``quantized_layers`` (``Quant.overrides``).
- DeepSeek-V4 attention (``compress_ratios``, or ``layer_types`` through ``compress_rates``;
  ``sliding_window``, ``index_head_dim``; the weight widths ``q_lora_rank``, ``o_lora_rank``,
  ``o_groups``, ``index_n_heads``, ``hc_mult``, ``num_hash_layers``) is
  ``ModelShape.compressed``: the caches vLLM and SGLang keep for it are MLA-like, not the GQA
  its ``num_key_value_heads: 1`` suggests, and so are its low-rank weights (models/params.py).
- Gemma 4 MoE: ``top_k_experts``; its dense MLP runs beside the experts on every layer.
- MTP / next-token-prediction layers (``num_nextn_predict_layers``) are not part of the shape:
  vLLM loads them only for speculative decoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tpcheck.jsonlib import json
from tpcheck.models.features import (
    parse_biases,
    parse_compressed_attention,
    parse_kv_heads,
    parse_linear_attention,
    parse_mla,
    parse_moe_and_ffn,
    parse_nas_blocks,
    parse_norms,
    parse_qk_norm,
    parse_sliding_layers,
)
from tpcheck.models.fields import TEXT_KEYS, ConfigError, Reader, as_str, is_list
from tpcheck.models.quant_config import deepseek_v4_experts, parse_quant
from tpcheck.models.shape import ModelShape

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

    from tpcheck.models.shape import VisionTower

__all__ = ["ConfigError", "load_config", "load_shape", "parse_config", "parse_quant"]


# Keys a hub config.json may leave out because its transformers config class gives them a default
# (multimodal wrappers above all: Gemma 3's text_config has no vocab_size, and the 4B/12B ones no
# head_dim). vLLM reads the class's value (hf_text_config is the instantiated class), so a missing
# key takes it here too, per text model_type, each table with the source lines it copies.
_CLASS_DEFAULTS: dict[str, tuple[str, dict[str, int | bool]]] = {
    "gemma3_text": (
        "transformers 5.20.2 models/gemma3/configuration_gemma3.py Gemma3TextConfig l.74-94",
        {"vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216,
         "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
         "head_dim": 256, "max_position_embeddings": 131_072, "sliding_window": 4096},
    ),
    "gemma4_text": (
        "transformers 5.20.2 models/gemma4/configuration_gemma4.py Gemma4TextConfig l.152-171",
        {"vocab_size": 262_144, "hidden_size": 2304, "intermediate_size": 9216,
         "num_hidden_layers": 30, "num_attention_heads": 8, "num_key_value_heads": 4,
         "head_dim": 256, "max_position_embeddings": 131_072, "sliding_window": 512},
    ),
    # Their hub configs omit the key, and vLLM then shares the embedding as the LM head (vllm
    # 0.33.0 model_executor/models/gpt2.py:285-286, opt.py:361-362: ``if
    # self.config.tie_word_embeddings: self.lm_head = self.lm_head.tie_weights(...)``).
    "gpt2": ("transformers 5.20.2 models/gpt2/configuration_gpt2.py:103",
             {"tie_word_embeddings": True}),
    "opt": ("transformers 5.20.2 models/opt/configuration_opt.py:74",
            {"tie_word_embeddings": True}),
}
# A wrapper whose text_config names no model_type gets its class's text config (transformers
# Gemma3Config.sub_configs_defaults l.201-202: text_config is a Gemma3TextConfig).
_WRAPPER_TEXT_TYPE = {"gemma3": "gemma3_text", "gemma4": "gemma4_text"}
_TIED_BY_DEFAULT = ("gemma", "starcoder2", "falcon", "RefinedWeb")
# Families with learned position embeddings, replicated on every rank (gpt2 wpe, OPT's offset 2).
_LEARNED_POSITIONS = frozenset({"gpt2", "opt"})
_NON_GATED = frozenset(
    {"falcon", "RefinedWeb", "RefinedWebModel", "starcoder2", "gpt2", "gpt_bigcode", "gpt_neox",
     "phi", "opt", "bloom"}
)
_DTYPES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}


def _where(path: str, name: str) -> str:
    return path or name or "<config>"


def load_config(path: str | Path) -> dict[str, Any]:
    """Parse ``path`` as a JSON object; any failure is a one-line ``ConfigError``."""
    from tpcheck.models.resolve import MAX_CONFIG_BYTES
    from tpcheck.sources.files import decode_utf8_sig, read_capped

    p = Path(path)
    try:
        text = decode_utf8_sig(read_capped(str(p), MAX_CONFIG_BYTES))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read: {exc.__class__.__name__}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{p}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except RecursionError:
        raise ConfigError(f"{p}: invalid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a JSON object, got {type(data).__name__}")
    return data


def load_shape(path: str | Path, *, name: str = "") -> ModelShape:
    """Read config.json (and a ModelOpt ``hf_quant_config.json`` beside it) into a shape."""
    p = Path(path)
    cfg = load_config(p)
    qpath = p.with_name("hf_quant_config.json")
    quant_cfg = load_config(qpath) if qpath.is_file() else None
    return parse_config(cfg, name=name, path=str(p), quant_cfg=quant_cfg)


def _refuse_hybrid_mamba(text: Mapping[str, Any], where: str, prefix: str) -> None:
    """NemotronH's ``hybrid_override_pattern`` gives each layer one block: ``M`` a Mamba2
    mixer, ``*`` attention, ``E`` a MoE, ``-`` an MLP (vLLM 0.33.0 model_executor/models/
    nemotron_h.py, ALL_DECODER_LAYER_TYPES). ModelShape has every layer hold attention and an
    MLP, so Nemotron-3-Nano-30B-A3B would count 102B weights and a KV cache on all 52 layers
    where 6 have one; the Mamba state per sequence is not modelled either. Refused, so no
    figure is given rather than a wrong one."""
    pattern = text.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or "M" not in pattern:
        return
    n = {c: pattern.count(c) for c in "M*E-"}
    raise ConfigError(
        f"{where}: hybrid Mamba layers are not modelled ({prefix}hybrid_override_pattern: "
        f"{n['M']} Mamba2, {n['*']} attention, {n['E']} MoE, {n['-']} MLP of {len(pattern)} "
        "layers); capacity and layout rules would count every layer as attention")


def parse_config(
    cfg: Mapping[str, Any],
    *,
    name: str = "",
    path: str = "",
    quant_cfg: Mapping[str, Any] | None = None,
) -> ModelShape:
    """The text model's shape as vLLM sees it (see the module docstring for every rule)."""
    where = _where(path, name)
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"{where}: expected a JSON object, got {type(cfg).__name__}")
    text: Mapping[str, Any] = cfg
    prefix = ""
    for key in TEXT_KEYS:
        sub = cfg.get(key)
        if sub is None:
            continue
        if not isinstance(sub, Mapping):
            raise ConfigError(f"{where}: field {key} must be an object")
        text, prefix = sub, f"{key}."
        break
    outer_type = as_str(cfg.get("model_type"))
    text = _with_class_defaults(text, as_str(text.get("model_type")) or (
        _WRAPPER_TEXT_TYPE.get(outer_type, outer_type) if prefix else outer_type))
    r = Reader(text, where, prefix)
    model_type = as_str(text.get("model_type")) or outer_type
    family = model_type or outer_type

    _refuse_hybrid_mamba(text, where, prefix)
    layers = r.need("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    hidden = r.need("hidden_size", "n_embd", "n_embed", "d_model")
    heads = r.need("num_attention_heads", "n_head", "n_heads", "num_heads")
    vocab = r.need("vocab_size", "padded_vocab_size")
    kv_heads = parse_kv_heads(r, family, hidden, heads)
    if kv_heads > heads > 0:
        # Each KV head must serve a whole number of query heads; no engine starts this.
        raise ConfigError(
            f"{where}: {kv_heads} key-value heads > {heads} attention heads: vLLM asserts "
            f"num_heads % num_kv_heads == 0 on every GPU (model_executor/layers/attention/"
            f"attention.py:329, \"num_heads ({heads}) is not divisible by num_kv_heads "
            f"({kv_heads})\" at t=1), which no tensor parallel size satisfies")

    mla = parse_mla(r)
    v_head_dim: int | None = None
    if mla is not None:
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        v_head_dim = mla.v_head_dim
    else:
        head_dim = r.first_int("head_dim") or hidden // heads
        if head_dim == 0:
            raise ConfigError(f"{where}: field {prefix}hidden_size {hidden} < heads {heads}")

    blocks = parse_nas_blocks(r, layers, hidden, heads) if family == "nemotron-nas" else None
    if blocks is not None:
        kv_heads, no_attention, layer_ffn = blocks
        moe, ffn = None, max(layer_ffn)
    else:
        no_attention, layer_ffn = 0, ()
        moe, ffn = parse_moe_and_ffn(r, family, layers, hidden)

    qkv_bias, o_bias, mlp_bias = parse_biases(r, family)
    sliding_window = None if is_list(text, "sliding_window") else r.int_or_none("sliding_window")
    sliding_layers = parse_sliding_layers(r, family, layers, sliding_window)
    if sliding_layers == 0:
        sliding_window = None

    tied_default = family.startswith(_TIED_BY_DEFAULT)  # gpt2, opt: _CLASS_DEFAULTS
    tied = r.flag("tie_word_embeddings", tied_default)
    if prefix and "tie_word_embeddings" in cfg and "tie_word_embeddings" not in text:
        tied = Reader(cfg, where).flag("tie_word_embeddings", tied)

    linear_attn = parse_linear_attention(r, family, layers)
    max_positions = r.first_int("max_position_embeddings", "n_positions", "seq_length")
    extra_params = 0
    if family in _LEARNED_POSITIONS and max_positions:
        # learned position embeddings, replicated on every rank: gpt2 wpe has
        # max_position_embeddings rows (vllm 0.33.0 gpt2.py:210), OPT two more (opt.py:62-66)
        extra_params = (max_positions + (2 if family == "opt" else 0)) * hidden
    layer_norms, norm_bias = parse_norms(r, family)
    quant = parse_quant(cfg, quant_cfg, where)
    if family == "deepseek_v4":
        quant = deepseek_v4_experts({**cfg, **text}, quant, where)
    # DeepSeek-V4 (model_type deepseek_v4; sgl-project's FP8 re-release says deepseek_ref)
    compressed = (parse_compressed_attention(r, layers, head_dim)
                  if family == "deepseek_v4" or r.has("compress_ratios") else None)
    arch = cfg.get("architectures")
    architectures = tuple(a for a in arch if isinstance(a, str)) if isinstance(arch, list) else ()

    return ModelShape(
        model_type=family,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn=ffn,
        vocab=vocab,
        tied_embeddings=tied,
        dtype=_dtype(cfg, text, where),
        max_position_embeddings=max_positions,
        v_head_dim=v_head_dim,
        qkv_bias=qkv_bias,
        o_bias=o_bias,
        mlp_bias=mlp_bias,
        gated_mlp=family not in _NON_GATED,
        sliding_window=sliding_window,
        sliding_layers=sliding_layers,
        moe=moe,
        mla=mla,
        quant=quant,
        architectures=architectures,
        name=name,
        layer_norms=layer_norms,
        norm_bias=norm_bias,
        qk_norm=parse_qk_norm(r, family),
        attn_output_gate=family == "qwen3_next",
        attention_sinks=family == "gpt_oss",
        linear_attn=linear_attn,
        extra_params=extra_params,
        no_attention_layers=no_attention,
        layer_ffn=layer_ffn,
        compressed=compressed,
        vision=_vision(cfg, hidden) if prefix else None,
    )


def _with_class_defaults(text: Mapping[str, Any], class_type: str) -> Mapping[str, Any]:
    """``text`` with the keys it leaves out (or sets to null) filled from its config class's
    defaults (``_CLASS_DEFAULTS``); a key the file sets is never changed."""
    table = _CLASS_DEFAULTS.get(class_type)
    if table is None:
        return text
    missing = {k: v for k, v in table[1].items() if text.get(k) is None}
    return {**text, **missing} if missing else text


def _dtype(cfg: Mapping[str, Any], text: Mapping[str, Any], where: str) -> str:
    for src in (cfg, text):
        for key in ("torch_dtype", "dtype"):
            value = src.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                raise ConfigError(f"{where}: field {key} must be a dtype name, got {value!r}")
            norm = _DTYPES.get(value.removeprefix("torch.").lower())
            if norm is None:
                raise ConfigError(f"{where}: field {key} has unknown dtype {value!r}")
            return norm
    return "float32"


def _vision(cfg: Mapping[str, Any], hidden: int) -> VisionTower | None:
    """The vision tower of a multimodal checkpoint (its module imported only for one)."""
    from tpcheck.models.vision import parse_vision

    return parse_vision(cfg, hidden)
