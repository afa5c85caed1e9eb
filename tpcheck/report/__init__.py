"""Output formats for findings: text (people), json, sarif, github (machines), markdown (a pull
request or a job summary)."""

from __future__ import annotations

from tpcheck.result import LintResult


def render(fmt: str, result: LintResult, *, color: bool = False, statistics: bool = False,
           quiet: bool = False, scope: str | None = None, category: str | None = None,
           concise: bool = False) -> str:
    """``scope`` (the settings' folder) and ``category`` name a SARIF run for code scanning;
    ``concise`` prints one line per finding in text."""
    if fmt == "json":
        from tpcheck.report.json_out import render_json

        return render_json(result)
    if fmt == "sarif":
        from tpcheck.report.sarif import render_sarif

        return render_sarif(result, scope=scope, category=category)
    if fmt == "markdown":
        from tpcheck.report.markdown import render_markdown

        return render_markdown(result)
    if fmt == "github":
        from tpcheck.report.github import render_github

        return render_github(result)
    from tpcheck.report.text import render_text

    return render_text(result, color=color, statistics=statistics, quiet=quiet,
                       concise=concise)
