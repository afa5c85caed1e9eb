"""Code actions: which findings a request is about, their fixes as verified text changes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types as lsp

from tpcheck.checks.base import Edit, Finding
from tpcheck.lsp import convert
from tpcheck.lsp.published import Published
from tpcheck.lsp.suppress import TextChange, ignore_change


def hits_of(pub: Published, params: lsp.CodeActionParams,
            lines: list[str]) -> list[tuple[Finding, lsp.Diagnostic]]:
    """Findings the request is about: on the lines of its range (the cursor anywhere on a
    diagnosed line), or named in ``context.diagnostics``."""
    r = params.range
    asked = {(d.range.start.line, str(d.code)) for d in params.context.diagnostics or ()}
    out = []
    for f, d in zip(pub.findings, pub.diagnostics, strict=False):
        on_lines = r.start.line <= d.range.start.line <= r.end.line or (
            d.range.start.line <= r.start.line <= d.range.end.line)
        if on_lines or (d.range.start.line, f.code) in asked:
            out.append((f, d))
    return out

def offer(merged: dict[tuple[object, ...], lsp.CodeAction], title: str,
          changes: Sequence[TextChange], d: lsp.Diagnostic, uri: str, lines: list[str],
          enc: str, preferred: bool) -> None:
    key = (title, *((c.path, c.line, c.column, c.end_line, c.end_column, c.new_text)
                    for c in changes))
    action = merged.get(key)
    if action is not None:
        if d not in (action.diagnostics or ()):
            action.diagnostics = [*(action.diagnostics or ()), d]
        return
    by_uri: dict[str, list[lsp.TextEdit]] = {}
    for c in changes:
        target, at = (uri, lines) if c.path is None else (Path(c.path).as_uri(),
                                                          _file_lines(c.path))
        by_uri.setdefault(target, []).append(
            lsp.TextEdit(convert.change_range(c, at, enc), c.new_text))
    merged[key] = lsp.CodeAction(
        title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[d],
        is_preferred=preferred or None, edit=lsp.WorkspaceEdit(changes=by_uri))


def finding_changes(text: str, kind: str, name: str, findings: Sequence[Finding],
                    ) -> tuple[list[list[tuple[Edit, list[TextChange]]]], list[TextChange | None]]:
    """Each finding's fixes as verified text changes, and its ignore comment (a worker thread)."""
    from tpcheck.lsp.fixes import changes_for, verified

    lines = text.split("\n")
    fixes = []
    for f in findings:
        mine = []
        for e in f.edits:
            if e.also or not _same_file(e.span.path, name):
                # written elsewhere (values.yaml) or with a GPU request: --fix's own changes
                moved = _changes_elsewhere(f, e, text, name)
                if moved is not None:
                    mine.append((e, moved))
                continue
            changes = changes_for(e, lines, kind)
            if changes is None:
                continue
            if e.add_option is not None and not verified(
                    text, name, changes, "data_parallel_size", int(e.add_option[1])):
                continue
            mine.append((e, changes))
        fixes.append(mine)
    return fixes, _ignore_changes(text, kind, name, findings)


def _same_file(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _file_lines(path: str) -> list[str]:
    try:
        return convert.split_lines(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError):
        return []


def _changes_elsewhere(f: Finding, e: Edit, text: str, name: str) -> list[TextChange] | None:
    """An edit whose value is written in another file (a Helm chart's values.yaml), or that
    carries more changes (the GPU request), as the text changes ``--fix`` makes: the document
    as the editor has it, the other files as they are on disk."""
    from tpcheck.report.fix import Texts, changes_for

    texts = Texts()
    key = os.path.abspath(name)
    texts.original[key] = texts.current[key] = text
    got = changes_for(f, e, texts)
    if isinstance(got, str):
        return None
    out = []
    for c in got:
        body = texts.current[c.path]
        a_line, a_col = _line_col(body, c.start)
        b_line, b_col = _line_col(body, c.end)
        out.append(TextChange(a_line, a_col, b_line, b_col, c.new_text, e.title,
                              None if c.path == key else c.path))
    return out


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """0-based line and code-point column of ``offset``."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start


def _ignore_changes(text: str, kind: str, name: str,
                    findings: Sequence[Finding]) -> list[TextChange | None]:
    return [ignore_change(text, kind, f.span.line, f.code, name) for f in findings]


__all__ = ["finding_changes", "hits_of", "offer"]
