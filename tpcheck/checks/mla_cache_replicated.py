"""TP202 mla-cache-replicated: under plain TP every rank keeps an MLA model's whole latent cache.

DeepSeek-V4's compressed attention is cached the same way (one latent, no head axis, every rank),
so it is judged here too, with its own cell (``kv.compressed_kv_bytes``), not by TP201.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks.base import Alternative, Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula, count
from tpcheck.record import replace

GQA_REF_HEADS = 8
# Why DeepSeek-V4's cache is whole on every rank, and where both engines run its attention data
# parallel (the seats with DP-attention are evaluated the same way as for classic MLA).
V4_REPLICATED_SRC = (
    "vllm 0.33.0 models/deepseek_v4/attention.py l.860-883, l.911-925 and "
    "v1/attention/backends/mla/sparse_swa.py l.120-136 (num_kv_heads=1, max_tp_shards=1), "
    "v1/kv_cache_interface.py l.554-556 (ranks past max_tp_shards hold replicas); "
    "sglang 0.5.23 models/deepseek_v4.py l.1024-1037, l.1095-1116 (heads split by attention TP, "
    "the latent projection replicated), model_executor/pool_configurator.py l.1100-1115 "
    "(whole latent per slot)")
V4_DP_SRC = (
    "vllm 0.33.0 models/deepseek_v4/nvidia/model.py _use_sequence_parallel l.571-583 "
    "(DP > 1 with expert parallel); sglang 0.5.23 arg_groups/deepseek_v4_hook.py l.384-404 "
    "(DP attention at attention TP 1)")


def dp_attention(ctx: CheckContext) -> bool:
    d = ctx.deployment
    if d.engine == "sglang":
        return ctx.attn_dp > 1
    # vLLM: attention runs data parallel when DP is combined with expert parallel.
    return ctx.dp > 1 and bool(d.enable_expert_parallel)


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    s = ctx.shape
    assert s is not None
    if not s.latent_cache or ctx.tp <= 1 or dp_attention(ctx) or ctx.capacity.refusals:
        return
    t = ctx.tp
    kvb = ctx.capacity.kv_bytes_per_token
    spent = _gqa_catch_up(ctx)
    kind = "MLA latent" if spent is not None else "DeepSeek-V4 compressed"
    head = f"{kind} KV cache held whole on all {t} TP ranks: {t}× the cache per sequence"
    if spent is None:
        notes = [_v4_head(ctx, kvb)]
    else:
        m = s.mla
        assert m is not None
        notes = [
            f"{s.name or 'this model'} caches one MLA latent of {m.latent_dim} elements per "
            f"token per layer, and under plain TP every one of the {t} ranks holds all of it "
            f"({int(kvb.result):,} B per token per GPU at any t)",
            f"a GQA-8 cache of the same depth would be divided by t and overtake MLA's "
            f"per-token advantage at t ≈ {spent.result:.1f}"]
    extra = () if spent is None else (spent,)
    flag = (
        "--enable-dp-attention --dp "
        if ctx.deployment.engine == "sglang" and ctx.release.dp_attention_by_dp_flag
        else "--attn-dp-size "
    )
    fix = (
        f"run attention data parallel over the same GPUs: {flag}{t}"
        if ctx.deployment.engine == "sglang"
        else f"use --data-parallel-size {t} --tensor-parallel-size 1 --enable-expert-parallel "
        "(DP attention, experts shared)"
    )
    now = ctx.capacity
    if now.seats is None or now.fits is False:
        # No GPU, or no pool at all (TP205/TP204 say why): seats and gains would be fiction.
        if now.fits is False:
            fix += f" — once the weights fit (at t={t} they leave no KV pool: {now.fit_reason()})"
        yield ctx.finding(rule, head, notes=tuple(notes), formulas=(kvb, *extra), fix=fix,
                          related=ctx.model_related())
        return
    seats_now = int(now.seats.result)
    # With DP-attention each rank serves its own requests, so system-wide seats are attn_dp times
    # one rank's; the attention weights are then replicated, which shrinks that rank's pool.
    if ctx.deployment.engine == "sglang":
        alt = ctx.capacity_at(t, attn_dp=t)
    else:  # vLLM: t DP ranks of TP 1 with the experts spread over them (EP)
        alt = ctx.capacity_at(1, dp=t, expert_parallel=True)
    notes.append(f"seats now: {count(seats_now, 'sequence')} of {ctx.context[0]:,} tokens")
    starts = alt.fits is not False and alt.seats is not None
    per_rank = int(alt.seats.result) if alt.seats is not None and starts else 0
    with_dp = per_rank * t
    gain = Formula(
        "seats_with_dp_attention",
        "seats_rank(attn_dp = t)·t",
        {"seats_rank": per_rank, "t": t},
        with_dp,
        "sequences",
        V4_DP_SRC if s.compressed is not None
        else "sglang 0.5.23 pool_configurator (MLA cell per attention-DP rank)",
    )
    if not starts or with_dp <= seats_now:
        # The attention weights, whole on every rank, leave no pool or less than they free: a
        # layout that seats fewer is no fix. Pipeline stages divide the cache by layer instead.
        notes.append(
            f"DP-attention over the same {t} GPUs does not start ({alt.fit_reason()}: "
            "the attention weights are whole on every rank)" if not starts else
            f"with DP-attention over the same {t} GPUs only {with_dp} (the attention "
            "weights, whole on every rank, take more pool than the replicas free)")
        yield from _pipeline_instead(ctx, rule, head, tuple(notes), seats_now,
                                     (kvb, *((gain,) if starts else ()), *extra))
        return
    yield ctx.finding(
        rule,
        head,
        notes=tuple(notes),
        alternatives=(Alternative(
            f"DP-attention over {t} GPUs",
            f"DP-attention over the same {t} GPUs seats {with_dp} "
            f"({with_dp / max(seats_now, 1):.1f}×, attention weights then replicated per rank)",
            (("seats", with_dp), ("gain", round(with_dp / max(seats_now, 1), 2)))),),
        formulas=(kvb, gain, *extra),
        fix=fix,
        related=ctx.model_related(),
    )


def _gqa_catch_up(ctx: CheckContext) -> Formula | None:
    """The t past which a GQA-8 cache of the same depth, divided by t, costs less per token
    than MLA's latent. None for DeepSeek-V4: its cache is not one latent per token but one per
    r tokens plus a 128-token window, so its per-token bytes depend on c and are no width to
    set against 8 heads' (at c = 65,536 V4-Flash's 3,899 B over 43 layers against 8·(512 + 512)
    bf16 elements per layer, the catch-up t would be ≈ 181: no TP group reaches it)."""
    s = ctx.shape
    assert s is not None
    m = s.mla
    if m is None or s.compressed is not None:
        return None
    dk = m.qk_nope_head_dim + m.qk_rope_head_dim
    return Formula(
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


def _v4_head(ctx: CheckContext, kvb: Formula) -> str:
    """DeepSeek-V4's cell in words: what each rank keeps, from the shape and the cell formula."""
    s = ctx.shape
    assert s is not None and s.compressed is not None
    comp = s.compressed
    ratios = sorted({r for r in comp.ratios if r > 1})
    n_comp = sum(1 for r in comp.ratios if r > 1)
    return (
        f"{s.name or 'this model'} caches DeepSeek-V4's compressed attention as one MLA latent "
        f"({kvb.values['s']} B, {kvb.values['kv_cache_dtype']}) per r tokens on {n_comp} of its "
        f"{len(comp.ratios)} layers (r = {', '.join(map(str, ratios))}), indexer keys on the "
        f"{comp.indexed_layers} r = 4 layers and a {comp.window}-token window on every layer; "
        f"under plain TP every one of the {ctx.tp} ranks holds all of it "
        f"({kvb.result:,.0f} B per token per GPU at any t)"
    )


def _pipeline_instead(ctx: CheckContext, rule: Rule, msg: str, notes: tuple[str, ...],
                      seats_now: int, formulas: tuple[Formula, ...]) -> Iterator[Finding]:
    """DP-attention does not pay on these GPUs: quote TP 1 × PP t over the same GPUs, whose
    stages hold only their own layers' cache (both engines cut MLA's and V4's cache per stage:
    vllm 0.33.0 distributed/utils.py get_pp_indices, sglang 0.5.23 pool_configurator.py
    stage_compress_ratios), when it starts and seats more."""
    t, pp = ctx.tp, ctx.pp
    stages = ctx.capacity_at(1, pp=pp * t)
    if (stages.fits is False or stages.seats is None or stages.refusals
            or int(stages.seats.result) <= seats_now):
        yield ctx.finding(rule, msg, notes=notes, formulas=formulas,
                          fix="DP-attention needs room for the whole attention weights on every "
                          "rank: serve on GPUs with more memory, or on more of them, with "
                          "DP-attention",
                          related=ctx.model_related())
        return
    n = int(stages.seats.result)
    flag = "--tp-size" if ctx.deployment.engine == "sglang" else "--tensor-parallel-size"
    pflag = "--pp-size" if ctx.deployment.engine == "sglang" else "--pipeline-parallel-size"
    yield ctx.finding(
        rule,
        msg,
        notes=notes,
        alternatives=(Alternative(
            f"TP 1 × PP {pp * t}",
            f"TP 1 × PP {pp * t} over the same GPUs caches each layer on one stage: {n} seats",
            (("seats", n),)),),
        formulas=(*formulas, replace(stages.seats, name="seats_pp")),
        fix=f"use {flag} 1 {pflag} {pp * t}: the same {t * pp} GPUs, each stage caching only "
        "its own layers",
        related=ctx.model_related(),
    )
