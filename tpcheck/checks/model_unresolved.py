"""TP000 model-unresolved: the model's config.json could not be found or cannot be used."""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks.base import Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.sources.base import PATCH_NOTE

SKIPPED = "rules that need the model's shape were skipped for this deployment"


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    if ctx.shape is not None or ctx.model_problem is None:
        return
    d = ctx.deployment
    if ctx.model_fix is not None:
        # A config was found (or its path given) but cannot be used: finding another one is
        # not the advice; correcting that file or path is.
        unusable = "no such" not in ctx.model_problem
        yield ctx.finding(
            rule,
            "config.json found but not usable" if unusable else "the model's config.json path "
            "does not exist",
            notes=(ctx.model_problem, SKIPPED),
            span=d.span_of("model"),
            fix=ctx.model_fix,
        )
        return
    # a hub id, or a guess from a hint, is what `tpcheck models pull` can fetch and map once
    fetchable = "also tried" in ctx.model_problem or (
        d.model is not None and "offline" in ctx.model_problem)
    pull = ("`tpcheck models pull` on this file, run once online, fetches and maps it for "
            "offline runs" if fetchable and d.path not in ("-", "") else "")
    patch = next((n for n in d.notes if n.startswith(PATCH_NOTE)), "")
    model = d.model if d.model is not None else d.unresolved.get("model")
    head, _, rest = ctx.model_problem.partition("; ")
    if len(head) > 80:
        head = f"no config.json found for {model}" if model else "the model cannot be resolved"
        rest = ctx.model_problem
    yield ctx.finding(
        rule,
        head,
        notes=(rest, SKIPPED, pull, patch),
        span=d.span_of("model"),
        fix="run `tpcheck models pull PATH...` once online (it fetches every model the files "
        "name into .tpcheck/models/ and maps it in [tool.tpcheck.models]), pass --model-config "
        "PATH, or map the name in [tool.tpcheck.models] by hand",
    )
