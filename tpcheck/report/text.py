"""``path:line:col: CODE [severity] headline``, then the evidence indented like compiler notes.

The headline is the finding's verdict in one clause; the evidence (notes, formulas,
alternatives, assumptions) and the fix follow on indented lines wrapped to the terminal's width
(80 columns when the output is not a terminal, never more than 100). ``concise`` prints the
headline line alone, one line per finding; ``quiet`` keeps the headline and the fix.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

from tpcheck.checks.base import Finding
from tpcheck.oneline import one_line
from tpcheck.record import replace
from tpcheck.result import LintResult

COLORS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
BOLD, DIM, RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"
NOT_A_TERMINAL_WIDTH = 80
MAX_WIDTH = 100
INDENT = "    "


def terminal_width() -> int:
    """The terminal's columns (at most 100), or 80 when stdout is not a terminal."""
    try:
        if not sys.stdout.isatty():
            return NOT_A_TERMINAL_WIDTH
        cols = os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return NOT_A_TERMINAL_WIDTH
    return max(40, min(cols, MAX_WIDTH))


def wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """``text`` on lines of at most ``width`` columns, the first prefixed ``first``, the others
    ``rest``; a word longer than a line (a path, a URL) is broken only when it must be."""
    words = one_line(text).split(" ")
    lines: list[str] = []
    line = first
    start = True
    for w in words:
        if not w:
            continue
        room = width - len(line) - (0 if start else 1)
        if len(w) <= room:
            line = line + w if start else f"{line} {w}"
            start = False
            continue
        if not start:
            lines.append(line)
            line, start = rest, True
        while len(rest) + len(w) > width:  # a single word wider than a line: cut it
            cut = width - len(line)
            lines.append(line + w[:cut])
            w = w[cut:]
            line = rest
        line, start = line + w, False
    lines.append(line)
    return lines


def evidence_lines(f: Finding, width: int, *, fix: bool = True) -> list[str]:
    """The finding's detail under its headline: notes, formulas, alternatives, assumptions,
    then the fix, each wrapped to ``width``."""
    out: list[str] = []
    for note in f.notes:
        out += wrap(note, width, INDENT, INDENT + "  ")
    for fm in f.formulas:
        out += wrap(fm.render(), width, INDENT + "= ", INDENT + "    ")
    for alt in f.alternatives:
        out += wrap(alt.text, width, INDENT + "instead: ", INDENT + "  ")
    for a in f.assumptions:
        out += wrap(a.text, width, INDENT + "assumes: ", INDENT + "  ")
    if fix and f.fix:
        out += wrap(f.fix, width, INDENT + "fix: ", INDENT + "  ")
    return out


def render_text(result: LintResult, *, color: bool = False, statistics: bool = False,
                quiet: bool = False, concise: bool = False, width: int | None = None) -> str:
    text = TextLines(color=color, quiet=quiet, concise=concise, width=width)
    out = text.findings(result.findings)
    counts = Counter((f.code, f.name) for f in result.findings) if statistics else None
    out += text.tail(result, len(result.findings), counts,
                     sum(f.fixable for f in result.findings))
    return "\n".join(out) + ("\n" if out else "")


class TextLines:
    """The text report's lines, finding by finding (a run's findings may come file by file:
    ``report.stream``), then its tail. It remembers the last headline, so another refusal of
    the same token with the same fix is said under it, whichever batch it came in."""

    def __init__(self, *, color: bool = False, quiet: bool = False, concise: bool = False,
                 width: int | None = None) -> None:
        self.width = min(width or terminal_width(), MAX_WIDTH)
        self.color, self.quiet, self.concise = color, quiet, concise
        self.lead: Finding | None = None

    def findings(self, found: list[Finding]) -> list[str]:
        out: list[str] = []
        for f in found:
            self._one(f, out)
        return out

    def _one(self, f: Finding, out: list[str]) -> None:
        color, quiet, concise, width, lead = (self.color, self.quiet, self.concise, self.width,
                                              self.lead)
        s = f.span
        sev = f.severity.value
        code = f"{COLORS[sev]}{f.code}{RESET}" if color else f.code
        headline = one_line(f.message)
        if (not concise and lead is not None and lead.span == s and f.fix == lead.fix
                and f.fix):
            # One mistake, one screen: another refusal of the same token with the same fix
            # (TP101-TP104 for one t) is said under the first, its fix not repeated.
            out.append(f"  + {code} [{sev}] {headline}")
            if not quiet:  # its own evidence: what the first one said is not repeated
                own = replace(f, notes=tuple(n for n in f.notes if n not in lead.notes),
                              assumptions=tuple(a for a in f.assumptions
                                                if a not in lead.assumptions))
                out += _dim(evidence_lines(own, width, fix=False), color)
            return
        self.lead = f
        loc = f"{one_line(s.path)}:{s.line}:{s.column}:"  # a path or value never breaks the line
        star = "[*] " if f.fixable else ""  # ruff's mark: --fix can make this one's edit
        if color:
            out.append(f"{BOLD}{loc}{RESET} {code} {star}[{sev}] {headline}")
        else:
            out.append(f"{loc} {code} {star}[{sev}] {headline}")
        if concise:
            return
        if quiet:
            if f.fix:
                out += wrap(f.fix, width, INDENT + "fix: ", INDENT + "  ")
            return
        detail = evidence_lines(f, width, fix=False)
        out += _dim(detail, color)
        if f.fix:
            out += wrap(f.fix, width, INDENT + "fix: ", INDENT + "  ")

    def tail(self, result: LintResult, n: int, counts: Counter[tuple[str, str]] | None,
             fixable: int) -> list[str]:
        """After the findings: unused suppressions, the statistics (``counts`` per code and
        name, None when not asked for) and the summary line of ``n`` findings, ``fixable`` of
        them with --fix."""
        out: list[str] = []
        for upath, uline, utext in result.unused_ignores:
            out.append(one_line(f"{upath}:{uline}:1: unused suppression: {utext}"))
        if counts:
            out.append("")
            for (c, name), k in sorted(counts.items()):
                out.append(f"{k:>5}  {c}  {name}")
        if not self.quiet and not self.concise:
            tail = (f"{n} finding{'s' if n != 1 else ''} in {result.deployments} "
                    f"deployment{'s' if result.deployments != 1 else ''} "
                    f"({result.files} file{'s' if result.files != 1 else ''} read")
            if result.suppressed:
                tail += f", {result.suppressed} suppressed"
            tail += ")"
            out.append(tail)
            if fixable:
                out.append(f"[*] {fixable} fixable with --fix (--diff shows the change)")
        return out


def _dim(lines: list[str], color: bool) -> list[str]:
    return [f"{DIM}{ln}{RESET}" for ln in lines] if color else lines
