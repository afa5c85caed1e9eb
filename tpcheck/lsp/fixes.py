"""Quick fixes as text changes: a rule's ``Edit`` in the syntax of the document.

A rule knows which value to change and which option to add (``Edit.add_option``) but not how
the file spells an option: a shell word, a YAML block or flow list item, a Python keyword. The
added option is written the way the line around the value already is, then the whole change is
read back with tpcheck's own reader and kept only if the deployment now has both values.
"""

from __future__ import annotations

import re

from tpcheck.checks.base import Edit
from tpcheck.lsp.suppress import TextChange, apply_change

_BLOCK_ITEM = re.compile(r"^(\s*)-\s")
_AFTER_FLOW_ITEM = re.compile(r"^\s*[,\]]")
_KWARG = re.compile(r"\b[a-z_]+\s*=\s*$")


def changes_for(edit: Edit, lines: list[str], kind: str) -> list[TextChange] | None:
    """The edit as text changes (0-based, code points), or None when the added option cannot be
    written safely on this line."""
    s = edit.span
    replace = TextChange(s.line - 1, s.column - 1, s.end_line - 1, s.end_column - 1,
                         edit.new_text, edit.title)
    if edit.add_option is None:
        return [replace]
    insert = _insertion(lines, edit, kind)
    return None if insert is None else [replace, insert]


def _insertion(lines: list[str], edit: Edit, kind: str) -> TextChange | None:
    assert edit.add_option is not None
    flag, value = edit.add_option
    s = edit.span
    if not 1 <= s.end_line <= len(lines):
        return None
    line0 = s.end_line - 1
    line = lines[line0].rstrip("\r")
    start, end = s.column - 1, s.end_column - 1
    quote = line[end] if end < len(line) and line[end] in "\"'" else ""
    after = end + len(quote)
    opened = line[start - 1] if quote and start > 0 else ""

    def at(col: int, text: str) -> TextChange:
        return TextChange(line0, col, line0, col, text, edit.title)

    if kind == "python":
        if not _KWARG.search(line[:start]):
            return None
        return at(after, f", {flag.lstrip('-').replace('-', '_')}={value}")
    if kind == "shell":
        return at(after, f" {flag} {value}")
    if kind != "yaml":
        return None
    item = _BLOCK_ITEM.match(line)
    if item and line[item.end():start].strip(" \"'") == "":
        # `- "16"` on its own line: two more items below it, indented and quoted alike.
        indent = item.group(1)
        v = f"{opened}{value}{quote}" if opened == quote else value
        eol = "\r" if lines[line0].endswith("\r") else ""
        return TextChange(line0, len(line), line0, len(line),
                          f"{eol}\n{indent}- {flag}{eol}\n{indent}- {v}", edit.title)
    if quote and opened == quote and _AFTER_FLOW_ITEM.match(line[after:]):
        # ["--tensor-parallel-size", "16"] — a flow sequence: two more items after this one.
        return at(after, f", {quote}{flag}{quote}, {quote}{value}{quote}")
    if not quote and (after == len(line) or line[after] in " \t\"'"):
        # Inside one command string (`sh -c "vllm serve ... --tp 16"`, a block scalar).
        return at(after, f" {flag} {value}")
    return None


def verified(text: str, name: str, changes: list[TextChange], field: str, value: int) -> bool:
    """Whether the changed text still reads, with ``field`` = ``value`` on a deployment."""
    from tpcheck.sources import read_path

    new = text
    for c in sorted(changes, key=lambda c: (c.line, c.column), reverse=True):
        new = apply_change(new, c)
    try:
        rr = read_path(name, new)
    except Exception:  # an unreadable result is simply not offered
        return False
    return not rr.errors and any(getattr(d, field) == value for d in rr.deployments)
