"""Inline ``# tpcheck: ignore`` comments: read apart from the run so the editor shares them."""

from __future__ import annotations

import re

from tpcheck.checks.base import Finding
from tpcheck.deferred import lazy_re
from tpcheck.record import record

IGNORE_RE = lazy_re(r"#\s*tpcheck:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?", re.IGNORECASE)


@record
class Suppression:
    line: int
    codes: frozenset[str] | None  # None: every code


def inline_suppressions(text: str | None) -> list[Suppression]:
    """``# tpcheck: ignore[TP201, TP203]`` or a bare ``# tpcheck: ignore`` comment per line."""
    if not text or "tpcheck" not in text:
        return []
    out: list[Suppression] = []
    for i, line in enumerate(text.splitlines(), start=1):
        m = IGNORE_RE.search(line)
        if m:
            codes = None if m.group(1) is None else frozenset(
                c.strip().upper() for c in m.group(1).split(",") if c.strip())
            out.append(Suppression(i, codes))
    return out


def suppressed_by(f: Finding, sups: list[Suppression], launch_line: int) -> Suppression | None:
    """A comment on the finding's line or the line above, or on the line above the launch
    (a shell command continued with ``\\`` cannot hold a comment on its inner lines)."""
    lines = (f.span.line, f.span.line - 1, launch_line - 1)
    for s in sups:
        if s.line in lines and (s.codes is None or f.code in s.codes):
            return s
    return None



__all__ = ["IGNORE_RE", "Suppression", "inline_suppressions", "suppressed_by"]
