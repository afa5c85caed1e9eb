"""Findings → LSP values: diagnostics, hover Markdown and quick-fix edits.

Spans are 1-based with code-point columns (``end_column`` exclusive); LSP positions are 0-based
and count code units of the negotiated encoding (UTF-16 unless the client offers otherwise), so
every column goes through ``units``.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as lsp

from tpcheck.checks.base import Finding, Severity
from tpcheck.formula import Formula
from tpcheck.lsp.suppress import TextChange
from tpcheck.ruledocs import DOC_URL
from tpcheck.sources.base import SourceError, Span

SOURCE = "tpcheck"
SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}


def split_lines(text: str) -> list[str]:
    """Lines as LSP counts them (``\\n`` or ``\\r\\n``), without their line ends."""
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def units(line: str, column: int, encoding: str = "utf-16") -> int:
    """Code units of ``encoding`` in the first ``column`` code points of ``line``."""
    head = line[:max(column, 0)]
    if encoding == lsp.PositionEncodingKind.Utf32 or head.isascii():
        return len(head)
    # surrogatepass: an editor may hold a lone surrogate (JSON's "\ud800"); it is one UTF-16
    # unit to the client, and strict encoding raised, so the document got no diagnostics.
    if encoding == lsp.PositionEncodingKind.Utf8:
        return len(head.encode("utf-8", "surrogatepass"))
    return len(head.encode("utf-16-le", "surrogatepass")) // 2


def code_points(line: str, character: int, encoding: str = "utf-16") -> int:
    """The inverse of ``units``: the code-point column for an LSP character offset."""
    if encoding == lsp.PositionEncodingKind.Utf32 or line.isascii():
        return min(character, len(line))
    n = 0
    for i, ch in enumerate(line):
        if n >= character:
            return i
        if encoding == lsp.PositionEncodingKind.Utf8:
            n += len(ch.encode("utf-8", "surrogatepass"))
        else:
            n += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


def position(lines: Sequence[str], line0: int, col0: int, encoding: str) -> lsp.Position:
    if not lines:
        return lsp.Position(0, 0)
    if line0 >= len(lines):
        return lsp.Position(len(lines) - 1, units(lines[-1], len(lines[-1]), encoding))
    line0 = max(line0, 0)
    return lsp.Position(line0, units(lines[line0], col0, encoding))


def span_range(span: Span, lines: Sequence[str], encoding: str = "utf-16") -> lsp.Range:
    return lsp.Range(position(lines, span.line - 1, span.column - 1, encoding),
                     position(lines, span.end_line - 1, span.end_column - 1, encoding))


def change_range(c: TextChange, lines: Sequence[str], encoding: str = "utf-16") -> lsp.Range:
    return lsp.Range(position(lines, c.line, c.column, encoding),
                     position(lines, c.end_line, c.end_column, encoding))


def diagnostic(f: Finding, lines: Sequence[str], uri: str, name: str,
               encoding: str = "utf-16", uri_of: dict[str, str] | None = None) -> lsp.Diagnostic:
    """One finding as a diagnostic; related spans in the same file point into the document."""
    related = []
    for sp, text in f.related:
        target = uri if sp.path == name else (uri_of or {}).get(sp.path)
        if target is None:
            continue
        related.append(lsp.DiagnosticRelatedInformation(
            lsp.Location(target, span_range(sp, lines, encoding)), text))
    return lsp.Diagnostic(  # the headline; the evidence and the fix are the hover's
        range=span_range(f.span, lines, encoding),
        message=f.message,
        severity=SEVERITY[f.severity],
        code=f.code,
        code_description=lsp.CodeDescription(href=DOC_URL.format(code=f.code)),
        source=SOURCE,
        related_information=related or None,
        data={"code": f.code, "name": f.name},
    )


def error_diagnostic(e: SourceError, lines: Sequence[str], name: str,
                     encoding: str = "utf-16") -> lsp.Diagnostic:
    """A read error (malformed YAML mid-edit, bad settings) at its position, to the line's end."""
    line0 = max(e.line - 1, 0) if e.path == name else 0
    message = e.message if e.path == name else str(e)
    if lines and line0 < len(lines):
        text = lines[line0]
        col0 = min(max(e.column - 1, 0), len(text))
        end = len(text) if col0 < len(text) else col0
        rng = lsp.Range(position(lines, line0, col0, encoding),
                        position(lines, line0, end, encoding))
    else:
        rng = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    return lsp.Diagnostic(range=rng, message=message, severity=lsp.DiagnosticSeverity.Error,
                          source=SOURCE)


def contains(span: Span, line0: int, col0: int) -> bool:
    """Whether the 0-based code-point position touches the span (its end counts: the cursor
    right after ``16`` is still on it)."""
    start = (span.line - 1, span.column - 1)
    end = (span.end_line - 1, span.end_column - 1)
    return start <= (line0, col0) <= end


def overlaps(span: Span, start: tuple[int, int], end: tuple[int, int]) -> bool:
    """Whether the span and the 0-based code-point range [start, end] share a position."""
    s = (span.line - 1, span.column - 1)
    e = (span.end_line - 1, span.end_column - 1)
    return s <= end and start <= e


def _formula_lines(f: Formula, depth: int = 0) -> list[str]:
    out = ["  " * depth + f.render()]
    for t in f.terms:
        out.extend(_formula_lines(t, depth + 1))
    return out


def hover_markdown(findings: Sequence[Finding]) -> str:
    """Each finding's headline, then its evidence (notes, formulas with their values,
    alternatives, assumptions) and fix, as the CLI prints them."""
    parts: list[str] = []
    for f in findings:
        block = [f"**{f.code}** `{f.name}` ({f.severity.value}): {f.message}"]
        if f.notes:
            block += ["", *(f"- {n}" for n in f.notes)]
        if f.formulas:
            rendered = [ln for x in f.formulas for ln in _formula_lines(x)]
            block += ["", "```text", *rendered, "```"]
            sources = sorted({x.source for x in f.formulas if x.source})
            if sources:
                block += ["", "Sources: " + "; ".join(sources)]
        if f.alternatives:
            block += ["", *(f"- instead: {a.text}" for a in f.alternatives)]
        if f.assumptions:
            block += ["", *(f"- assumes: {a.text}" for a in f.assumptions)]
        if f.fix:
            block += ["", f"**Fix:** {f.fix}"]
        block += ["", f"[{f.code} documentation]({DOC_URL.format(code=f.code)})"]
        parts.append("\n".join(block))
    return "\n\n---\n\n".join(parts)


__all__ = [
    "SEVERITY",
    "SOURCE",
    "change_range",
    "code_points",
    "contains",
    "diagnostic",
    "error_diagnostic",
    "hover_markdown",
    "overlaps",
    "span_range",
    "split_lines",
    "units",
]
