"""SARIF 2.1.0 for code scanning: rule metadata with help from rules/, regions on the token.

What code scanning needs beyond the schema (its "SARIF support" page): URIs relative to the
checkout under ``%SRCROOT%``, columns in UTF-16 code units, and ``partialFingerprints`` so that
uploads through the API recognise an alert that only moved. A file tpcheck could not read is a
result too (rule TP900), because notifications never reach a pull request. Rules carry
``properties.tags`` (their family) and ``precision`` so alerts can be filtered and ranked; a
message links its related locations (``[text](id)``, the only way code scanning shows them); the
run's ``automationDetails.id`` is a category of its own, so two uploads in one workflow do not
replace each other. A file name that is not UTF-8 (legal on Linux) is written with its bytes
percent-encoded in the URI.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from tpcheck import __version__
from tpcheck.checks import RULES
from tpcheck.checks.base import Edit, Finding
from tpcheck.deferred import lazy_re
from tpcheck.report.paths import relative_to_root, source_root
from tpcheck.result import LintResult
from tpcheck.ruledocs import DOC_URL, NOTICES, doc, section
from tpcheck.sources.base import SourceError, Span

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT = "tpcheck/v1"
# Not a check on deployments: a file that could not be read or parsed (rules/TP900.md).
UNREADABLE = ("TP900", *NOTICES["TP900"])


__all__ = ["SarifWriter", "family", "render_sarif", "source_root"]

# The rule families by code (DESIGN.md's numbering), with how sure a finding of each is: the
# engine's own parser and asserts (very-high), its memory accounting (high), the cost model of
# the links (medium). One table: the rules' data registry can take it over as it is.
_FAMILIES = {"0": ("command-line", "very-high"), "1": ("legality", "very-high"),
             "2": ("capacity", "high"), "3": ("communication", "medium"),
             "4": ("scheduling", "high"), "9": ("input", "very-high")}


def family(code: str) -> tuple[str, str]:
    """A rule's family tag and precision from its code: TP0xx command-line, TP1xx legality,
    TP2xx capacity, TP3xx communication, TP4xx scheduling, TP9xx input."""
    return _FAMILIES.get(code[2:3], ("other", "medium"))


def automation_id(scope: str | None, root: Path) -> str:
    """``tpcheck/`` plus the settings' folder relative to the checkout, ending in ``/`` so that
    code scanning takes all of it as the category (it splits category/run-id at the last
    slash): ``tpcheck/`` at the root, ``tpcheck/deploy/prod/`` for that folder's settings."""
    rel = relative_to_root(scope, root) if scope else None
    if not rel or rel == ".":
        return "tpcheck/"
    return f"tpcheck/{_text(rel).strip('/')}/"


_SURROGATE = lazy_re("[\ud800-\udfff]")


def _text(s: str) -> str:
    """A string as valid UTF-8: a file name's undecodable bytes (held as surrogates by
    surrogateescape) become U+FFFD; JSON of a lone surrogate is refused by strict readers."""
    return s if s.isascii() else _SURROGATE.sub("\ufffd", s)


def _clean(obj: object) -> object:
    """Every string of the document through ``_text`` (messages, snippets, formulas, fixes)."""
    if isinstance(obj, str):
        return _text(obj)
    if isinstance(obj, dict):
        return {_text(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


# Past this a file's columns are counted in code points: 13× the default max-file-size.
MAX_REREAD_BYTES = 64 * 1024 * 1024
# Files whose lines are kept at once (a finding's related locations may name another file).
KEPT_FILES = 4


class _Sources:
    """Each file's lines, read again only for SARIF (UTF-16 columns and fingerprint snippets)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # the last few files read: the results come file by file, so one file's lines serve
        # all its results, and a run over 100,000 files does not keep every file's text
        self._lines: dict[str, list[str] | None] = {}

    def lines(self, path: str) -> list[str] | None:
        if path in self._lines:
            return self._lines[path]
        from tpcheck.sources.files import read_capped

        try:  # a FIFO or a device the lint skipped must not be waited on or read here
            text = read_capped(path, MAX_REREAD_BYTES).decode("utf-8", errors="replace")
            lines: list[str] | None = text.split("\n")
        except (OSError, ValueError):
            lines = None  # stdin, or gone since the lint: count code points
        if len(self._lines) >= KEPT_FILES:
            del self._lines[next(iter(self._lines))]
        self._lines[path] = lines
        return lines

    def location(self, path: str) -> dict[str, str]:
        """``%SRCROOT%``-relative and percent-encoded inside the root; ``file://`` outside it."""
        rel = relative_to_root(path, self.root)
        if rel is None:  # as_uri percent-encodes the file system's bytes
            return {"uri": Path(os.path.abspath(path)).as_uri()}
        # the name's bytes, so a non-UTF-8 name (surrogateescape) is %FF rather than an error
        return {"uri": quote(os.fsencode(rel)), "uriBaseId": SRCROOT}

    def column(self, path: str, line: int, column: int) -> int:
        """A 1-based code-point column as 1-based UTF-16 code units (an emoji counts two)."""
        lines = self.lines(path)
        if lines is None or not 1 <= line <= len(lines):
            return column
        head = lines[line - 1][:max(column - 1, 0)]
        if head.isascii():
            return column
        return len(head.encode("utf-16-le", "surrogatepass")) // 2 + 1

    def region(self, s: Span) -> dict[str, int]:
        return {"startLine": s.line, "startColumn": self.column(s.path, s.line, s.column),
                "endLine": s.end_line, "endColumn": self.column(s.path, s.end_line, s.end_column)}

    def snippet(self, s: Span) -> str:
        lines = self.lines(s.path)
        if lines is None or not 1 <= s.line <= s.end_line <= len(lines):
            return ""
        if s.line == s.end_line:
            return lines[s.line - 1][s.column - 1:s.end_column - 1]
        parts = [lines[s.line - 1][s.column - 1:], *lines[s.line:s.end_line - 1],
                 lines[s.end_line - 1][:s.end_column - 1]]
        return "\n".join(parts)


def _rule(code: str, name: str, severity: str, summary: str) -> dict[str, object]:
    text = doc(code) or summary
    tag, precision = family(code)
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": section(text, "What it checks") or summary},
        "help": {"text": section(text, "Why") or summary, "markdown": text},
        "helpUri": DOC_URL.format(code=code),
        "defaultConfiguration": {"level": LEVEL[severity]},
        "properties": {"tags": [tag], "precision": precision},
    }


def _message(f: Finding) -> dict[str, str]:
    """The headline, then the evidence: notes, alternatives, assumptions, formulas, fix."""
    detail = [_text(ln) for ln in f.detail_lines()]
    text = "\n".join([_text(f.message), *detail])
    md = _text(f.message) + "".join(f"\n- {ln}" for ln in detail)
    if f.related:  # code scanning shows a related location only where the message links it
        links = "; ".join(f"[{_link_text(t)}]({i})" for i, (_, t) in enumerate(f.related))
        text += f"\nSee {links}."
        md += f"\n\nSee {links}."
    if f.formulas:
        rendered = "\n".join(x.render() for x in f.formulas)
        text += f"\n{rendered}"
        md += f"\n\n```\n{rendered}\n```"
    if f.fix:
        text += f"\nFix: {_text(f.fix)}"
        md += f"\n\n**Fix:** {_text(f.fix)}"
    return {"text": text, "markdown": md}


def _link_text(text: str) -> str:
    """Link text for ``[text](id)``: brackets escaped as SARIF's message strings require."""
    return _text(text).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _fix(e: Edit, src: _Sources) -> dict[str, object]:
    """One SARIF fix: the value where it is written, and the GPU request that follows it
    (``Edit.also``), one artifact change per file."""
    by_path: dict[str, list[dict[str, object]]] = {}
    for span, text in ((e.span, e.new_text), *e.also):
        by_path.setdefault(span.path, []).append(
            {"deletedRegion": src.region(span), "insertedContent": {"text": text}})
    return {"description": {"text": e.title}, "artifactChanges": [
        {"artifactLocation": src.location(path), "replacements": reps}
        for path, reps in by_path.items()]}


def _fingerprint(parts: tuple[str, ...]) -> str:
    """Stable across line moves: no line numbers, only what the alert is about."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _result(f: Finding, index: int, src: _Sources,
            seen: Counter[bytes]) -> dict[str, object]:
    s = f.span
    loc = src.location(s.path)
    # Rule, file and the offending text; the n-th such alert in the file stands in for the
    # deployment's identity (a second deployment with the same token in one file).
    what = (f.code, loc["uri"], src.snippet(s) or f.message)
    n = _count(seen, what)
    res: dict[str, object] = {
        "ruleId": f.code,
        "ruleIndex": index,
        "level": LEVEL[f.severity.value],
        "message": _message(f),
        "locations": [{"physicalLocation": {"artifactLocation": loc, "region": src.region(s)}}],
        "partialFingerprints": {FINGERPRINT: _fingerprint((*what, str(n)))},
    }
    if f.related:
        res["relatedLocations"] = [
            {"id": i, "message": {"text": _text(text)}, "physicalLocation": {
                "artifactLocation": src.location(sp.path), "region": src.region(sp)}}
            for i, (sp, text) in enumerate(f.related)
        ]
    # An edit that also adds an option is written in the file's syntax by the editor only.
    fixes = [_fix(e, src) for e in f.edits if e.add_option is None]
    if fixes:
        res["fixes"] = fixes
    props: dict[str, object] = {}
    if f.formulas:
        props["formulas"] = [x.to_json() for x in f.formulas]
    if f.notes or f.formulas:
        props["evidence"] = f.evidence_json()
    if f.alternatives:
        props["alternatives"] = [a.to_json() for a in f.alternatives]
    if f.assumptions:
        props["assumptions"] = [a.to_json() for a in f.assumptions]
    if props:
        res["properties"] = props
    return res


def _unreadable(e: SourceError, index: int, src: _Sources,
                seen: Counter[bytes]) -> dict[str, object]:
    loc = src.location(e.path)
    what = (UNREADABLE[0], loc["uri"], e.message)
    n = _count(seen, what)
    line = max(e.line, 1)
    return {
        "ruleId": UNREADABLE[0],
        "ruleIndex": index,
        "level": "error",
        "message": {"text": f"{_text(e.message)} (nothing in this file was checked)"},
        "locations": [{"physicalLocation": {"artifactLocation": loc, "region": {
            "startLine": line, "startColumn": src.column(e.path, line, max(e.column, 1))}}}],
        "partialFingerprints": {FINGERPRINT: _fingerprint((*what, str(n)))},
    }


def _count(seen: Counter[bytes], what: tuple[str, ...]) -> int:
    """How many alerts about ``what`` so far, this one included. Keyed by a digest: the run
    keeps 16 bytes per distinct alert, not its snippet and URI (100,000 files: ~30 MiB)."""
    key = hashlib.blake2b("\0".join(what).encode("utf-8", "surrogatepass"),
                          digest_size=16).digest()
    seen[key] += 1
    return seen[key]


def render_sarif(result: LintResult, root: Path | None = None, *, scope: str | None = None,
                 category: str | None = None) -> str:
    """``scope``: the folder of the settings in force (the run's category); ``category``
    overrides the ``automationDetails.id`` made from it."""
    parts: list[str] = []
    writer = SarifWriter(parts.append, root, scope=scope, category=category)
    writer.add(result.findings)
    writer.close(result)
    return "".join(parts)


# Where the results go in the document: the head is written before the first file is checked,
# the rest (unreadable files, the invocation's notifications) after the last.
_MARK = "\0results\0"


class SarifWriter:
    """The SARIF document written as the findings come, file by file: a run over 100,000 files
    keeps each result only until it is written (and at most a few files' lines for columns and
    snippets), not every finding with its formulas. The bytes are ``json.dumps(doc, indent=2)``
    of the whole document: each result is dumped alone and indented to where it sits."""

    def __init__(self, write: Callable[[str], object], root: Path | None = None, *,
                 scope: str | None = None, category: str | None = None) -> None:
        self.write = write
        self.src = _Sources(source_root(Path.cwd()) if root is None else root)
        self.rules = [_rule(m.code, m.name, m.severity.value, m.summary) for m in RULES]
        self.rules.append(_rule(*UNREADABLE[:2], "error", UNREADABLE[2]))
        self.index = {str(r["id"]): i for i, r in enumerate(self.rules)}
        self.id = category or automation_id(scope, self.src.root)
        self.seen: Counter[bytes] = Counter()
        self.count = 0
        head, self.indent, _ = self._split([])
        write(head)

    def add(self, found: list[Finding]) -> None:
        for f in found:
            self._put(_result(f, self.index.get(f.code, 0), self.src, self.seen))

    def close(self, result: LintResult) -> None:
        """The files that could not be read, as results, then the rest of the document."""
        for e in result.errors:
            self._put(_unreadable(e, self.index[UNREADABLE[0]], self.src, self.seen))
        tail = self._split(result.errors)[2]
        if self.count:
            self.write(tail + "\n")
        else:  # an empty list is `[]` on one line
            self.write("]" + tail.split("]", 1)[1] + "\n")

    def _put(self, res: dict[str, object]) -> None:
        text = json.dumps(_clean(res), indent=2, default=lambda o: None)
        sep = "\n" if self.count == 0 else ",\n"
        self.write(sep + self.indent + text.replace("\n", "\n" + self.indent))
        self.count += 1

    def _split(self, errors: list[SourceError]) -> tuple[str, str, str]:
        """The document around its results: what comes before the list's first item (up to its
        ``[``), the items' indent, and what follows the last (from the newline before ``]``)."""
        src = self.src
        notes = [{
            "level": "error",
            "message": {"text": _text(e.message)},
            "locations": [{"physicalLocation": {
                "artifactLocation": src.location(e.path),
                "region": {"startLine": max(e.line, 1),
                           "startColumn": src.column(e.path, max(e.line, 1),
                                                     max(e.column, 1))}}}],
        } for e in errors]
        doc_ = {
            "$schema": SCHEMA,
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {"name": "tpcheck", "version": __version__,
                                    "informationUri": "https://github.com/tpcheck/tpcheck",
                                    "rules": self.rules}},
                "originalUriBaseIds": {SRCROOT: {"uri": src.root.as_uri().rstrip("/") + "/"}},
                "automationDetails": {"id": self.id},
                "columnKind": "utf16CodeUnits",
                "results": [_MARK],
                "invocations": [{"executionSuccessful": not errors,
                                 "toolExecutionNotifications": notes}],
            }],
        }
        text = json.dumps(_clean(doc_), indent=2, default=lambda o: None)
        mark = json.dumps(_MARK)
        at = text.index(mark)
        line = text.rindex("\n", 0, at)
        return text[:line], text[line + 1:at], text[at + len(mark):]
