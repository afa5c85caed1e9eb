"""TP104 vocab-padding: vLLM refuses a padded vocabulary t does not divide; padding costs memory."""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks._refusal import refusal_findings
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula, fmt_bytes
from tpcheck.physics.kv import activation_dtype, dtype_bytes
from tpcheck.physics.legality import vocab_padding


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    found = list(refusal_findings(ctx, rule))
    yield from found
    if found or ctx.shape is None or ctx.tp <= 1:
        return
    s = ctx.shape
    vp = vocab_padding(s, ctx.tp, ctx.deployment.engine)
    rows = int(vp.result) - s.vocab
    if rows <= 0:
        return
    b = dtype_bytes(activation_dtype(s.dtype, ctx.deployment.dtype))
    copies = 1 if s.tied_embeddings else 2
    waste = Formula(
        "padding_bytes",
        "(V_pad − V)·d·b·copies",
        {"V_pad": int(vp.result), "V": s.vocab, "d": s.hidden, "b": b, "copies": copies},
        rows * s.hidden * b * copies,
        "B",
        vp.source,
    )
    held = "embedding, which is also the lm_head" if s.tied_embeddings else (
        "embedding and lm_head")
    yield ctx.finding(
        rule,
        f"{rows:,} vocabulary padding rows at t={ctx.tp} hold {fmt_bytes(waste.result)}: "
        "harmless",
        notes=(f"the vocabulary of {s.vocab:,} rows is padded to {int(vp.result):,} for "
               f"t={ctx.tp}; the padding rows are in the {held}, across the group; reported for "
               "completeness",),
        severity=Severity.INFO,
        formulas=(vp, waste),
    )
