"""The plan table for people: one row and one bar per t, the KV-head cliff marked."""

from __future__ import annotations

from collections.abc import Sequence

from tpcheck.formula import GIB, Formula
from tpcheck.models.shape import ModelShape
from tpcheck.oneline import one_line
from tpcheck.physics import step as stepmodel
from tpcheck.physics.plan import Evaluation, Options

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


def plan_release(opts: Options) -> str:
    """The release plan's defaults and reserve assume, and where it came from (issue 19)."""
    from tpcheck.engines.release import resolve as release_for

    rel = release_for("sglang" if opts.engine == "sglang" else "vllm",
                      setting=opts.engine_version, setting_from="--engine-version")
    src = rel.source if rel.pinned else "newest known: pass --engine-version to be exact"
    return f"{rel.version} ({src})"


def render_plan(model: str, where: str, shape: ModelShape, rows: Sequence[Evaluation],
                opts: Options, it_be: tuple[Formula, Formula | None] | None,
                color: bool = False, prefill: Sequence[Formula | None] | None = None,
                link_label: str | None = None) -> str:
    out: list[str] = []
    kvdesc = (f"MLA latent {shape.mla.latent_dim}" if shape.mla else
              f"h_kv={shape.kv_heads}, d_h={shape.head_dim}")
    out.append(f"{model}  ({where})")  # the names as given (escaped with every line below)
    out.append(f"  L={shape.layers} d={shape.hidden} h={shape.heads} {kvdesc} f={shape.ffn} "
               f"V={shape.vocab} dtype={shape.dtype}"
               + (f" experts={shape.moe.num_experts}x{shape.moe.expert_ffn}" if shape.moe else ""))
    first = rows[0] if rows else None
    if first is not None:
        gpu = opts.gpu.key if opts.gpu else "-"
        mem = _gib(first.memory)
        util = "-" if first.utilization is None else f"{first.utilization.result:g}"
        out.append(f"  engine={opts.engine} {plan_release(opts)} gpu={gpu} M={mem} GiB u={util} "
                   f"context c={first.context.result:,} ({first.context.expression})")
        for k, v in first.defaults.items():
            if k != "gpu_memory_utilization":
                out.append(f"  default {k} = {v}")
    pre = list(prefill) if prefill is not None else [None] * len(rows)
    show_comm = (link_label is not None
                 and any(r.comm_share is not None for r in rows)) or any(
        p is not None for p in pre)
    if show_comm:
        n = next((p.values["n"] for p in pre if p is not None), None)
        chunk = f"share of a {n:,}-token prefill chunk" if isinstance(n, int) else "prefill -"
        over = ("the rest of the calibrated decode step" if first is not None
                and first.step is not None and first.step.source.startswith("calibrated")
                else "the decode weight-read floor")
        gpu_link = opts.gpu.link if opts.gpu else None
        across = sorted({r.tp for r in rows if r.allreduce_link not in (None, gpu_link)})
        out.append(f"  comm dec/pre: all-reduce time over {over} at "
                   f"batch {opts.batch} / {chunk}; link {link_label}"
                   + (f"; t ≥ {across[0]} spans nodes: the network (InfiniBand 8 × 400 Gb/s "
                      "per node, assumed; each message priced as `tpcheck allreduce` does)"
                      if across else ""))
    step0 = next((r.step for r in rows if r.step is not None), None)
    if step0 is not None:
        out.append(f"  tok/s/GPU: decode tokens/s per GPU at batch {opts.batch} "
                   f"({stepmodel.basis(step0)})")
    pre0 = next((r for r in rows if r.prefill is not None and r.prefill_prompt is not None),
                None)
    if pre0 is not None and pre0.prefill is not None and pre0.prefill_prompt is not None:
        out.append(f"  prefill ms: one {pre0.prefill.values['n']:,}-token chunk / a whole "
                   f"{pre0.prefill_prompt.values['c']:,}-token prompt on an idle engine "
                   f"(compute at η = {pre0.prefill.values['η']} of dense FLOP/s, assumed: "
                   "no published TTFT row calibrates it)")
    out.append("")
    hdr = (f"{'tp':>4} {'ok':>3} {'kvh/gpu':>7} {'W/gpu GiB':>9} {'KV KiB/tok':>10} "
           f"{'pool GiB':>8} {'KV tokens':>9} {'seats':>6}"
           + (f" {'tok/s/GPU':>9}" if step0 is not None else "")
           + (f" {'prefill ms':>13}" if pre0 is not None else "")
           + (f" {'comm dec/pre':>13}" if show_comm else "") + "  capacity")
    out.append(hdr)
    peak = max((float(r.tokens.result) for r in rows
                if r.tokens is not None and r.legal and r.fits is not False), default=0.0)
    cliff_at = None if shape.latent_cache else shape.kv_heads  # MLA, V4: no head axis
    for r, p in zip(rows, pre, strict=True):
        starts = r.legal and r.fits is not False
        ok = "yes" if starts else "NO"
        seats = "-" if r.seats is None or not starts else f"{r.seats.result:,}"
        bar = ""
        if r.tokens is not None and peak > 0 and starts:
            n = round(BAR * float(r.tokens.result) / peak)
            bar = "#" * n
        note = ""
        if not r.legal:
            from tpcheck.checks.registry import REFUSAL_CODES

            note = "refused: " + "; ".join(f"{REFUSAL_CODES[x.kind]} {x.check}"
                                           for x in r.refusals)
        elif r.fits is False:
            note = "does not start: " + r.fit_reason()
        elif shape.latent_cache and r.tp > 1:
            note = ("MLA latent" if shape.is_mla else "DeepSeek-V4 compressed latent") \
                + " replicated on every rank"
        elif cliff_at and r.tp > cliff_at:
            note = f"past the KV-head cliff: cache replicated {r.kv_replicas.result}x"
        elif cliff_at and r.tp == cliff_at:
            note = "<- cliff: t = h_kv, last t that divides the cache"
        out.append(f"{r.tp:>4} {ok:>3} {r.kv_heads_per_gpu.result:>7} {_gib(r.weights):>9} "
                   f"{_kib(r.kv_bytes_per_token):>10} {_gib(r.pool):>8} "
                   f"{_tok(r.tokens) if starts or not r.legal else '-':>9} "
                   f"{seats:>6}" + (f" {_rate(r):>9}" if step0 is not None else "")
                   + (f" {_prefill_ms(r):>13}" if pre0 is not None else "")
                   + (f" {_comm(r.comm_share, p):>13}" if show_comm else "")
                   + f"  {bar:<{BAR}} {note}".rstrip())
    pool_f = first.pool if first is not None else None
    if pool_f is not None and pool_f.terms and pool_f.terms[0].name == "T":
        # SGLang: no reserve is subtracted; mfs applies to T, the memory free after the CUDA
        # context and communicators (physics/sglang_memory.py).
        t_f = pool_f.terms[0]
        out.append("")
        out.append(f"  SGLang budget per GPU (at the first t, rules of SGLang "
                   f"{pool_f.values['release']}): pool = {pool_f.expression}")
        # Hybrid linear attention adds the state pool (and its per-request size) after T.
        extra = tuple(x for term in pool_f.terms[1:] for x in (term, *term.terms))
        for term in (t_f, *t_f.terms, *extra):
            out.append(f"    {term.name} = {term.expression} = {term.result / GIB:.2f} GiB")
    elif first is not None and first.reserve is not None:
        out.append("")
        out.append("  non-KV reserve R per GPU (at the first t):")
        for term in first.reserve.terms or (first.reserve,):
            out.append(f"    {term.name} = {term.expression} = {term.result / GIB:.2f} GiB")
        out.extend(_non_torch_by_t(rows, first))
    out.extend(_engine_tokens(rows))
    if it_be is not None:
        it, be = it_be
        out.append("")
        out.append(f"  interconnect intensity at t=8: {it.result:,.0f} FLOP/B ({it.expression})")
        if be is not None:
            out.append(f"  break-even t on this link: {be.result:.2f} ({be.expression})")
    out.append("")
    # every line: the engine version, the model and the paths are the user's strings
    return "\n".join(map(one_line, out))


def _non_torch_by_t(rows: Sequence[Evaluation], first: Evaluation) -> list[str]:
    """R_non_torch where it differs from the first t's (the all-reduce fusion workspace)."""
    def nt(r: Evaluation) -> float | None:
        terms = r.reserve.terms if r.reserve is not None else ()
        return next((x.result for x in terms if x.name == "R_non_torch"), None)

    base = nt(first)
    parts = [f"t={r.tp} {v / GIB:.2f}" for r in rows
             if r is not first and (v := nt(r)) is not None and v != base]
    return [f"    R_non_torch by t (GiB): {', '.join(parts)}"] if parts else []


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

