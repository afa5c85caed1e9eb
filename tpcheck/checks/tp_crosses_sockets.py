"""TP302 tp-crosses-sockets: a TP pair talks over SYS (or PCIe where NVLink was expected).

What it does: places the TP group on the machine's ``nvidia-smi topo -m`` matrix (``--topology
FILE`` or ``[tool.tpcheck] topology``) — the first t GPUs of ``CUDA_VISIBLE_DEVICES`` from the
deployment's environment when set, else GPUs 0..t−1 — and takes the weakest path among all
pairs, since a ring all-reduce runs at the speed of its slowest hop. It fires when that path
is SYS (across the CPU sockets' interconnect), or is any PCIe path (PIX/PXB/PHB/NODE) on a
machine that has NVLink: the group silently fell off the NVLink island.

It says the pair and the path, the bandwidth class the all-reduces then run at, the same cost
figures as TP301, and a GPU set that avoids the weak path when the machine has one.

FAIL: TP 4 with ``CUDA_VISIBLE_DEVICES=2,3,4,5`` on a 2-socket 8×L40S box (GPUs 3 and 4: SYS).
PASS: TP 4 with ``CUDA_VISIBLE_DEVICES=4,5,6,7`` on the same box (NODE, one socket).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import combinations

from tpcheck.checks._links import LinkUse, alpha_override, describe, link_costs
from tpcheck.checks.base import Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula
from tpcheck.hardware.links import path_link
from tpcheck.hardware.topology import (
    Topology,
    crosses_socket,
    is_nvlink,
    link_rank,
    nvlink_count,
    tp_group,
)
from tpcheck.physics.linkcost import node_use

SRC_TOPO = "nvidia-smi topo -m legend; ring all-reduce runs at its slowest hop"
MAX_SEARCH = 16  # GPUs on a matrix for which a better group is searched exhaustively


def gpu_link_of(ctx: CheckContext, topo: Topology) -> str | None:
    """The GPU's catalog link, else the NVLink generation the matrix's NV# count implies."""
    if ctx.gpu is not None:
        return ctx.gpu.link
    most = max((nvlink_count(c) for row in topo.matrix for c in row), default=0)
    return {18: "nvlink4", 12: "nvlink3"}.get(most)


def best_group(topo: Topology, t: int) -> tuple[tuple[int, ...], str] | None:
    """The t GPUs whose weakest path is strongest (lowest indices on ties)."""
    n = topo.gpu_count
    if t > n or n > MAX_SEARCH:
        return None
    best: tuple[tuple[int, ...], str] | None = None
    for ids in combinations(range(n), t):
        cls, _ = topo.weakest_link(ids)
        if best is None or link_rank(cls) > link_rank(best[1]):
            best = (ids, cls)
    return best


def weakest_group(topo: Topology, t: int, groups: int, cvd: str | None
                  ) -> tuple[tuple[int, ...], str, tuple[int, int]]:
    """The TP group on this machine with the weakest path: the engine gives group k the
    visible GPUs k·t..k·t+t−1 (TP innermost), as many groups as fit on the machine."""
    n_visible = len(cvd.split(",")) if cvd and cvd.strip() else topo.gpu_count
    visible = tp_group(min(n_visible, max(t, t * groups)), cvd)
    worst: tuple[tuple[int, ...], str, tuple[int, int]] | None = None
    for k in range(max(len(visible) // t, 1)):
        g = visible[k * t:(k + 1) * t]
        cls, pair = topo.weakest_link(g)
        if worst is None or link_rank(cls) < link_rank(worst[1]):
            worst = (g, cls, pair)
    assert worst is not None
    return worst


def _ok(cls: str, nvlink_expected: bool) -> bool:
    return not crosses_socket(cls) and (is_nvlink(cls) or not nvlink_expected)


def largest_clean_t(topo: Topology, t: int, nvlink_expected: bool,
                    legal: Sequence[int]) -> tuple[int, tuple[int, ...]] | None:
    for cand in sorted((x for x in legal if 1 < x < t), reverse=True):
        bg = best_group(topo, cand)
        if bg is not None and _ok(bg[1], nvlink_expected):
            return cand, bg[0]
    return None


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    topo = ctx.topology
    # The widest group that all-reduces: under DP-attention / EP it is narrower than t.
    t = ctx.groups.allreduce
    if not isinstance(topo, Topology) or t <= 1 or t > topo.gpu_count:
        return
    if ctx.shape is not None and ctx.capacity.refusals:
        return
    cvd = ctx.deployment.env.get("CUDA_VISIBLE_DEVICES")
    world = ctx.tp * ctx.pp * ctx.dp_replicas
    try:
        found = weakest_group(topo, t, max(world // t, 1), cvd)
    except ValueError:
        return  # UUIDs, MIG ids or indices this matrix does not have: nothing to place
    group, cls, (a, b) = found
    nvlink_expected = _nvlink_expected(ctx, topo)
    if _ok(cls, nvlink_expected):
        return
    glink = gpu_link_of(ctx, topo)
    lk = path_link(cls, glink)
    # Priced as the engine release runs it on one node (physics.collective): NCCL, or its own
    # kernel where that takes the message; across the sockets no GPU peer-to-peer (NCCL and
    # the custom kernels stage through host memory there), so no custom kernel.
    use: LinkUse = node_use(lk, t, engine=ctx.deployment.engine,
                            version=ctx.release.physics_version,
                            custom=ctx.options.custom_all_reduce,
                            p2p=not crosses_socket(cls), alpha=alpha_override(ctx))
    costs = link_costs(ctx, use) if t == ctx.tp else ()
    where = topo.path or "the topology"
    what = ("across the CPU sockets (SYS: PCIe plus QPI/UPI)" if crosses_socket(cls)
            else f"over PCIe ({cls}), not NVLink")
    chosen = (f"from CUDA_VISIBLE_DEVICES={cvd}" if cvd else "no CUDA_VISIBLE_DEVICES set")
    path_f = Formula("weakest_path", "min over pairs of the TP group", {
        "group": _ids(group), "pair": f"GPU{a}-GPU{b}", "path": cls}, link_rank(cls), "rank",
        f"{where}; {SRC_TOPO}")
    tail = _cost_notes(ctx, costs, t)
    fix = _fix(ctx, topo, t, cls, nvlink_expected)
    short = "the CPU sockets (SYS)" if crosses_socket(cls) else f"PCIe ({cls})"
    yield ctx.finding(
        rule,
        f"TP group GPU{a}–GPU{b} is joined across {short}: all-reduces run at "
        f"{use.bandwidth.result / 1e9:,.1f} GB/s",
        notes=(f"the TP group {list(group)} ({chosen}) includes GPU{a}–GPU{b}, joined {what} "
               f"in {where}",
               f"all-reduces run at {use.label}{_instead(topo, glink)}"
               + (f" ({lk.source.split('; ', 1)[1]})" if crosses_socket(cls) else ""), *tail),
        formulas=(path_f, *((ctx.groups.formula,) if t != ctx.tp else ()), use.bandwidth,
                  use.alpha, *costs),
        fix=fix,
    )


def _nvlink_expected(ctx: CheckContext, topo: Topology) -> bool:
    """Whether this machine has NVLink between some GPUs (in its matrix, or by its GPU type),
    so a PCIe path in the group is a finding too."""
    return any(is_nvlink(c) for row in topo.matrix for c in row) or bool(
        ctx.gpu is not None and ctx.gpu.link.startswith("nvlink") and ctx.gpu.nvlink_domain > 1)


def _instead(topo: Topology, glink: str | None) -> str:
    """The best NVLink path of the matrix, to say what the all-reduces could run at."""
    best_nv = max((c for row in topo.matrix for c in row if is_nvlink(c)), key=link_rank,
                  default=None)
    if best_nv is None:
        return ""
    nv = path_link(best_nv, glink)
    return f" instead of {nv.name} at {nv.bandwidth / 1e9:,.0f} GB/s"


def _cost_notes(ctx: CheckContext, costs: tuple[Formula, ...], t: int) -> list[str]:
    """The all-reduce cost lines, or why there are none."""
    if costs:
        return describe(costs)
    if t != ctx.tp:
        return [f"this {t}-rank group is the widest that all-reduces (DP-attention/EP), and "
                "the cost figures are for a t-wide group in every layer, so none are given"]
    if ctx.shape is None:
        return ["the model's config.json was not found, so no cost figures"]
    return ["give --gpu for the cost figures"]


def _fix(ctx: CheckContext, topo: Topology, t: int, cls: str, nvlink_expected: bool) -> str:
    """Other GPUs of this machine for the same t when some are better joined; else the largest
    legal t that one socket or NVLink island holds; else the general advice."""
    legal = [x for x in range(2, t) if ctx.shape is None or not ctx.capacity_at(x).refusals]
    bg = best_group(topo, t)
    if bg is not None and link_rank(bg[1]) > link_rank(cls):
        return (f"set CUDA_VISIBLE_DEVICES={_ids(bg[0])}: those {t} GPUs are joined by "
                f"{bg[1]} at worst" + (" (one socket)" if not crosses_socket(bg[1]) else ""))
    smaller = largest_clean_t(topo, t, nvlink_expected, legal)
    if smaller is not None:
        k, ids = smaller
        return (f"no {t} GPUs of this machine avoid {cls}: use TP {k} on "
                f"CUDA_VISIBLE_DEVICES={_ids(ids)} (one socket/NVLink island) with "
                f"data-parallel replicas or PP for the rest")
    return "pick GPUs under one socket or NVLink island, or a smaller TP"
