"""What the server keeps per document: the lint under way (Run), and each version's result."""

from __future__ import annotations

from lsprotocol import types as lsp

from tpcheck.checks.base import Finding
from tpcheck.lsp.engine import DocResult
from tpcheck.lsp.pool import Worker
from tpcheck.record import record


@record
class Run:
    """One lint under way: the document (and which opening of it), its version and worker."""

    uri: str
    generation: int
    version: int | None
    worker: Worker
    job: int
    encoding: str


class Published:
    """The diagnostics of one document version, with the findings behind them. Both come from
    the lint process packed (a pickle, JSON) and are unpacked at the first hover or code action
    on this version: most versions get neither."""

    __slots__ = ("_diagnostics", "_findings", "packed_diagnostics", "packed_findings",
                 "result", "text", "version")

    def __init__(self, version: int | None, text: str, result: DocResult, findings: bytes,
                 diagnostics: str) -> None:
        self.version, self.text, self.result = version, text, result
        self.packed_findings, self.packed_diagnostics = findings, diagnostics
        self._findings: tuple[Finding, ...] | None = None
        self._diagnostics: tuple[lsp.Diagnostic, ...] | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        if self._findings is None:
            import pickle  # the lint process's own pickle of tpcheck's records

            self._findings = pickle.loads(self.packed_findings)
            self.packed_findings = b""
        return self._findings

    @property
    def diagnostics(self) -> tuple[lsp.Diagnostic, ...]:
        if self._diagnostics is None:
            import json

            from lsprotocol.converters import get_converter

            self._diagnostics = tuple(get_converter().structure(
                json.loads(self.packed_diagnostics), list[lsp.Diagnostic]))
            self.packed_diagnostics = ""
        return self._diagnostics


__all__ = ["Published", "Run"]
