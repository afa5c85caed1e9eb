"""TP101-TP104's mechanism: the physics returns refusals as facts (the kind of width that does
not divide); each rule's row names the kind it reports, and this turns those into findings."""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks._fixes import one_preferred, tp_edit
from tpcheck.checks.base import Edit, Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.physics.legality import legal_sizes, nearest_legal


def legal_note(ctx: CheckContext) -> tuple[str, int | None, int | None]:
    assert ctx.shape is not None
    kw = {
        "engine": ctx.deployment.engine,
        "dp": ctx.dp,
        "expert_parallel": bool(ctx.deployment.enable_expert_parallel),
        "attn_dp": ctx.attn_dp,
    }
    # The list in the message stops at 64; the nearest sizes are searched a little past t
    # (bounded: a 30-digit TP must not make the search run for hours).
    sizes = legal_sizes(ctx.shape, 64, **kw)
    upto = min(max(64, 2 * ctx.tp), 4096)
    below, above = nearest_legal(ctx.shape, min(ctx.tp, upto), upto, **kw)
    return ", ".join(str(x) for x in sizes), below, above


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    yield from refusal_findings(ctx, rule)


def refusal_findings(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    kind = rule.param("refusal")
    refs = [
        r
        for r in ctx.capacity.refusals
        if r.kind == kind and ctx.deployment.engine in r.engines
    ]
    if not refs:
        return
    sizes, near, edits = _nearest(ctx)
    engine = ctx.deployment.engine
    d = ctx.deployment
    # the reference as written; an expression or a hint-only model (KServe storageUri) has none
    model = d.model or d.unresolved.get("model") or "this model"
    for r in refs:
        msg = (f"{engine} refuses TP {ctx.tp}: {r.formula.expression} = {r.formula.result} "
               f"({r.formula.substituted()})")
        yield ctx.finding(
            rule,
            msg,
            notes=(f'the engine says: "{r.engine_message.rstrip(".")}"',
                   f"Legal sizes for this model ({model}): {sizes}"),
            formulas=(r.formula,),
            fix=f"use tensor parallel size {near}"
            if near
            else "no tensor parallel size up to 64 starts this model with these flags",
            edits=edits,
            related=ctx.model_related(),
        )


def _nearest(ctx: CheckContext) -> tuple[str, str, tuple[Edit, ...]]:
    """(legal sizes, the nearest as the fix says them, their edits), kept on the context: a
    launch refused by several kinds of width (TP101-TP104 each) asks the same, and ranking the
    edits prices the weights at each size (172 launches of a 1,000-file corpus asked 475
    times). The context is one deployment's, so it decides the answer whole."""
    kept: tuple[str, str, tuple[Edit, ...]] | None = ctx.__dict__.get("_refusal_nearest")
    if kept is None:
        sizes, below, above = legal_note(ctx)
        near = [x for x in (below, above) if x is not None]
        kept = ctx.__dict__["_refusal_nearest"] = (
            sizes, " or ".join(str(x) for x in near), _size_edits(ctx, near))
    return kept


def _size_edits(ctx: CheckContext, sizes: list[int]) -> tuple[Edit, ...]:
    """One edit per legal size near t; the preferred one (``--fix`` applies it) is a size whose
    weights fit, then one that needs no new GPU request, then the nearer, then the smaller (no
    GPUs that may not be there). A size that leaves GPUs idle or missing (TP401) and whose
    request cannot follow is offered, never preferred."""
    made = [(x, tp_edit(ctx, x, f"Set tensor parallel size to {x}")) for x in sizes]
    found = [(x, e) for x, e in made if e is not None]

    def rank(item: tuple[int, Edit]) -> tuple[bool, bool, bool, int, int]:
        x, e = item
        fits = ctx.shape is None or ctx.fits_at(x) is not False
        return (not e.preferred, not fits, bool(e.also), abs(x - ctx.tp), x)

    return one_preferred([e for _, e in sorted(found, key=rank)])
