"""``path:line:col: CODE [severity] message``, then the formulas indented like compiler notes."""

from __future__ import annotations

from collections import Counter

from tpcheck.lint import LintResult

COLORS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
BOLD, DIM, RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def render_text(result: LintResult, *, color: bool = False, statistics: bool = False,
                quiet: bool = False) -> str:
    out: list[str] = []
    for f in result.findings:
        s = f.span
        sev = f.severity.value
        loc = f"{s.path}:{s.line}:{s.column}:"
        if color:
            head = f"{BOLD}{loc}{RESET} {COLORS[sev]}{f.code}{RESET} [{sev}] {f.message}"
        else:
            head = f"{loc} {f.code} [{sev}] {f.message}"
        out.append(head)
        if quiet:
            continue
        for fm in f.formulas:
            line = f"    = {fm.render()}"
            out.append(f"{DIM}{line}{RESET}" if color else line)
        if f.fix:
            out.append(f"    fix: {f.fix}")
    for upath, uline, utext in result.unused_ignores:
        out.append(f"{upath}:{uline}:1: unused suppression: {utext}")
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
