"""TP301 tp-crosses-nodes: a TP group larger than a node, so its all-reduces cross the network.

What it does: works out how many GPUs one node (pod) holds and where the engine puts each rank
(TP innermost, then PP, then DP — vLLM's and SGLang's rank order), and fires when some TP group
has ranks on two nodes. It says which TP ranks sit on which node, the network bandwidth the
all-reduces then run at, what they cost at this t, and the layout that keeps TP inside a node.

Where GPUs per node come from, first match wins:
1. ``Deployment.gpus_per_node`` when a reader sets it;
2. the per-pod GPU limit (``nvidia.com/gpu``) when the launch spans pods — LeaderWorkerSet
   ``size`` / Dynamo ``nodeCount`` / ``--nnodes`` > 1, or t·p·dp larger than one pod's GPUs
   (a Ray worker group): a pod runs on one node, so its GPUs are one node's share;
3. t·p·dp / ``--nnodes`` (both engines spread their ranks evenly over the nodes);
4. the instance type in the manifest (``node.kubernetes.io/instance-type: p5.48xlarge``).

Rack-scale NVLink (GB200 NVL72): the NVLink domain, not the tray, is the boundary.

FAIL: ``--tensor-parallel-size 16`` in a LeaderWorkerSet of ``size: 2`` pods of 8 GPUs.
PASS: ``--tensor-parallel-size 8 --pipeline-parallel-size 2`` in the same LeaderWorkerSet.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._links import (
    LinkUse,
    alpha_override,
    ceil_div,
    describe,
    link_costs,
    link_use,
)
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.checks.needs import LAYOUT
from tpcheck.formula import Formula
from tpcheck.hardware.links import Link, find_link
from tpcheck.hardware.machines import Machine, find_machine
from tpcheck.record import record
from tpcheck.sources.base import Span

CODE = "TP301"
NAME = "tp-crosses-nodes"
SEVERITY = Severity.WARNING
NEEDS_SHAPE = False  # the layout is a fact without the model; the cost figures need it
NEEDS_KNOWN_TP = True
NEEDS_GPU_PHYSICS = True
NEEDS_VALID_LAYOUT = True
USES_MEMORY_MODEL = False
REFUSAL_VERDICT = False
DEPENDS_ON: tuple[str, ...] = (*LAYOUT, "nnodes")
SUMMARY = "TP group larger than the GPUs per node: InfiniBand/Ethernet between ranks."

SRC_ORDER = ("vllm 0.33.0 distributed/parallel_state.py initialize_model_parallel "
             "(ranks: TP innermost, then PP, then DP); sglang 0.5.23 the same")


@record
class NodeSize:
    """GPUs per node (or per NVLink domain), where that came from, and where it is written."""

    per_node: int
    formula: Formula
    label: str  # for the message: "8 GPUs per pod (nvidia.com/gpu), 2 pods"
    span: Span | None


def machine_of(ctx: CheckContext) -> Machine | None:
    p = ctx.deployment.gpu_product
    return find_machine(p) if p else None


def node_size(ctx: CheckContext) -> NodeSize | None:
    d = ctx.deployment
    world = ctx.tp * ctx.pp * ctx.dp_replicas
    pods = max(d.group_size or 1, d.nnodes or 1)
    if d.gpus_per_node:
        f = Formula("gpus_per_node", "gpus_per_node", {"gpus_per_node": d.gpus_per_node},
                    d.gpus_per_node, "GPUs", "manifest")
        return NodeSize(d.gpus_per_node, f, f"{d.gpus_per_node} GPUs per node",
                        d.spans.get("gpus_per_node"))
    # More ranks than one pod holds spans nodes only when something gathers several pods: a Ray
    # cluster (or the Ray executor joining one). Otherwise the pod cannot start at all — TP401.
    ray = bool(d.ray_cluster) or d.distributed_executor_backend == "ray"
    if d.gpus_requested and d.gpus_requested > 0 and (
            pods > 1 or (ray and world > d.gpus_requested)):
        g = d.gpus_requested
        how = ("LeaderWorkerSet/group size" if d.group_size and d.group_size > 1 else
               "--nnodes" if d.nnodes and d.nnodes > 1 else
               f"t·p·dp = {world} ranks over a Ray cluster's pods")
        f = Formula("gpus_per_node", "GPUs per pod (a pod runs on one node)",
                    {"gpus_per_pod": g, "pods": pods if pods > 1 else None}, g, "GPUs",
                    "manifest resources.limits nvidia.com/gpu; " + how)
        label = f"{g} GPU{'s' if g != 1 else ''} per pod" + (
            f", {pods} pods ({how})" if pods > 1 else f" ({how})")
        return NodeSize(g, f, label, d.spans.get("gpus_requested"))
    if d.nnodes and d.nnodes > 1:
        per = ceil_div(world, d.nnodes)
        f = Formula("gpus_per_node", "ceil(t·p·dp / nnodes)",
                    {"t": ctx.tp, "p": ctx.pp, "dp": ctx.dp_replicas, "nnodes": d.nnodes}, per,
                    "GPUs", "--nnodes: the engine spreads its ranks evenly over the nodes")
        return NodeSize(per, f, f"{per} GPUs per node (t·p·dp = {world} over --nnodes "
                        f"{d.nnodes})", d.spans.get("nnodes"))
    m = machine_of(ctx)
    if m is not None:
        f = Formula("gpus_per_node", "GPUs per instance", {"instance": m.key}, m.gpus, "GPUs",
                    m.source)
        return NodeSize(m.gpus, f, f"{m.gpus} GPUs per {m.key}", d.spans.get("gpu_product"))
    return None


def nvlink_domain(ctx: CheckContext) -> int:
    """GPUs one NVLink fabric joins across trays (GB200 NVL72: 72); 0 when it ends at the node."""
    m = machine_of(ctx)
    if m is not None and m.nvlink_domain:
        return m.nvlink_domain
    g = ctx.gpu
    if g is not None and g.link.startswith("nvlink"):
        return g.nvlink_domain
    return 0


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


def network(ctx: CheckContext) -> LinkUse:
    """Network per GPU: the instance type's when known, else InfiniBand NDR (assumed)."""
    alpha = alpha_override(ctx)
    m = machine_of(ctx)
    ndr = find_link("ib-ndr")
    assert ndr is not None
    if m is not None:
        lk = Link(f"{m.key}-network", f"{m.key} network ({m.network_gbps:,.0f} Gb/s for "
                  f"{m.gpus} GPUs)", m.network_per_gpu, ndr.alpha, True, m.source)
        bw = Formula("B", "network_Gbps·10⁹/8 / GPUs per node",
                     {"network_Gbps": m.network_gbps, "gpus": m.gpus}, m.network_per_gpu, "B/s",
                     f"{m.source} ({m.key})")
        return link_use(lk, bandwidth=bw, alpha=alpha)
    return link_use(ndr, assumed=True, alpha=alpha,
                    why="no instance type in the manifest; InfiniBand NDR 400 Gb/s per GPU "
                    "(one ConnectX-7 port per GPU, as on DGX H100/B200)")


def _fix(ctx: CheckContext, per_node: int) -> str:
    """TP = GPUs per node (or the largest legal size below it), PP = the rest; or DP."""
    t, p = ctx.tp, ctx.pp
    world = t * p
    cand = per_node
    while cand > 1:
        legal = ctx.shape is None or not ctx.evaluate_at(cand).refusals
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


def check(ctx: CheckContext) -> Iterator[Finding]:
    t = ctx.tp
    if ctx.shape is not None and ctx.evaluation.refusals:
        return
    groups = ctx.groups
    width = groups.allreduce
    if width <= 1:
        return
    size = node_size(ctx)
    if size is None:
        return
    world = t * ctx.pp * ctx.dp_replicas
    split = split_groups(width, max(world // width, 1), size.per_node) if width > 1 else []
    bad = next((g for g in split if len(g) > 1), None)
    domain = nvlink_domain(ctx)
    if bad is not None and domain > size.per_node and all(
            len(g) == 1 for g in split_groups(width, max(world // width, 1), domain)):
        return  # rack-scale NVLink (GB200 NVL72): the NVLink domain is the boundary
    if bad is None:
        return  # the experts' all-to-all across nodes is TP303's (info)
    rule = sys.modules[__name__]
    n_groups = max(world // width, 1)
    nodes = len({n for g in split for n, _, _ in g})
    where = "; ".join(
        f"TP rank{'s' if a != b else ''} {a}{f'–{b}' if a != b else ''} on node {n}"
        for n, a, b in bad)
    layout = Formula("nodes", "ceil(t·p·dp / gpus_per_node)",
                     {"t": t, "p": ctx.pp, "dp": ctx.dp_replicas, "gpus_per_node": size.per_node},
                     nodes, "nodes", SRC_ORDER, (size.formula,))
    use = network(ctx)
    full = width == t and groups.allreduce_what == "TP group"
    costs = link_costs(ctx, use) if full else ()
    n_ar = f"{2 * ctx.shape.layers + 1} " if ctx.shape and full else ""
    assumed = " (assumed: no instance type in the manifest)" if use.assumed else ""
    if costs:
        tail = "; " + describe(costs)
    elif not full:
        tail = ("; the cost figures are for a t-wide all-reduce in every layer, which this "
                "layout does not run, so none are given")
    elif ctx.shape is None:
        tail = "; the model's config.json was not found, so no cost figures"
    else:
        tail = "; give --gpu for the cost figures"
    n_bad = sum(len(g) > 1 for g in split)
    what = groups.allreduce_what
    grp = ("the TP group" if full else "it") if n_groups == 1 else (
        f"{n_bad} of {n_groups} TP groups" if full else f"{n_bad} of {n_groups} such groups")
    related = (((size.span, size.label),)
               if size.span is not None and size.span != ctx.tp_span else ())
    head = (f"t={t} does not fit one node" if full else
            f"the {what} is {width} ranks wide and does not fit one node")
    yield ctx.finding(
        rule,
        f"{head} ({size.label}): {grp} spans nodes — {where}. Its "
        f"{n_ar}all-reduces per forward pass cross the network instead of NVLink: "
        f"{use.label}{assumed}" + tail,
        formulas=(layout, *(() if full else (groups.formula,)), use.bandwidth, use.alpha,
                  *costs),
        fix=_group_fix(ctx, what) or _fix(ctx, size.per_node),
        related=related,
    )


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
