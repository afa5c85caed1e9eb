"""What a lint run found: the one result type the reports and the editor render.

A leaf of its own so ``report/`` and ``lsp/`` take it without importing the linter.
"""

from __future__ import annotations

from tpcheck.checks.base import Finding
from tpcheck.record import field, record
from tpcheck.sources.base import SourceError


@record(frozen=False)
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    files: int = 0
    deployments: int = 0
    suppressed: int = 0
    unused_ignores: list[tuple[str, int, str]] = field(default_factory=list)  # path, line, text
    notes: list[SourceError] = field(default_factory=list)  # said on stderr; never the exit code

    def merge(self, other: LintResult) -> None:
        """Add another run's results (a group of files checked under other settings)."""
        self.findings.extend(other.findings)
        self.errors.extend(e for e in other.errors if e not in self.errors)
        self.files += other.files
        self.deployments += other.deployments
        self.suppressed += other.suppressed
        self.unused_ignores.extend(other.unused_ignores)
        self.notes.extend(other.notes)
