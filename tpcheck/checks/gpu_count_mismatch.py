"""TP401 gpu-count-mismatch: the ranks the engine starts versus the GPUs the manifest requests."""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula, count


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    d = ctx.deployment
    have = ctx.gpus_available
    if have is None or d.gpus_requested is None:
        return  # nothing requested, or the rank count is not known statically
    ray = bool(d.ray_cluster)
    pods = d.group_size or d.nnodes or 1
    ranks = ctx.tp * ctx.pp * ctx.dp_replicas
    f = Formula(
        "ranks",
        "t·p·dp",
        {"t": ctx.tp, "p": ctx.pp, "dp": ctx.dp_replicas},
        ranks,
        "GPUs",
        "vllm 0.33.0 config/parallel.py world_size l.964; sglang dp replicas",
    )
    g = Formula(
        "gpus",
        "gpus_per_pod·pods",
        {"gpus_per_pod": d.gpus_requested, "pods": pods},
        have,
        "GPUs",
        "manifest resources.limits",
    )
    span = d.span_of("gpus_requested", "tensor_parallel_size")
    where = f"{d.gpus_requested} per pod × {pods} pods" if pods > 1 else f"{d.gpus_requested}"
    related = ((ctx.tp_span, f"tensor parallel size {ctx.tp}"),) if span != ctx.tp_span else ()
    if ranks > have and ray:
        return  # a Ray cluster's worker pods bring the other GPUs (TP301 covers the crossing)
    if ranks > have:
        yield ctx.finding(
            rule,
            f"t·p·dp = {ranks} ranks but {count(have, 'GPU')} requested: the engine cannot start",
            notes=(f"the manifest requests {where} GPUs",
                   f'the engine says: "World size ({ranks}) is larger than the number of '
                   f'available GPUs ({have})"'),
            span=span,
            formulas=(f, g),
            related=related,
            fix=f"request {ranks} GPUs, or lower the parallel sizes to fit {have}",
        )
    elif ranks < have:
        yield ctx.finding(
            rule,
            f"t·p·dp = {ranks} ranks but {have} GPUs requested: {count(have - ranks, 'GPU')} sit "
            "idle",
            notes=(f"the manifest requests {where} GPUs",) if pods > 1 else (),
            span=span,
            formulas=(f, g),
            severity=Severity.WARNING,
            related=related,
            fix=f"request {ranks} GPUs, or use them: --tensor-parallel-size / "
            "--data-parallel-size so that t·p·dp equals the GPUs",
        )
