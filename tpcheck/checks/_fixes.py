"""The edits a layout rule offers for a new TP size, where the values are written.

A new size is written where the file writes the TP (``Deployment.written_at``: values.yaml for a
Helm template, the patch for a kustomize overlay, an env default for ``$TP``). A size that
changes the GPU count also changes the GPU request, when the request is one number on one pod
(a LeaderWorkerSet's or a Ray cluster's count spreads over pods: not changed, the edit is not
preferred). At most one edit of a finding is preferred; ``--fix`` applies that one.
"""

from __future__ import annotations

from tpcheck.checks.base import Edit
from tpcheck.checks.context import CheckContext


def request_follows(ctx: CheckContext) -> bool:
    """Whether the GPU request is one number on one pod that a fix may rewrite."""
    d = ctx.deployment
    return (d.written_at("gpus_requested") is not None and ctx.gpus_available is not None
            and not multi_node(ctx) and "gpus_requested" not in d.unresolved)


def multi_node(ctx: CheckContext) -> bool:
    """A launch whose ranks span pods or nodes (LeaderWorkerSet, --nnodes, a Ray cluster)."""
    d = ctx.deployment
    return (d.group_size or 1) > 1 or (d.nnodes or 1) > 1 or bool(d.ray_cluster)


def tp_edit(ctx: CheckContext, tp: int, title: str, *, dp: int | None = None) -> Edit | None:
    """TP ``tp`` (with ``dp`` replicas added, when given) as one edit; preferred only when it
    leaves TP401 nothing to say, the GPU request rewritten to match where that is simple.
    None when the file does not write the TP."""
    d = ctx.deployment
    span = d.written_at("tensor_parallel_size")
    if span is None:
        return None
    add = None
    if dp is not None:
        flag = "--dp-size" if d.engine == "sglang" else "--data-parallel-size"
        add = (flag, str(dp))
    ranks = tp * ctx.pp * (ctx.dp_replicas if dp is None else dp)
    if multi_node(ctx) and (dp is not None or ranks != ctx.tp * ctx.pp * ctx.dp_replicas):
        # the ranks spread over pods or nodes: how many GPUs each has, and how replicas would
        # find each other, is not one number to rewrite
        return Edit(span, str(tp), title, add_option=add, preferred=False)
    if ctx.uses_all_gpus(tp, dp):
        return Edit(span, str(tp), title, add_option=add)
    gspan = d.written_at("gpus_requested")
    if request_follows(ctx) and gspan is not None:
        return Edit(span, str(tp), f"{title}, and request {ranks} GPUs", add_option=add,
                    also=((gspan, str(ranks)),))
    return Edit(span, str(tp), title, add_option=add, preferred=False)


def one_preferred(edits: list[Edit]) -> tuple[Edit, ...]:
    """The edits with only the first preferred one still preferred, that one first."""
    out: list[Edit] = []
    seen = False
    for e in edits:
        if e.preferred and not seen:
            seen = True
            out.insert(0, e)
        elif e.preferred:
            out.append(Edit(e.span, e.new_text, e.title, e.add_option, False, e.also))
        else:
            out.append(e)
    return tuple(out)
