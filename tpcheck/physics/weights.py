"""Weights per GPU: what TP divides, what it replicates.

b·[(P − P_kv)/t + P_kv/min(t, h_kv)] (DESIGN.md), refined: routed experts are sharded over
the flattened MoE group (vLLM: t·dp, with or without expert parallel), norms and routers are on
every rank, and pipeline stages divide the layer weights.
"""

from __future__ import annotations

# ``X as X``: the release table moved to engines.eras (issue 29), still read as weights.X
from tpcheck.engines.eras import MXFP4_HOPPER_SRC_019, mxfp4_era
from tpcheck.engines.eras import MXFP4_PADDED as MXFP4_PADDED
from tpcheck.engines.eras import MXFP4_TRITON_HOPPER as MXFP4_TRITON_HOPPER
from tpcheck.formula import Formula
from tpcheck.record import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tpcheck.formula import Scalar

SRC = ("DESIGN.md weights per GPU; vllm 0.33.0 layers/linear.py QKVParallelLinear "
       "(K/V replicate past h_kv), fused_moe/config.py FusedMoEParallelConfig.make l.1112")


@record
class WeightSplit:
    """Checkpoint bytes by how tensor parallelism places them."""

    sharded: float  # divided by t: dense and shared-expert MLPs, vocab rows
    attention: float  # q/o projections (MLA: kv_b too): divided by the attention TP width
    kv: float  # K and V projections: divided by min(t_attn, h_kv), replicated past h_kv
    experts: float  # routed experts: divided by the MoE group (t·dp in vLLM)
    replicated: float  # norms, routers, MLA's replicated kv_a projection: whole on every rank
    # Parts of ``sharded`` that live on one pipeline stage only (issue 32 item 4): the input
    # embedding on the first, the LM head on the last (0 when tied: the last stage then loads a
    # copy of the embedding, vLLM's PPMissingLayer on the stages without it).
    embedding: float = 0.0
    lm_head: float = 0.0

    @property
    def total(self) -> float:
        return self.sharded + self.attention + self.kv + self.experts + self.replicated


def weights_read(w: Formula) -> float:
    """Bytes of weights a decode step reads per GPU: the checkpoint's share of the stage (the
    rotary cache is indexed by position, not read whole); the figure itself where not split."""
    v = w.values.get("W_read")
    return float(v) if isinstance(v, (int, float)) else float(w.result)


def pp_partition(layers: int, pp: int) -> tuple[int, ...]:
    """Decoder layers per pipeline stage as vLLM splits them: L // p each, the remainder one
    more on each stage before the last (vllm 0.19.0 distributed/utils.py get_pp_indices
    l.124-129)."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return tuple(parts)


PP_SRC = ("vllm 0.19.0 distributed/utils.py get_pp_indices l.95-140 (layers per stage); "
          "models/llama.py l.373-391 (embed_tokens on the first rank, and on the last when "
          "tied; norm on the last, PPMissingLayer elsewhere), l.538-546 (lm_head on the last)")


def weights_per_gpu(split: WeightSplit, t: int, *, kv_heads: int, pp: int = 1,
                    moe_group: int | None = None, is_mla: bool = False,
                    attn_tp: int | None = None, layers: int = 0,
                    experts_per_gpu: float | None = None,
                    whole: Formula | None = None,
                    extras: tuple[Formula, ...] = ()) -> Formula:
    """Bytes of weights on each GPU of the heaviest pipeline stage.

    ``attn_tp`` is the attention TP width under SGLang's DP-attention (t / attn_dp): attention
    weights are then replicated over the attention-DP groups. ``experts_per_gpu`` replaces the
    routed experts' W_experts/g where the release lays them out itself (MXFP4 on Hopper);
    ``whole`` is a buffer every rank of every stage holds (the rotary cache); ``extras`` are
    further bytes per GPU outside the checkpoint's text split, named by their Formula (the
    vision tower every stage builds, the allocator's block slack). With ``pp`` > 1
    and ``layers`` known, each stage holds its own layers plus the embedding (first) or the LM
    head (last); the result is the heaviest stage, the terms name the first and the last.
    """
    g = moe_group if moe_group is not None else t
    ta = attn_tp if attn_tp else t
    kv_div = ta if is_mla or kv_heads <= 0 else min(ta, kv_heads)
    experts = split.experts / max(g, 1) if experts_per_gpu is None else experts_per_gpu
    per = (split.sharded / t + split.attention / ta + split.kv / kv_div
           + experts + split.replicated)
    values: dict[str, Scalar] = {
        "W_sharded": split.sharded, "W_attn": split.attention, "W_kv": split.kv, "t": t,
        "h_kv": kv_heads,
    }
    if ta != t:
        values["t_attn"] = ta
        expr = "(W_sharded/t + W_attn/t_attn + W_kv/min(t_attn, h_kv)"
    else:
        expr = "(W_sharded/t + W_attn/t + W_kv/min(t, h_kv)"
    if experts_per_gpu is not None:
        expr += " + W_experts_gpu"
        values["W_experts_gpu"] = experts_per_gpu
    elif split.experts:
        expr += " + W_experts/g"
        values.update({"W_experts": split.experts, "g": g})
    if split.replicated:
        expr += " + W_repl"
        values["W_repl"] = split.replicated
    expr += ")"
    w_whole = (whole.result if whole is not None else 0.0) + sum(x.result for x in extras)
    terms = ((whole,) if whole is not None else ()) + extras
    # What a decode step reads: the stage's share of the weights, the rotary cache aside.
    values["W_read"] = per / pp
    if pp > 1 and layers >= pp:
        head = split.lm_head or split.embedding  # tied: the last stage loads its own copy
        ends = (split.embedding + split.lm_head) / t
        body = per - ends  # the decoder layers (and the final norm, negligible) per GPU
        parts = pp_partition(layers, pp)
        first = body * parts[0] / layers + split.embedding / t + w_whole
        last = body * parts[-1] / layers + head / t + w_whole
        mids = [body * n / layers + w_whole for n in parts[1:-1]]
        stages = (first, *mids, last)
        res = max(stages)
        st_src = f"{SRC}; {PP_SRC}"
        terms += (
            Formula("weights_first_stage", "W_layers·n_0/L + W_embed/t (+ W_whole)",
                    {"n_0": parts[0], "L": layers, "W_embed": split.embedding, "t": t},
                    first, "B", st_src),
            Formula("weights_last_stage", "W_layers·n_last/L + W_head/t (+ W_whole)",
                    {"n_last": parts[-1], "L": layers, "W_head": head, "t": t},
                    last, "B", st_src),
        )
        values.update({"p": pp, "stages": "/".join(str(n) for n in parts)})
        expr = f"max over stages of {expr} split by layers, + embedding (first), + head (last)"
        expr += _add_whole(values, whole, extras)
        return Formula("weights_bytes_per_gpu", expr, values, res, "B", st_src, terms)
    if pp > 1:
        expr += " / p"
        values["p"] = pp
        per /= pp
    expr += _add_whole(values, whole, extras)
    per += w_whole
    return Formula("weights_bytes_per_gpu", expr, values, per, "B", SRC, terms)


def _add_whole(values: dict[str, Scalar], whole: Formula | None,
               extras: tuple[Formula, ...]) -> str:
    """The expression's tail for the parts outside the checkpoint's text split."""
    expr = ""
    if whole is not None:
        expr += " + W_whole"
        values["W_whole"] = whole.result
    for x in extras:
        expr += f" + {x.name}"
        values[x.name] = x.result
    return expr


VISION_SKIP_SRC = ("vllm 0.19.0 model_executor/models/interfaces.py l.249-288 (a tower is not "
                   "built when --limit-mm-per-prompt gives 0 to all its modalities), "
                   "config/multimodal.py l.76-78, 259-265 (--language-model-only: every limit 0)")


def vision_tower_bytes(sharded: int, replicated: int, t: int, b: float,
                       source: str) -> Formula:
    """The vision encoder and projector on each rank: (S/t + R)·b (vLLM shards the tower's
    linear layers over the TP group with mm_encoder_tp_mode "weights", the default).
    Llama-4-Scout: (870,825,728/4 + 1,106,688)·2 = 0.41 GiB at t = 4."""
    return Formula("W_vision", "(S_vision/t + R_vision)·b",
                   {"S_vision": sharded, "R_vision": replicated, "t": t, "b": b},
                   (sharded / t + replicated) * b, "B", f"{source}; {VISION_SKIP_SRC}")


ROPE_SRC = ("vllm 0.19.0 model_executor/layers/rotary_embedding/base.py l.58-63 (cos_sin_cache "
            "of max_position × rotary_dim, a GPU buffer, cast to the model dtype unless "
            "FlashInfer keeps it fp32), __init__.py l.26/77 (one instance per shape, shared by "
            "the layers), deepseek_scaling_rope.py l.60-67/102-112 (fp32 with FlashInfer, "
            "which needs the rotary_embedding custom op enabled: custom_op.py l.272-302, "
            "config/vllm.py l.847-852, 890-897: custom_ops 'none' under torch.compile, 'all' "
            "with --enforce-eager; original_max · factor positions), models/gpt_oss.py "
            "l.82-84 (dtype=torch.float32); "
            "counted in 'Model loading took' (gpu_model_runner.py l.4745-4808: allocated "
            "memory after load_model)")


def rope_cache(*, max_position: int | None, rotary_dim: int, b: float, fp32: bool = False,
               copies: int = 1, source: str = ROPE_SRC) -> Formula | None:
    """The rotary cos/sin cache every rank holds whole: n·P·r·e bytes (e = 4 where the release
    keeps it fp32; n = 2 where local and global layers rotate with different bases, gemma-3).
    Llama-3.1: 131,072 · 128 · 2 = 32 MiB; Llama-4: 10,485,760 · 128 · 2 = 2.5 GiB."""
    if not max_position or rotary_dim <= 0:
        return None
    e = 4 if fp32 else b
    src = source if copies == 1 else f"{source}; {GEMMA3_ROPE_SRC}"
    return Formula("W_rope", "n·P·r·e", {"n": copies, "P": max_position, "r": rotary_dim,
                                         "e": e},
                   copies * max_position * rotary_dim * e, "B", src)


GEMMA3_ROPE_SRC = ("vllm 0.19.0 model_executor/models/gemma3.py l.167-186 (sliding layers: the "
                   "default rope at rope_local_base_freq; global layers: config.json's, so two "
                   "caches)")




def _up(x: int, m: int) -> int:
    return -(-x // m) * m


def mxfp4_hopper_experts_019(*, hidden: int, expert_ffn: int, experts: int, layers: int,
                             g: int, bias: bool) -> Formula:
    """Routed-expert bytes per GPU of an MXFP4 MoE on Hopper under 0.19's Triton backend.

    Per layer, with I = round_up(f_e/g, 64): swizzled w13 E·r64(2I)·r64(d/2) and w2
    E·r64(d)·r64(I/2) (uint8, 2 values a byte), swizzled scales E·r256(2I)·r2(d/32) and
    E·r256(d)·r2(I/32), the loaded scales kept (E·2I·d/32 + E·d·I/32) and fp32 biases
    4·E·(2I + d). gpt-oss-20b at t = 2: 236.3 MB a layer, 5.28 GiB over 24 layers.
    """
    i_p = _up(max(expert_ffn // max(g, 1), 1), 64)
    e, d = experts, hidden
    w = e * _up(2 * i_p, 64) * _up(d // 2, 64) + e * _up(d, 64) * _up(i_p // 2, 64)
    sw = e * _up(2 * i_p, 256) * _up(d // 32, 2) + e * _up(d, 256) * _up(i_p // 32, 2)
    kept = e * 2 * i_p * (d // 32) + e * d * (i_p // 32)
    bi = 4 * e * (2 * i_p + d) if bias else 0
    per_layer = w + sw + kept + bi
    return Formula(
        "W_experts_gpu", "L_moe·(w13 + w2 + swizzled scales + loaded scales + fp32 biases)",
        {"L_moe": layers, "E": e, "d": d, "I": i_p, "w": w, "scales_swizzled": sw,
         "scales_kept": kept, "bias": bi}, layers * per_layer, "B", MXFP4_HOPPER_SRC_019)


# GPUs with native FP4/FP8 MoE kernels (Hopper and newer) use vLLM's triton/FlashInfer MXFP4
# path; older ones (Ampere, Ada) fall back to Marlin. Keys from tpcheck.hardware.gpus.
_HOPPER = ("h100", "h200", "h20", "h800", "gh200")
_SM90_OR_NEWER = (*_HOPPER, "b200", "gb200", "b300", "gb300")


def mxfp4_layout(version: str | None, gpu_key: str | None) -> str:
    """Which MXFP4 expert layout the release loads on the GPU (Triton's only on Hopper)."""
    how = mxfp4_era(version)
    if how == MXFP4_TRITON_HOPPER and not (gpu_key or "").startswith(_HOPPER):
        return MXFP4_PADDED
    return how


MXFP4_SRC = ("vllm 0.33.0 model_executor/layers/fused_moe/oracle/mxfp4.py "
             "mxfp4_round_up_hidden_size_and_intermediate_size")
MXFP4_MARLIN_SRC = ("vllm 0.10.1.1 model_executor/layers/quantization/mxfp4.py l.154-167 "
                    "(Marlin: round_up(intermediate_size_per_partition, 128), hidden to 256)")


def mxfp4_padding(hidden: int, expert_ffn: int, gpu_key: str | None, parts: int = 1) -> Formula:
    """Expert bytes grow by the padding vLLM applies to MXFP4 experts before loading them.

    Hopper and newer: hidden rounded up to 256. Marlin (older GPUs): each rank's slice of the
    expert width (``parts`` ranks share it) rounded up to 128 as well, since create_weights pads
    intermediate_size_per_partition. gpt-oss: 2880 → 3072 (×16/15); on an A100 also 2880 →
    2944 at t = 1 (×1.090 in all) and 720 → 768 per rank at t = 4 (×1.138).
    """
    d_pad = -(-hidden // 256) * 256
    marlin = gpu_key is not None and not gpu_key.startswith(_SM90_OR_NEWER)
    p = max(parts, 1)
    per_rank = -(-expert_ffn // p)
    f_pad = -(-per_rank // 128) * 128 * p if marlin else expert_ffn
    factor = (d_pad * f_pad) / (hidden * expert_ffn)
    return Formula("mxfp4_pad", "(ceil(d/256)·256 / d)·(f_pad / f_e), f_pad = p·⌈f_e/p/128⌉·128",
                   {"d": hidden, "f_e": expert_ffn, "f_pad": f_pad, "p": p, "marlin": marlin},
                   factor, "x", f"{MXFP4_SRC}; {MXFP4_MARLIN_SRC}")
