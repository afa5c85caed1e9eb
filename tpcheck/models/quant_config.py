"""quantization_config as a Quant, apart: each method spells its storage its own way."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tpcheck.models.fields import TEXT_KEYS, ConfigError, Reader, as_str
from tpcheck.models.shape import Quant
from tpcheck.record import replace

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


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
    method = as_str(qc.get("quant_method")).lower()
    if not method:
        # ModelOpt layout inlined, or ModelOpt's own keys without quant_method: vLLM recognises
        # the latter by quant_algo (vllm 0.33.0 layers/quantization/modelopt.py:453-459, 776-782)
        if "quantization" in qc or "quant_algo" in qc:
            return _modelopt(qc, where)
        raise ConfigError(f"{where}: missing field quantization_config.quant_method")
    r = Reader(qc, where, "quantization_config.")
    excluded = tuple(
        (r.str_list("modules_to_not_convert") or [])
        + (r.str_list("ignore") or [])
        + (r.str_list("exclude_modules") or [])
    )
    if method == "compressed-tensors":
        return _compressed_tensors(qc, where, excluded)
    if method in ("modelopt", "modelopt_fp4"):
        q = _modelopt(qc, where)
        kv = modelopt_kv_cache(qc)
        return replace(q, kv_cache=kv) if q is not None and kv else q
    parse = _METHODS.get(method)
    if parse is not None:
        return parse(method, r, excluded)
    bits = r.int_default("bits", 16)
    return Quant(method, bits, group_size=r.int_or_none("group_size"), excluded=excluded)


def modelopt_kv_cache(qc: Mapping[str, Any]) -> str | None:
    """fp8_e4m3 when a ModelOpt ``quantization_config`` (quant_method ``modelopt...``) says its
    KV cache is static 8-bit float, as vLLM reads it for ``--kv-cache-dtype auto`` (vllm 0.19.0
    utils/torch_utils.py get_kv_cache_quant_algo_string l.262-313); None otherwise. The
    hf_quant_config.json layout has no quant_method, so vLLM's check does not fire on it."""
    if not as_str(qc.get("quant_method")).startswith("modelopt"):  # vLLM: case-sensitive
        return None
    inner = qc.get("quantization", qc)
    inner = inner if isinstance(inner, Mapping) else qc
    algo = (inner.get("kv_cache_scheme") or qc.get("kv_cache_scheme")
            or inner.get("kv_cache_quant_algo") or qc.get("kv_cache_quant_algo"))
    if isinstance(algo, Mapping):
        fp8 = (algo.get("dynamic") is False and algo.get("num_bits") == 8
               and algo.get("type") == "float")
        return "fp8_e4m3" if fp8 else None
    return "fp8_e4m3" if isinstance(algo, str) and algo.lower() == "fp8" else None


def _quantization_config(cfg: Mapping[str, Any]) -> Any:
    """The top-level ``quantization_config``, else the first a text sub-config carries."""
    qc = cfg.get("quantization_config")
    if qc is not None:
        return qc
    for key in TEXT_KEYS:
        sub = cfg.get(key)
        if isinstance(sub, Mapping) and sub.get("quantization_config") is not None:
            return sub["quantization_config"]
    return None


def _fp8(method: str, r: Reader, excluded: tuple[str, ...]) -> Quant:
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


def _awq_gptq(method: str, r: Reader, excluded: tuple[str, ...]) -> Quant:
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


def _mxfp4(method: str, r: Reader, excluded: tuple[str, ...]) -> Quant:
    return Quant("mxfp4", 4, group_size=32, experts_only=True, excluded=excluded)


def _bitsandbytes(method: str, r: Reader, excluded: tuple[str, ...]) -> Quant:
    if r.flag("load_in_4bit"):
        return Quant("bitsandbytes", 4, group_size=64, excluded=excluded)
    return Quant("bitsandbytes", 8, strategy="channel", excluded=excluded)


_METHODS: dict[str, Callable[[str, Reader, tuple[str, ...]], Quant]] = {
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
    r = Reader(weights, where, "quantization_config.config_groups.*.weights.")
    bits = r.need("num_bits")
    strategy = as_str(weights.get("strategy")).lower() or "tensor"
    group = r.int_or_none("group_size") if strategy == "group" else None
    block_list = r.int_list("block_structure") if strategy == "block" else []
    fmt = as_str(qc.get("format"))
    method = "compressed-tensors"
    if bits == 8 and as_str(weights.get("type")) == "float":
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
    algo = as_str(inner.get("quant_algo")).upper()
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
        key = (as_str(spec.get("quant_algo")).upper(), spec.get("group_size"))
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


def deepseek_v4_experts(text: Mapping[str, Any], quant: Quant | None, where: str) -> Quant | None:
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
    algo = as_str(qc.get("moe_quant_algo")).upper() if isinstance(qc, Mapping) else ""
    experts = (Quant("modelopt-nvfp4", 4, group_size=16, strategy="group") if algo == "NVFP4"
               else Quant("mxfp4", 4, group_size=32))
    return replace(quant, overrides=(("routed_experts", experts),))
