"""TP205 weights-do-not-fit: one GPU's share of the weights exceeds what the engine may use."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.formula import Formula, fmt_bytes
from tpcheck.physics.plan import Evaluation

CODE = "TP205"
NAME = "weights-do-not-fit"
SEVERITY = Severity.ERROR
NEEDS_SHAPE = True
SUMMARY = "Weights per GPU exceed M·u: the engine runs out of memory loading them."


def budget_of(ev: Evaluation) -> Formula | None:
    """What the weights must fit: vLLM's M·u; SGLang's T·mfs (T = free memory after the CUDA
    context and communicators, which its pool formula names)."""
    if ev.memory is None or ev.utilization is None:
        return None
    m, u = ev.memory.result, ev.utilization.result
    t_free = ev.pool.values.get("T") if ev.pool is not None else None
    if ev.pool is not None and isinstance(t_free, (int, float)):
        return Formula("budget_bytes", "T·mfs", {"T": t_free, "mfs": u}, t_free * u, "B",
                       ev.pool.source, ev.pool.terms)
    return Formula("budget_bytes", "M·u", {"M": m, "u": u}, m * u, "B", ev.memory.source)


def check(ctx: CheckContext) -> Iterator[Finding]:
    ev = ctx.evaluation
    budget = budget_of(ev)
    if ev.refusals or budget is None or ev.memory is None or ev.utilization is None:
        return
    m, u, w = ev.memory.result, ev.utilization.result, ev.weights.result
    if w <= budget.result:
        return
    rule = sys.modules[__name__]
    s = ctx.shape
    assert s is not None
    need_t = next(
        (
            t
            for t in (2, 4, 8, 16, 32, 64)
            if t > ctx.tp
            and ctx.evaluate_at(t).weights.result
            <= (budget_of(ctx.evaluate_at(t)) or budget).result
            and not ctx.evaluate_at(t).refusals
        ),
        None,
    )
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
    yield ctx.finding(
        rule,
        f"each GPU must hold {fmt_bytes(w)} of weights at t={ctx.tp}, p={ctx.pp}, but {gpu} gives "
        f"the engine {given}: "
        + ("loading fails with CUDA out of memory before any KV cache exists" if w > m else
           refusal),
        formulas=(ev.weights, budget),
        fix=(
            f"use --tensor-parallel-size {need_t}"
            if need_t
            else "add pipeline stages or a quantized checkpoint"
        ),
        related=ctx.model_related(),
    )
