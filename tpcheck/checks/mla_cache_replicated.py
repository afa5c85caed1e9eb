"""TP202 mla-cache-replicated: under plain TP every rank keeps an MLA model's whole latent cache."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.checks.needs import LAYOUT
from tpcheck.formula import Formula

CODE = "TP202"
NAME = "mla-cache-replicated"
SEVERITY = Severity.WARNING
NEEDS_SHAPE = True
NEEDS_KNOWN_TP = True
NEEDS_GPU_PHYSICS = True
NEEDS_VALID_LAYOUT = True
USES_MEMORY_MODEL = True
REFUSAL_VERDICT = False
DEPENDS_ON: tuple[str, ...] = LAYOUT
SUMMARY = "MLA model with t > 1 and no DP-attention: every rank holds the whole latent KV cache."

GQA_REF_HEADS = 8


def dp_attention(ctx: CheckContext) -> bool:
    d = ctx.deployment
    if d.engine == "sglang":
        return ctx.attn_dp > 1
    # vLLM: attention runs data parallel when DP is combined with expert parallel.
    return ctx.dp > 1 and bool(d.enable_expert_parallel)


def check(ctx: CheckContext) -> Iterator[Finding]:
    s = ctx.shape
    assert s is not None
    if s.mla is None or ctx.tp <= 1 or dp_attention(ctx) or ctx.evaluation.refusals:
        return
    rule = sys.modules[__name__]
    t = ctx.tp
    kvb = ctx.evaluation.kv_bytes_per_token
    m = s.mla
    dk = m.qk_nope_head_dim + m.qk_rope_head_dim
    spent = Formula(
        "t_spent",
        "h_ref·(d_k + d_v) / (r_kv + d_rope)",
        {
            "h_ref": GQA_REF_HEADS,
            "d_k": dk,
            "d_v": m.v_head_dim,
            "r_kv": m.kv_lora_rank,
            "d_rope": m.qk_rope_head_dim,
        },
        GQA_REF_HEADS * (dk + m.v_head_dim) / m.latent_dim,
        "",
        "seeds/tp-engines-chapter.txt (§3.5: MLA's advantage over GQA-8 is spent)",
    )
    head = (
        f"{s.name or 'this model'} caches one MLA latent of {m.latent_dim} elements per token "
        f"per layer, and under plain TP every one of the {t} ranks holds all of it "
        f"({int(kvb.result):,} B per token per GPU at any t): {t}× the cache for the same "
        f"sequences. A GQA-8 cache of the same depth would be divided by t and overtake MLA's "
        f"per-token advantage at t ≈ {spent.result:.1f}"
    )
    flag = (
        "--enable-dp-attention --dp "
        if ctx.deployment.engine == "sglang"
        and (ctx.deployment.engine_version or "9").startswith("0.4")
        else "--attn-dp-size "
    )
    fix = (
        f"run attention data parallel over the same GPUs: {flag}{t}"
        if ctx.deployment.engine == "sglang"
        else f"use --data-parallel-size {t} --tensor-parallel-size 1 --enable-expert-parallel "
        "(DP attention, experts shared)"
    )
    now = ctx.evaluation
    if now.seats is None or now.fits is False:
        # No GPU, or no pool at all (TP205/TP204 say why): seats and gains would be fiction.
        if now.fits is False:
            fix += f" — once the weights fit (at t={t} they leave no KV pool: {now.fit_reason()})"
        yield ctx.finding(rule, head, formulas=(kvb, spent), fix=fix, related=ctx.model_related())
        return
    seats_now = int(now.seats.result)
    # With DP-attention each rank serves its own requests, so system-wide seats are attn_dp times
    # one rank's; the attention weights are then replicated, which shrinks that rank's pool.
    if ctx.deployment.engine == "sglang":
        alt = ctx.evaluate_at(t, attn_dp=t)
    else:  # vLLM: t DP ranks of TP 1 with the experts spread over them (EP)
        alt = ctx.evaluate_at(1, dp=t, expert_parallel=True)
    per_rank = int(alt.seats.result) if alt.seats is not None else seats_now
    with_dp = per_rank * t
    gain = Formula(
        "seats_with_dp_attention",
        "seats_rank(attn_dp = t)·t",
        {"seats_rank": per_rank, "t": t},
        with_dp,
        "sequences",
        "sglang 0.5.23 pool_configurator (MLA cell per attention-DP rank)",
    )
    yield ctx.finding(
        rule,
        f"{head}. Seats now: {seats_now} sequences of {ctx.context[0]:,} tokens; with DP-attention "
        f"over the same {t} GPUs: {with_dp} ({with_dp / max(seats_now, 1):.1f}×, attention weights "
        f"then replicated per rank)",
        formulas=(kvb, gain, spent),
        fix=fix,
        related=ctx.model_related(),
    )
