"""TP302 tp-crosses-sockets: a pair in the TP group talks over SYS (or PCIe where NVLink was expected)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._links import describe, link_costs
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.hardware.links import find_link
from tpcheck.hardware.topology import Topology, crosses_socket, is_nvlink, link_rank, tp_group

CODE = "TP302"
NAME = "tp-crosses-sockets"
SEVERITY = Severity.WARNING
NEEDS_SHAPE = True
SUMMARY = "The TP group's weakest link is SYS (or PCIe where NVLink was expected)."


def check(ctx: CheckContext) -> Iterator[Finding]:
    topo = ctx.topology
    if not isinstance(topo, Topology) or ctx.tp <= 1 or ctx.evaluation.refusals:
        return
    try:
        group = tp_group(ctx.tp, ctx.deployment.env.get("CUDA_VISIBLE_DEVICES"))
        cls, (a, b) = topo.weakest_link(group)
    except ValueError:
        return
    has_nvlink = any(is_nvlink(c) for row in topo.matrix for c in row)
    if not (crosses_socket(cls) or (has_nvlink and not is_nvlink(cls))):
        return
    rule = sys.modules[__name__]
    link = find_link("pcie4" if crosses_socket(cls) else "pcie5")
    assert link is not None
    # Across sockets the path is PCIe through the CPU interconnect: take PCIe Gen4 as its class.
    costs = link_costs(ctx, link.bandwidth, link.alpha)
    yield ctx.finding(
        rule,
        f"GPUs {a} and {b} of the TP group {list(group)} are connected by {cls} in "
        f"{topo.path or 'the topology'} ({'across CPU sockets' if crosses_socket(cls) else 'no NVLink'}"
        f", about {link.bandwidth / 1e9:.0f} GB/s, rank {link_rank(cls)}); " + describe(costs),
        formulas=costs,
        fix="pick GPUs under one socket or NVLink island (CUDA_VISIBLE_DEVICES), or a smaller TP",
    )
