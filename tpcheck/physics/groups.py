"""Which ranks talk to which: the groups that all-reduce and the group that exchanges experts.

TP301/TP302 must judge the collectives a layout really runs, not the written t. Under
DP-attention or expert parallelism the widest all-reduce is often far narrower than t, while
the experts' dispatch/combine (an all-to-all, not an all-reduce) spans the whole group.

SGLang 0.5.23 (``/work/shared/engines/sglang-0.5.23.md`` §2, §4):
- attention TP ``attn_tp = tp // attn_dp`` (runtime_context.py:73-76 ``derive_attn_tp_size``);
- the A2A backends in ``_A2A_EP_SPANNING_BACKENDS`` force ``ep_size = tp_size``
  (overrides.py:1578-1619); ``moe_tp = tp // ep // moe_dp`` (moe_ep_setup.py:154); ``--ep-size``
  defaults to 1 (fields/parallel.py:281): DP-attention alone does not make the MoE expert
  parallel;
- the dense MLPs run TP ``--moe-dense-tp-size`` when set, else the full tp (parallel.py:289;
  parallel.py:81: under attention DP "the FFN stays tensor parallel").

vLLM 0.33 (``vllm-0.33.md`` §1d): attention and dense layers use TP t inside each DP rank; the
MoE group is flattened over DP, ``t·dp`` (fused_moe/config.py l.1112); with
``--enable-expert-parallel`` its experts are split over that group (``ep_size = t·dp``, MoE
tp 1) and exchanged all-to-all, without it the MoE is TP-sharded over all ``t·dp`` ranks.
"""

from __future__ import annotations

from tpcheck.formula import Formula
from tpcheck.record import record

# sglang 0.5.23 overrides.py:1610-1619 (_A2A_EP_SPANNING_BACKENDS): ep_size := tp_size.
SGLANG_EP_SPANNING = frozenset({"deepep", "deepep_v2", "megamoe", "mooncake", "nixl",
                                "ascend_fuseep", "flashinfer", "flashinfer_megamoe", "mori",
                                "pplx"})
SRC_SGLANG = ("sglang 0.5.23 runtime_context.py:73-76 (attn_tp = tp // attn_dp), "
              "model_runner_components/moe_ep_setup.py:154 (moe_tp = tp // ep // moe_dp), "
              "arg_groups/overrides.py:1578-1619 (A2A backends: ep = tp), "
              "arg_groups/fields/parallel.py:281-289 (--ep-size 1, --moe-dense-tp-size)")
SRC_VLLM = ("vllm 0.33.0 model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make "
            "l.1112-1243 (MoE group flattened to t·dp; EP when --enable-expert-parallel)")


@record
class Groups:
    """Widths (ranks) of the collectives one forward pass runs, and what they are."""

    allreduce: int  # the widest group that all-reduces (1: none)
    allreduce_what: str  # "the TP group", "the MoE layers' TP group", ...
    expert: int  # ranks one expert all-to-all spans (1: no expert parallelism)
    formula: Formula


def comm_groups(*, engine: str, tp: int, dp: int = 1, attn_dp: int = 1, is_moe: bool = False,
                dense_layers: int = 0, ep_size: int | None = None,
                enable_expert_parallel: bool = False, moe_dense_tp: int | None = None,
                a2a_backend: str | None = None) -> Groups:
    """The all-reduce width and the expert all-to-all width of one layout (see module doc)."""
    if engine == "sglang":
        attn_tp = tp // attn_dp if attn_dp > 1 and tp % attn_dp == 0 else tp
        ep = tp if (a2a_backend or "none") in SGLANG_EP_SPANNING else (ep_size or 1)
        ep = ep if ep > 0 and tp % ep == 0 else 1
        moe_tp = tp // ep
        dense_tp = moe_dense_tp if moe_dense_tp and moe_dense_tp > 0 else tp
        widths: list[tuple[int, str]] = [(attn_tp, "attention TP group (tp / attn_dp)")]
        if is_moe:
            widths.append((moe_tp, "MoE layers' TP group (tp / ep)"))
            if dense_layers:
                widths.append((dense_tp, "dense MLP layers' TP group (--moe-dense-tp-size or tp)"))
        else:
            widths.append((dense_tp if attn_dp > 1 else tp, "MLP TP group (the FFN stays TP)"))
        width, what = max(widths, key=lambda w: w[0])
        if attn_dp <= 1 and ep <= 1:
            what = "TP group"  # plain TP: every layer all-reduces over all tp ranks
        values: dict[str, int | str | None] = {
            "tp": tp, "attn_dp": attn_dp, "attn_tp": attn_tp, "ep": ep, "moe_tp": moe_tp,
            "moe_dense_tp": moe_dense_tp, "moe_a2a_backend": a2a_backend}
        expr = "max(attn_tp = tp/attn_dp, moe_tp = tp/ep, dense_tp)"
        f = Formula("allreduce_group", expr, values, width, "ranks", SRC_SGLANG)
        return Groups(width, what, ep if is_moe else 1, f)
    group = tp * max(dp, 1)
    if is_moe and dp > 1 and not enable_expert_parallel:
        f = Formula("allreduce_group", "t·dp (MoE TP-sharded over the flattened group)",
                    {"t": tp, "dp": dp}, group, "ranks", SRC_VLLM)
        return Groups(group, "MoE layers' TP group (t·dp, no expert parallel)", 1, f)
    f = Formula("allreduce_group", "t", {"t": tp, "dp": dp}, tp, "ranks", SRC_VLLM)
    expert = group if is_moe and enable_expert_parallel else 1
    return Groups(tp, "TP group", expert, f)


def a2a_bytes_per_token(*, moe_layers: int, top_k: int, hidden: int, b: float, ep: int,
                        per_node: int) -> Formula:
    """Bytes one token sends off its node per forward pass in the experts' dispatch + combine.

    Each MoE layer sends the token's hidden state to its k experts and gathers k results back
    (2·k·d·b bytes); with the experts spread evenly over ``ep`` ranks, the share
    ``(ep − g)/ep`` of them sits on other nodes (g = GPUs per node)."""
    off = max(ep - per_node, 0) / ep
    val = moe_layers * 2 * top_k * hidden * b * off
    return Formula("a2a_bytes_per_token", "L_moe·2·k·d·b·(ep − g)/ep",
                   {"L_moe": moe_layers, "k": top_k, "d": hidden, "b": b, "ep": ep, "g": per_node},
                   val, "B", "dispatch + combine of routed experts (DeepEP/vLLM all2all: "
                   "one hidden vector to each of the top-k experts and back)")
