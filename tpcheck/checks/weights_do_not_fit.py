"""TP205 weights-do-not-fit: one GPU's share of the weights exceeds what the engine may use."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.formula import Formula, fmt_bytes

CODE = "TP205"
NAME = "weights-do-not-fit"
SEVERITY = Severity.ERROR
NEEDS_SHAPE = True
SUMMARY = "Weights per GPU exceed M·u: the engine runs out of memory loading them."


def check(ctx: CheckContext) -> Iterator[Finding]:
    ev = ctx.evaluation
    if ev.refusals or ev.memory is None or ev.utilization is None:
        return
    m, u, w = ev.memory.result, ev.utilization.result, ev.weights.result
    budget = Formula("budget_bytes", "M·u", {"M": m, "u": u}, m * u, "B", ev.memory.source)
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
            and ctx.evaluate_at(t).weights.result <= budget.result
            and not ctx.evaluate_at(t).refusals
        ),
        None,
    )
    gpu = ctx.gpu.key if ctx.gpu else "the given memory"
    yield ctx.finding(
        rule,
        f"each GPU must hold {fmt_bytes(w)} of weights at t={ctx.tp}, p={ctx.pp}, but {gpu} gives "
        f"the engine {fmt_bytes(budget.result)} (M·u = {fmt_bytes(m)}·{u:g}): "
        + ("loading fails with CUDA out of memory before any KV cache exists" if w > m else
           "the weights load, then vLLM refuses: \"No available memory for the cache blocks\""),
        formulas=(ev.weights, budget),
        fix=(
            f"use --tensor-parallel-size {need_t}"
            if need_t
            else "add pipeline stages or a quantized checkpoint"
        ),
        related=ctx.model_related(),
    )
