"""Weights per GPU: what TP divides, what it replicates.

b·[(P − P_kv)/t + P_kv/min(t, h_kv)] (DESIGN.md), refined: routed experts are sharded over
the flattened MoE group (vLLM: t·dp, with or without expert parallel), norms and routers are on
every rank, and pipeline stages divide the layer weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from tpcheck.formula import Formula

SRC = ("DESIGN.md weights per GPU; vllm 0.33.0 layers/linear.py QKVParallelLinear "
       "(K/V replicate past h_kv), fused_moe/config.py FusedMoEParallelConfig.make l.1112")


@dataclass(frozen=True)
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
