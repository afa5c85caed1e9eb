"""TP301 tp-crosses-nodes: a TP group larger than a node, so its all-reduces cross the network.

What it does: works out how many GPUs one node (pod) holds and where the engine puts each rank
(TP innermost, then PP, then DP — vLLM's and SGLang's rank order), and fires when some TP group
has ranks on two nodes. It says which TP ranks sit on which node, the network bandwidth the
all-reduces then run at, what they cost at this t, and the layout that keeps TP inside a node.

GPUs per node come from the manifest as ``checks/_nodes.py`` reads them (shared with TP201
and TP303).

Rack-scale NVLink (GB200 NVL72): the NVLink domain, not the tray, is the boundary.

FAIL: ``--tensor-parallel-size 16`` in a LeaderWorkerSet of ``size: 2`` pods of 8 GPUs.
PASS: ``--tensor-parallel-size 8 --pipeline-parallel-size 2`` in the same LeaderWorkerSet.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks._nodes import NodeSize, network, node_size, nvlink_domain
from tpcheck.checks.base import Assumption, Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula
from tpcheck.sources.base import Span

SRC_ORDER = ("vllm 0.33.0 distributed/parallel_state.py initialize_model_parallel "
             "(ranks: TP innermost, then PP, then DP); sglang 0.5.23 the same")


def split_groups(t: int, groups: int, per_node: int) -> list[list[tuple[int, int, int]]]:
    """For each TP group, its (node, first TP rank, last TP rank) runs in rank order."""
    out: list[list[tuple[int, int, int]]] = []
    for g in range(groups):
        runs: list[tuple[int, int, int]] = []
        for r in range(t):
            node = (g * t + r) // per_node
            if runs and runs[-1][0] == node:
                runs[-1] = (node, runs[-1][1], r)
            else:
                runs.append((node, r, r))
        out.append(runs)
    return out


def _fix(ctx: CheckContext, per_node: int) -> str:
    """TP = GPUs per node (or the largest legal size below it), PP = the rest; or DP."""
    t, p = ctx.tp, ctx.pp
    world = t * p
    cand = per_node
    while cand > 1:
        legal = ctx.shape is None or not ctx.capacity_at(cand).refusals
        if legal and world % cand == 0:
            break
        cand -= 1
    pp_new = world // cand
    if ctx.deployment.engine == "sglang":
        flags = f"--tp-size {cand} --pp-size {pp_new}"
    else:
        flags = f"--tensor-parallel-size {cand} --pipeline-parallel-size {pp_new}"
    why = "TP = GPUs per node, PP = nodes" if cand == per_node else (
        f"TP = {cand}, the largest size ≤ {per_node} GPUs per node the model allows")
    return (f"use {flags} ({why}): each TP group stays inside a node and the nodes pass one "
            f"activation per stage boundary; or run {pp_new} data-parallel replicas of TP "
            f"{cand} if the weights fit {cand} GPUs")


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    t = ctx.tp
    if ctx.shape is not None and ctx.capacity.refusals:
        return
    groups = ctx.groups
    width = groups.allreduce
    if width <= 1:
        return
    size = node_size(ctx)
    if size is None:
        return
    world = t * ctx.pp * ctx.dp_replicas
    n_groups = max(world // width, 1)
    split = _spanning(ctx, width, n_groups, size.per_node)
    if split is None:
        return
    bad = next(g for g in split if len(g) > 1)
    nodes = len({n for g in split for n, _, _ in g})
    layout = Formula("nodes", "ceil(t·p·dp / gpus_per_node)",
                     {"t": t, "p": ctx.pp, "dp": ctx.dp_replicas, "gpus_per_node": size.per_node},
                     nodes, "nodes", SRC_ORDER, (size.formula,))
    use = network(ctx)
    full = width == t and groups.allreduce_what == "TP group"
    from tpcheck.checks._links import link_costs  # the cost figures: for a finding

    costs = link_costs(ctx, use) if full else ()
    what = groups.allreduce_what
    grp = _scope(full, n_groups, sum(len(g) > 1 for g in split))
    who = f"t={t}" if full else f"the {what.partition(' (')[0]} of {width} ranks"
    yield ctx.finding(
        rule,
        f"{who} spans {nodes} nodes of {size.per_node} GPUs: its all-reduces cross the network",
        notes=(f"{size.label}: {grp} spans nodes — {_where(bad)}"
               + ("" if full else f"; the wide group is the {what}"),
               f"its {_count(ctx, full=full)}all-reduces per forward pass run on {use.label}"
               + (" (assumed: no instance type in the manifest)" if use.assumed else ""),
               *_cost_notes(ctx, costs, full=full)),
        assumptions=(Assumption("link", f"{use.link.name} between the nodes: no instance "
                                "type in the manifest"),) if use.assumed else (),
        formulas=(layout, *(() if full else (groups.formula,)), use.bandwidth, use.alpha,
                  *costs),
        fix=_group_fix(ctx, what) or _fix(ctx, size.per_node),
        related=_related(ctx, size),
    )


def _count(ctx: CheckContext, *, full: bool) -> str:
    """The all-reduces a forward pass runs (2 per layer and 1 more), said only when the wide
    group is the TP group and the model's layers are known."""
    return f"{2 * ctx.shape.layers + 1} " if ctx.shape and full else ""


def _related(ctx: CheckContext, size: NodeSize) -> tuple[tuple[Span, str], ...]:
    """Where the node size was written, when that is not the TP flag itself."""
    if size.span is not None and size.span != ctx.tp_span:
        return ((size.span, size.label),)
    return ()


def _spanning(ctx: CheckContext, width: int, n_groups: int,
              per_node: int) -> list[list[tuple[int, int, int]]] | None:
    """The all-reduce groups' runs over nodes when one of them spans two nodes; None when all
    stay inside one node, or inside one rack-scale NVLink domain (GB200 NVL72)."""
    split = split_groups(width, n_groups, per_node)
    if not any(len(g) > 1 for g in split):
        return None  # the experts' all-to-all across nodes is TP303's (info)
    domain = nvlink_domain(ctx)
    if domain > per_node and all(len(g) == 1 for g in split_groups(width, n_groups, domain)):
        return None  # rack-scale NVLink (GB200 NVL72): the NVLink domain is the boundary
    return split


def _where(bad: list[tuple[int, int, int]]) -> str:
    """Which TP ranks of the spanning group sit on which node."""
    return "; ".join(
        f"TP rank{'s' if a != b else ''} {a}{f'–{b}' if a != b else ''} on node {n}"
        for n, a, b in bad)


def _scope(full: bool, n_groups: int, n_bad: int) -> str:
    """The subject of the spanning note: the one group, or how many of the groups span."""
    if n_groups == 1:
        return "the TP group" if full else "it"
    return f"{n_bad} of {n_groups} TP groups" if full else f"{n_bad} of {n_groups} such groups"


def _cost_notes(ctx: CheckContext, costs: tuple[Formula, ...], *, full: bool) -> list[str]:
    """The all-reduce cost lines, or why there are none."""
    if costs:
        from tpcheck.checks._links import describe

        return describe(costs)
    if not full:
        return ["the cost figures are for a t-wide all-reduce in every layer, which this "
                "layout does not run, so none are given"]
    if ctx.shape is None:
        return ["the model's config.json was not found, so no cost figures"]
    return ["give --gpu for the cost figures"]


def _group_fix(ctx: CheckContext, what: str) -> str | None:
    """Under DP-attention the wide group is the MoE's or the dense MLPs': narrow that one."""
    if ctx.deployment.engine != "sglang" or ctx.attn_dp <= 1:
        return None
    if what.startswith("MoE"):
        return (f"split the experts instead of their width: --ep-size {ctx.tp} (or "
                "--moe-a2a-backend deepep): the MoE layers then exchange tokens all-to-all "
                "and no all-reduce wider than the attention TP group remains")
    if what.startswith("dense"):
        return ("add --moe-dense-tp-size 1: the few dense MLP layers then run data parallel "
                "like the attention")
    return None
