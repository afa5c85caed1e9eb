"""``--format markdown``: the lint as a pull request or a job summary shows it — the counts by
rule, then every finding with its headline (GitHub annotates at most 10 errors and 10 warnings
per step; the summary is where the rest are read), then the files that could not be read.

Text from the files (paths, headlines quoting values) is escaped, so a ``|`` or a ``<script>``
in a manifest stays text in a table cell."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tpcheck.oneline import one_line
from tpcheck.report.paths import repository_path, source_root
from tpcheck.result import LintResult

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from tpcheck.checks.base import Finding

# GitHub's job summary holds 1 MiB per step; past this many findings the list says how many more.
MAX_ROWS = 1000
# What can start markup inside a line (emphasis, code, links, HTML, entities, a cell's end).
# Line-start markup (#, -, 1.) cannot occur: every line tpcheck writes starts with its own text.
_SPECIAL = "\\`*_[]<|~&"
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def escape(text: str) -> str:
    """The punctuation that could start markup backslash-escaped (CommonMark lets any ASCII
    punctuation be), so text renders as itself; control characters as ``repr`` shows them."""
    return "".join("\\" + c if c in _SPECIAL else c for c in one_line(text))


def cell(text: str) -> str:
    """``text`` for one table cell: escaped, on one line."""
    return escape(text)


def render_markdown(result: LintResult, root: Path | None = None) -> str:
    summary = MarkdownSummary(root)
    summary.add(result.findings)
    return summary.render(result)


class MarkdownSummary:
    """What the report prints of the findings, gathered as they come: the count per rule and
    the first ``MAX_ROWS`` rows, so a run over 100,000 files keeps no finding."""

    def __init__(self, root: Path | None = None) -> None:
        self.base = source_root(Path.cwd()) if root is None else root
        self.count = 0
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.rows: list[str] = []

    def add(self, found: list[Finding]) -> None:
        for f in found:
            self.counts[(f.code, f.name, f.severity.value)] += 1
            if len(self.rows) < MAX_ROWS:
                s = f.span
                where = f"{repository_path(s.path, self.base)}:{s.line}:{s.column}"
                self.rows.append(
                    f"| {cell(where)} | {f.code} {f.severity.value} | {cell(f.message)} |")
        self.count += len(found)

    def render(self, result: LintResult) -> str:
        """The report, with ``result``'s counts, errors and unused suppressions."""
        base, n = self.base, self.count
        title = (f"{n} finding{'s' if n != 1 else ''} in {result.deployments} "
                 f"deployment{'s' if result.deployments != 1 else ''} ({result.files} "
                 f"file{'s' if result.files != 1 else ''} read")
        title += f", {result.suppressed} suppressed)" if result.suppressed else ")"
        out = [f"### tpcheck: {title}", ""]
        if n:
            out += ["| rule | name | severity | findings |", "|---|---|---|---:|"]
            for (code, name, sev), k in sorted(self.counts.items(),
                                               key=lambda x: (_SEVERITY_ORDER[x[0][2]],
                                                              x[0][0])):
                out.append(f"| {code} | {cell(name)} | {sev} | {k} |")
            out += ["", "| where | rule | headline |", "|---|---|---|", *self.rows]
            if n > MAX_ROWS:
                out.append(f"| … | | {n - MAX_ROWS} more: run tpcheck for the rest |")
            out.append("")
        if result.errors:
            out += [f"**{len(result.errors)} input error"
                    f"{'s' if len(result.errors) != 1 else ''}** (exit 2):", ""]
            for e in result.errors:
                where = f"{repository_path(e.path, base)}:{e.line}:{e.column}"
                out.append(f"- {escape(where)}: {escape(e.message)}")
            out.append("")
        if result.unused_ignores:
            out += [f"**{len(result.unused_ignores)} unused suppression"
                    f"{'s' if len(result.unused_ignores) != 1 else ''}**:", ""]
            for upath, uline, utext in result.unused_ignores:
                out.append(
                    f"- {escape(f'{repository_path(upath, base)}:{uline}')}: {escape(utext)}")
            out.append("")
        if not n and not result.errors:
            out.append("Nothing to report.")
            out.append("")
        return "\n".join(out)
