"""Findings: what a rule says about one deployment, pointing at the token that causes it.

A finding is a headline plus evidence. ``message`` is the headline: one clause, the verdict
first with its key number (ruff's and ShellCheck's line, not a paragraph). Everything else is
data the reports lay out as they need: ``notes`` (the statements behind the verdict),
``formulas`` (the figures, with their typed flags), ``alternatives`` (the layouts that would do
better, with their figures), ``assumptions`` (the engine release, the model hint, the GPU or
link taken in place of what the file does not say) and ``fix``.
"""

from __future__ import annotations

from enum import Enum

from tpcheck.formula import Formula
from tpcheck.record import field, record
from tpcheck.sources.base import Span

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from tpcheck.formula import Scalar


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@record
class Edit:
    """A mechanical fix: replace the text at ``span`` with ``new_text`` (LSP code actions,
    ``--fix``). ``span`` is where the value is written (values.yaml for a Helm template's
    value, the patch for a kustomize overlay's), which may not be where the finding points.

    ``add_option`` (flag, value) is added after the replaced value in the same edit, written in
    the syntax of the file (the editor knows it; a rule does not). ``also``: further
    replacements that belong to the same fix (the GPU request that follows a new TP size, so
    the fix does not trade the finding for a TP401). ``preferred`` False: the fix is offered but
    trades this finding for another (e.g. idle GPUs, TP401); at most one edit of a finding is
    preferred, and that is the one ``--fix`` applies.
    """

    span: Span
    new_text: str
    title: str
    add_option: tuple[str, str] | None = None
    preferred: bool = True
    also: tuple[tuple[Span, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {**self.span.to_json(), "new_text": self.new_text, "title": self.title,
                "preferred": self.preferred,
                "add_option": list(self.add_option) if self.add_option else None,
                "also": [{**s.to_json(), "new_text": t} for s, t in self.also]}


@record
class Alternative:
    """A layout that would do better, with its figures (``seats``, ``speedup``...)."""

    layout: str  # "2 replicas of TP 8"
    text: str  # the sentence a person reads: "2 replicas of TP 8 seat 332 (1.74×)"
    figures: tuple[tuple[str, Scalar], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"layout": self.layout, "text": self.text, "figures": dict(self.figures)}


@record
class Assumption:
    """What a finding's figures take in place of what the file does not say.

    ``kind``: ``release`` (the engine release and where it came from), ``model`` (the hint the
    model was taken from), ``gpu``, ``link``, ``context``, ``value`` (a value tpcheck could not
    use and replaced by the engine's default)."""

    kind: str
    text: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "text": self.text}


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
    notes: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()
    assumptions: tuple[Assumption, ...] = ()

    @property
    def fixable(self) -> bool:
        """Whether ``--fix`` has an edit to apply (ruff's ``[*]``): one preferred edit."""
        return any(e.preferred for e in self.edits)

    @property
    def formula(self) -> Formula | None:
        return self.formulas[0] if self.formulas else None

    @property
    def headline(self) -> str:
        return self.message

    def detail_lines(self) -> list[str]:
        """The evidence as a person reads it, one statement a line (before wrapping): the
        notes, the alternatives, then the assumptions. Formulas are rendered separately."""
        out = list(self.notes)
        out += [f"instead: {a.text}" for a in self.alternatives]
        out += [f"assumes: {a.text}" for a in self.assumptions]
        return out

    @property
    def text(self) -> str:
        """Headline and evidence in one string (what a search for a word must find)."""
        return "\n".join([self.message, *self.detail_lines()])

    def evidence_json(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = [{"kind": "note", "text": n} for n in self.notes]
        out += [{"kind": "formula", "text": x.render(), **x.to_json()} for x in self.formulas]
        return out

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
            "evidence": self.evidence_json(),
            "alternatives": [a.to_json() for a in self.alternatives],
            "assumptions": [a.to_json() for a in self.assumptions],
            "formula": f.to_json() if f else None,
            "formulas": [x.to_json() for x in self.formulas],
            "fix": self.fix,
            "fixable": self.fixable,
            "edits": [e.to_json() for e in self.edits],
            "related": [{**sp.to_json(), "message": text} for sp, text in self.related],
        }
