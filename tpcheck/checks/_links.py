"""Shared by TP301/TP302 (and ``tpcheck plan --link``): what the TP group's all-reduces cost.

Three figures, each a Formula a person can redo by hand:

- decode: all-reduce time over the decode step's weight-read floor (the seeds' "comm
  fraction", T_comm / T_weights, which passes 100% when the collectives outlast the weight
  read), at batch 1 and at the batch the scheduler admits (max-num-seqs, engine default when
  unset);
- prefill: what the all-reduces add to the rest of one prefill chunk,
  T_comm / (T_chunk − T_comm) on the step model's chunk (``step.prefill_chunk``: matmuls and
  causal attention at an efficiency η, plus the all-reduces on this link), for a chunk of
  max_num_batched_tokens (SGLang --chunked-prefill-size; engine default when unset);
- break-even t on this link (where interconnect intensity meets FLOP/s ÷ link bandwidth).

The link's bandwidth and α arrive as Formulas too, so an assumed figure says it is assumed.
"""

from __future__ import annotations

from tpcheck.checks._nodes import alpha_override
from tpcheck.checks.context import CheckContext
from tpcheck.formula import Formula
from tpcheck.physics import comm
from tpcheck.physics.legality import ceil_div
from tpcheck.physics.linkcost import (
    LinkUse,
    at_size,
    breakeven,
    link_use,
    prefill_share,
    prefill_tokens,
)
from tpcheck.physics.step import NO_SWEEP, RATIO_RANGE


def decode_share(ctx: CheckContext, use: LinkUse, batch: int, batch_source: str) -> Formula | None:
    """T_comm / T_weights of one decode step of ``batch`` sequences on this link."""
    bw, alpha = use.bandwidth.result, use.alpha.result
    if use.group is not None and ctx.shape is not None:  # across nodes: priced at this size
        from tpcheck.physics.kv import activation_dtype, dtype_bytes

        b = dtype_bytes(activation_dtype(ctx.shape.dtype, ctx.deployment.dtype))
        bw, alpha = at_size(use, batch * ctx.shape.hidden * b)
    ev = ctx.evaluate_at(ctx.tp, link_bandwidth=bw, alpha=alpha, batch=batch)
    if ev.step is None or ev.comm_share is None or ev.floor is None:
        return None
    sv = ev.floor.values
    calibrated = bool(ev.step.calibrated)
    return Formula(
        "decode_comm_share",
        # calibrated (issue 22): what the all-reduces add to the rest of a measured-like step
        "T_comm / (T_step − T_comm)" if calibrated
        else "n_AR·(α + 2(t−1)/t·batch·d·b/B) / (W_gpu/β)",
        {
            "n_AR": sv["n_AR"],
            "α": sv["α"],
            "t": sv["t"],
            "batch": batch,
            "d": sv["d"],
            "b": sv["b"],
            "B": sv["B"],
            "W_gpu": sv["W_gpu"],
            "β": sv["β"],
            "batch_source": batch_source,
            "step": ev.step.source,
        },
        ev.comm_share.result,
        "",
        ev.comm_share.source if calibrated else comm.SEED_COMM,
        (ev.step, ev.comm_share),
        calibrated=calibrated,
        link=ev.step.link,
        release=ev.step.release,
    )


def link_costs(ctx: CheckContext, use: LinkUse) -> tuple[Formula, ...]:
    """Decode shares (batch 1 and the admitted batch), prefill chunk share, break-even t."""
    s, gpu, d = ctx.shape, ctx.gpu, ctx.deployment
    if s is None or gpu is None:
        return ()
    out: list[Formula] = []
    one = decode_share(ctx, use, 1, "batch 1")
    if one is not None:
        out.append(one)
    ev = ctx.capacity
    if ev.max_num_seqs is not None:
        seqs = int(ev.max_num_seqs.result)
        flag = "--max-running-requests" if d.engine == "sglang" else "--max-num-seqs"
        src = flag if d.max_num_seqs else f"default {flag.lstrip('-')} ({ev.max_num_seqs.source})"
        if seqs > 1:
            full = decode_share(ctx, use, seqs, src)
            if full is not None:
                out.append(full)
    version = ctx.release.physics_version
    n, nsrc = prefill_tokens(
        d.engine,
        version,
        d.entrypoint or "serve",
        gpu,
        None,
        d.max_num_batched_tokens,
    )
    out.append(prefill_share(s, ctx.tp, gpu, use, n, nsrc, d.dtype, engine=d.engine,
                             version=version))
    out.append(breakeven(s, gpu, use, d.dtype))
    return tuple(out)


def _pct(x: float) -> str:
    return f"{x * 100:,.0f}%"


def _why(step_source: str) -> str:
    """Why the step is uncalibrated, as its Formula's source says it."""
    if step_source.startswith("uncalibrated ("):
        return step_source.removeprefix("uncalibrated (").split("):")[0]
    return NO_SWEEP


def describe(costs: tuple[Formula, ...]) -> list[str]:
    """The cost figures as one statement each, in the order link_costs gives them; what they
    say about calibration and assumptions comes from the formulas' flags."""
    parts: list[str] = []
    dec = [f for f in costs if f.name == "decode_comm_share"]
    if dec:
        bits = [f"{_pct(f.result)} at batch {f.values['batch']:,}" for f in dec]
        first = dec[0]
        parts.append(
            "all-reduces add " + ", ".join(bits) + (
                f" to the rest of the decode step (calibrated: {first.release})"
                if first.calibrated else " to the decode step's weight-read time "
                f"({_why(first.terms[0].source if first.terms else '')}: measured steps run "
                f"{RATIO_RANGE[0]:.1f}–{RATIO_RANGE[1]:.1f}× the floor, so the share is smaller)")
        )
    for f in costs:
        if f.name == "prefill_comm_share":
            parts.append(f"they add {_pct(f.result)} to the rest of a {f.values['n']:,}-token "
                         f"prefill chunk (compute at η = {f.values['η']:g}, "
                         f"{'assumed' if f.assumed else 'calibrated'})")
        elif f.name == "breakeven_tp":
            be = f.result
            parts.append(
                f"TP stops paying past t ≈ {be:.2f} on this link"
                + (" (below 2: any TP > 1 costs more than it saves here)" if be < 2 else "")
            )
    return parts


__all__ = [
    "LinkUse",
    "alpha_override",
    "breakeven",
    "ceil_div",
    "decode_share",
    "describe",
    "link_costs",
    "link_use",
    "prefill_share",
    "prefill_tokens",
]
