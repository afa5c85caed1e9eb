"""Text, GitHub and JSON reports written file by file, as the findings are produced.

A run over a monorepo's 100,000 files must not hold every finding (each carries its
formulas and evidence) until the end: ``Stream`` writes each file's findings as soon as they
are sorted and keeps only what its tail prints — how many findings, their severities (for the
exit code), and the count per rule when ``--statistics`` asks. The bytes written are the ones
``report.render`` gives for the whole run; SARIF, which is one JSON document of every result,
still renders at the end.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tpcheck.checks.base import Finding, Severity
from tpcheck.result import LintResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

STREAMED = ("text", "json", "github")


class Stream:
    """Called with each file's sorted findings; ``close`` writes what comes after them."""

    def __init__(self, fmt: str, write: Callable[[str], object], *, color: bool = False,
                 statistics: bool = False, quiet: bool = False, concise: bool = False,
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
        if fmt == "text":
            from tpcheck.report.text import TextLines

            self.text = TextLines(color=color, quiet=quiet, concise=concise)
        elif fmt == "github":
            from tpcheck.report.paths import source_root

            self.root = source_root(Path.cwd())

    def __call__(self, found: list[Finding]) -> None:
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
        else:
            from tpcheck.report.json_out import dumps

            head = '{\n  "findings": [\n    ' if self.count == 0 else ",\n    "
            self.write(head + ",\n    ".join(dumps(f.to_json()) for f in found))
        self.count += len(found)
        if self.flush is not None:
            self.flush()

    def close(self, result: LintResult) -> None:
        """The rest of the report: ``result`` holds the run's errors, counts and unused
        suppressions (its findings were written already)."""
        if self.fmt == "text":
            lines = self.text.tail(result, self.count, self.counts, self.fixable)
            self.write("".join(line + "\n" for line in lines))
        elif self.fmt == "github":
            from tpcheck.report.github import error_line

            self.write("".join(error_line(e, self.root) + "\n" for e in result.errors))
        else:
            from tpcheck.report.json_out import tail

            self.write(('{\n  "findings": []' if self.count == 0 else "\n  ]") + tail(result))
