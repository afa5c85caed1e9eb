"""``path:line:col: CODE [severity] message``, then the formulas indented like compiler notes."""

from __future__ import annotations

from collections import Counter

from tpcheck.checks.base import Finding
from tpcheck.lint import LintResult
from tpcheck.oneline import one_line

SHARED_MIN = 24  # characters two messages must share, ending at ": ", to count as one statement


def _own_reason(lead: Finding, f: Finding) -> str | None:
    """What ``f`` says beyond ``lead``: its message without the statement both open with and
    the tail both close with; None when they do not repeat one statement."""
    a, b = lead.message, f.message
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    cut = a.rfind(": ", 0, n)
    if cut < SHARED_MIN:
        return None
    rest = b[cut + 2:]
    m = 0  # the tail both close with ("Legal sizes for this model: ...")
    while m < min(len(a), len(rest)) and a[-1 - m] == rest[-1 - m]:
        m += 1
    k = rest.find(". ", len(rest) - m) if m else -1
    return rest[: k + 1] if k > 0 else rest

COLORS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
BOLD, DIM, RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def render_text(result: LintResult, *, color: bool = False, statistics: bool = False,
                quiet: bool = False) -> str:
    out: list[str] = []
    lead: Finding | None = None
    for f in result.findings:
        s = f.span
        sev = f.severity.value
        reason = _own_reason(lead, f) if lead is not None and lead.span == s else None
        if reason is not None and lead is not None:
            # One mistake, one screen: a finding on the lead's span that repeats its statement
            # (TP101-TP104 for one t) says only its own reason; JSON/SARIF keep it whole.
            code = f"{COLORS[sev]}{f.code}{RESET}" if color else f.code
            out.append(f"  + {code} [{sev}] {one_line(reason)}")
            if f.fix and f.fix != lead.fix and not quiet:
                out.append(f"    fix: {one_line(f.fix)}")
            continue
        lead = f
        loc = f"{one_line(s.path)}:{s.line}:{s.column}:"  # a path or value never breaks the line
        message = one_line(f.message)
        if color:
            head = f"{BOLD}{loc}{RESET} {COLORS[sev]}{f.code}{RESET} [{sev}] {message}"
        else:
            head = f"{loc} {f.code} [{sev}] {message}"
        out.append(head)
        if quiet:
            continue
        for fm in f.formulas:
            line = f"    = {one_line(fm.render())}"
            out.append(f"{DIM}{line}{RESET}" if color else line)
        if f.fix:
            out.append(f"    fix: {one_line(f.fix)}")
    for upath, uline, utext in result.unused_ignores:
        out.append(one_line(f"{upath}:{uline}:1: unused suppression: {utext}"))
    if statistics and result.findings:
        counts = Counter((f.code, f.name) for f in result.findings)
        out.append("")
        for (code, name), n in sorted(counts.items()):
            out.append(f"{n:>5}  {code}  {name}")
    if not quiet:
        n = len(result.findings)
        tail = (f"{n} finding{'s' if n != 1 else ''} in {result.deployments} "
                f"deployment{'s' if result.deployments != 1 else ''} "
                f"({result.files} file{'s' if result.files != 1 else ''} read")
        if result.suppressed:
            tail += f", {result.suppressed} suppressed"
        tail += ")"
        out.append(tail)
    return "\n".join(out) + ("\n" if out else "")
