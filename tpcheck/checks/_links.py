"""Shared by TP301/TP302: what the TP group's all-reduces cost on a given link."""

from __future__ import annotations

from dataclasses import replace

from tpcheck.checks.context import CheckContext
from tpcheck.formula import Formula
from tpcheck.physics import comm
from tpcheck.physics.kv import activation_dtype, dtype_bytes
from tpcheck.physics.split import model_params


def link_costs(ctx: CheckContext, link_bw: float, alpha: float) -> tuple[Formula, ...]:
    """Decode comm share, prefill comm share and break-even t for this model on this link."""
    s = ctx.shape
    assert s is not None
    out: list[Formula] = []
    b = dtype_bytes(activation_dtype(s.dtype, ctx.deployment.dtype))
    p_active = model_params(s, active=True)
    gpu = ctx.gpu
    ev = ctx.evaluate_at(ctx.tp, link_bandwidth=link_bw, alpha=alpha)
    if ev.comm_share is not None:
        out.append(replace(ev.comm_share, name="decode_comm_share"))
    if gpu is not None:
        n = ctx.deployment.max_num_batched_tokens or 8192
        out.append(comm.prefill_chunk(params_active=p_active, tokens=n, t=ctx.tp,
                                      flops=gpu.bf16_flops, layers=s.layers, hidden=s.hidden,
                                      b=b, link_bw=link_bw, alpha=alpha))
        out.append(comm.breakeven_tp(p_active, s.layers, s.hidden, b, gpu.bf16_flops, link_bw))
    return tuple(out)


def describe(costs: tuple[Formula, ...]) -> str:
    parts = []
    for f in costs:
        if f.name == "decode_comm_share":
            parts.append(f"all-reduces take {f.result:.0%} of the decode step's weight-read time")
        elif f.name == "prefill_comm_share":
            parts.append(f"{f.result:.0%} of a {f.values['n']:,}-token prefill chunk")
        elif f.name == "breakeven_tp":
            parts.append(f"TP stops paying past t ≈ {f.result:.2f} on this link")
    return "; ".join(parts)
