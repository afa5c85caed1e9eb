"""Bytes the weights of a model occupy, per component, before any tensor-parallel split.

API: ``weight_bytes(shape, counts, *, dtype_override=None, quantization_override=None)
-> WeightBytes``. ``counts`` is ``tpcheck.models.params.param_counts(shape)``; each of its tensors
is priced in its storage format:

- Activation dtype ``b``: bfloat16/float16 2 B, float32 4 B (``dtype_override`` = a ``--dtype``
  value; ``auto``/None keeps ``shape.dtype``). A float32 config stays 4 B here: vLLM's downcast of
  float32 to the platform dtype is the caller's to apply (pass ``dtype_override="bfloat16"``).
- Embeddings, norms, biases and ``plain`` tensors (router, gates, sinks, convolutions) stay in
  ``b``. ``lm_head`` also stays in ``b`` (vLLM's ParallelLMHead is unquantized for these methods;
  ModelOpt lists it in ``exclude_modules``).
- fp8 (``quant_method: fp8``): 1 B per weight + one fp32 scale per ``block_n × block_k`` block
  (``weight_block_size``), else one fp32 scale per tensor. ``--quantization fp8`` on an
  unquantized checkpoint is vLLM's online per-tensor fp8.
- ModelOpt FP8: 1 B + weight and input fp32 scales per tensor. NVFP4 (ModelOpt, compressed-tensors):
  0.5 B + one fp8 scale per 16 weights + fp32 global scales per tensor.
- AWQ/GPTQ: ``bits/8`` B + an fp16 scale and a ``bits``-wide zero per group of ``group_size``
  input columns (int4 g128: 0.5 + 2/128 + 0.5/128 B per weight); GPTQ adds its int32 ``g_idx``
  per input column.
- compressed-tensors: ``num_bits/8`` B + scales by strategy (tensor: 4 B per tensor; channel:
  2 B per output row, 4 B for float weights; group: 2 B per group (+ a zero when asymmetric);
  block: 4 B per block).
- mxfp4 (gpt-oss): routed-expert weights only, 4 bits + one 8-bit scale per 32 = 4.25 bits.
- bitsandbytes: 4-bit 0.5 B + fp32 absmax per 64 weights; 8-bit 1 B + fp32 per row.
- MXFP8 (a ModelOpt MIXED_PRECISION layer algo): 1 B + one 8-bit scale per 32 weights.
- ``Quant.overrides`` price a component group in its own format (DeepSeek-V4's MXFP4/NVFP4
  experts beside fp8 blocks; ModelOpt MIXED_PRECISION's per-layer algos, where a group no layer
  lists, ``modelopt-mixed`` itself, stays unquantized; a listed ``lm_head`` is quantized too).

``modules_to_not_convert``/``ignore``/``exclude_modules`` entries that name a module for every
layer (``model.layers.*.self_attn``, ``mlp.shared_expert``, ``lm_head``) are honoured;
entries naming a single layer index are ignored (they are a few norms and gates, already
priced unquantized).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from tpcheck.models.params import COMPONENTS, ByComponent, ParamCounts, Tensor
from tpcheck.models.shape import ModelShape, Quant
from tpcheck.record import record

__all__ = ["DTYPE_BYTES", "WeightBytes", "resolve_quant", "tensor_bytes", "weight_bytes"]

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
_DTYPE_ALIASES = {"half": "float16", "bf16": "bfloat16", "fp16": "float16", "float": "float32",
                  "fp32": "float32"}
_FP32 = 4
_FP16 = 2

# Where each component's tensors live in a checkpoint, for modules_to_not_convert matching.
_MODULE_PREFIX = {
    "attn_q": "self_attn.",
    "attn_kv": "self_attn.",
    "attn_o": "self_attn.",
    "mla_other": "self_attn.",
    "linear_attn": "linear_attn.",
    "dense_mlp": "mlp.",
    "routed_experts": "mlp.experts.",
    "shared_experts": "mlp.shared_expert.",
}


@record
class WeightBytes(ByComponent):
    """Weight bytes per component (same names as ParamCounts), whole model, no TP split.

    ``attn_kv`` are the K/V projection bytes that physics replicates past h_kv; ``mla_other``
    is held whole by every TP rank.
    """

    dtype: str  # activation dtype used for unquantized tensors
    quant_method: str | None  # None: unquantized

    @property
    def kv_proj(self) -> int:
        """Bytes of the K and V projections (replicated past h_kv by physics)."""
        return self.attn_kv


def _norm_dtype(value: str) -> str:
    v = value.strip().lower().removeprefix("torch.")
    v = _DTYPE_ALIASES.get(v, v)
    if v not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {value!r} (expected auto, bfloat16, float16 or float32)")
    return v


def resolve_quant(shape: ModelShape, quantization_override: str | None) -> Quant | None:
    """The Quant the engine would apply, given the checkpoint's and a ``--quantization`` value."""
    q = shape.quant
    if not quantization_override:
        return q
    ov = quantization_override.strip().lower()
    base = ov.removesuffix("_marlin").removesuffix("-marlin")
    if q is not None and (q.method == base or q.method.startswith(base)):
        return q  # the override names the checkpoint's own method (or its kernel)
    if base in ("fp8", "ptpc_fp8"):
        if q is not None and q.method.endswith("fp8"):
            return q
        return Quant("fp8", 8, strategy="tensor" if base == "fp8" else "channel")
    if base == "modelopt":
        return q if q is not None else Quant("modelopt-fp8", 8, strategy="tensor")
    if base in ("awq", "gptq"):
        return Quant(base, 4, group_size=128, strategy="group", zero_point=True)
    if base == "mxfp4":
        return Quant("mxfp4", 4, group_size=32, experts_only=True)
    if base == "bitsandbytes":
        return q if q is not None else Quant("bitsandbytes", 4, group_size=64)
    if base in ("none", "auto"):
        return q
    if q is not None:
        return q
    raise ValueError(f"unknown quantization {quantization_override!r}")


def _excluded(t: Tensor, q: Quant) -> bool:
    if t.component == "lm_head":
        return True
    if q.experts_only and t.component != "routed_experts":
        return True
    if t.component == "embedding":
        return True
    prefix = _MODULE_PREFIX.get(t.component, "")
    path = prefix + t.name.split(".")[-1] if t.component in ("attn_q", "attn_kv", "attn_o",
                                                             "mla_other") else prefix
    return path.startswith(_excluded_prefixes(q.excluded))


@lru_cache(maxsize=256)
def _excluded_prefixes(excluded: tuple[str, ...]) -> tuple[str, ...]:
    """The module-path prefixes a checkpoint's exclusion list names, worked out once per list:
    a ``modules_to_not_convert`` can name a hundred modules, and every tensor family asks."""
    out: list[str] = []
    for entry in excluded:
        e = re.sub(r"^(model\.)?(language_model\.)?(model\.)?", "", entry)
        if re.search(r"layers\.\d+\.", e):
            continue  # one layer's module: a norm or gate, already unquantized
        e = re.sub(r"^layers\.\*\.", "", e)
        if e:
            out.append(e)
    return tuple(dict.fromkeys(out))


# Component -> the group name Quant.overrides uses.
_OVERRIDE_GROUP = {"attn_q": "attn", "attn_kv": "attn", "attn_o": "attn", "mla_other": "attn"}


def _override(t: Tensor, q: Quant) -> Quant | None:
    group = _OVERRIDE_GROUP.get(t.component, t.component)
    for name, sub in q.overrides:
        if name == group:
            return sub
    return None


def tensor_bytes(t: Tensor, q: Quant | None, act_bytes: int) -> int:
    """Bytes of one tensor family (all its copies) in its storage format."""
    if t.kind == "fp32":  # kept in 4 bytes by the model code (params.KINDS)
        return t.numel * _FP32
    if t.kind == "linear" and q is not None and q.overrides:
        sub = _override(t, q)
        if sub is not None:
            q = sub
            if t.component == "lm_head":  # listed by name: quantized like the rest of its algo
                return _linear_bytes(t, q)
    if t.kind != "linear" or q is None or q.method == "modelopt-mixed" or _excluded(t, q):
        return t.numel * act_bytes
    return _linear_bytes(t, q)


def _linear_bytes(t: Tensor, q: Quant) -> int:
    """A quantized linear tensor's bytes: values plus the scales its format stores."""
    rows, cols, n = t.rows, t.cols, t.copies
    elts = rows * cols
    m = q.method
    bits = q.weight_bits
    if m == "mxfp4":
        return n * (elts * 4 // 8 + math.ceil(elts / 32))
    if m in ("modelopt-nvfp4", "compressed-tensors-nvfp4"):
        g = q.group_size or 16
        return n * (elts // 2 + rows * math.ceil(cols / g) + 2 * _FP32)
    if m == "modelopt-fp8":
        return n * (elts + 2 * _FP32)
    if m == "mxfp8":
        return n * (elts + math.ceil(elts / 32))
    if m in ("fp8", "compressed-tensors-fp8", "compressed-tensors") or m.startswith("fp8"):
        value = math.ceil(elts * bits / 8)
        strategy = q.strategy or ("block" if q.block else "tensor")
        is_float = m != "compressed-tensors"
        if strategy == "block" and q.block:
            bn, bk = q.block
            scales = math.ceil(rows / bn) * math.ceil(cols / bk) * _FP32
        elif strategy == "channel":
            scales = rows * (_FP32 if is_float else _FP16)
        elif strategy == "group" and q.group_size:
            groups = rows * math.ceil(cols / q.group_size)
            scales = groups * _FP16
            if q.zero_point:
                scales += math.ceil(groups * bits / 8)
        else:
            scales = _FP32
        return n * (value + scales)
    if m in ("awq", "gptq"):
        value = math.ceil(elts * bits / 8)
        g = q.group_size or cols  # no group: one scale per output row
        groups = rows * math.ceil(cols / g)
        extra = groups * _FP16
        if q.zero_point:
            extra += math.ceil(groups * bits / 8)
        if m == "gptq":
            extra += cols * 4  # g_idx, int32 per input column
        return n * (value + extra)
    if m == "bitsandbytes":
        if bits == 4:
            return n * (elts // 2 + math.ceil(elts / (q.group_size or 64)) * _FP32)
        return n * (elts + rows * _FP32)
    # An unknown method: price the value bits alone (no scale layout known).
    return n * math.ceil(elts * bits / 8)


def weight_bytes(
    shape: ModelShape,
    counts: ParamCounts,
    *,
    dtype_override: str | None = None,
    quantization_override: str | None = None,
) -> WeightBytes:
    """Bytes per component for the whole model (see the module docstring for each format)."""
    dtype = shape.dtype
    if dtype_override and dtype_override.strip().lower() != "auto":
        dtype = _norm_dtype(dtype_override)
    act = DTYPE_BYTES[_norm_dtype(dtype)]
    q = resolve_quant(shape, quantization_override)
    sums = dict.fromkeys(COMPONENTS, 0)
    for t in counts.tensors:
        sums[t.component] += tensor_bytes(t, q, act)
    return WeightBytes(**sums, dtype=dtype, quant_method=q.method if q else None)
