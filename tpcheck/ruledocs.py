"""The rule documents (rules/CODE.md): shipped in the wheel as tpcheck/_rules, read from the
repository's rules/ folder in an editable install."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).parent
DOC_URL = "https://github.com/tpcheck/tpcheck/blob/main/rules/{code}.md"
# Codes that are not checks on deployments but still reach reports (SARIF results, `explain`):
# code -> (name, summary). Never reused for a check.
NOTICES = {
    "TP900": ("input-unreadable",
              "A file could not be read or parsed, so nothing in it was checked."),
}


def rules_dir() -> Path | None:
    for d in (_PKG / "_rules", _PKG.parent / "rules"):
        if d.is_dir():
            return d
    return None


def doc(code: str) -> str | None:
    d = rules_dir()
    if d is None:
        return None
    p = d / f"{code.upper()}.md"
    return p.read_text(encoding="utf-8") if p.is_file() else None


def section(text: str, title: str) -> str:
    """The body of a ``## title`` section (case-insensitive prefix match)."""
    out: list[str] = []
    on = False
    for line in text.splitlines():
        if line.startswith("## "):
            on = line[3:].strip().lower().startswith(title.lower())
            continue
        if on:
            out.append(line)
    return "\n".join(out).strip()
