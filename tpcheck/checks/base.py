"""Findings: what a rule says about one deployment, pointing at the token that causes it."""

from __future__ import annotations

from enum import Enum

from tpcheck.formula import Formula
from tpcheck.record import field, record
from tpcheck.sources.base import Span


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@record
class Edit:
    """A mechanical fix: replace the text at ``span`` with ``new_text`` (LSP code actions).

    ``add_option`` (flag, value) is added after the replaced value in the same edit, written in
    the syntax of the file (the editor knows it; a rule does not). ``preferred`` False: the fix
    is offered but trades this finding for another (e.g. idle GPUs, TP401).
    """

    span: Span
    new_text: str
    title: str
    add_option: tuple[str, str] | None = None
    preferred: bool = True


@record
class Finding:
    code: str
    name: str
    severity: Severity
    message: str
    span: Span
    formulas: tuple[Formula, ...] = ()
    fix: str | None = None
    edits: tuple[Edit, ...] = ()
    related: tuple[tuple[Span, str], ...] = field(default=())

    @property
    def formula(self) -> Formula | None:
        return self.formulas[0] if self.formulas else None

    def to_json(self) -> dict[str, object]:
        f = self.formula
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.span.path,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "formula": f.to_json() if f else None,
            "formulas": [x.to_json() for x in self.formulas],
            "fix": self.fix,
            "related": [{**sp.to_json(), "message": text} for sp, text in self.related],
        }
