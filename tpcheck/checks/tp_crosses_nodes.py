"""TP301 tp-crosses-nodes: the TP group is larger than one node, so every all-reduce crosses the network."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._links import describe, link_costs
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.formula import Formula
from tpcheck.hardware.links import find_link

CODE = "TP301"
NAME = "tp-crosses-nodes"
SEVERITY = Severity.WARNING
NEEDS_SHAPE = True
SUMMARY = "TP group larger than the GPUs per node: InfiniBand/Ethernet between ranks."


def gpus_per_node(ctx: CheckContext) -> int | None:
    d = ctx.deployment
    if d.gpus_per_node:
        return d.gpus_per_node
    if d.gpus_requested and (d.group_size or d.nnodes or 1) > 1:
        return d.gpus_requested
    return None


def check(ctx: CheckContext) -> Iterator[Finding]:
    per_node = gpus_per_node(ctx)
    t = ctx.tp
    if per_node is None or t <= per_node or ctx.evaluation.refusals:
        return
    if ctx.gpu is not None and ctx.gpu.nvlink_domain >= t:
        return  # rack-scale NVLink (GB200 NVL72): the NVLink domain is the boundary
    rule = sys.modules[__name__]
    net = find_link("ib-ndr")
    assert net is not None
    nodes = -(-t // per_node)
    layout = ", ".join(f"ranks {i * per_node}-{min((i + 1) * per_node, t) - 1} on node {i}"
                       for i in range(nodes))
    costs = link_costs(ctx, net.bandwidth, net.alpha)
    where = Formula("nodes", "ceil(t / gpus_per_node)", {"t": t, "gpus_per_node": per_node},
                    nodes, "", "manifest (GPUs per pod / node)")
    pp_fix = nodes * ctx.pp
    yield ctx.finding(
        rule,
        f"t={t} spans {nodes} nodes of {per_node} GPUs ({layout}): every one of the "
        f"{2 * (ctx.shape.layers if ctx.shape else 0) + 1} all-reduces per forward pass crosses "
        f"{net.name} at about {net.bandwidth / 1e9:.0f} GB/s per GPU instead of NVLink; "
        + describe(costs),
        formulas=(where, *costs),
        fix=f"use --tensor-parallel-size {per_node} --pipeline-parallel-size {pp_fix} "
        "(TP = GPUs per node, PP = nodes), or data-parallel replicas",
    )
