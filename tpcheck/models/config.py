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

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

from tpcheck.models.shape import (
    MLA,
    CompressedAttention,
    LinearAttention,
    ModelShape,
    MoE,
    Quant,
)
from tpcheck.record import replace

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ConfigError", "load_config", "load_shape", "parse_config"]


class ConfigError(ValueError):
    """A config.json that cannot describe a model; the message is one line."""


_FALCON_TYPES = frozenset({"falcon", "RefinedWeb", "RefinedWebModel"})
_KV_HEAD_KEYS = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)
_TEXT_KEYS = ("text_config", "language_config", "llm_config")
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
# GPT-2 configs, whose MLP width is n_inner, or 4·n_embd when it is absent or null.
_N_INNER_DEFAULT_4D = frozenset({"gpt2"})
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
    from tpcheck.sources.files import read_capped

    p = Path(path)
    try:
        text = read_capped(str(p), MAX_CONFIG_BYTES).decode("utf-8-sig")
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


class _Reader:
    """Typed field access on one config dict, with errors naming field and file."""

    def __init__(self, cfg: Mapping[str, Any], where: str, prefix: str = "") -> None:
        self.cfg = cfg
        self.where = where
        self.prefix = prefix

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def _bad(self, key: str, value: Any, want: str) -> ConfigError:
        shown = repr(value)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        return ConfigError(f"{self.where}: field {self.prefix}{key} must be {want}, got {shown}")

    def int_or_none(self, key: str, *, minimum: int = 1) -> int | None:
        value = self.cfg.get(key)
        if value is None:
            return None
        if isinstance(value, bool):
            raise self._bad(key, value, _want(minimum))
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise self._bad(key, value, _want(minimum))
            value = int(value)
        if not isinstance(value, int):
            raise self._bad(key, value, _want(minimum))
        if value < minimum or value > MAX_DIM:
            raise self._bad(key, value, _want(minimum) + f" up to {MAX_DIM:,}")
        return value

    def first_int(self, *keys: str, minimum: int = 1) -> int | None:
        for key in keys:
            if self.has(key):
                return self.int_or_none(key, minimum=minimum)
        return None

    def need(self, *keys: str, minimum: int = 1) -> int:
        value = self.first_int(*keys, minimum=minimum)
        if value is None:
            alts = f" (or {', '.join(keys[1:])})" if len(keys) > 1 else ""
            raise ConfigError(f"{self.where}: missing field {self.prefix}{keys[0]}{alts}")
        return value

    def int_default(self, key: str, default: int, *, minimum: int = 1) -> int:
        value = self.int_or_none(key, minimum=minimum)
        return default if value is None else value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._bad(key, value, "true or false")
        return value

    def int_list(self, key: str) -> list[int]:
        value = self.cfg.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self._bad(key, value, "a list of integers")
        return list(value)

    def int_list_01(self, key: str) -> list[int]:
        """A per-layer list of 0/1 flags (booleans accepted)."""
        value = self.cfg.get(key)
        if not isinstance(value, list) or not all(
            isinstance(v, (int, bool)) and v in (0, 1) for v in value
        ):
            raise self._bad(key, value, "a list of 0/1 flags")
        return [int(v) for v in value]

    def str_list(self, key: str) -> list[str] | None:
        value = self.cfg.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, value, "a list of strings")
        return list(value)


# No real width, count or length comes near 2^40 (a trillion); past it the byte arithmetic
# leaves exact integers and floats, so such a config is refused as malformed.
MAX_DIM = 1 << 40


def _want(minimum: int) -> str:
    return "a positive integer" if minimum == 1 else f"an integer >= {minimum}"


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
    for key in _TEXT_KEYS:
        sub = cfg.get(key)
        if sub is None:
            continue
        if not isinstance(sub, Mapping):
            raise ConfigError(f"{where}: field {key} must be an object")
        text, prefix = sub, f"{key}."
        break
    outer_type = _str(cfg.get("model_type"))
    text = _with_class_defaults(text, _str(text.get("model_type")) or (
        _WRAPPER_TEXT_TYPE.get(outer_type, outer_type) if prefix else outer_type))
    r = _Reader(text, where, prefix)
    model_type = _str(text.get("model_type")) or outer_type
    family = model_type or outer_type

    _refuse_hybrid_mamba(text, where, prefix)
    layers = r.need("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    hidden = r.need("hidden_size", "n_embd", "n_embed", "d_model")
    heads = r.need("num_attention_heads", "n_head", "n_heads", "num_heads")
    vocab = r.need("vocab_size", "padded_vocab_size")
    kv_heads = _kv_heads(r, family, hidden, heads)
    if kv_heads > heads > 0:
        # Each KV head must serve a whole number of query heads; no engine starts this.
        raise ConfigError(
            f"{where}: {kv_heads} key-value heads > {heads} attention heads: vLLM asserts "
            f"num_heads % num_kv_heads == 0 on every GPU (model_executor/layers/attention/"
            f"attention.py:329, \"num_heads ({heads}) is not divisible by num_kv_heads "
            f"({kv_heads})\" at t=1), which no tensor parallel size satisfies")

    mla = _mla(r)
    v_head_dim: int | None = None
    if mla is not None:
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        v_head_dim = mla.v_head_dim
    else:
        head_dim = r.first_int("head_dim") or hidden // heads
        if head_dim == 0:
            raise ConfigError(f"{where}: field {prefix}hidden_size {hidden} < heads {heads}")

    blocks = _nas_blocks(r, layers, hidden, heads) if family == "nemotron-nas" else None
    if blocks is not None:
        kv_heads, no_attention, layer_ffn = blocks
        moe, ffn = None, max(layer_ffn)
    else:
        no_attention, layer_ffn = 0, ()
        moe, ffn = _moe_and_ffn(r, family, layers, hidden)

    qkv_bias, o_bias, mlp_bias = _biases(r, family)
    sliding_window = None if _is_list(text, "sliding_window") else r.int_or_none("sliding_window")
    sliding_layers = _sliding_layers(r, family, layers, sliding_window)
    if sliding_layers == 0:
        sliding_window = None

    tied_default = family.startswith(_TIED_BY_DEFAULT)  # gpt2, opt: _CLASS_DEFAULTS
    tied = r.flag("tie_word_embeddings", tied_default)
    if prefix and "tie_word_embeddings" in cfg and "tie_word_embeddings" not in text:
        tied = _Reader(cfg, where).flag("tie_word_embeddings", tied)

    linear_attn = _linear_attention(r, family, layers)
    max_positions = r.first_int("max_position_embeddings", "n_positions", "seq_length")
    extra_params = 0
    if family in _LEARNED_POSITIONS and max_positions:
        # learned position embeddings, replicated on every rank: gpt2 wpe has
        # max_position_embeddings rows (vllm 0.33.0 gpt2.py:210), OPT two more (opt.py:62-66)
        extra_params = (max_positions + (2 if family == "opt" else 0)) * hidden
    layer_norms, norm_bias = _norms(r, family)
    quant = parse_quant(cfg, quant_cfg, where)
    if family == "deepseek_v4":
        quant = _deepseek_v4_experts({**cfg, **text}, quant, where)
    # DeepSeek-V4 (model_type deepseek_v4; sgl-project's FP8 re-release says deepseek_ref)
    compressed = (_compressed_attention(r, layers, head_dim)
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
        qk_norm=_qk_norm(r, family),
        attn_output_gate=family == "qwen3_next",
        attention_sinks=family == "gpt_oss",
        linear_attn=linear_attn,
        extra_params=extra_params,
        no_attention_layers=no_attention,
        layer_ffn=layer_ffn,
        compressed=compressed,
    )


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _with_class_defaults(text: Mapping[str, Any], class_type: str) -> Mapping[str, Any]:
    """``text`` with the keys it leaves out (or sets to null) filled from its config class's
    defaults (``_CLASS_DEFAULTS``); a key the file sets is never changed."""
    table = _CLASS_DEFAULTS.get(class_type)
    if table is None:
        return text
    missing = {k: v for k, v in table[1].items() if text.get(k) is None}
    return {**text, **missing} if missing else text


def _is_list(cfg: Mapping[str, Any], key: str) -> bool:
    return isinstance(cfg.get(key), list)


def _kv_heads(r: _Reader, family: str, hidden: int, heads: int) -> int:
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


def _nas_blocks(
    r: _Reader, layers: int, hidden: int, heads: int
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
        a, f = _Reader(attn, r.where, f"{r.prefix}{where}.attention."), _Reader(
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


def _mla(r: _Reader) -> MLA | None:
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


def _compressed_attention(r: _Reader, layers: int, head_dim: int) -> CompressedAttention:
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


def _moe_and_ffn(r: _Reader, family: str, layers: int, hidden: int) -> tuple[MoE | None, int]:
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


def _moe_layer_pattern(r: _Reader, family: str, layers: int) -> list[bool]:
    """Which layers route to experts, per family (the modeling files' own conditions)."""
    if r.has("mlp_only_layers") or r.has("decoder_sparse_step"):  # qwen2_moe/qwen3_moe/next
        dense = set(r.int_list("mlp_only_layers"))
        step = r.int_default("decoder_sparse_step", 1)
        return [i not in dense and (i + 1) % step == 0 for i in range(layers)]
    if _is_list(r.cfg, "moe_layer_freq"):
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


def _biases(r: _Reader, family: str) -> tuple[bool, bool, bool]:
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


def _sliding_layers(r: _Reader, family: str, layers: int, window: int | None) -> int:
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


def _linear_attention(r: _Reader, family: str, layers: int) -> LinearAttention | None:
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


def _norms(r: _Reader, family: str) -> tuple[int, bool]:
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


def _qk_norm(r: _Reader, family: str) -> bool:
    if family in ("qwen3", "qwen3_moe", "qwen3_next") or family.startswith("gemma3"):
        return True
    if family.startswith("llama4"):
        return False  # use_qk_norm is a weightless L2 norm
    return r.flag("use_qk_norm", False)


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


# --- quantization_config -------------------------------------------------------------------


def parse_quant(
    cfg: Mapping[str, Any], quant_cfg: Mapping[str, Any] | None = None, where: str = ""
) -> Quant | None:
    """``quantization_config`` (or a ModelOpt ``hf_quant_config.json``) as a ``Quant``."""
    qc = _quantization_config(cfg)
    if qc is None and quant_cfg is not None:
        return _modelopt(quant_cfg, where)
    if qc is None:
        return None
    if not isinstance(qc, Mapping):
        raise ConfigError(f"{where}: field quantization_config must be an object")
    method = _str(qc.get("quant_method")).lower()
    if not method:
        # ModelOpt layout inlined, or ModelOpt's own keys without quant_method: vLLM recognises
        # the latter by quant_algo (vllm 0.33.0 layers/quantization/modelopt.py:453-459, 776-782)
        if "quantization" in qc or "quant_algo" in qc:
            return _modelopt(qc, where)
        raise ConfigError(f"{where}: missing field quantization_config.quant_method")
    r = _Reader(qc, where, "quantization_config.")
    excluded = tuple(
        (r.str_list("modules_to_not_convert") or [])
        + (r.str_list("ignore") or [])
        + (r.str_list("exclude_modules") or [])
    )
    if method == "compressed-tensors":
        return _compressed_tensors(qc, where, excluded)
    if method in ("modelopt", "modelopt_fp4"):
        return _modelopt(qc, where)
    parse = _METHODS.get(method)
    if parse is not None:
        return parse(method, r, excluded)
    bits = r.int_default("bits", 16)
    return Quant(method, bits, group_size=r.int_or_none("group_size"), excluded=excluded)


def _quantization_config(cfg: Mapping[str, Any]) -> Any:
    """The top-level ``quantization_config``, else the first a text sub-config carries."""
    qc = cfg.get("quantization_config")
    if qc is not None:
        return qc
    for key in _TEXT_KEYS:
        sub = cfg.get(key)
        if isinstance(sub, Mapping) and sub.get("quantization_config") is not None:
            return sub["quantization_config"]
    return None


def _fp8(method: str, r: _Reader, excluded: tuple[str, ...]) -> Quant:
    where = r.where
    block = r.int_list("weight_block_size")
    if block and len(block) != 2:
        raise ConfigError(f"{where}: field quantization_config.weight_block_size needs 2 ints")
    if block and min(block) < 1:
        # vLLM divides the shards by it (quantization/utils/fp8_utils.py
        # validate_fp8_block_shape l.1296-1373: "... % block_n"): a 0 is a crash, not a size.
        raise ConfigError(f"{where}: field quantization_config.weight_block_size is "
                          f"{block}; each block size must be a positive number of elements "
                          "(vLLM's fp8 block checks divide the weight shards by it)")
    return Quant(
        "fp8",
        8,
        block=(block[0], block[1]) if block else None,
        strategy="block" if block else "tensor",
        excluded=excluded,
    )


def _awq_gptq(method: str, r: _Reader, excluded: tuple[str, ...]) -> Quant:
    bits = r.int_default("bits", r.int_default("w_bit", 4))
    group = r.int_or_none("group_size", minimum=-1)
    if group is None:
        group = r.int_or_none("q_group_size", minimum=-1)
    zero = method.startswith("awq") and r.flag("zero_point", True)
    if method.startswith("gptq"):
        zero = True  # GPTQ checkpoints store qzeros even when symmetric
    return Quant(
        method.split("_")[0],
        bits,
        group_size=group if group and group > 0 else None,
        strategy="group" if group and group > 0 else "channel",
        zero_point=zero,
        excluded=excluded,
    )


def _mxfp4(method: str, r: _Reader, excluded: tuple[str, ...]) -> Quant:
    return Quant("mxfp4", 4, group_size=32, experts_only=True, excluded=excluded)


def _bitsandbytes(method: str, r: _Reader, excluded: tuple[str, ...]) -> Quant:
    if r.flag("load_in_4bit"):
        return Quant("bitsandbytes", 4, group_size=64, excluded=excluded)
    return Quant("bitsandbytes", 8, strategy="channel", excluded=excluded)


_METHODS: dict[str, Callable[[str, _Reader, tuple[str, ...]], Quant]] = {
    "fp8": _fp8, "awq": _awq_gptq, "gptq": _awq_gptq, "awq_marlin": _awq_gptq,
    "gptq_marlin": _awq_gptq, "mxfp4": _mxfp4, "bitsandbytes": _bitsandbytes,
}


def _compressed_tensors(qc: Mapping[str, Any], where: str, excluded: tuple[str, ...]) -> Quant:
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ConfigError(f"{where}: missing field quantization_config.config_groups")
    first = next(iter(groups.values()))
    weights = first.get("weights") if isinstance(first, Mapping) else None
    if not isinstance(weights, Mapping):
        raise ConfigError(f"{where}: missing field quantization_config.config_groups.*.weights")
    r = _Reader(weights, where, "quantization_config.config_groups.*.weights.")
    bits = r.need("num_bits")
    strategy = _str(weights.get("strategy")).lower() or "tensor"
    group = r.int_or_none("group_size") if strategy == "group" else None
    block_list = r.int_list("block_structure") if strategy == "block" else []
    fmt = _str(qc.get("format"))
    method = "compressed-tensors"
    if bits == 8 and _str(weights.get("type")) == "float":
        method = "compressed-tensors-fp8"
    elif "nvfp4" in fmt:
        method = "compressed-tensors-nvfp4"
    return Quant(
        method,
        bits,
        group_size=group,
        block=(block_list[0], block_list[1]) if len(block_list) == 2 else None,
        strategy=strategy,
        zero_point=weights.get("symmetric") is False,
        excluded=excluded,
    )


def _modelopt(qc: Mapping[str, Any], where: str) -> Quant | None:
    inner = qc.get("quantization", qc)
    if not isinstance(inner, Mapping):
        raise ConfigError(f"{where}: field quantization must be an object")
    algo = _str(inner.get("quant_algo")).upper()
    ex = inner.get("exclude_modules") or []
    excluded = tuple(x for x in ex if isinstance(x, str)) if isinstance(ex, list) else ()
    if not algo:
        return None
    if algo == "MIXED_PRECISION":
        return _modelopt_mixed(inner, where, excluded)
    quant = _modelopt_algo(algo, inner.get("group_size"), excluded)
    if quant is None:
        raise ConfigError(f"{where}: unsupported ModelOpt quant_algo {algo!r}")
    return quant


def _modelopt_algo(algo: str, group: Any, excluded: tuple[str, ...] = ()) -> Quant | None:
    """One ModelOpt algo name as a Quant (None: not one tpcheck can price)."""
    if algo == "FP8":
        return Quant("modelopt-fp8", 8, strategy="tensor", excluded=excluded)
    if algo in ("NVFP4", "W4A16_NVFP4", "NVFP4_AWQ"):  # same storage: e2m1 + fp8 scale per 16
        return Quant(
            "modelopt-nvfp4",
            4,
            group_size=group if isinstance(group, int) and group > 0 else 16,
            strategy="group",
            excluded=excluded,
        )
    if algo == "MXFP8":
        return Quant("mxfp8", 8, group_size=32, strategy="group", excluded=excluded)
    return None


# A MIXED_PRECISION layer name (its text after ``layers.N.``) -> the component group it is in.
_MIXED_GROUPS = (
    ("shared_expert", "shared_experts"),
    ("experts", "routed_experts"),
    ("linear_attn", "linear_attn"),
    ("attn", "attn"),
    ("attention", "attn"),
    ("mlp", "dense_mlp"),
    ("feed_forward", "dense_mlp"),
    ("ffn", "dense_mlp"),
)


def _modelopt_mixed(inner: Mapping[str, Any], where: str, excluded: tuple[str, ...]) -> Quant:
    """ModelOpt MIXED_PRECISION: ``quantized_layers`` maps each layer's module to its own algo;
    each component group takes the algo most of its modules use, a group none lists stays
    unquantized, and a listed lm_head is quantized (what vLLM's ModelOptMixedPrecisionConfig
    does module by module: vllm 0.33.0 layers/quantization/modelopt.py:1844-1900)."""
    layers = inner.get("quantized_layers")
    if not isinstance(layers, Mapping) or not layers:
        raise ConfigError(f"{where}: ModelOpt MIXED_PRECISION without quantized_layers")
    votes: dict[str, dict[tuple[str, Any], int]] = {}
    for name, spec in layers.items():
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{where}: field quantized_layers.{name} must be an object")
        key = (_str(spec.get("quant_algo")).upper(), spec.get("group_size"))
        tail = str(name).rsplit("layers.", 1)[-1] if "layers." in str(name) else str(name)
        group = "lm_head" if tail.endswith("lm_head") else next(
            (g for word, g in _MIXED_GROUPS if word in tail), None)
        if group is not None:
            counts = votes.setdefault(group, {})
            counts[key] = counts.get(key, 0) + 1
    overrides: list[tuple[str, Quant]] = []
    for group in sorted(votes):
        (algo, size), _ = max(votes[group].items(), key=lambda kv: kv[1])
        quant = _modelopt_algo(algo, size)
        if quant is None:
            raise ConfigError(f"{where}: unsupported ModelOpt quant_algo {algo!r} in "
                              "MIXED_PRECISION quantized_layers")
        overrides.append((group, quant))
    bits = min(q.weight_bits for _, q in overrides) if overrides else 16
    return Quant("modelopt-mixed", bits, excluded=excluded, overrides=tuple(overrides))


def _deepseek_v4_experts(text: Mapping[str, Any], quant: Quant | None, where: str) -> Quant | None:
    """DeepSeek-V4's fp8 checkpoints keep the routed experts in another format: vLLM swaps in
    DeepseekV4FP8Config for model_type deepseek_v4 with quant_method fp8 (vllm 0.33.0
    models/deepseek_v4/quant_config.py:175-193), whose experts follow ``expert_dtype``
    (default "fp4", l.97): fp4 is MXFP4 (l.227), or NVFP4 when quantization_config says
    ``moe_quant_algo: NVFP4`` (l.218-225, group 16); fp8 keeps the fp8 blocks (l.228)."""
    if quant is None or quant.method != "fp8":
        return quant
    expert_dtype = text.get("expert_dtype", "fp4")
    if expert_dtype not in ("fp4", "fp8"):
        # l.98-102: ValueError at startup
        raise ConfigError(f"{where}: field expert_dtype must be fp4 or fp8 (DeepSeek-V4), "
                          f"got {expert_dtype!r}")
    if expert_dtype == "fp8":
        return quant
    qc = text.get("quantization_config")
    algo = _str(qc.get("moe_quant_algo")).upper() if isinstance(qc, Mapping) else ""
    experts = (Quant("modelopt-nvfp4", 4, group_size=16, strategy="group") if algo == "NVFP4"
               else Quant("mxfp4", 4, group_size=32))
    return replace(quant, overrides=(("routed_experts", experts),))
