"""TP402 pod-exceeds-node: one pod requests more GPUs than a node of the type it selects has.

A pod runs on one node. When ``resources.limits["nvidia.com/gpu"]`` is larger than the GPUs of
the node type the manifest selects (an instance-type label, or a GPU product label read as the
largest machine of that GPU tpcheck knows, which the finding states as its assumption), the
scheduler leaves the pod Pending: "Insufficient nvidia.com/gpu". TP201's note about nodes and
TP301 (which needs a multi-pod group to place ranks on nodes) agree with it.

FAIL: ``nvidia.com/gpu: 16`` with ``nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3`` (8 per node).
PASS: ``nvidia.com/gpu: 8`` there, or a LeaderWorkerSet of 2 pods of 8.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks._nodes import pod_over_node
from tpcheck.checks.base import Assumption, Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula
from tpcheck.physics.legality import ceil_div

SCHEDULER = ("Kubernetes scheduler NodeResourcesFit: a pod's requests must fit one node "
             "(\"Insufficient nvidia.com/gpu\")")


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    node = pod_over_node(ctx)
    d = ctx.deployment
    if node is None or not d.gpus_requested:
        return
    want, n = d.gpus_requested, node.gpus
    pods = ceil_div(want, n)
    pod = Formula("gpus_per_pod", "resources.limits nvidia.com/gpu", {"gpus_per_pod": want},
                  want, "GPUs", "manifest")
    over = Formula("pod_fits_node", "gpus_per_pod ≤ gpus_per_node",
                   {"gpus_per_pod": want, "gpus_per_node": n}, want <= n, "", SCHEDULER,
                   (pod, node.formula))
    t = ctx.tp
    layout = (f"TP {n} × PP {pods}" if t == want and t % n == 0 else f"{pods} pods of {n} GPUs")
    yield ctx.finding(
        rule,
        f"pod requests {want} GPUs, its node type has {n}: no node can schedule it",
        span=d.span_of("gpus_requested", "gpu_product", "tensor_parallel_size"),
        notes=("a pod runs on one node: the scheduler finds no node with "
               f"{want} free GPUs (Insufficient nvidia.com/gpu), so the engine never starts",
               f"to use {want} GPUs, run a multi-node group: a LeaderWorkerSet of {pods} pods of "
               f"{n} GPUs ({layout})"),
        assumptions=(Assumption("node", node.label),),
        formulas=(over,),
        fix=f"request at most {n} GPUs per pod: serve with TP {min(n, t)} on one node, or split "
        f"the group over {pods} pods of {n} GPUs (a LeaderWorkerSet, TP {n} × PP {pods})",
        related=(((node.span, node.label),) if node.span is not None else ()),
    )
