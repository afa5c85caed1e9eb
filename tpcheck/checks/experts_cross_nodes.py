"""TP303 experts-cross-nodes: the all-reduces stay in a node, the experts' all-to-all does not.

What it does: with expert parallelism (SGLang ``--ep-size`` or an all-to-all backend such as
``--moe-a2a-backend deepep``, which widens EP to the TP group; vLLM ``--enable-expert-parallel``
with DP, where the expert group is t·dp), each MoE layer sends every token's hidden state to
its top-k experts and gathers the results back. When that expert group spans nodes, part of
the traffic crosses the network. This is how wide-EP deployments are meant to run, so it is
information, with the bytes one token sends off its node per forward pass and the time they
take on the network — not an all-reduce, and not TP301 (which speaks only of all-reduces).

FAIL (info): SGLang ``--tp 16 --attn-dp-size 16 --moe-a2a-backend deepep`` on 2 pods of 8.
PASS: the same on one 16-GPU NVLink domain, or any layout whose expert group fits a node.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks._nodes import nic_per_gpu, node_size, nvlink_domain
from tpcheck.checks.base import Assumption, Finding
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula, fmt_bytes
from tpcheck.physics import kv
from tpcheck.physics.groups import a2a_bytes_per_token
from tpcheck.physics.legality import ceil_div


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    if ctx.shape is not None and (ctx.capacity.refusals or ctx.shape.moe is None):
        return
    ep = ctx.groups.expert
    if ep <= 1:
        return
    size = node_size(ctx)
    if size is None:
        return
    boundary = max(size.per_node, nvlink_domain(ctx))
    if ep <= boundary:
        return
    s = ctx.shape
    use = nic_per_gpu(ctx)
    formulas: tuple[Formula, ...] = (ctx.groups.formula, size.formula)
    cost = ""
    head_cost = ""
    if s is not None and s.moe is not None:
        b = kv.dtype_bytes(kv.activation_dtype(s.dtype, ctx.deployment.dtype))
        per_tok = a2a_bytes_per_token(moe_layers=s.moe.moe_layers, top_k=s.moe.experts_per_token,
                                      hidden=s.hidden, b=b, ep=ep, per_node=boundary)
        secs = Formula("a2a_seconds_per_token", "a2a_bytes_per_token / B",
                       {"a2a_bytes_per_token": per_tok.result, "B": use.bandwidth.result},
                       per_tok.result / use.bandwidth.result, "s",
                       "network bandwidth per GPU", (per_tok, use.bandwidth))
        formulas = (*formulas, per_tok, secs)
        cost = (f"each token sends {fmt_bytes(per_tok.result)} off its node per forward pass "
                f"({secs.result * 1e6:,.1f} µs of network time per token at {use.label})")
        head_cost = f", {fmt_bytes(per_tok.result)} per token"
    nodes = ceil_div(ep, size.per_node)
    related = (((size.span, size.label),)
               if size.span is not None and size.span != ctx.tp_span else ())
    yield ctx.finding(
        rule,
        f"the EP group of {ep} ranks spans {nodes} nodes: its all-to-all crosses the network"
        + head_cost,
        notes=(f"the expert-parallel group is {ep} ranks over {nodes} nodes ({size.label}), so "
               "the experts' all-to-all dispatch and combine (not an all-reduce) cross the "
               "network", cost),
        assumptions=(Assumption("link", f"{use.link.name} between the nodes: no instance type "
                                "in the manifest"),) if use.assumed else (),
        formulas=formulas,
        fix=_fix(ctx),
        related=related,
    )


def _backend(ctx: CheckContext) -> str | None:
    """The all-to-all backend the launch names (SGLang --moe-a2a-backend, vLLM
    --all2all-backend or its older VLLM_ALL2ALL_BACKEND variable)."""
    d = ctx.deployment
    if d.moe_a2a_backend and d.moe_a2a_backend != "none":
        return d.moe_a2a_backend
    for u in d.options:
        if u.written.split("=")[0] == "--all2all-backend" and u.value:
            return u.value
    return d.env.get("VLLM_ALL2ALL_BACKEND") or None


def _fix(ctx: CheckContext) -> str:
    """Wide EP is meant to cross nodes: where the pods already ask for NICs and name a backend,
    the advice is to check them, not to add them."""
    backend, nics = _backend(ctx), ctx.deployment.network_resource
    keep = "or keep the expert group inside one node"
    if backend and nics:
        return (f"expected for wide expert parallelism: the pods request {nics} and the "
                f"{backend} all-to-all; check that those NICs are GPUDirect RDMA, {keep}")
    if backend:
        return (f"expected for wide expert parallelism: give the pods RDMA NICs (GPUDirect) "
                f"for the {backend} all-to-all; {keep}")
    return ("expected for wide expert parallelism: give the pods RDMA NICs (GPUDirect) and an "
            "all-to-all backend built for them (SGLang --moe-a2a-backend deepep, vLLM "
            f"--all2all-backend); {keep}")
