"""``tpcheck allreduce``: the all-reduce time and bus bandwidth tpcheck expects per message
size on a stated topology, in the shape of an ``all_reduce_perf`` table, so a user can hold it
against their own nccl-tests run. The same function (``physics.collective.allreduce``)
prices the rules' and ``plan``'s collectives."""

from __future__ import annotations

import json
import re
from typing import Any

import click

from tpcheck import UsageError
from tpcheck.commands import base

DESCRIPTION = """\
Expected all-reduce time and bus bandwidth per message size on a topology.

Prints the table all_reduce_perf prints (size, time, algbw, busbw) plus the algorithm,
protocol and path tpcheck expects NCCL (or the engine's custom all-reduce, --engine) to use.
Across nodes the NICs' aggregate bandwidth applies; when --nics-per-node/--nic-gbps are not
given an HGX node's 8×400G is assumed and the output says so."""

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_size(s: str) -> int:
    """``8``, ``64K``, ``1M``, ``1GiB`` (binary units, as nccl-tests reads -b/-e)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", s)
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(f"{s!r} is not a size (8, 64K, 1M, 1GiB)", "--size")
    v = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if v < 1:
        raise UsageError(f"{s!r} is below one byte", "--size")
    return v


def sizes_of(given: tuple[str, ...]) -> list[int]:
    """Each --size a value or a doubling range LO-HI; none: 8 B–1 GiB doubling."""
    from tpcheck.physics.collective import default_sizes

    if not given:
        return default_sizes()
    out: list[int] = []
    for g in given:
        if "-" in g.strip("-"):
            lo_s, hi_s = g.split("-", 1)
            lo, hi = parse_size(lo_s), parse_size(hi_s)
            if hi < lo:
                raise UsageError(f"{g!r}: the range ends below its start", "--size")
            v = lo
            while v <= hi:
                out.append(v)
                v *= 2
        else:
            out.append(parse_size(g))
    return out


@click.command("allreduce", cls=base.Command, help=DESCRIPTION)
@base.gpu_option("GPU: h100-sxm, h200, a100-sxm-80gb, l40s, ...", dest="gpu_name")
@base.option("--tp", type=base.IntRange(1, 4096), default=8, metavar="T",
             help="Ranks in the all-reduce (default: 8).")
@base.option("--size", "sizes", multiple=True, metavar="BYTES",
             help="Message size or doubling range LO-HI, repeatable (default: 8-1G).")
@base.option("--nodes", type=base.IntRange(1, 4096), metavar="N",
             help="Nodes the ranks span (default: as many as the GPU's node needs).")
@base.option("--nics-per-node", type=base.IntRange(1, 64), metavar="K",
             help="GPU NICs per node (default: 8, an HGX node's).")
@base.option("--nic-gbps", type=base.FloatRange(0, lo_open=True), metavar="G",
             help="Line rate of each NIC in Gb/s (default: 400).")
@base.option("--fabric", type=base.Choice(["ib", "roce", "efa", "tcpxo", "tcp"]),
             default="ib", help="Network kind between nodes (default: ib).")
@base.option("--link", metavar="CLASS",
             help="Link class inside a node: nvlink4, pcie5, ... (default: the GPU's).")
@base.option("--engine", type=base.Choice(["nccl", "vllm", "sglang"]), default="nccl",
             help="vllm/sglang: their custom all-reduce where it applies (default: nccl).")
@base.option("--engine-version", type=base.Release(), metavar="VERSION",
             help="The engine release whose own kernels apply (default: the newest read).")
@base.option("--disable-custom-all-reduce", is_flag=True,
             help="As the engines' flag: NCCL only.")
@base.format_option("text", "json")
def command(**params: Any) -> int:
    return run(base.parsed(params))


def run(args: base.Args) -> int:
    from tpcheck.hardware.gpus import find_gpu
    from tpcheck.hardware.links import find_link
    from tpcheck.hardware.network import HGX_NETWORK, Network
    from tpcheck.physics import collective as C

    gpu = find_gpu(args.gpu_name) if args.gpu_name else find_gpu("h100-sxm")
    if gpu is None:
        raise UsageError(f"unknown GPU {args.gpu_name!r}", "--gpu")
    link_key, link_bw = gpu.link, gpu.link_bandwidth
    if args.link:
        lk = find_link(args.link)
        if lk is None or lk.inter_node:
            raise UsageError(f"{args.link!r} is not a link inside a node", "--link")
        link_key, link_bw = lk.key, lk.bandwidth
    t: int = args.tp
    domain = gpu.nvlink_domain if link_key.startswith("nvlink") else 8
    nodes: int = args.nodes or max(1, -(-t // max(domain, 1)))
    _check_layout(t, nodes, max(domain, 1), gpu.key)
    assumed: list[str] = []
    net = None
    if nodes > 1:
        k = args.nics_per_node or HGX_NETWORK.nics
        s = args.nic_gbps or HGX_NETWORK.gbps
        if not args.nics_per_node or not args.nic_gbps:
            assumed.append("network")
        net = Network(k, s, args.fabric, "command line", bool(assumed))
    group = C.group_of(link_key, link_bw, t, nodes, None, net)
    engine = None if args.engine == "nccl" else args.engine
    rows = []
    for size in sizes_of(args.sizes):
        p = C.allreduce(group, size, engine=engine, custom=not args.disable_custom_all_reduce,
                        version=args.engine_version)
        rows.append({"size": size, "allreduce_seconds": p.seconds,
                     "time_us": round(p.seconds * 1e6, 6),
                     "algbw": p.algbw / 1e9, "busbw": p.busbw(t) / 1e9,
                     "algorithm": p.algorithm, "protocol": p.protocol, "path": p.path,
                     "formula": p.formula.to_json()})
    topo = {"gpu": gpu.key, "ranks": t, "nodes": nodes, "gpus_per_node": group.per_node,
            "link": link_key, "network": None if net is None else
            {"nics_per_node": net.nics, "nic_gbps": net.gbps, "fabric": net.kind,
             "aggregate_GBps": net.aggregate / 1e9, "assumed": net.assumed},
            "assumed": assumed, "engine": args.engine}
    if args.fmt == "json":
        print(json.dumps({"topology": topo, "rows": rows}, indent=2))
        return 0
    where = (f"{nodes} nodes × {group.per_node} GPUs, {net.label}" if net is not None
             else f"1 node, {t} GPU{'s' if t != 1 else ''}")
    named = gpu.key if args.gpu_name else f"{gpu.key} (the default: give --gpu)"
    print(f"# tpcheck allreduce: {named}, {t} rank{'s' if t != 1 else ''}, {where}, "
          f"link {link_key}, "
          f"engine {args.engine}")
    if assumed:
        print("# network assumed: an HGX node's 8×400G rail-optimized "
              "(give --nics-per-node and --nic-gbps)")
    print(f"#{'size':>12} {'time':>10} {'algbw':>8} {'busbw':>8}  algorithm/protocol  path")
    print(f"#{'(B)':>12} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8}")
    for r in rows:
        print(f"{r['size']:>13} {r['time_us']:>10.2f} {r['algbw']:>8.2f} {r['busbw']:>8.2f}  "
              f"{r['algorithm']}/{r['protocol']:<10} {r['path']}")
    return 0


def _check_layout(ranks: int, nodes: int, node_gpus: int, gpu: str) -> None:
    """A layout the engines can launch: ranks split evenly over the nodes (TP x PP groups
    are), and no more ranks on a node than it has GPUs (an HGX node has 8)."""
    if nodes > ranks:
        raise UsageError(f"{nodes} nodes for {ranks} ranks: each node needs at least one rank",
                         "--nodes")
    if ranks % nodes:
        raise UsageError(f"{ranks} ranks do not split evenly over {nodes} nodes", "--nodes")
    if ranks // nodes > node_gpus:
        need = -(-ranks // node_gpus)
        raise UsageError(f"{ranks // nodes} ranks per node, but one {gpu} node holds {node_gpus} "
                         f"GPUs: give --nodes {need} or more", "--nodes")
