"""DESIGN.md's JSON shape: {"findings": [...], "errors": [...]} (a public contract)."""

from __future__ import annotations

import json

from tpcheck.lint import LintResult


def render_json(result: LintResult) -> str:
    doc = {
        "findings": [f.to_json() for f in result.findings],
        "errors": [e.to_json() for e in result.errors],
        "summary": {"files": result.files, "deployments": result.deployments,
                    "suppressed": result.suppressed},
    }
    return json.dumps(doc, indent=2, default=_default) + "\n"


def _default(o: object) -> object:
    if isinstance(o, float):
        return None
    return str(o)
