"""TP201 kv-head-cliff: t > h_kv, so more GPUs stop dividing the KV cache.

Past t = h_kv every rank keeps max(1, floor(h_kv/t)) = 1 KV head: the cache is replicated t/h_kv
times and per-GPU KV bytes per token stop shrinking; only the weight term keeps moving.
MLA and DeepSeek-V4's compressed attention (h_kv = 1, one latent held whole by every rank) are
TP202's: their fix is DP-attention, not TP h_kv = 1.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks._fixes import one_preferred, tp_edit
from tpcheck.checks._nodes import pod_over_node, step_nodes
from tpcheck.checks.base import Alternative, Edit, Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula, fmt_bytes
from tpcheck.physics import step
from tpcheck.physics.plan import Evaluation
from tpcheck.record import replace


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    s = ctx.shape
    assert s is not None
    t, hkv = ctx.tp, s.kv_heads
    if s.latent_cache or hkv <= 0 or t <= hkv or ctx.capacity.refusals:
        return
    now = ctx.capacity
    rep = now.kv_replicas
    kvb = now.kv_bytes_per_token
    edits = _edits(ctx, hkv)
    why = (
        f"t={t} > h_kv={hkv}: each GPU keeps max(1, floor({hkv}/{t})) = 1 KV head and the "
        f"cache is replicated {rep.result}× — KV bytes per token per GPU stay "
        f"{int(kvb.result):,} B, the same as at t={hkv}"
    )
    head = f"TP {t} > {hkv} KV heads"
    fix = (
        f"use --tensor-parallel-size {hkv} and run {t // hkv} replicas (data parallel), or "
        "keep one replica of TP {hkv} with an fp8 KV cache"
    ).replace("{hkv}", str(hkv))
    if now.seats is None or now.fits is False:
        none = ("no GPU known: pass --gpu for seats" if now.seats is None else
                f"no seats quoted: at t={t} the weights leave no KV pool — {now.fit_reason()}")
        yield ctx.finding(
            rule,
            f"{head}: the KV cache is replicated {rep.result}×, not divided",
            notes=(why, none),
            formulas=(rep, kvb),
            fix=fix,
            edits=edits,
            related=ctx.model_related(),
        )
        return
    at = ctx.capacity_at(hkv)
    fp8 = ctx.capacity_at(hkv, kv_cache_dtype="fp8")
    assert at.seats is not None and fp8.seats is not None
    seats_t, seats_h = int(now.seats.result), int(at.seats.result)
    replicas = t // hkv
    dp_seats = replicas * seats_h
    fp8_seats = replicas * int(fp8.seats.result)
    gain = Formula(
        "capacity_gain",
        "seats(t) / seats(h_kv)",
        {"seats(t)": seats_t, "seats(h_kv)": seats_h, "t": t, "h_kv": hkv},
        seats_t / seats_h if seats_h else float("inf"),
        "x",
        "seeds/tp-engines-chapter.txt (the TP=8→16 capacity cliff)",
    )
    gpu = ctx.gpu.key if ctx.gpu else "the given memory"
    if seats_h == 0:
        # t = h_kv does not hold even one sequence here (often: its weights do not fit), so DP
        # replicas of TP h_kv are no alternative. Pipeline stages keep the cache divided by h_kv
        # and split the weights: TP h_kv × PP t/h_kv over the same GPUs.
        pp_alt = ctx.capacity_at(hkv, pp=ctx.pp * replicas)
        pp_seats = int(pp_alt.seats.result) if pp_alt.seats is not None else 0
        alt_fix = (f"use --tensor-parallel-size {hkv} --pipeline-parallel-size "
                   f"{ctx.pp * replicas}: the same {t * ctx.pp} GPUs, the cache divided by h_kv")
        pp_layout = f"TP {hkv} × PP {ctx.pp * replicas}"
        yield ctx.finding(
            rule,
            f"{head}: {seats_t} seats; TP {hkv} alone does not fit, the extra GPUs buy weight "
            "room",
            notes=(why, f"on {gpu} t={hkv} alone does not fit ({fmt_bytes(at.weights.result)} "
                   f"of weights per GPU, no seat), so here the extra GPUs buy weight room, not "
                   f"KV capacity: {seats_t} seats at t={t}"),
            alternatives=(Alternative(
                pp_layout,
                f"{pp_layout} over the same GPUs keeps the cache divided: "
                + (f"{pp_seats} seats" if pp_alt.fits is not False else
                   f"but does not start either ({pp_alt.fit_reason()})"),
                (("seats", pp_seats if pp_alt.fits is not False else 0),)),),
            assumptions=(ctx.context_said(),),
            formulas=(kvb, rep, replace(at.weights, name="weights_at_h_kv")),
            fix=alt_fix, related=ctx.model_related(),
        )
        return

    def x(n: int) -> str:
        return f"{n / seats_t:.2f}×" if seats_t else "∞×"

    ratio = f"{gain.result:.2f}×" if seats_h else "n/a (0 seats at h_kv)"
    dp_layout = f"{replicas} replicas of TP {hkv}"
    alts = [
        Alternative(dp_layout, f"the same {t} GPUs as {dp_layout} seat {dp_seats} "
                    f"({x(dp_seats)})", (("seats", dp_seats),)),
        Alternative(f"{dp_layout} with an fp8 KV cache", f"{dp_layout} with an fp8 KV cache "
                    f"seat {fp8_seats} ({x(fp8_seats)})", (("seats", fp8_seats),)),
    ]
    notes = [why, f"on {gpu}: {seats_t} seats at t={t} vs {seats_h} at t={hkv} — {ratio} the "
             f"sequences for {t / hkv:g}× the GPUs"]
    speed = _speed(ctx, now, at, seats_t, seats_h, replicas)
    if speed is not None:
        across = speed.terms[1].terms[0].link  # the network t's all-reduces cross, if any
        alts.append(Alternative(
            dp_layout, f"the {replicas} replicas decode ≈{speed.result:.2f}× the tokens/s of "
            f"t={t}, each at the batch it admits ({step.basis(speed.terms[0].terms[0])})",
            (("decode_speed_gain", round(speed.result, 2)),)))
        if across:
            node = pod_over_node(ctx)  # one voice with TP402 about what a node holds
            notes.append(f"t={t} spans nodes, its all-reduces run on {across}" if node is None
                         else f"no node of the type the pod selects holds its "
                         f"{ctx.deployment.gpus_requested} GPUs ({node.gpus} each: TP402); "
                         f"split over nodes, t={t}'s all-reduces would run on {across}")
    yield ctx.finding(
        rule,
        f"{head}: {seats_t} seats vs {seats_h} at TP {hkv} ({ratio} for {t / hkv:g}× the GPUs)",
        notes=tuple(notes),
        alternatives=tuple(alts),
        assumptions=(ctx.context_said(),),
        formulas=(gain, kvb, rep, replace(at.seats, name="seats_at_h_kv"))
        + (() if speed is None else (speed,)),
        fix=fix,
        edits=edits,
        related=ctx.model_related(),
    )


def _speed(ctx: CheckContext, now: Evaluation, at: Evaluation, seats_t: int, seats_h: int,
           replicas: int) -> Formula | None:
    """Decode tokens/s of the DP alternative over the layout as written, each at the batch it
    admits (min of seats and max-num-seqs), from the calibrated step (floor if uncalibrated)."""
    seqs = now.max_num_seqs
    if seqs is None:
        return None
    b_t, b_h = min(seats_t, int(seqs.result)), min(seats_h, int(seqs.result))
    if b_t <= 0 or b_h <= 0:
        return None
    nodes = step_nodes(ctx)
    ev_t = ctx.evaluate_at(ctx.tp, batch=b_t, **nodes)
    ev_h = ctx.evaluate_at(at.tp, batch=b_h, **nodes)
    if ev_t.step is None or ev_h.step is None:
        return None
    mine = step.tokens_per_second(b_t, ev_t.step)
    alt = step.tokens_per_second(b_h, ev_h.step, replicas)
    return Formula(
        "decode_speed_gain",
        "tokens/s(replicas × TP h_kv) / tokens/s(t)",
        {"tokens/s(dp)": alt.result, "tokens/s(t)": mine.result, "batch(h_kv)": b_h,
         "batch(t)": b_t, "replicas": replicas},
        alt.result / mine.result if mine.result else float("inf"),
        "x",
        ev_h.step.source,
        (alt, mine),
    )


def _edits(ctx: CheckContext, hkv: int) -> tuple[Edit, ...]:
    """TP h_kv alone leaves t/h_kv of every t GPUs idle (TP401): where the manifest requests
    them, the preferred fix also adds the data-parallel replicas that use them (vLLM
    ``--data-parallel-size``, SGLang ``--dp-size``), in one edit; where no replicas can be added
    (the file sets a DP already, or t is not a multiple of h_kv), TP h_kv with the GPU request
    rewritten to match, when the request is one number on one pod."""
    d = ctx.deployment
    alone = tp_edit(ctx, hkv, f"Set tensor parallel size to h_kv = {hkv}")
    if alone is None:
        return ()
    if ctx.uses_all_gpus(hkv) or ctx.tp % hkv or "data_parallel_size" in d.spans:
        return (alone,)
    dp = ctx.dp_replicas * (ctx.tp // hkv)
    if not ctx.uses_all_gpus(hkv, dp):
        return (alone,)
    flag = "--dp-size" if d.engine == "sglang" else "--data-parallel-size"
    both = tp_edit(ctx, hkv, f"Set tensor parallel size to h_kv = {hkv} with {flag} {dp}",
                   dp=dp)
    assert both is not None
    return one_preferred([both, alone])
