"""The plan table for people: one row and one bar per t, the KV-head cliff marked."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from tpcheck.formula import GIB, Formula
from tpcheck.models.shape import ModelShape
from tpcheck.oneline import one_line
from tpcheck.physics import step as stepmodel
from tpcheck.physics.plan import Evaluation, Options
from tpcheck.record import record
from tpcheck.report.plan_words import count, plan_release, refusal_labels

__all__ = ["PlanView", "plan_release", "render_plan"]

BAR = 24


def _rate(r: Evaluation) -> str:
    """Decode tokens/s per GPU at the plan's batch: batch / T_step / t."""
    if r.step is None or not r.step.result or not r.legal or (
            r.seats is not None and not r.seats.result):
        return "-"  # refused, or no room for one sequence: nothing decodes
    return f"{r.batch / r.step.result / r.tp:,.0f}"


def _gib(f: Formula | None) -> str:
    return "-" if f is None else f"{f.result / GIB:.1f}"


def _kib(f: Formula | None) -> str:
    return "-" if f is None else f"{f.result / 1024:.0f}"


def _tok(f: Formula | None) -> str:
    if f is None:
        return "-"
    n = float(f.result)
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    if n >= 1e3:
        return f"{n / 1e3:.0f}k"
    return f"{n:.0f}"


def _pct(f: Formula | None) -> str:
    return "-" if f is None else f"{f.result * 100:,.0f}%"


def _prefill_ms(r: Evaluation) -> str:
    """One chunk / the whole prompt, in milliseconds ("-" when the row does not start)."""
    if r.prefill is None or r.prefill_prompt is None or not r.legal or r.fits is False:
        return "-"
    return f"{r.prefill.result * 1000:,.0f}/{r.prefill_prompt.result * 1000:,.0f}"


def _comm(decode: Formula | None, prefill: Formula | None) -> str:
    return f"{_pct(decode)}/{_pct(prefill)}"


@record
class PlanView:
    """What the sweep table shows: the rows and everything printed around them."""

    model: str
    where: str
    shape: ModelShape
    rows: tuple[Evaluation, ...]
    opts: Options
    it_be: tuple[Formula, Formula | None] | None = None
    prefill: tuple[Formula | None, ...] = ()
    link_label: str | None = None
    width: int = 100
    markdown: bool = False
    title: str | None = None  # the deployment a manifest's plan is of
    release: str | None = None  # the manifest's release and where it came from


def _wrap(text: str, width: int, indent: str = "  ", sub: str = "    ") -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=sub,
                         break_on_hyphens=False, break_long_words=False) or [indent]


def _header(v: PlanView) -> list[str]:
    """The model, its shape, the engine, GPU and context, and the defaults assumed."""
    shape, first, opts = v.shape, (v.rows[0] if v.rows else None), v.opts
    kvdesc = (f"MLA latent {shape.mla.latent_dim}" if shape.mla else
              f"h_kv={shape.kv_heads}, d_h={shape.head_dim}")
    out = [f"{v.model}  ({v.where})" + (f"  from {v.title}" if v.title else "")]
    out += _wrap(f"L={shape.layers} d={shape.hidden} h={shape.heads} {kvdesc} f={shape.ffn} "
                 f"V={shape.vocab} dtype={shape.dtype}"
                 + (f" experts={shape.moe.num_experts}x{shape.moe.expert_ffn}"
                    if shape.moe else ""), v.width)
    if first is None:
        return out
    gpu = opts.gpu.key if opts.gpu else "-"
    util = "-" if first.utilization is None else f"{first.utilization.result:g}"
    rel = plan_release(opts, v.release)
    out += _wrap(f"engine={opts.engine} {rel} gpu={gpu} M={_gib(first.memory)} GiB u={util} "
                 f"context c={first.context.result:,} ({first.context.expression})", v.width)
    for k, val in first.defaults.items():
        if k != "gpu_memory_utilization":
            out += _wrap(f"default {k} = {val}", v.width)
    if opts.dp > 1 or opts.pp > 1:
        out += _wrap(f"each row: {count(opts.dp, 'replica')} of t × p = t × {opts.pp} GPUs; "
                     f"seats count every replica ({opts.dp} × a replica's)", v.width)
    return out


def _show_comm(v: PlanView) -> bool:
    return (v.link_label is not None and any(r.comm_share is not None for r in v.rows)) or any(
        p is not None for p in v.prefill)


def _legend(v: PlanView) -> list[str]:
    """What the comm, tok/s and prefill columns stand on."""
    out: list[str] = []
    first, opts = (v.rows[0] if v.rows else None), v.opts
    if _show_comm(v):
        n = next((p.values["n"] for p in v.prefill if p is not None), None)
        chunk = f"share of a {n:,}-token prefill chunk" if isinstance(n, int) else "prefill -"
        over = ("the rest of the calibrated decode step" if first is not None
                and first.step is not None and first.step.source.startswith("calibrated")
                else "the decode weight-read floor")
        gpu_link = opts.link_key or (opts.gpu.link if opts.gpu else None)
        across = sorted({r.tp for r in v.rows if r.allreduce_link not in (None, gpu_link)})
        net = (f"{opts.network.name}, given" if opts.network is not None
               else "InfiniBand 8 × 400 Gb/s per node, assumed")
        out += _wrap(f"comm dec/pre: all-reduce time over {over} at batch {opts.batch} / "
                     f"{chunk}; link {v.link_label}"
                     + (f"; t ≥ {across[0]} spans nodes: the network ({net}; each message "
                        "priced as `tpcheck allreduce` does)" if across else ""), v.width)
    step0 = next((r.step for r in v.rows if r.step is not None), None)
    if step0 is not None:
        out += _wrap(f"tok/s/GPU: decode tokens/s per GPU at batch {opts.batch} "
                     f"({stepmodel.basis(step0)})", v.width)
    pre0 = _prefill_row(v)
    if pre0 is not None and pre0.prefill is not None and pre0.prefill_prompt is not None:
        out += _wrap(f"prefill ms: one {pre0.prefill.values['n']:,}-token chunk / a whole "
                     f"{pre0.prefill_prompt.values['c']:,}-token prompt on an idle engine "
                     f"(compute at η = {pre0.prefill.values['η']} of dense FLOP/s, assumed: "
                     "no published TTFT row calibrates it)", v.width)
    out += _wrap("ok: yes starts and seats a sequence; NO the engine refuses or does not start; "
                 "none starts but seats no sequence of c tokens. W, pool: GiB per GPU", v.width)
    return out


def _prefill_row(v: PlanView) -> Evaluation | None:
    return next((r for r in v.rows if r.prefill is not None and r.prefill_prompt is not None),
                None)


def _starts(r: Evaluation) -> bool:
    return r.legal and r.fits is not False


def _status(r: Evaluation) -> str:
    if not _starts(r):
        return "NO"
    return "none" if r.seats is not None and not r.seats.result else "yes"


def refusal_names(r: Evaluation) -> str:
    """Each rule once, by code and name: ``TP103 ffn-not-divisible``."""
    return "; ".join(refusal_labels(r.refusals))


def _note(v: PlanView, r: Evaluation) -> tuple[str, str]:
    """(the row's tag, its note below the table, "" when none)."""
    shape = v.shape
    cliff_at = None if shape.latent_cache else shape.kv_heads  # MLA, V4: no head axis
    c = f"{r.context.result:,}"
    if not r.legal:
        return "refused", "refused: " + refusal_names(r)
    if r.fits is False:
        return "no pool", "does not start: " + r.fit_reason()
    if r.seats is not None and not r.seats.result:
        return "0 seats", (f"starts, but no sequence of {c} tokens fits its pool "
                           f"({_tok(r.tokens)} KV tokens)")
    if shape.latent_cache and r.tp > 1:
        return "latent ×t", ("MLA latent" if shape.is_mla else "DeepSeek-V4 compressed latent") \
            + " replicated on every rank"
    if cliff_at and r.tp > cliff_at:
        return (f"replicated {r.kv_replicas.result}x",
                f"past the KV-head cliff: cache replicated {r.kv_replicas.result}x")
    if cliff_at and r.tp == cliff_at:
        return "<- cliff", "<- cliff: t = h_kv, last t that divides the cache"
    return "", ""


def _columns(v: PlanView) -> list[tuple[str, int]]:
    step0 = any(r.step is not None for r in v.rows)
    cols = [("tp", 3), ("ok", 4)]
    if v.opts.dp > 1 or v.opts.pp > 1:
        cols.append(("GPUs", 4))
    cols += [("kvh", 3), ("W", 5), ("KiB/tok", 7), ("pool", 5), ("tokens", 6), ("seats", 6)]
    if step0:
        cols.append(("tok/s/GPU", 9))
    if _prefill_row(v) is not None:
        cols.append(("prefill ms", 11))
    if _show_comm(v):
        cols.append(("comm", 11))
    return cols


def _cells(v: PlanView, r: Evaluation, pre: Formula | None) -> dict[str, str]:
    starts, dp = _starts(r), v.opts.dp
    seats = "-" if r.seats is None or not starts else f"{int(r.seats.result) * dp:,}"
    return {
        "tp": str(r.tp), "ok": _status(r), "GPUs": str(r.tp * v.opts.pp * dp),
        "kvh": str(r.kv_heads_per_gpu.result), "W": _gib(r.weights),
        "KiB/tok": _kib(r.kv_bytes_per_token), "pool": _gib(r.pool),
        "tokens": _tok(r.tokens) if starts or not r.legal else "-", "seats": seats,
        "tok/s/GPU": _rate(r), "prefill ms": _prefill_ms(r),
        "comm": _comm(r.comm_share, pre) if starts else "-",
    }


def _table(v: PlanView) -> tuple[list[str], list[str]]:
    """The table's lines (a bar where the width leaves room) and the notes under it."""
    pre = list(v.prefill) if v.prefill else [None] * len(v.rows)
    all_cells = [_cells(v, r, p) for r, p in zip(v.rows, pre, strict=True)]
    # a column as wide as its widest value (a -145.4 GiB pool, a 3,555% share)
    cols = [(n, max([w, *(len(c[n]) for c in all_cells)])) for n, w in _columns(v)]
    tags = [_note(v, r) for r in v.rows]
    fixed = sum(w + 1 for _, w in cols)
    tag_w = max((len(t) for t, _ in tags), default=0)
    bar_w = max(0, min(BAR, v.width - fixed - tag_w - 2))
    peak = max((float(r.tokens.result) for r in v.rows if r.tokens is not None and _starts(r)),
               default=0.0)
    head = " ".join(f"{n:>{w}}" for n, w in cols) + ("  capacity" if bar_w else "  note")
    lines = [head.rstrip()]
    for r, cells, (tag, _) in zip(v.rows, all_cells, tags, strict=True):
        bar = ""
        if bar_w and r.tokens is not None and peak > 0 and _starts(r):
            bar = "#" * round(bar_w * float(r.tokens.result) / peak)
        row = " ".join(f"{cells[n]:>{w}}" for n, w in cols)
        lines.append((row + (f"  {bar:<{bar_w}} {tag}" if bar_w else f"  {tag}")).rstrip())
    notes = _grouped_notes(v, tags)
    return lines, notes


def _grouped_notes(v: PlanView, tags: Sequence[tuple[str, str]]) -> list[str]:
    """Each note once, with the sizes it applies to."""
    seen: dict[str, list[int]] = {}
    for r, (_, note) in zip(v.rows, tags, strict=True):
        if note:
            seen.setdefault(note, []).append(r.tp)
    out: list[str] = []
    for note, tps in seen.items():
        out += _wrap(f"t={', '.join(map(str, tps))}: {note}", v.width, "  ", "      ")
    return out


def _budget(v: PlanView) -> list[str]:
    """The memory budget behind the first row: SGLang's formula, or vLLM's reserve terms."""
    first = v.rows[0] if v.rows else None
    pool_f = first.pool if first is not None else None
    out: list[str] = []
    if pool_f is not None and pool_f.terms and pool_f.terms[0].name == "T":
        # SGLang: no reserve is subtracted; mfs applies to T, the memory free after the CUDA
        # context and communicators (physics/sglang_memory.py).
        t_f = pool_f.terms[0]
        out.append("")
        out += _wrap(f"SGLang budget per GPU (at the first t, rules of SGLang "
                     f"{pool_f.values['release']}): pool = {pool_f.expression}", v.width)
        # Hybrid linear attention adds the state pool (and its per-request size) after T.
        extra = tuple(x for term in pool_f.terms[1:] for x in (term, *term.terms))
        for term in (t_f, *t_f.terms, *extra):
            out += _wrap(f"{term.name} = {term.expression} = {term.result / GIB:.2f} GiB",
                         v.width, "    ", "      ")
    elif first is not None and first.reserve is not None:
        out.append("")
        out.append("  non-KV reserve R per GPU (at the first t):")
        for term in first.reserve.terms or (first.reserve,):
            out += _wrap(f"{term.name} = {term.expression} = {term.result / GIB:.2f} GiB",
                         v.width, "    ", "      ")
        out.extend(_non_torch_by_t(v.rows, first))
    return out


def _intensity(v: PlanView) -> list[str]:
    if v.it_be is None:
        return []
    it, be = v.it_be
    out = ["", *_wrap(f"interconnect intensity at t=8: {it.result:,.0f} FLOP/B "
                      f"({it.expression})", v.width)]
    if be is not None:
        out += _wrap(f"break-even t on this link: {be.result:.2f} ({be.expression})", v.width)
    return out


def render_plan(v: PlanView) -> str:
    """The sweep as text (within ``v.width`` columns) or as a markdown table."""
    if v.markdown:
        return render_markdown(v)
    lines, notes = _table(v)
    out = [*_header(v), *_legend(v), "", *lines]
    if notes:
        out += ["", *notes]
    out += _budget(v)
    out.extend(_engine_tokens(v.rows))
    out.extend(_engine_log(v.rows, v.opts.engine, v.width))
    out += _intensity(v)
    out.append("")
    # every line: the engine version, the model and the paths are the user's strings
    return "\n".join(map(one_line, out))


def _md(s: str) -> str:
    return one_line(s).replace("|", "\\|")


def render_markdown(v: PlanView) -> str:
    """The sweep as a GitHub markdown table, its notes as a list (a job summary, a PR)."""
    cols = _columns(v)
    pre = list(v.prefill) if v.prefill else [None] * len(v.rows)
    gpu = v.opts.gpu.key if v.opts.gpu else "-"
    out = [f"### `tpcheck plan`: {_md(v.model)} on {_md(gpu)}", "",
           f"Config: {_md(v.where)}; {_md(v.opts.engine)} {_md(plan_release(v.opts, v.release))}"
           + (f"; context c = {v.rows[0].context.result:,}" if v.rows else "")
           + (f"; deployment {_md(v.title)}" if v.title else ""), "",
           "| " + " | ".join(n for n, _ in cols) + " | note |",
           "|" + "---:|" * len(cols) + "---|"]
    for r, p in zip(v.rows, pre, strict=True):
        cells = _cells(v, r, p)
        out.append("| " + " | ".join(_md(cells[n]) for n, _ in cols)
                   + f" | {_md(_note(v, r)[1])} |")
    out.append("")
    return "\n".join(out)


def _non_torch_by_t(rows: Sequence[Evaluation], first: Evaluation) -> list[str]:
    """R_non_torch where it differs from the first t's (the all-reduce fusion workspace)."""
    def nt(r: Evaluation) -> float | None:
        terms = r.reserve.terms if r.reserve is not None else ()
        return next((x.result for x in terms if x.name == "R_non_torch"), None)

    base = nt(first)
    parts = [f"t={r.tp} {v / GIB:.2f}" for r in rows
             if r is not first and (v := nt(r)) is not None and v != base]
    return [f"    R_non_torch by t (GiB): {', '.join(parts)}"] if parts else []


def _engine_log(rows: Sequence[Evaluation], engine: str, width: int = 100) -> list[str]:
    """The prediction in the engine's own start-up log lines (issue 32): every line for one
    layout; for a sweep, per t the weights, pool and token lines on one (wrapped) line."""
    from tpcheck.physics.plan import engine_log_lines

    blocks = [(r.tp, engine_log_lines(r, engine)) for r in rows]
    blocks = [(t, lines) for t, lines in blocks if lines]
    if not blocks:
        return []
    out = ["", "  as the engine logs it (predicted; rank 0, the heaviest stage):"]
    for t, lines in blocks:
        head = f"    t={t}: "
        if len(rows) > 1:
            keep = [x for x in lines if x.startswith(SWEEP_LOG_LINES)]
            out += _wrap(" · ".join(keep), width, head, " " * (len(head) + 2))
            continue
        for i, x in enumerate(lines):
            out += _wrap(x, width, head if i == 0 else " " * len(head), " " * (len(head) + 2))
    return out


# The lines a sweep shows per t (one layout shows them all).
SWEEP_LOG_LINES = ("Model loading took", "Available KV cache memory", "GPU KV cache size",
                   "Load weight end", "max_total_num_tokens")


def _engine_tokens(rows: Sequence[Evaluation]) -> list[str]:
    """vLLM's own "GPU KV cache size" figure where it is not the KV tokens column."""
    diff = [r for r in rows if r.engine_tokens is not None and r.tokens is not None
            and int(r.engine_tokens.result) != int(r.tokens.result) and r.tokens.result > 0]
    if not diff:
        return []
    figures = ", ".join(f"t={r.tp} {_tok(r.engine_tokens)}" for r in diff)
    return ["", f"  vLLM prints 'GPU KV cache size: N tokens' as {figures};",
            "  the KV tokens column is the capacity for sequences of c tokens "
            "(windowed layers hold min(c, w))"]

