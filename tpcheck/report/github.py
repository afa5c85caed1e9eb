"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` per finding.

Paths are the repository-relative form SARIF uses (``deploy/llama.sh`` for ``./deploy/llama.sh``)
so an annotation lands on the file the pull request shows; every property and message goes
through GitHub's escaping (``tpcheck.oneline``)."""

from __future__ import annotations

from pathlib import Path

from tpcheck.oneline import github_data, github_property
from tpcheck.report.paths import repository_path, source_root
from tpcheck.result import LintResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tpcheck.checks.base import Finding
    from tpcheck.sources.base import SourceError

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def usage_annotation(message: str) -> str:
    """A usage error as the one annotation the checks view shows (no file to point at)."""
    return f"::error title={github_property('tpcheck usage error')}::{github_data(message)}"


def render_github(result: LintResult, root: Path | None = None) -> str:
    base = source_root(Path.cwd()) if root is None else root
    out = [finding_line(f, base) for f in result.findings]
    out += [error_line(e, base) for e in result.errors]
    return "\n".join(out) + ("\n" if out else "")


def finding_line(f: Finding, base: Path) -> str:
    """One finding as a workflow command (paths relative to ``base``, the repository)."""
    s = f.span
    props = (f"file={github_property(repository_path(s.path, base))},line={s.line},"
             f"col={s.column},endLine={s.end_line},endColumn={s.end_column},"
             f"title={github_property(f'{f.code} {f.name}')}")
    body = "%0A".join(github_data(x) for x in [f.message, *f.detail_lines()])
    if f.formula is not None:
        body += "%0A" + github_data(f.formula.render())
    return f"::{LEVEL[f.severity.value]} {props}::{body}"


def error_line(e: SourceError, base: Path) -> str:
    return (f"::error file={github_property(repository_path(e.path, base))},"
            f"line={e.line},col={e.column},title=tpcheck::{github_data(e.message)}")
