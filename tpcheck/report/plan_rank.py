"""``tpcheck plan --gpus N`` for people and machines: the ranked layouts, why each refused one is
refused, and the recommended layouts with the command lines that launch them."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from tpcheck.engines import launch as launchers
from tpcheck.formula import Formula
from tpcheck.models.shape import ModelShape
from tpcheck.oneline import one_line
from tpcheck.physics.plan import Options
from tpcheck.physics.recommend import GOALS, TIE_FLOOR, Plan, Ranked, basis_label
from tpcheck.report.plan_words import count, plan_release, refusal_labels, rule_name

Launches = dict[str, dict[str, launchers.Launch]]  # goal -> engine -> launch


def reason(r: Ranked) -> str:
    if r.refused_kind == "refusal":
        return "refused: " + "; ".join(refusal_labels(r.refusals))
    if r.refused_kind == "does_not_start":
        return f"TP205 {rule_name('TP205')}: {r.refused}"
    if r.refused_kind == "no_seat":
        return f"TP204 {rule_name('TP204')}: {r.refused}"
    return ""


def _spec(model: str, shape: ModelShape, opts: Options, engine: str,
          ctx: int | None) -> launchers.Spec:
    mine = engine == opts.engine  # utilization and limits mean what they say in this engine
    return launchers.Spec(model=model, context=ctx,
                          max_num_seqs=opts.max_num_seqs if mine else None,
                          utilization=opts.utilization if mine else None,
                          kv_cache_dtype=opts.kv_cache_dtype, quantization=opts.quantization,
                          moe=shape.moe is not None)


def launches(plan: Plan, model: str, shape: ModelShape, opts: Options) -> Launches:
    """The vLLM and the SGLang command line of each goal's recommended layout; an engine that
    refuses the layout (the legality rules differ: vLLM pads the vocabulary) says why."""
    from tpcheck.physics.legality import refusals

    node = opts.gpus_per_node or (opts.gpu.nvlink_domain if opts.gpu is not None else None)
    out: Launches = {}
    for goal, r in plan.recommended.items():
        if r is None:
            continue
        lay = r.layout
        ctx = int(r.evaluation.context.result)
        out[goal] = {}
        for engine in ("vllm", "sglang"):
            version = opts.engine_version if engine == opts.engine else None
            tp, dp, ep, attn = lay.tp, lay.dp, lay.ep, lay.attn_dp
            if engine == "vllm" and lay.attn_dp > 1:
                # vLLM's attention DP: DP ranks of t / attn_dp, the experts over all (EP)
                tp, dp, ep, attn = lay.tp // lay.attn_dp, lay.dp * lay.attn_dp, True, 1
            elif engine == "sglang" and opts.engine == "vllm" and shape.moe and lay.dp > 1:
                # vLLM's DP ranks of a MoE model share its experts: in SGLang that is attention
                # DP inside one TP group of t·dp (its replicas would each hold every expert)
                tp, dp, attn = lay.tp * lay.dp, 1, lay.dp
            bad = refusals(shape, tp, engine=engine, dp=dp, expert_parallel=ep,
                           attn_dp=attn if engine == "sglang" else 1)
            spec = _spec(model, shape, opts, engine, ctx)
            if bad:
                out[goal][engine] = launchers.Launch(
                    engine, (), "", "; ".join(refusal_labels(bad)))
            elif engine == "vllm":
                out[goal][engine] = launchers.vllm(spec, tp, lay.pp, dp, ep, node, version)
            else:
                out[goal][engine] = launchers.sglang(spec, tp, lay.pp, dp, ep, attn, node,
                                                     version)
    return out


def _res(f: Formula | None) -> float | None:
    return None if f is None else float(f.result)


def comm_fraction(r: Ranked) -> float | None:
    """The decode step's all-reduce share at the batch the seats admit: the one figure the sweep
    (``plan --tp``) and TP301 give, T_comm / T_weights on the floor, T_comm / (T_step − T_comm)
    calibrated (step.comm_share)."""
    at = r.at_batch
    if at is None or at.step is None or at.comm_share is None:
        return None
    return float(at.comm_share.result)


COMM_LEGEND = ("comm: all-reduce time of a decode step at the batch column, over the weight "
               "read (floor) or over the rest of the step (calibrated), as `plan --tp` and TP301 "
               "give it")


def layout_json(r: Ranked) -> dict[str, object]:
    lay = r.layout
    return {
        "label": lay.label, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp,
        "expert_parallel": lay.ep, "attn_dp": lay.attn_dp, "gpus": lay.gpus,
        "dp_shares_experts": lay.coupled,
        "nodes_per_replica": r.nodes_per_replica, "serves": r.serves,
        "refused": None if r.serves else {
            "kind": r.refused_kind, "reason": reason(r),
            "refusals": [{"code": c.split(" ", 1)[0], "rule": c.split(" ")[1].rstrip(":")}
                         for c in refusal_labels(r.refusals)]},
        "seats_per_replica": r.seats if r.evaluation.seats is not None else None,
        "seats": r.seats_total if r.evaluation.seats is not None else None,
        "batch_per_replica": r.batch or None,
        "decode_tokens_per_second_per_gpu": _res(r.tokens_per_s_per_gpu),
        "token_latency_seconds": _res(r.token_latency),
        "comm_share": comm_fraction(r),
        "basis": r.basis, "basis_detail": basis_label(r),
    }


def to_json(plan: Plan, model: str, shown: str, opts: Options,
            found: Launches, release: str | None = None) -> dict[str, object]:
    first = plan.layouts[0].evaluation if plan.layouts else None
    rec: dict[str, object] = {}
    for goal in GOALS:
        r = plan.recommended.get(goal)
        rec[goal] = None if r is None else {
            **layout_json(r),
            "commands": {e: {"argv": list(x.argv), "line": x.line if x.argv else None,
                             "where": x.where, "refused": x.refused}
                         for e, x in found.get(goal, {}).items()}}
    return {
        "model": model, "source": shown, "gpu": opts.gpu.key if opts.gpu else None,
        "gpus": plan.gpus, "goal": plan.goal, "engine": opts.engine,
        "engine_version": plan_release(opts, release),
        "context": None if first is None else first.context.result,
        "layouts": [layout_json(r) for r in plan.layouts],
        "recommended": rec,
    }


# ---- text ---------------------------------------------------------------------------------

COLUMNS = (("#", 3), ("layout", 22), ("seats", 11), ("batch", 5), ("tok/s/GPU", 9),
           ("ms/token", 8), ("comm", 5), ("basis", 10))


def _cells(i: int, r: Ranked) -> list[str]:
    rate, lat, comm = r.tokens_per_s_per_gpu, r.token_latency, comm_fraction(r)
    seats = "-" if r.evaluation.seats is None else (
        f"{r.seats_total:,}" + (f" ({r.layout.dp}×{r.seats:,})" if r.layout.dp > 1 else ""))
    return [str(i), r.layout.label, seats, f"{r.batch:,}" if r.batch else "-",
            "-" if rate is None else f"{rate.result:,.0f}",
            "-" if lat is None else f"{lat.result * 1000:,.2f}",
            "-" if comm is None else f"{comm * 100:.0f}%",
            r.basis if r.serves else "-"]


def _row(cells: Sequence[str]) -> str:
    out = []
    for (name, w), c in zip(COLUMNS, cells, strict=True):
        out.append(f"{c:<{w}}" if name in ("layout", "basis") else f"{c:>{w}}")
    return " ".join(out).rstrip()


def _wrap(text: str, width: int, indent: str = "  ", sub: str = "    ") -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=sub,
                         break_on_hyphens=False, break_long_words=False) or [indent]


def _command(line: str, width: int, indent: str = "    ") -> list[str]:
    """A command line wrapped with shell continuations, so each part still pastes as one."""
    units: list[str] = []  # an option keeps its value on its line: the pair breaks as one
    for w in line.split(" "):
        if units and units[-1].startswith("--") and " " not in units[-1] \
                and not w.startswith("--"):
            units[-1] += " " + w
        else:
            units.append(w)
    out: list[str] = []
    cur = indent
    for w in units:
        if cur.strip() and len(cur) + 1 + len(w) + 2 > width:
            out.append(cur + " \\")
            cur = indent + "  " + w
        else:
            cur = (cur + " " + w) if cur.strip() else cur + w
    out.append(cur)
    return out


def _header(plan: Plan, model: str, shown: str, opts: Options, width: int,
            label: str | None, release: str | None) -> list[str]:
    first = plan.layouts[0].evaluation if plan.layouts else None
    gpu = opts.gpu.key if opts.gpu else "the given memory"
    node = opts.gpus_per_node or (opts.gpu.nvlink_domain if opts.gpu is not None else None)
    ctx = f"c = {int(first.context.result):,} tokens" if first is not None else ""
    out = [f"{model}  ({shown})" + (f"  from {label}" if label else "")]
    nodes = -(-plan.gpus // node) if node else 0
    where = f" ({nodes} node{'s' if nodes > 1 else ''} of {node})" if node else ""
    rel = plan_release(opts, release)
    out += _wrap(f"{plan.gpus} × {gpu}{where}, {opts.engine} {rel}, {ctx}", width)
    out += _wrap(f"ranked for {plan.goal}: "
                 + ("decode tokens/s per GPU at the batch each replica's seats admit"
                    if plan.goal == "throughput" else "time per output token at batch 1")
                 + f"; within {TIE_FLOOR:.0%} (floor) the step model does not tell layouts "
                 "apart, so a replica inside one node (no multi-node launch, no network "
                 "traffic), then no pipeline, then "
                 + ("more seats come first (for throughput: the smallest TP that fits, the "
                    "other GPUs as replicas)" if plan.goal == "throughput" else
                    "the fastest come first"), width)
    return out


def text(plan: Plan, model: str, shown: str, shape: ModelShape, opts: Options,
         found: Launches, width: int = 100, label: str | None = None,
         release: str | None = None) -> str:
    out = _header(plan, model, shown, opts, width, label, release)
    out += _wrap(COMM_LEGEND, width)
    out.append("")
    out.append(_row([c for c, _ in COLUMNS]))
    serving = [r for r in plan.layouts if r.serves]
    for i, r in enumerate(serving, 1):
        out.append(_row(_cells(i, r)))
    refused = [r for r in plan.layouts if not r.serves]
    if refused:
        out.append("")
        out.append("  not served:")
        for r in refused:
            out += _wrap(f"{r.layout.label}: {reason(r)}", width, "    ", "      ")
    out += _recommended_text(plan, found, width)
    out.append("")
    return "\n".join(map(one_line, out))


def _against(plan: Plan, r: Ranked, goal: str) -> str:
    """The one-group layout (TP over every GPU) beside the pick, when it is another."""
    alone = next((x for x in plan.layouts if x.layout.dp == 1 and x.layout.pp == 1
                  and not x.layout.ep and x.layout.attn_dp == 1), None)
    if alone is None or alone.layout == r.layout or alone.evaluation.seats is None:
        return ""
    if goal == "latency":
        lat = alone.token_latency
        return "" if lat is None else (f"; {alone.layout.label}: {lat.result * 1000:,.2f} ms "
                                       "per token")
    rate = alone.tokens_per_s_per_gpu
    gain = (f", {r.seats_total / alone.seats_total:.2f}× its seats"
            if alone.seats_total else "")
    return (f"; {alone.layout.label}: {count(alone.seats_total, 'seat')}"
            + ("" if rate is None else f", {rate.result:,.0f} tok/s/GPU") + gain)


def _pick_line(goal: str, plan: Plan, r: Ranked) -> str:
    rate, lat = r.tokens_per_s_per_gpu, r.token_latency
    seats = count(r.seats_total, "seat")
    fig = (f"{seats}, {rate.result:,.0f} tok/s/GPU at batch {r.batch:,}"
           if goal == "throughput" and rate is not None else
           f"{lat.result * 1000:,.2f} ms per token at batch 1, {seats}"
           if lat is not None else seats)
    basis = basis_label(r)
    return (f"{goal}: {r.layout.label} — {fig}" + (f" ({basis})" if basis != "-" else "")
            + _against(plan, r, goal))


def _none_why(plan: Plan) -> str:
    if any(r.serves for r in plan.layouts):
        return "no step time without the GPU's HBM bandwidth (name it with --gpu)"
    return f"no layout of {count(plan.gpus, 'GPU')} serves a sequence"


def _recommended_text(plan: Plan, found: Launches, width: int) -> list[str]:
    out: list[str] = []
    for goal in GOALS:
        r = plan.recommended.get(goal)
        out.append("")
        if r is None:
            out += _wrap(f"{goal}: {_none_why(plan)}", width, "")
            continue
        out += _wrap(_pick_line(goal, plan, r), width, "", "  ")
        for engine, x in found.get(goal, {}).items():
            name = "vLLM" if engine == "vllm" else "SGLang"
            if x.refused:
                out += _wrap(f"{name} refuses it: {x.refused}", width, "  ", "    ")
                continue
            out += _wrap(f"{name}, {x.where}:", width, "  ", "    ")
            out += _command(x.line, width)
    return out


# ---- markdown -----------------------------------------------------------------------------

def _md(s: str) -> str:
    return one_line(s).replace("|", "\\|")


def markdown(plan: Plan, model: str, shown: str, shape: ModelShape, opts: Options,
             found: Launches, width: int = 100, label: str | None = None,
             release: str | None = None) -> str:
    gpu = opts.gpu.key if opts.gpu else "the given memory"
    out = [f"### `tpcheck plan`: {_md(model)} on {plan.gpus} × {_md(gpu)}", "",
           f"Config: {_md(shown)}; {_md(opts.engine)} {_md(plan_release(opts, release))}; "
           f"ranked for {plan.goal}." + (f" Deployment: {_md(label)}." if label else ""), "",
           _md(COMM_LEGEND[0].upper() + COMM_LEGEND[1:]) + ".", "",
           "| " + " | ".join(c for c, _ in COLUMNS) + " |",
           "|" + "|".join("---:" if c not in ("layout", "basis") else "---"
                          for c, _ in COLUMNS) + "|"]
    for i, x in enumerate([x for x in plan.layouts if x.serves], 1):
        out.append("| " + " | ".join(_md(c) for c in _cells(i, x)) + " |")
    refused = [x for x in plan.layouts if not x.serves]
    if refused:
        out += ["", "Not served:", ""]
        out += [f"- {_md(x.layout.label)}: {_md(reason(x))}" for x in refused]
    out += _md_picks(plan, found)
    out.append("")
    return "\n".join(out)


def _md_picks(plan: Plan, found: Launches) -> list[str]:
    out: list[str] = []
    for goal in GOALS:
        r = plan.recommended.get(goal)
        out.append("")
        if r is None:
            out.append(f"**{goal}**: {_md(_none_why(plan))}")
            continue
        out.append(f"**{_md(_pick_line(goal, plan, r))}**")
        for engine, x in found.get(goal, {}).items():
            name = "vLLM" if engine == "vllm" else "SGLang"
            if x.refused:
                out.append(f"- {name} refuses it: {_md(x.refused)}")
                continue
            out += ["", f"{name}, {_md(x.where)}:", "", "```sh", one_line(x.line), "```"]
    return out
