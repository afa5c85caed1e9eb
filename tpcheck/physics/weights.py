"""Weights per GPU: what TP divides, what it replicates.

b·[(P − P_kv)/t + P_kv/min(t, h_kv)] (DESIGN.md), refined: routed experts are sharded over
the flattened MoE group (vLLM: t·dp, with or without expert parallel), norms and routers are on
every rank, and pipeline stages divide the layer weights.
"""

from __future__ import annotations

from tpcheck.formula import Formula
from tpcheck.record import record

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

    @property
    def total(self) -> float:
        return self.sharded + self.attention + self.kv + self.experts + self.replicated


def weights_per_gpu(split: WeightSplit, t: int, *, kv_heads: int, pp: int = 1,
                    moe_group: int | None = None, is_mla: bool = False,
                    attn_tp: int | None = None) -> Formula:
    """Bytes of weights on each GPU of the (largest) pipeline stage.

    ``attn_tp`` is the attention TP width under SGLang's DP-attention (t / attn_dp): attention
    weights are then replicated over the attention-DP groups.
    """
    g = moe_group if moe_group is not None else t
    ta = attn_tp if attn_tp else t
    kv_div = ta if is_mla or kv_heads <= 0 else min(ta, kv_heads)
    per = (split.sharded / t + split.attention / ta + split.kv / kv_div
           + split.experts / max(g, 1) + split.replicated) / pp
    values: dict[str, float | int] = {
        "W_sharded": split.sharded, "W_attn": split.attention, "W_kv": split.kv, "t": t,
        "h_kv": kv_heads,
    }
    if ta != t:
        values["t_attn"] = ta
        expr = "(W_sharded/t + W_attn/t_attn + W_kv/min(t_attn, h_kv)"
    else:
        expr = "(W_sharded/t + W_attn/t + W_kv/min(t, h_kv)"
    if split.experts:
        expr += " + W_experts/g"
        values.update({"W_experts": split.experts, "g": g})
    if split.replicated:
        expr += " + W_repl"
        values["W_repl"] = split.replicated
    expr += ")"
    if pp > 1:
        expr += " / p"
        values["p"] = pp
    return Formula("weights_bytes_per_gpu", expr, values, per, "B", SRC)


# GPUs with native FP4/FP8 MoE kernels (Hopper and newer) use vLLM's triton/FlashInfer MXFP4
# path; older ones (Ampere, Ada) fall back to Marlin. Keys from tpcheck.hardware.gpus.
_SM90_OR_NEWER = ("h100", "h200", "h20", "h800", "gh200", "b200", "gb200", "b300", "gb300")
MXFP4_SRC = ("vllm 0.33.0 model_executor/layers/fused_moe/oracle/mxfp4.py "
             "mxfp4_round_up_hidden_size_and_intermediate_size")


def mxfp4_padding(hidden: int, expert_ffn: int, gpu_key: str | None) -> Formula:
    """Expert bytes grow by the padding vLLM applies to MXFP4 experts before loading them.

    Hopper and newer: hidden rounded up to 256. Marlin (older GPUs): the expert width rounded up
    to 128 as well. gpt-oss: 2880 → 3072 (×16/15); on an A100 also 2880 → 2944 (×1.090 in all).
    """
    d_pad = -(-hidden // 256) * 256
    marlin = gpu_key is not None and not gpu_key.startswith(_SM90_OR_NEWER)
    f_pad = -(-expert_ffn // 128) * 128 if marlin else expert_ffn
    factor = (d_pad * f_pad) / (hidden * expert_ffn)
    return Formula("mxfp4_pad", "(ceil(d/256)·256 / d)·(f_pad / f_e)",
                   {"d": hidden, "f_e": expert_ffn, "f_pad": f_pad, "marlin": marlin},
                   factor, "x", MXFP4_SRC)
