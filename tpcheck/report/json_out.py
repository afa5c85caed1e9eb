"""DESIGN.md's JSON shape: {"findings": [...], "errors": [...]} (a public contract).

The keys are the contract, not the layout: one finding (or error) a line, each encoded by the
json module's C encoder. ``indent=`` would take the pure-Python encoder, which was ~45% of a
``--format json`` run over 10,000 refused launches (issue 14 item 8).
"""

from __future__ import annotations

import json

from tpcheck.result import LintResult


def render_json(result: LintResult) -> str:
    return '{\n  "findings": ' + _rows([f.to_json() for f in result.findings]) + tail(result)


def tail(result: LintResult) -> str:
    """What follows the findings: the errors and the summary (``report.stream`` writes the
    findings before it, file by file)."""
    summary = {"files": result.files, "deployments": result.deployments,
               "suppressed": result.suppressed}
    return (',\n  "errors": ' + _rows([e.to_json() for e in result.errors])
            + ',\n  "summary": ' + dumps(summary) + "\n}\n")


def _rows(items: list[dict[str, object]]) -> str:
    """A list with one compact item a line, indented under its key."""
    if not items:
        return "[]"
    return "[\n    " + ",\n    ".join(dumps(i) for i in items) + "\n  ]"


def dumps(o: object) -> str:
    return json.dumps(o, default=_default)


def _default(o: object) -> object:
    if isinstance(o, float):
        return None
    return str(o)
