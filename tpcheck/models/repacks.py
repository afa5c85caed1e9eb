"""Quantized repacks of a bundled model, sized as the model with the quantization their name says.

``neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8`` and ``hugging-quants/...-AWQ-INT4`` re-export
``meta-llama/Llama-3.1-70B-Instruct`` with its layers, heads and widths unchanged and the linear
weights stored in fewer bits; their own config.json is not bundled. The rule, which the tests
state case by case:

1. The name (after ``org/``, the hub's ``Meta-Llama-3*`` -> ``Llama-3*`` rename, split on ``-``)
   ends in one of the suffixes of :data:`SUFFIXES`, and no other word of it is a quantization
   word: ``-FP8-GGUF``, ``-AWQ-4bit``, ``-NVFP4`` or an unknown suffix do not match.
2. The words before the suffix, with tuning and date words dropped (``siblings.stem``), are the
   stem of exactly one org's unquantized catalog entries: parameter sizes, versions and lines
   (``70b``, ``3.1``, ``coder``) must all agree, so ``Llama-3.1-7B-FP8`` takes no 8B.
3. The caller (the resolver) checks that the base's own config is unquantized.

The repack is then the base's shape with the suffix's :class:`Quant` (weights only: embeddings
and the LM head stay 16-bit, as ``tpcheck.models.quant`` prices every method, and as these
producers leave ``lm_head`` out). The KV cache is not changed: vLLM's ``--kv-cache-dtype auto``
is the model dtype (vllm 0.33 config/cache.py ``CacheDType`` docstring "If auto, will use model
data type"), and ``auto`` takes an fp8 cache from the checkpoint only for ModelOpt configs
(vllm 0.19.0 utils/torch_utils.py ``get_kv_cache_quant_algo_string`` l.262-313, "if
quant_method.startswith('modelopt')", called from engine/arg_utils.py l.1568). AMD's ``-FP8-KV``
checkpoints are Quark exports (their cards: "created by applying Quark", "KV Cache: FP8"), so
their KV scales are used only with ``--kv-cache-dtype fp8``, which the flags then say.
Where a producer keeps more layers in 16 bits than the suffix's rule
(its ``ignore`` or ``modules_to_not_convert`` list), the weights are a lower bound and the KV
pool an upper one, so no weight or pool finding fires that the real file would not fire too.
"""

from __future__ import annotations

from tpcheck.models import siblings
from tpcheck.models.shape import Quant
from tpcheck.record import record

# suffix words -> (how the weights are stored, the sentence the finding says). FP8 of every kind
# is 1 byte per weight; its scales (one per tensor, channel or 128x128 block) are under 0.1 % of
# the weights and priced per tensor (tests: Qwen3-32B-FP8's bundled block-fp8 file against the
# rule on Qwen3-32B). AWQ is AutoAWQ's GEMM export, 4 bits with an fp16 scale and a 4-bit zero
# per 128 input columns (the hugging-quants cards: "zero-point quantization with a group size of
# 128"; the bundled 01-ai Yi-*-4bits AWQ files say bits 4, group_size 128, zero_point true).
# GPTQ-IntN is N bits, group 128 (the bundled Qwen1.5-32B-Chat-GPTQ-Int4: bits 4, group_size
# 128). neuralmagic/RedHatAI's quantized.w4a16 is int4 group 128, w8a8 int8 per output channel.
_FP8 = (Quant("fp8", 8, strategy="tensor"), "fp8 weights, 1 byte each")
_AWQ = (Quant("awq", 4, group_size=128, strategy="group", zero_point=True),
        "AWQ int4 weights, group 128 with zero points")
SUFFIXES: dict[tuple[str, ...], tuple[Quant, str]] = {
    ("fp8",): _FP8,
    ("fp8", "dynamic"): _FP8,
    ("fp8", "block"): _FP8,
    ("fp8", "kv"): (_FP8[0], _FP8[1] + " (its fp8 KV scales are used only with "
                    "--kv-cache-dtype fp8)"),
    ("awq",): _AWQ,
    ("awq", "int4"): _AWQ,
    ("gptq", "int4"): (Quant("gptq", 4, group_size=128, strategy="group", zero_point=True),
                       "GPTQ int4 weights, group 128"),
    ("gptq", "int8"): (Quant("gptq", 8, group_size=128, strategy="group", zero_point=True),
                       "GPTQ int8 weights, group 128"),
    ("quantized.w4a16",): (Quant("compressed-tensors", 4, group_size=128, strategy="group"),
                           "int4 weights, group 128"),
    ("quantized.w8a8",): (Quant("compressed-tensors", 8, strategy="channel"),
                          "int8 weights, one scale per channel"),
}


@record
class Repack:
    """A quantized repack read as its bundled base with the quantization its name says."""

    base: str  # the catalog id whose shape is taken
    suffix: str  # the name's quantization words as written ("FP8-KV")
    quant: Quant
    said: str  # how the weights are priced, for the finding

    @property
    def how(self) -> str:
        return (f"-{self.suffix} read as {self.said}; embeddings and lm_head 16-bit, the KV "
                "cache as the flags say")


def repack_of(model_id: str) -> Repack | None:
    """The bundled base and assumed quantization of a quantized repack's hub id (see the module
    docstring), or None."""
    name = model_id.strip().rpartition("/")[2]
    written = [w for w in name.split("-") if w]
    words = siblings._words(name)
    for n in (2, 1):
        if len(words) <= n:
            continue
        spec = SUFFIXES.get(tuple(words[-n:]))
        rest = words[:-n]
        if spec is None or any(siblings.QUANT.fullmatch(w) for w in rest):
            continue
        base = siblings.base_of(rest)
        if base is None:
            return None
        return Repack(base, "-".join(written[-n:]), spec[0], spec[1])
    return None
