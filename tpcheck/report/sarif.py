"""SARIF 2.1.0 for code scanning: rule metadata with help from rules/, regions on the token."""

from __future__ import annotations

import json
from pathlib import PurePath

from tpcheck import __version__
from tpcheck.checks import RULES
from tpcheck.lint import LintResult
from tpcheck.ruledocs import DOC_URL, doc, section

LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    return PurePath(path).as_posix()


def render_sarif(result: LintResult) -> str:
    rules = []
    index: dict[str, int] = {}
    for i, m in enumerate(RULES):
        index[m.CODE] = i
        text = doc(m.CODE) or m.SUMMARY
        rules.append({
            "id": m.CODE,
            "name": m.NAME,
            "shortDescription": {"text": m.SUMMARY},
            "fullDescription": {"text": section(text, "What it checks") or m.SUMMARY},
            "help": {"text": section(text, "Why") or m.SUMMARY, "markdown": text},
            "helpUri": DOC_URL.format(code=m.CODE),
            "defaultConfiguration": {"level": LEVEL[m.SEVERITY.value]},
        })
    results = []
    for f in result.findings:
        s = f.span
        res: dict[str, object] = {
            "ruleId": f.code,
            "ruleIndex": index.get(f.code, 0),
            "level": LEVEL[f.severity.value],
            "message": {"text": f.message + (f"\n{f.formula.render()}" if f.formula else "")},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": _uri(s.path)},
                "region": {"startLine": s.line, "startColumn": s.column,
                           "endLine": s.end_line, "endColumn": s.end_column},
            }}],
        }
        if f.related:
            res["relatedLocations"] = [
                {"id": i, "message": {"text": text}, "physicalLocation": {
                    "artifactLocation": {"uri": _uri(sp.path)},
                    "region": {"startLine": sp.line, "startColumn": sp.column,
                               "endLine": sp.end_line, "endColumn": sp.end_column}}}
                for i, (sp, text) in enumerate(f.related)
            ]
        if f.formulas:
            res["properties"] = {"formulas": [x.to_json() for x in f.formulas]}
        results.append(res)
    notes = [{
        "level": "error",
        "message": {"text": e.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": _uri(e.path)},
            "region": {"startLine": max(e.line, 1), "startColumn": max(e.column, 1)}}}],
    } for e in result.errors]
    doc_ = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tpcheck", "version": __version__,
                                "informationUri": "https://github.com/tpcheck/tpcheck",
                                "rules": rules}},
            "results": results,
            "invocations": [{"executionSuccessful": not result.errors,
                             "toolExecutionNotifications": notes}],
        }],
    }
    return json.dumps(doc_, indent=2, default=lambda o: None) + "\n"
