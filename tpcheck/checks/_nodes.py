"""Shared by TP201, TP301 and TP303: how many GPUs one node (or NVLink domain) holds and the
network between nodes, as the manifest says them.

Where GPUs per node come from, first match wins:
1. ``Deployment.gpus_per_node`` when a reader sets it;
2. the per-pod GPU limit (``nvidia.com/gpu``) when the launch spans pods — LeaderWorkerSet
   ``size`` / Dynamo ``nodeCount`` / ``--nnodes`` > 1, or t·p·dp larger than one pod's GPUs
   (a Ray worker group): a pod runs on one node, so its GPUs are one node's share;
3. t·p·dp / ``--nnodes`` (both engines spread their ranks evenly over the nodes);
4. the instance type in the manifest (``node.kubernetes.io/instance-type: p5.48xlarge``).
"""

from __future__ import annotations

from tpcheck.checks.context import CheckContext
from tpcheck.formula import Formula
from tpcheck.hardware.gpus import find_gpu
from tpcheck.hardware.links import Link, find_link
from tpcheck.hardware.machines import MACHINES, Machine, find_machine
from tpcheck.hardware.network import HGX_NETWORK, Network, parse_network, topology_network
from tpcheck.physics.collective import Group
from tpcheck.physics.legality import ceil_div
from tpcheck.physics.linkcost import (
    NETWORK_ASSUMED,
    LinkUse,
    assumed_network,
    link_use,
    network_group,
    network_use,
)
from tpcheck.record import record, replace
from tpcheck.sources.base import Span

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from typing import TypeGuard

    from tpcheck.hardware.topology import Topology


@record
class NodeSize:
    """GPUs per node (or per NVLink domain), where that came from, and where it is written."""

    per_node: int
    formula: Formula
    label: str  # for the message: "8 GPUs per pod (nvidia.com/gpu), 2 pods"
    span: Span | None


def alpha_override(ctx: CheckContext) -> float | None:
    """``alpha = 2e-5`` in [tool.tpcheck] overrides the link class's assumed α (here, beside the
    node helpers that price links, so TP201's network needs no cost figures' module)."""
    return ctx.settings.alpha


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


@record
class NodeShape:
    """The node type a manifest selects (an instance type, or a GPU product label read as the
    largest machine of that GPU tpcheck knows) and how many GPUs one such node has."""

    gpus: int
    formula: Formula
    label: str  # "a p5.48xlarge node has 8 GPUs", for the assumption a finding states
    span: Span | None


def selected_node(ctx: CheckContext) -> NodeShape | None:
    """The GPUs one node of the selected type has: TP402, and TP201's note about nodes."""
    d = ctx.deployment
    product = d.gpu_product
    if not product:
        return None
    span = d.spans.get("gpu_product")
    m = find_machine(product)
    if m is not None:
        f = Formula("gpus_per_node", "GPUs per instance", {"instance": m.key}, m.gpus, "GPUs",
                    m.source)
        return NodeShape(m.gpus, f, f"a {m.key} node has {m.gpus} GPUs", span)
    g = find_gpu(product)
    machines = [x for x in MACHINES if g is not None and x.gpu == g.key]
    if g is None or not machines:
        return None
    n = max(x.gpus for x in machines)
    largest = sorted(x.key for x in machines if x.gpus == n)
    shown = ", ".join(largest[:3]) + (", …" if len(largest) > 3 else "")
    f = Formula("gpus_per_node", "max GPUs per node over the known machines of this GPU",
                {"gpu": g.key, "machines": len(machines)}, n, "GPUs",
                "tpcheck/hardware/machines.py (the providers' instance pages)")
    return NodeShape(n, f, f"the node label {product} names {g.key}, whose largest known node "
                     f"has {n} GPUs ({shown})", span)


def pod_over_node(ctx: CheckContext) -> NodeShape | None:
    """The selected node type, when one pod requests more GPUs than such a node has: a pod runs
    on one node, so no node can schedule it."""
    want = ctx.deployment.gpus_requested
    if not want or want <= 0:
        return None
    node = selected_node(ctx)
    return node if node is not None and want > node.gpus else None


def nvlink_domain(ctx: CheckContext) -> int:
    """GPUs one NVLink fabric joins across trays (GB200 NVL72: 72); 0 when it ends at the node."""
    m = machine_of(ctx)
    if m is not None and m.nvlink_domain:
        return m.nvlink_domain
    g = ctx.gpu
    if g is not None and g.link.startswith("nvlink"):
        return g.nvlink_domain
    return 0


def network(ctx: CheckContext) -> LinkUse:
    """Network per GPU: the instance type's when known, else the physics' assumed one
    (``linkcost.assumed_network``: InfiniBand NDR, said to be assumed)."""
    alpha = alpha_override(ctx)
    m = machine_of(ctx)
    size = node_size(ctx)
    per_node = size.per_node if size is not None else (m.gpus if m is not None else 8)
    t = max(ctx.tp, per_node + 1)
    given = parse_network(ctx.settings.network) if ctx.settings.network else None
    if given is not None:  # [tool.tpcheck] network / --network: the user's word wins
        g = network_group(ctx.gpu, t, per_node, given)
        return network_use(g, f"{given.label} per node ({given.source})", given.source,
                           assumed=False, alpha=alpha)
    if m is not None:
        net = Network(m.gpus, m.network_gbps / m.gpus, machine_network_kind(m),
                                 f"{m.source} ({m.key})")
        g = network_group(ctx.gpu, t, per_node, net)
        return network_use(g, f"{m.key} network ({m.network_gbps:,.0f} Gb/s for "
                           f"{m.gpus} GPUs)", f"{m.source} ({m.key})", assumed=False,
                           alpha=alpha)
    res = ctx.deployment.network_resource
    if res:
        name, _, count = res.partition("=")
        n = int(count) if count.isdigit() else 0
        if name == "vpc.amazonaws.com/efa" and n > 0:
            # EFA devices of 100 Gb/s each (AWS: p5.48xlarge 32 → 3,200 Gb/s, p4d 4 → 400)
            net = Network(n, 100.0, "efa", f"pod requests {res} (100 Gb/s each)")
            return network_use(network_group(ctx.gpu, t, per_node, net),
                               f"{n} × 100 Gb/s EFA ({res})", net.source, assumed=False,
                               alpha=alpha)
        if name == "networking.gke.io/interfaces" and count.split(":")[0].isdigit():
            return network_use(*_gke(ctx, t, per_node, count, res), assumed=False, alpha=alpha)
        # RDMA device plugins share the node's HCAs: the kind is known, not their count
        kind = "roce" if "roce" in name else "ib"
        hgx = replace(HGX_NETWORK, kind=kind)
        g = network_group(ctx.gpu, t, per_node, hgx)
        return network_use(g, f"{kind} 8 × 400 Gb/s per node ({res}; NIC count assumed)",
                           hgx.source, assumed=True, alpha=alpha)
    topo = ctx.topology
    if topo is not None and _is_topology(topo):  # a saved nvidia-smi topo -m: its GPU NICs
        nics = topology_network(topo.nics, topo.gpu_nic, topo.path,
                                ctx.gpu.link if ctx.gpu is not None else None)
        if nics is not None:
            g = network_group(ctx.gpu, t, per_node, nics)
            return network_use(g, f"{nics.nics} × {nics.gbps:g} Gb/s per node (the NICs of "
                               f"{topo.path or 'the topology'}; speed assumed)", nics.source,
                               assumed=False, alpha=alpha)
    return assumed_network(alpha, gpu=ctx.gpu, t=t, per_node=per_node)


def _gke(ctx: CheckContext, t: int, per_node: int, count: str,
         res: str) -> tuple[Group, str, str]:
    """GKE multi-networking's extra interfaces as the node's GPU NICs, each at the rate of the
    A3/A4 machine that has that many (machines.py: a3-highgpu-8g 4 × 200 Gb/s GPUDirect-TCPX,
    a3-megagpu-8g 8 × 200 Gb/s TCPXO, a3-ultragpu-8g / a4 8 × 400 Gb/s RDMA over RoCE)."""
    k = int(count.split(":")[0])
    key = ("a3-ultragpu-8g" if count.endswith(":rdma") else
           "a3-highgpu-8g" if k <= 4 else "a3-megagpu-8g")
    m = find_machine(key)
    assert m is not None
    each = m.network_gbps / (4 if key == "a3-highgpu-8g" else 8)
    net = Network(k, each, machine_network_kind(m),
                  f"pod annotation {res}: {k} GPU NICs of {each:g} Gb/s (as on {m.key}, "
                  f"{m.source})")
    return (network_group(ctx.gpu, t, per_node, net),
            f"{k} × {each:g} Gb/s per node (GKE multi-networking, {k} interfaces)", net.source)


def nic_per_gpu(ctx: CheckContext) -> LinkUse:
    """One NIC's share per GPU, for the experts' all-to-all (TP303): unlike a ring, an
    all-to-all cannot aggregate a node's NICs (sjeaugey, nccl-tests#267: "the performance
    you should see is the performance of a single NIC")."""
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
    return link_use(ndr, assumed=True, why=NETWORK_ASSUMED, alpha=alpha)


def machine_network_kind(m: Machine) -> str:
    """The collective model's network kind for an instance type: AWS EFA, GCP's GPUDirect
    TCPX/TCPXO (A3 High/Edge, Mega) or RoCE (A3 Ultra, A4), InfiniBand on Azure and OCI."""
    if m.provider == "aws":
        return "efa"
    if m.provider == "gcp":
        if m.key.startswith("a3-megagpu"):
            return "tcpxo"
        if m.key.startswith(("a3-highgpu", "a3-edgegpu", "a2-")):
            return "tcp"
        return "roce"
    return "ib"


def step_nodes(ctx: CheckContext) -> dict[str, object]:
    """The step's link as TP301 reads it: node size and network from the manifest (instance
    type, pods, --nnodes), so a TP group that spans nodes all-reduces on the network; without
    them the physics' defaults hold (the GPU's NVLink domain, the assumed network past it).
    The user's α (``[tool.tpcheck] alpha``) is already in ``ctx.options``."""
    size = node_size(ctx)
    if size is None:
        return {}
    per_node = max(size.per_node, nvlink_domain(ctx))
    use = network(ctx)
    if use.assumed:  # no instance type: the physics' own assumption, which says so
        return {"gpus_per_node": per_node}
    # the per-GPU share of the instance's network: node_network rebuilds the node's NICs
    assert use.group is not None and use.group.network is not None
    net = replace(use.link, key=f"{use.group.network.kind}-{use.link.key}",
                  bandwidth=use.group.network.aggregate / use.group.per_node,
                  alpha=use.alpha.result)
    return {"gpus_per_node": per_node, "network": net}


def _is_topology(topo: object) -> TypeGuard[Topology]:
    """Whether ``topo`` is a parsed ``nvidia-smi topo -m`` (whose module only a given matrix
    imports: tpcheck.lint)."""
    from tpcheck.hardware.topology import Topology as Matrix

    return isinstance(topo, Matrix)
