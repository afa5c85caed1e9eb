"""The layouts the engines refuse at start-up, with the engine's own words.

vLLM 0.33 and SGLang 0.5.23 check the query heads in config validation (vLLM) or model
construction (SGLang), the KV heads partition-or-replicate rule and the FFN / expert widths in
the parallel linear layers (bare asserts or ``divide()``), and vLLM refuses a padded vocabulary
that TP does not divide. See ../shared/engines/*.md for file and line.
"""

from __future__ import annotations

from functools import lru_cache

from tpcheck.formula import Formula
from tpcheck.models.shape import ModelShape, Quant
from tpcheck.record import record

VOCAB_PAD = 64
VLLM = "vllm 0.33.0"
SGL = "sglang 0.5.23"

HEADS_SRC = (
    f"{VLLM} config/model.py ModelConfig.verify_with_parallel_config l.1557-1564; "
    f"{SGL} models/llama.py l.181-194 (assert)"
)
KV_SRC = (
    f"{VLLM} model_executor/models/llama.py LlamaAttention.__init__ l.145-156, "
    f"layers/linear.py QKVParallelLinear l.1064-1071; {SGL} layers/linear.py l.1139-1145"
)
FFN_SRC = (
    f"{VLLM} layers/linear.py ColumnParallelLinear l.497 / RowParallelLinear l.1708 divide(); "
    f"{SGL} layers/linear.py l.483/l.1611"
)
MOE_SRC = (
    f"{VLLM} fused_moe/config.py FusedMoEConfig.__post_init__ l.1351-1353 (flattened TP = TP*DP); "
    f"{SGL} layers/moe/fused_moe_triton/layer.py l.427"
)
VOCAB_SRC = f"{VLLM} layers/vocab_parallel_embedding.py pad_vocab_size l.95, __init__ l.286-306"
GROUP_SRC = f"{VLLM} distributed/utils.py verify_group_size_divides_partition l.137-152"
O_GROUPS_SRC = (
    f"{VLLM} models/deepseek_v4/attention.py l.225-226 (n_local_groups = o_groups // tp_size), "
    "l.280 (wo_a.bmm_batch_size); quantization/utils/fp8_utils.py "
    "deepgemm_post_process_fp8_weight_block l.1220-1223 (r = rows // 0 at load); "
    "models/deepseek_v4/nvidia/flashmla.py l.69, flashinfer_sparse.py l.222 (heads_per_group = "
    "n_local_heads // 0 in the first forward)"
)
MARLIN_SRC = "vLLM gptq_marlin / awq_marlin kernels: min_thread_k = 128 on the row-parallel input"
# Methods whose kernels check the per-rank input against the quant group (vLLM
# verify_group_size_divides_partition callers: marlin, compressed-tensors wNa16, w4a8). MXFP4 pads
# its expert width instead, so it is not refused here.
GROUPED_METHODS = frozenset(
    {"awq", "gptq", "awq_marlin", "gptq_marlin", "compressed-tensors", "marlin", "moe_wna16"}
)
BLOCK_MOE_SRC = (
    f"{VLLM} quantization/utils/fp8_utils.py validate_fp8_block_shape_moe l.1347-1373"
)
BLOCK_SRC = f"{VLLM} quantization/utils/fp8_utils.py validate_fp8_block_shape l.1296-1344"
# ModelOpt linear layers (one algo for the checkpoint, or per layer under MIXED_PRECISION; both
# build the same weight scheme, quantization/modelopt.py build_linear_method l.2777-2792) refuse
# a row-parallel input the format's scale block does not divide. Routed experts use the fused-MoE
# methods instead, which do not refuse here.
MODELOPT_ALIGN: dict[str, tuple[int, str, str]] = {
    "modelopt-nvfp4": (16, "Unsupported model when in features size is not multiple of 16",
                       f"{VLLM} quantization/modelopt.py KNvfp4Static.create_weights l.2026-2029"),
    "mxfp8": (32, "MXFP8 requires input size divisible by 32, got {per}",
              f"{VLLM} quantization/modelopt.py KMxfp8Static.create_weights l.2335-2339"),
}


@record
class Refusal:
    """One reason an engine will not start this layout."""

    kind: str  # heads, kv_heads, widths (ffn/expert/quant), vocab: facts, the checks name codes
    check: str
    engine_message: str
    formula: Formula
    engines: tuple[str, ...] = ("vllm", "sglang")


def _mod(name: str, sym_a: str, a: int, sym_b: str, b: int, source: str) -> Formula:
    return Formula(name, f"{sym_a} mod {sym_b}", {sym_a: a, sym_b: b}, a % b, "", source)


def padded_vocab(vocab: int, pad_to: int = VOCAB_PAD) -> int:
    """``pad_vocab_size``: round the vocabulary up to a multiple of 64."""
    return ((vocab + pad_to - 1) // pad_to) * pad_to


def vocab_padding(shape: ModelShape, t: int, engine: str = "vllm") -> Formula:
    """Padded vocabulary rows per GPU; SGLang pads to 64·t when 64 alone does not divide."""
    vp = padded_vocab(shape.vocab)
    if engine == "sglang" and vp % t:
        vp = padded_vocab(shape.vocab, VOCAB_PAD * t)
        return Formula(
            "V_pad",
            "ceil(V / (64·t))·64·t",
            {"V": shape.vocab, "t": t},
            vp,
            "rows",
            f"{SGL} layers/vocab_parallel_embedding.py l.273",
        )
    return Formula("V_pad", "ceil(V / 64)·64", {"V": shape.vocab}, vp, "rows", VOCAB_SRC)


def refusals(
    shape: ModelShape,
    t: int,
    *,
    engine: str = "vllm",
    dp: int = 1,
    expert_parallel: bool = False,
    attn_dp: int = 1,
) -> list[Refusal]:
    """Every refusal for ``t``; empty when the engine starts."""
    if t < 1:
        return [
            Refusal(
                "heads",
                "tp",
                f"tensor parallel size must be positive, got {t}",
                Formula("t", "t", {"t": t}, t, "", HEADS_SRC),
            )
        ]
    out: list[Refusal] = []
    ta = _attn_tp(t, engine, attn_dp)
    h, hkv = shape.heads, shape.kv_heads
    if h % ta:
        out.append(
            Refusal(
                "heads",
                "heads",
                f"Total number of attention heads ({h}) must be divisible by tensor parallel size "
                f"({ta}).",
                _mod("h mod t", "h", h, "t", ta, HEADS_SRC),
            )
        )
    if not shape.latent_cache and hkv > 0:  # MLA and V4 cache no heads to divide
        if hkv >= ta and hkv % ta:
            out.append(
                Refusal(
                    "kv_heads",
                    "kv_heads",
                    f"AssertionError: total_num_kv_heads % tp_size == 0 ({hkv} is not divisible by "
                    f"{ta}): KV heads are partitioned when h_kv >= t",
                    _mod("h_kv mod t", "h_kv", hkv, "t", ta, KV_SRC),
                )
            )
        elif hkv < ta and ta % hkv:
            out.append(
                Refusal(
                    "kv_heads",
                    "kv_heads",
                    f"AssertionError: tp_size % total_num_kv_heads == 0 ({ta} is not divisible by "
                    f"{hkv}): KV heads are replicated when h_kv < t",
                    _mod("t mod h_kv", "t", ta, "h_kv", hkv, KV_SRC),
                )
            )
    out.extend(_width_refusals(shape, t, engine=engine, dp=dp, expert_parallel=expert_parallel))
    groups = shape.compressed.o_groups if shape.compressed is not None else 0
    if engine == "vllm" and groups and t > groups:
        # No config check: ColumnParallel wo_a divides o_groups·o_lora_rank fine, then vLLM
        # gives each rank floor(o_groups / t) = 0 output groups and divides by that count.
        out.append(
            Refusal(
                "widths",
                "o_groups",
                f"ZeroDivisionError: integer division or modulo by zero (DeepSeek-V4 o_groups "
                f"{groups} over tensor parallel size {t}: n_local_groups = {groups} // {t} = 0, "
                "raised loading wo_a or in its first forward)",
                Formula("n_local_groups", "floor(o_groups / t)", {"o_groups": groups, "t": t},
                        groups // t, "groups", O_GROUPS_SRC),
                engines=("vllm",),
            )
        )
    if engine == "vllm":
        vp = padded_vocab(shape.vocab)
        if vp % t:
            out.append(
                Refusal(
                    "vocab",
                    "vocab",
                    f"AssertionError: {vp} is not divisible by {t} (padded vocabulary "
                    f"ceil({shape.vocab}/64)·64 = {vp} split over t)",
                    _mod("V_pad mod t", "V_pad", vp, "t", t, VOCAB_SRC),
                    engines=("vllm",),
                )
            )
    return out


def _attn_tp(t: int, engine: str, attn_dp: int) -> int:
    """The tensor-parallel size the attention heads are split over: SGLang with attention DP
    splits them over attn_tp = t / attn_dp."""
    return t // attn_dp if engine == "sglang" and attn_dp > 1 and t % attn_dp == 0 else t


def _width_refusals(
    shape: ModelShape, t: int, *, engine: str, dp: int, expert_parallel: bool
) -> list[Refusal]:
    """The column-parallel widths t must divide, then each rank's slice against its quant."""
    out = _plain_widths(shape, t, engine=engine, dp=dp, expert_parallel=expert_parallel)
    if shape.quant is None:
        return out
    for sym, width, div, group in _quant_slices(shape, t, engine=engine, dp=dp,
                                                expert_parallel=expert_parallel):
        out.extend(_slice_refusals(shape.quant, sym, width, div, group))
    return out


def _plain_widths(
    shape: ModelShape, t: int, *, engine: str, dp: int, expert_parallel: bool
) -> list[Refusal]:
    """Dense FFN (each nemotron-nas layer's own), shared experts, routed experts (no EP)."""
    out: list[Refusal] = []
    # nemotron-nas: every layer's MLP is column-parallel on its own width
    dense_widths = sorted(set(shape.layer_ffn) - {0}) if shape.layer_ffn else [shape.ffn]
    bad = next((f for f in dense_widths if f and shape.dense_layers > 0 and f % t), None)
    if bad is not None:
        out.append(Refusal("widths", "ffn", f"AssertionError: {bad} is not divisible by {t}",
                           _mod("f mod t", "f", bad, "t", t, FFN_SRC)))
    moe = shape.moe
    if moe and moe.shared_expert_ffn and moe.num_shared_experts:
        width = moe.shared_expert_ffn * moe.num_shared_experts
        if width % t:
            out.append(Refusal("widths", "shared_expert_ffn",
                               f"AssertionError: {width} is not divisible by {t}",
                               _mod("f_shared mod t", "f_shared", width, "t", t, FFN_SRC)))
    if moe and not expert_parallel:
        # vLLM flattens the MoE TP over TP x DP; SGLang's moe_tp_size is tp (no EP).
        tm = t * dp if engine == "vllm" else t
        if moe.expert_ffn % tm:
            sym = "t·dp" if engine == "vllm" and dp > 1 else "t"
            out.append(Refusal(
                "widths", "expert_ffn",
                "AssertionError: intermediate_size % tp_size == 0 "
                f"({moe.expert_ffn} % {tm} != 0); "
                "use --enable-expert-parallel or a TP that divides the expert width",
                _mod("f_expert mod " + sym, "f_expert", moe.expert_ffn, sym, tm, MOE_SRC)))
    return out


def _quant_slices(
    shape: ModelShape, t: int, *, engine: str, dp: int, expert_parallel: bool
) -> list[tuple[str, int, int, str]]:
    """(symbol, full width, divisor, component group): each row-parallel input that divides,
    to be checked against the format its group is stored in (Quant.overrides: DeepSeek-V4's
    MXFP4/NVFP4 experts, ModelOpt MIXED_PRECISION's per-layer algos)."""
    moe = shape.moe
    widths: list[tuple[str, int, int, str]] = []
    if shape.ffn and shape.dense_layers > 0 and shape.ffn % t == 0:
        widths.append(("f", shape.ffn, t, "dense_mlp"))
    if moe and moe.shared_expert_ffn and moe.num_shared_experts:
        shared = moe.shared_expert_ffn * moe.num_shared_experts
        if shared % t == 0:
            widths.append(("f_shared", shared, t, "shared_experts"))
    if moe and not expert_parallel:
        tm = t * dp if engine == "vllm" else t
        if moe.expert_ffn % tm == 0:
            widths.append(("f_expert", moe.expert_ffn, tm, "routed_experts"))
    return widths


def _slice_refusals(base: Quant, sym: str, width: int, div: int, group: str) -> list[Refusal]:
    """One rank's slice (width / div) against its group's format: ModelOpt alignment, quant
    groups, the Marlin tile, FP8 blocks."""
    per = width // div
    q = group_quant(base, group)
    if div == 1 or q is None:
        return []
    align = MODELOPT_ALIGN.get(q.method) if group != "routed_experts" else None
    if align is not None and per % align[0]:
        size, text, src = align
        return [Refusal(
            "widths", "quant_block", "ValueError: " + text.format(per=per),
            Formula(f"({sym}/t) mod {size}", f"({sym} / t) mod {size}",
                    {sym: width, "t": div}, per % size, "", src),
            engines=("vllm",))]
    out: list[Refusal] = []
    grouped = q.method in GROUPED_METHODS
    if grouped and q.group_size and q.group_size > 0 and per % q.group_size:
        out.append(Refusal(
            "widths", "quant_group",
            f"Weight input_size_per_partition={per} is not divisible by group_size="
            f"{q.group_size}. This happens when tensor_parallel_size splits the layer input "
            "into shards that are not a whole number of quant groups.",
            Formula(f"({sym}/t) mod g", f"({sym} / t) mod g",
                    {sym: width, "t": div, "g": q.group_size}, per % q.group_size, "",
                    GROUP_SRC),
            engines=("vllm",)))
    elif q.method in ("awq", "gptq") and q.weight_bits == 4 and per % 128:
        out.append(Refusal(
            "widths", "marlin_tile",
            f"input_size_per_partition = {per} is not divisible by min_thread_k = 128",
            Formula(f"({sym}/t) mod 128", f"({sym} / t) mod min_thread_k",
                    {sym: width, "t": div, "min_thread_k": 128}, per % 128, "", MARLIN_SRC),
            engines=("vllm",)))
    if q.block:
        out.extend(_block_refusals(sym, width, div, per, q.block))
    return out


def group_quant(quant: Quant, group: str) -> Quant | None:
    """How one component group (dense_mlp, shared_experts, routed_experts, attn, ...) is stored:
    its override when the checkpoint names one, else the checkpoint's method; a ModelOpt
    MIXED_PRECISION group that ``quantized_layers`` does not list stays unquantized (vllm 0.33.0
    quantization/modelopt.py ModelOptMixedPrecisionConfig.get_quant_method l.1878-1886)."""
    for name, q in quant.overrides:
        if name == group:
            return q
    return None if quant.method == "modelopt-mixed" else quant


def _block_refusals(sym: str, width: int, div: int, per: int,
                    block: tuple[int, int]) -> list[Refusal]:
    """FP8 block quantization: each rank's slice must be whole blocks, in the engine's order.

    Dense layers (``validate_fp8_block_shape``) check the row-parallel input against block_k
    first; MoE experts (``validate_fp8_block_shape_moe``) check gate/up's output against block_n.
    """
    bn, bk = block
    moe = sym == "f_expert"
    checks = (("block_n", bn), ("block_k", bk)) if moe else (("block_k", bk), ("block_n", bn))
    for name, size in checks:
        if per % size == 0:
            continue
        if moe and name == "block_n":
            text = (f"The output_size of gate's and up's weight = {per} is not divisible by "
                    f"weight quantization block_n = {bn}.")
        elif moe:
            text = (f"The input_size of down's weight = {per} is not divisible by weight "
                    f"quantization block_k = {bk}.")
        elif name == "block_k":
            text = (f"Weight input_size_per_partition = {per} is not divisible by weight "
                    f"quantization block_k = {bk}.")
        else:
            text = f"{per} is not divisible by weight quantization block_n = {bn}."
        src = BLOCK_MOE_SRC if moe else BLOCK_SRC
        f = Formula(f"({sym}/t) mod {name}", f"({sym} / t) mod {name}",
                    {sym: width, "t": div, name: size}, per % size, "", src)
        return [Refusal("widths", "fp8_block", text, f, engines=("vllm",))]
    return []


def legal_sizes(shape: ModelShape, upto: int = 64, **kw: object) -> list[int]:
    """Every t in 1..upto the engine starts with (same keyword options as ``refusals``).

    Memoised per shape and options: a file of ten thousand refused launches of one model asks
    the same question ten thousand times (issue 14 item 8)."""
    return list(_legal_sizes(shape, upto, tuple(sorted(kw.items()))))


@lru_cache(maxsize=1024)
def _legal_sizes(shape: ModelShape, upto: int,
                 kw: tuple[tuple[str, object], ...]) -> tuple[int, ...]:
    options = dict(kw)
    engine, attn_dp = str(options.get("engine", "vllm")), options.get("attn_dp", 1)
    # A size the heads do not divide is refused by refusals' first check: only the others are
    # worked through (of 1..64, the 7 divisors of 64 heads).
    return tuple(t for t in range(1, upto + 1)
                 if not shape.heads % _attn_tp(t, engine, attn_dp)  # type: ignore[arg-type]
                 and not refusals(shape, t, **options))  # type: ignore[arg-type]


def nearest_legal(
    shape: ModelShape, t: int, upto: int = 64, **kw: object
) -> tuple[int | None, int | None]:
    """The legal sizes just below and just above ``t``."""
    legal = legal_sizes(shape, max(upto, t), **kw)
    below = max((x for x in legal if x < t), default=None)
    above = min((x for x in legal if x > t), default=None)
    return below, above


def is_power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


__all__ = [
    "Refusal",
    "ceil_div",
    "group_quant",
    "is_power_of_two",
    "legal_sizes",
    "nearest_legal",
    "padded_vocab",
    "refusals",
    "vocab_padding",
]
