"""TP205 weights-do-not-fit: one GPU's share of the weights exceeds what the engine may use."""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks.base import Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import fmt_bytes

SIZES = (1, 2, 4, 8, 16, 32, 64)
MAX_PP = 8


def _starts(ctx: CheckContext, t: int, p: int) -> bool:
    return ctx.starts_at(t, pp=p)  # starting needs no decode step, mostly not even the pool


def more_stages(ctx: CheckContext) -> int | None:
    """The fewest pipeline stages that start at the written t (TP inside a node, PP across)."""
    return next((p for p in range(ctx.pp + 1, MAX_PP + 1) if _starts(ctx, ctx.tp, p)), None)


def wider_tp(ctx: CheckContext) -> int | None:
    """The smallest larger TP size (powers of two) that starts at the written p."""
    return next((t for t in SIZES if t > ctx.tp and _starts(ctx, t, ctx.pp)), None)


def _what_fits(ctx: CheckContext) -> str:
    """Say what would start instead: the smallest TP×PP, or fp8 weights on the same GPUs."""
    d = ctx.deployment
    sglang = d.engine == "sglang"
    parts: list[str] = []
    tp_flag = "--tp-size" if sglang else "--tensor-parallel-size"
    pp_flag = "--pp-size" if sglang else "--pipeline-parallel-size"
    p = more_stages(ctx)
    if p is not None:
        parts.append(f"{pp_flag} {p} (TP {ctx.tp} × PP {p} = {ctx.tp * p} GPUs, the fewest "
                     f"stages that leave a KV pool)")
    t = wider_tp(ctx)
    if t is not None:
        parts.append(f"{tp_flag} {t} ({t * ctx.pp} GPUs)")
    q = ctx.shape.quant if ctx.shape is not None else None
    # the pool's verdict and the weights alone: neither the fp8 pool nor its seats is said
    if q is None and not d.quantization and ctx.fits_at(ctx.tp, quantization="fp8"):
        w = ctx.weights_at(ctx.tp, quantization="fp8").result
        parts.append(f"keep t={ctx.tp} with fp8 weights (--quantization fp8: "
                     f"{fmt_bytes(w)} per GPU)")
    return "use " + ", or ".join(parts) if parts else (
        "no layout up to 64-way TP × 8 stages starts on this GPU: use a quantized checkpoint "
        "or a GPU with more memory")


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    if ctx.verdict_only:  # asked under another release (fires_with): the verdict alone
        over = ctx.weights_over_budget()
        if over is not None:
            if over:
                ctx.verdict_holds()
            return
    ev = ctx.capacity  # the step is not needed: no decode step priced
    budget = ev.budget
    if ev.refusals or budget is None or ev.memory is None or ev.utilization is None:
        return
    m, u, w = ev.memory.result, ev.utilization.result, ev.weights.result
    if w <= budget.result:
        return
    ctx.verdict_holds()
    s = ctx.shape
    assert s is not None
    gpu = ctx.gpu.key if ctx.gpu else "the given memory"
    if budget.expression == "T·mfs":
        t_free = budget.result / u if u else 0.0
        given = (f"{fmt_bytes(budget.result)} (T·mfs = {fmt_bytes(t_free)}·{u:g}, T being "
                 f"{fmt_bytes(m)} less the CUDA context and communicators)")
        refusal = ("the weights load, then SGLang refuses: there is no room left for the KV "
                   "cache under --mem-fraction-static")
    else:
        given = f"{fmt_bytes(budget.result)} (M·u = {fmt_bytes(m)}·{u:g})"
        refusal = ("the weights load, then vLLM refuses: \"No available memory for the cache "
                   "blocks\"")
    oom = w > m
    yield ctx.finding(
        rule,
        f"{fmt_bytes(w)} of weights per GPU > the {fmt_bytes(budget.result)} {gpu} gives the "
        "engine: " + ("out of memory" if oom else "no KV room"),
        notes=(f"each GPU must hold {fmt_bytes(w)} of weights at t={ctx.tp}, p={ctx.pp}; {gpu} "
               f"gives the engine {given}",
               "loading fails with CUDA out of memory before any KV cache exists" if oom
               else refusal),
        formulas=(ev.weights, budget),
        fix=_what_fits(ctx),
        related=ctx.model_related(),
    )
