"""``tpcheck diff`` in text, JSON and markdown: one sentence per deployment that changed, verdict
first (``qwen.yaml: TP 8 → 16: seats 61 → 65 (1.07×) for 2× the GPUs (8 → 16)``), then the
findings the change brings and the ones it resolves. What did not change is not printed."""

from __future__ import annotations

import json

from tpcheck.checks.base import Finding
from tpcheck.diff import DeploymentDiff, DiffResult, Figures, FileDiff, speed_shown
from tpcheck.oneline import one_line
from tpcheck.report.markdown import cell, escape

GIB = float(1 << 30)
LAYOUT = (("engine", "engine"), ("model", "model"), ("gpu", "GPU"), ("tp", "TP"), ("pp", "PP"),
          ("dp", "DP"), ("context", "context"), ("kv_cache_dtype", "KV cache"),
          ("max_num_seqs", "max-num-seqs"))


def _n(v: object, name: str = "") -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    if v is None:
        return "auto" if name == "kv_cache_dtype" else "none"
    return str(v)


def _times(x: float) -> str:
    return f"{x:.2f}×" if abs(x - round(x)) > 0.005 else f"{round(x)}×"


def _gib(v: float | None) -> str:
    return "?" if v is None else f"{v / GIB:.1f}"


def _speed(f: Figures) -> str:
    assert f.tokens_per_second is not None
    return speed_shown(f.tokens_per_second)


def state(f: Figures) -> str:
    """One side alone, for a deployment added or removed."""
    parts = [f"TP {f.tp}" + (f" × PP {f.pp}" if f.pp > 1 else "")
             + (f" × {f.dp} replicas" if f.dp > 1 else ""),
             f"{f.gpus} GPU{'s' if f.gpus != 1 else ''}" + (f" {f.gpu}" if f.gpu else "")]
    if f.problem:
        return ", ".join(parts) + f" ({f.problem})"
    if f.refusals:
        return ", ".join(parts) + f": refused ({', '.join(f.refusals)})"
    if f.starts is False:
        return ", ".join(parts) + ": does not start (the weights leave no KV pool)"
    if f.seats is not None and f.context is not None:
        parts.append(f"{f.seats:,} seats at {f.context:,} tokens")
    if f.tokens_per_second is not None:
        parts.append(f"{_speed(f)} tokens/s ({f.speed_basis})")
    return ", ".join(parts)


def sentence(d: DeploymentDiff) -> str:
    """What the change does to one deployment, verdict first."""
    a, b = d.before, d.after
    if a is None:
        assert b is not None
        return f"added: {state(b)}"
    if b is None:
        return f"removed (was {state(a)})"
    changed = {c.field for c in d.changes}
    seats = "seats" in changed and a.seats is not None and b.seats is not None
    head = _layout_changes(a, b, changed, seats=seats)
    effects = _effects(a, b, changed, seats=seats)
    if not head and not effects:
        return ", ".join(f"{c.field} {_n(c.before)} → {_n(c.after)}" for c in d.changes)
    return ": ".join(x for x in (", ".join(head), "; ".join(effects)) if x)


def _layout_changes(a: Figures, b: Figures, changed: set[str], *, seats: bool) -> list[str]:
    """The layout fields that changed, in LAYOUT's order; the GPU count only when no seats
    clause will carry it."""
    head = [f"{label} {_n(getattr(a, name), name)} → {_n(getattr(b, name), name)}"
            for name, label in LAYOUT if name in changed]
    if "gpus" in changed and not seats:
        head.append(f"GPUs {a.gpus} → {b.gpus}")
    return head


def _effects(a: Figures, b: Figures, changed: set[str], *, seats: bool) -> list[str]:
    """The clauses after the layout: whether it starts or is refused, then the figures."""
    effects: list[str] = []
    if "problem" in changed and b.problem:
        effects.append(f"no capacity figures: {b.problem}")
    if "refusals" in changed:
        effects.append(_refusal_change(a, b))
    elif "starts" in changed and b.starts is not None and a.starts is not None:
        effects.append("now starts" if b.starts else
                       "no longer starts: the weights leave no KV pool")
    if seats:
        effects.append(_seats_change(a, b, changed))
    if "kv_tokens" in changed and a.pool_bytes is not None and b.pool_bytes is not None:
        effects.append(f"KV pool {_gib(a.pool_bytes)} → {_gib(b.pool_bytes)} GiB per GPU "
                       f"({_n(a.kv_tokens)} → {_n(b.kv_tokens)} tokens)")
    if "tokens_per_second" in changed:
        effects += _speed_change(a, b)
    return effects


def _refusal_change(a: Figures, b: Figures) -> str:
    """Newly refused, no longer refused, or refused for other reasons."""
    if b.refusals and not a.refusals:
        return f"now refused ({', '.join(b.refusals)})"
    if a.refusals and not b.refusals:
        return "no longer refused"
    return f"refused for {', '.join(b.refusals)}, not {', '.join(a.refusals)}"


def _seats_change(a: Figures, b: Figures, changed: set[str]) -> str:
    """Seats before and after, their ratio, and the GPU ratio that bought it."""
    assert a.seats is not None and b.seats is not None
    gain = f" ({_times(b.seats / a.seats)})" if a.seats > 0 else ""
    gpus = (f" for {_times(b.gpus / a.gpus)} the GPUs ({a.gpus} → {b.gpus})"
            if "gpus" in changed and a.gpus else "")
    return f"seats {a.seats:,} → {b.seats:,}{gain}{gpus}"


def _speed_change(a: Figures, b: Figures) -> list[str]:
    """Decode speed before and after (with both bases when they differ), or the new one alone."""
    if a.tokens_per_second and b.tokens_per_second:
        basis = b.speed_basis if a.speed_basis == b.speed_basis else \
            f"{a.speed_basis} → {b.speed_basis}"
        return [f"decode {_speed(a)} → {_speed(b)} tokens/s "
                f"({_times(b.tokens_per_second / a.tokens_per_second)}, {basis})"]
    if b.tokens_per_second:
        return [f"decode {_speed(b)} tokens/s ({b.speed_basis})"]
    return []


def label(f: FileDiff, d: DeploymentDiff) -> str:
    return f"{f.path}:{d.line}" if f.several else f.path


def _finding_line(f: Finding) -> str:
    s = f.span
    return one_line(f"{s.path}:{s.line}:{s.column}: {f.code} [{f.severity.value}] {f.message}")


def _tally(result: DiffResult) -> str:
    deps = [d for f in result.files for d in f.deployments]
    n = {k: sum(1 for d in deps if d.status == k) for k in ("changed", "added", "removed")}
    new = sum(len(f.new) for f in result.files)
    gone = sum(len(f.resolved) for f in result.files)
    bits = [f"{n['changed']} deployment{'s' if n['changed'] != 1 else ''} changed"]
    bits += [f"{n[k]} {k}" for k in ("added", "removed") if n[k]]
    bits += [f"{new} new finding{'s' if new != 1 else ''}" for _ in [0] if new]
    bits += [f"{gone} resolved" for _ in [0] if gone]
    files = f"{result.compared} file{'s' if result.compared != 1 else ''} compared"
    return f"{', '.join(bits)} against {against(result)}; {files}"


def against(result: DiffResult) -> str:
    """``HEAD (1a2b3c4d5e6f)``; a revision given as its commit's hash is said once."""
    short = result.commit[:12]
    return short if result.commit.startswith(result.rev) and len(result.rev) >= 7 \
        else f"{result.rev} ({short})"


def render_diff_text(result: DiffResult) -> str:
    out: list[str] = []
    for f in result.files:
        for d in f.deployments:
            out.append(one_line(f"{label(f, d)}: {sentence(d)}"))
        if not f.deployments:
            out.append(one_line(f"{f.path}: the same layouts and figures; the findings changed"))
        out += [f"  + {_finding_line(x)}" for x in f.new]
        out += [f"  - {_finding_line(x)}" for x in f.resolved]
    if not result.files:
        files = f"{result.compared} file{'s' if result.compared != 1 else ''} compared"
        out.append(f"no deployment changed against {against(result)}; {files}")
    else:
        out.append(_tally(result))
    return "\n".join(out) + "\n"


def render_diff_json(result: DiffResult) -> str:
    files = []
    for f in result.files:
        files.append({
            "path": f.path,
            "status": f.status,
            "deployments": [{
                "line": d.line,
                "status": d.status,
                "summary": sentence(d),
                "before": d.before.to_json() if d.before else None,
                "after": d.after.to_json() if d.after else None,
                "changes": [{"field": c.field,
                             "before": list(c.before) if isinstance(c.before, tuple) else c.before,
                             "after": list(c.after) if isinstance(c.after, tuple) else c.after}
                            for c in d.changes],
            } for d in f.deployments],
            "new_findings": [x.to_json() for x in f.new],
            "resolved_findings": [x.to_json() for x in f.resolved],
        })
    doc = {"rev": result.rev, "commit": result.commit, "files": files,
           "errors": [e.to_json() for e in result.errors],
           "summary": {"files_compared": result.compared,
                       **{k: sum(1 for f in result.files for d in f.deployments
                                 if d.status == k) for k in ("changed", "added", "removed")},
                       "new_findings": sum(len(f.new) for f in result.files),
                       "resolved_findings": sum(len(f.resolved) for f in result.files)}}
    return json.dumps(doc, indent=2, default=str) + "\n"


def render_diff_markdown(result: DiffResult) -> str:
    out = [f"### tpcheck diff against {escape(against(result))}", ""]
    if not result.files:
        out.append(f"No deployment changed ({result.compared} files compared).")
        return "\n".join(out + _markdown_errors(result)) + "\n"
    rows = [(label(f, d), sentence(d)) for f in result.files for d in f.deployments]
    if rows:
        out += ["| deployment | what the change does |", "|---|---|"]
        out += [f"| {cell(w)} | {cell(s)} |" for w, s in rows]
        out.append("")
    found = [("new", x) for f in result.files for x in f.new]
    found += [("resolved", x) for f in result.files for x in f.resolved]
    if found:
        out += ["| finding | where | rule | headline |", "|---|---|---|---|"]
        for kind, x in found:
            s = x.span
            out.append(f"| {kind} | {cell(f'{s.path}:{s.line}:{s.column}')} | "
                       f"{x.code} {x.severity.value} | {cell(x.message)} |")
        out.append("")
    out.append(escape(_tally(result)) + ".")
    return "\n".join(out + _markdown_errors(result)) + "\n"


def _markdown_errors(result: DiffResult) -> list[str]:
    if not result.errors:
        return []
    n = len(result.errors)
    return ["", f"**{n} input error{'s' if n != 1 else ''}** (exit 2):", "",
            *(f"- {escape(str(e))}" for e in result.errors)]


def render_diff(fmt: str, result: DiffResult) -> str:
    if fmt == "json":
        return render_diff_json(result)
    if fmt == "markdown":
        return render_diff_markdown(result)
    return render_diff_text(result)
