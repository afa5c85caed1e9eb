"""Every report written file by file, as the findings are produced.

A run over a monorepo's 100,000 files must not hold every finding (each carries its
formulas and evidence) until the end: ``Stream`` writes each file's findings as soon as they
are sorted and keeps only what its tail prints — how many findings, their severities (for the
exit code), and the count per rule when ``--statistics`` asks. The bytes written are the ones
``report.render`` gives for the whole run. SARIF, one JSON document, is written result by
result between its head and its tail; markdown, whose counts come before its rows, keeps the
counts and the rows it prints. ``--sarif-file`` and ``--summary-file`` are side reports fed
from the same findings (``Stream.also``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tpcheck.checks.base import Finding, Severity
from tpcheck.result import LintResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from tpcheck.report.markdown import MarkdownSummary
    from tpcheck.report.sarif import SarifWriter

STREAMED = ("text", "json", "github", "sarif", "markdown")


class Stream:
    """Called with each file's sorted findings; ``close`` writes what comes after them."""

    def __init__(self, fmt: str, write: Callable[[str], object], *, color: bool = False,
                 statistics: bool = False, quiet: bool = False, concise: bool = False,
                 scope: str | None = None, category: str | None = None,
                 flush: Callable[[], object] | None = None) -> None:
        if fmt not in STREAMED:
            raise ValueError(f"{fmt} is not a format written as it goes")
        self.fmt = fmt
        self.write = write
        self.flush = flush
        self.count = 0
        self.fixable = 0
        self.severities: set[Severity] = set()
        self.counts: Counter[tuple[str, str]] | None = Counter() if statistics else None
        self.sides: list[SarifWriter | MarkdownSummary] = []
        self.sarif: SarifWriter | None = None
        self.markdown: MarkdownSummary | None = None
        if fmt == "text":
            from tpcheck.report.text import TextLines

            self.text = TextLines(color=color, quiet=quiet, concise=concise)
        elif fmt == "github":
            from tpcheck.report.paths import source_root

            self.root = source_root(Path.cwd())
        elif fmt == "sarif":
            from tpcheck.report.sarif import SarifWriter

            self.sarif = SarifWriter(write, scope=scope, category=category)
        elif fmt == "markdown":
            from tpcheck.report.markdown import MarkdownSummary

            self.markdown = MarkdownSummary()

    def also(self, side: SarifWriter | MarkdownSummary) -> None:
        """A side report (a SARIF file, a job summary) fed the same findings."""
        self.sides.append(side)

    def __call__(self, found: list[Finding]) -> None:
        for side in self.sides:
            side.add(found)
        if not found:
            return
        for f in found:
            self.severities.add(f.severity)
            self.fixable += f.fixable
            if self.counts is not None:
                self.counts[(f.code, f.name)] += 1
        if self.fmt == "text":
            self.write("".join(line + "\n" for line in self.text.findings(found)))
        elif self.fmt == "github":
            from tpcheck.report.github import finding_line

            self.write("".join(finding_line(f, self.root) + "\n" for f in found))
        elif self.sarif is not None:
            self.sarif.add(found)
        elif self.markdown is not None:
            self.markdown.add(found)
        else:
            from tpcheck.report.json_out import dumps

            head = '{\n  "findings": [\n    ' if self.count == 0 else ",\n    "
            self.write(head + ",\n    ".join(dumps(f.to_json()) for f in found))
        self.count += len(found)
        if self.flush is not None:
            self.flush()

    def close(self, result: LintResult) -> None:
        """The rest of the report: ``result`` holds the run's errors, counts and unused
        suppressions (its findings were written already). The side reports are the caller's
        to finish."""
        if self.fmt == "text":
            lines = self.text.tail(result, self.count, self.counts, self.fixable)
            self.write("".join(line + "\n" for line in lines))
        elif self.fmt == "github":
            from tpcheck.report.github import error_line

            self.write("".join(error_line(e, self.root) + "\n" for e in result.errors))
        elif self.sarif is not None:
            self.sarif.close(result)
        elif self.markdown is not None:
            self.write(self.markdown.render(result))
        else:
            from tpcheck.report.json_out import tail

            self.write(('{\n  "findings": []' if self.count == 0 else "\n  ]") + tail(result))
