"""``--fix`` and ``--diff``: the findings' mechanical edits, applied where each value is written.

A rule says what to change (``Finding.edits``; the preferred one is the fix) at the span where
the value is written: values.yaml for a Helm template's value, the patch a kustomize overlay
took it from, the default of ``${TP:-16}``. This module turns those edits into text changes —
the replaced characters only, so comments, quoting and layout stay as they are; an added option
is written in the syntax of its line (``lsp.fixes``); a GPU request that follows a new size is
rewritten in ``limits`` and in an equal ``requests`` beside it — and keeps a fix only when the
files, linted as they would be after it (``sources.files.overlay``, nothing written), no longer
have the findings it claims to fix and have no finding they did not have before. Findings whose
edits are one and the same change (TP101-TP103 for one t) share one fix. Two fixes that want
different text at one place are both left, and say so; a fix that would add an option to a
values file (the template would need it) is left too. The passes repeat until nothing more is
fixed, so a second ``--fix`` changes no byte. Files are written only through ``safewrite``.
"""

from __future__ import annotations

import difflib
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from tpcheck.checks.base import Edit, Finding
from tpcheck.record import field, record, replace
from tpcheck.result import LintResult
from tpcheck.sources.base import MAX_BYTES, SourceError, Span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tpcheck.lint import Linter

MAX_PASSES = 4  # a fix can reveal another (a new size, then its request): ruff loops too
MAX_FIXES_PER_FILE = 64  # real files have a handful of launches


@record
class Change:
    """Replace characters ``start:end`` of the text of ``path`` (code points) with ``new_text``."""

    path: str
    start: int
    end: int
    new_text: str


@record
class Fix:
    """One fix: its changes, the findings it fixes (several refusals of one t share one)."""

    title: str
    changes: tuple[Change, ...]
    findings: tuple[Finding, ...]


@record
class NotFixed:
    finding: Finding
    reason: str

    def __str__(self) -> str:
        s = self.finding.span
        return f"{s.path}:{s.line}:{s.column}: {self.finding.code} not fixed: {self.reason}"


@record(frozen=False)
class Outcome:
    """What ``--fix`` did (or ``--diff`` would do)."""

    result: LintResult  # the findings left after the fixes
    fixed: list[Fix] = field(default_factory=list)
    not_fixed: list[NotFixed] = field(default_factory=list)
    before: dict[str, str] = field(default_factory=dict)  # path -> text, for changed files
    after: dict[str, str] = field(default_factory=dict)
    boms: dict[str, bool] = field(default_factory=dict)
    write_errors: list[SourceError] = field(default_factory=list)

    @property
    def fixed_count(self) -> int:
        return sum(len(f.findings) for f in self.fixed)

    def diff(self) -> str:
        """The changes as one unified diff (``a/`` and ``b/`` as git prints them)."""
        out: list[str] = []
        for path in sorted(self.after):
            old, new = self.before[path], self.after[path]
            if old == new:
                continue
            a, b = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
            for line in difflib.unified_diff(old.splitlines(keepends=True),
                                             new.splitlines(keepends=True), a, b):
                # a last line without its newline, as git writes it (and applies it)
                out.append(line if line.endswith("\n") else
                           f"{line}\n\\ No newline at end of file\n")
        return "".join(out)


class Texts:
    """The text of every file a fix touches, as it is now (after the fixes kept so far)."""

    def __init__(self) -> None:
        self.original: dict[str, str] = {}
        self.current: dict[str, str] = {}
        self.bom: dict[str, bool] = {}

    def get(self, path: str) -> str | None:
        key = os.path.abspath(path)
        if key not in self.current:
            from tpcheck.sources.files import decode_utf8_sig, read_capped

            try:
                raw = read_capped(path, MAX_BYTES)
                text = decode_utf8_sig(raw)
            except (OSError, UnicodeDecodeError):
                return None
            self.bom[key] = raw.startswith(b"\xef\xbb\xbf")
            self.original[key] = self.current[key] = text
        return self.current[key]

    def encoded(self, texts: dict[str, str] | None = None) -> dict[str, bytes]:
        """Texts as the bytes a file would hold (its byte-order mark kept)."""
        src = self.current if texts is None else texts
        return {k: (b"\xef\xbb\xbf" if self.bom.get(k) else b"") + v.encode("utf-8")
                for k, v in src.items()}


def _offset(text: str, line: int, column: int) -> int | None:
    """Code-point offset of 1-based ``line``/``column`` in ``text`` (None past its end)."""
    pos = 0
    for _ in range(line - 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return None
        pos = nl + 1
    end = text.find("\n", pos)
    end = len(text) if end < 0 else end
    at = pos + column - 1
    return at if pos <= at <= end else None


def _span_change(texts: Texts, span: Span, new_text: str) -> Change | None:
    text = texts.get(span.path)
    if text is None:
        return None
    a = _offset(text, span.line, span.column)
    b = _offset(text, span.end_line, span.end_column)
    if a is None or b is None or b < a:
        return None
    return Change(os.path.abspath(span.path), a, b, new_text)


def changes_for(f: Finding, e: Edit, texts: Texts) -> tuple[Change, ...] | str:
    """The text changes of edit ``e`` of finding ``f``, or why it cannot be made."""
    main = _span_change(texts, e.span, e.new_text)
    if main is None:
        return f"{e.span.path} could not be read at the value's position"
    text = texts.get(e.span.path) or ""
    out = [main]
    if e.add_option is not None:
        if os.path.abspath(e.span.path) != os.path.abspath(f.span.path):
            return (f"{e.add_option[0]} would go in the template, which reads the value from "
                    f"{e.span.path}; add it there by hand")
        from tpcheck.lsp.fixes import changes_for as lsp_changes
        from tpcheck.sources import reader_kind

        lines = text.split("\n")
        got = lsp_changes(e, lines, reader_kind(e.span.path, text))
        if got is None:
            return f"{e.add_option[0]} {e.add_option[1]} cannot be written safely on this line"
        for tc in got[1:]:
            a = _offset(text, tc.line + 1, tc.column + 1)
            b = _offset(text, tc.end_line + 1, tc.end_column + 1)
            if a is None or b is None:
                return "the added option's position is past the end of its line"
            out.append(Change(main.path, a, b, tc.new_text))
    for span, new in e.also:
        c = _span_change(texts, span, new)
        if c is None:
            return f"{span.path} could not be read at the GPU request"
        out.append(c)
        out += _twin_request(texts, span, new)
    return tuple(out)


def _twin_request(texts: Texts, span: Span, new: str) -> list[Change]:
    """The ``requests`` entry beside a ``limits`` GPU count (or the other way round) that
    holds the same count: Kubernetes refuses requests over limits, so both follow."""
    text = texts.get(span.path)
    if text is None or not span.path.endswith((".yaml", ".yml")):
        return []
    from tpcheck.sources.pyyaml import yaml

    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError):
        return []
    out: list[Change] = []
    todo = [d for d in docs if d is not None]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.SequenceNode):
            todo += node.value
            continue
        if not isinstance(node, yaml.MappingNode):
            continue
        keys = {getattr(k, "value", None): v for k, v in node.value}
        lim, req = keys.get("limits"), keys.get("requests")
        if isinstance(lim, yaml.MappingNode) and isinstance(req, yaml.MappingNode):
            out += _twin(text, span, new, lim, req) + _twin(text, span, new, req, lim)
        todo += [v for _, v in node.value]
    return out


def _twin(text: str, span: Span, new: str, hit: object, other: object) -> list[Change]:
    from tpcheck.sources.pyyaml import yaml

    assert isinstance(hit, yaml.MappingNode) and isinstance(other, yaml.MappingNode)
    for k, v in hit.value:
        if not isinstance(v, yaml.ScalarNode):
            continue
        if (v.start_mark.line + 1, v.start_mark.column + 1) not in (
                (span.line, span.column), (span.line, span.column - 1)):
            continue
        for k2, v2 in other.value:
            if (getattr(k2, "value", None) == k.value and isinstance(v2, yaml.ScalarNode)
                    and v2.value == v.value and v2.start_mark.line == v2.end_mark.line):
                q = 1 if v2.style in ("'", '"') else 0
                return [Change(os.path.abspath(span.path), v2.start_mark.index + q,
                               v2.end_mark.index - q, new)]
    return []


def _apply(texts: dict[str, str], changes: Iterable[Change]) -> dict[str, str] | None:
    """``texts`` with ``changes`` made (None when two of them overlap)."""
    by_path: dict[str, list[Change]] = {}
    for c in changes:
        by_path.setdefault(c.path, []).append(c)
    out = dict(texts)
    for path, cs in by_path.items():
        cs = sorted(set(cs), key=lambda c: (c.start, c.end))
        for i in range(1, len(cs)):
            x, y = cs[i - 1], cs[i]
            if y.start < x.end or (y.start == x.end == y.end == x.start):
                return None
        text = out[path]
        for c in reversed(cs):
            text = text[:c.start] + c.new_text + text[c.end:]
        out[path] = text
    return out


def _key(f: Finding) -> tuple[str, str]:
    return (f.code, os.path.abspath(f.span.path))


class Fixer:
    """Lints each file alone (so a finding is known by the file that was read), makes the
    fixes that verify, and keeps the texts; nothing is written until ``write``."""

    def __init__(self, paths: Sequence[str], linter_for: Callable[[Path | None], Linter]) -> None:
        from tpcheck.lint import settings_file_for

        self.paths = list(paths)
        self.linter_for = linter_for
        self.texts = Texts()
        self.kept: list[Change] = []
        self.errors: list[SourceError] = []
        self._settings: dict[str, Path | None] = {}
        self.generation = 0  # fixes kept so far: a lint result holds until the next one
        self._linted: dict[tuple[str, int], LintResult] = {}
        self._settings_file_for = settings_file_for

    def files(self) -> list[str]:
        from tpcheck.sources import iter_files

        return list(iter_files(self.paths, self.errors))

    def lint(self, path: str, *, trial: bool = False) -> LintResult:
        """``path`` linted as the files read after the fixes kept so far (``trial``: with a
        fix being checked, never kept). A file is linted again only after a fix was kept."""
        key = (path, self.generation)
        if not trial and key in self._linted:
            return self._linted[key]
        res = self._lint(path)
        if not trial:
            self._linted[key] = res
        return res

    def _lint(self, path: str) -> LintResult:
        from tpcheck import UsageError
        from tpcheck.sources.files import overlay

        sfile = self._settings_file_for(path, None, self._settings)
        try:
            linter = self.linter_for(sfile)
        except UsageError as e:
            out = LintResult()
            out.errors.append(SourceError(str(sfile), 1, 1, str(e)))
            return out
        with overlay(self.texts.encoded()):
            return linter.run([path])

    def run(self) -> Outcome:
        files = self.files()
        not_fixed: dict[tuple[object, ...], NotFixed] = {}
        fixed: list[Fix] = []
        for _ in range(MAX_PASSES):
            progress = False
            for path in files:
                # one fix at a time: a fix moves the text after it, so the next one's changes
                # are worked out again from the file as it now reads
                for _ in range(MAX_FIXES_PER_FILE):
                    before = self.lint(path)
                    made = None
                    for fix in self.candidates(before, not_fixed):
                        reason = self.verify(path, before, fix, files)
                        if reason is None:
                            made = fix
                            break
                        for f in fix.findings:
                            not_fixed[_ident(f)] = NotFixed(f, reason)
                    if made is None:
                        break
                    fixed.append(made)
                    progress = True
            if not progress:
                break
        result = LintResult()
        result.errors.extend(self.errors)
        for path in files:
            result.merge(self.lint(path))
        result.findings.sort(key=lambda f: (f.span.path, f.span.line, f.span.column, f.code))
        left = {_ident(f) for f in result.findings}
        # what was tried and not made is not marked [*] again (its edits stay in the JSON)
        result.findings = [replace(f, edits=tuple(replace(e, preferred=False) for e in f.edits))
                           if _ident(f) in not_fixed else f for f in result.findings]
        out = Outcome(result, fixed, [n for k, n in not_fixed.items() if k in left])
        for k, text in self.texts.current.items():
            if text != self.texts.original[k]:
                shown = _shown(k)
                out.before[shown], out.after[shown] = self.texts.original[k], text
                out.boms[shown] = self.texts.bom.get(k, False)
        return out

    def candidates(self, res: LintResult,
                   not_fixed: dict[tuple[object, ...], NotFixed]) -> list[Fix]:
        """The fixes the findings of one file offer: one per distinct set of changes; two that
        want different text at one place are neither made."""
        by_changes: dict[tuple[Change, ...], list[Finding]] = {}
        titles: dict[tuple[Change, ...], str] = {}
        for f in res.findings:
            if not f.edits or _ident(f) in not_fixed:
                continue
            e = next((x for x in f.edits if x.preferred), None)
            if e is None:
                offered = " or ".join(repr(x.title) for x in f.edits)
                not_fixed[_ident(f)] = NotFixed(f, (
                    f"{offered} would change the GPU count, which this file does not say in "
                    "one number a fix can follow (pods or nodes): choose by hand"))
                continue
            got = changes_for(f, e, self.texts)
            if isinstance(got, str):
                not_fixed[_ident(f)] = NotFixed(f, got)
                continue
            key = tuple(sorted(set(got), key=lambda c: (c.path, c.start, c.end, c.new_text)))
            by_changes.setdefault(key, []).append(f)
            titles.setdefault(key, e.title)
        fixes = [Fix(titles[k], k, tuple(fs)) for k, fs in by_changes.items()]
        out: list[Fix] = []
        for fx in fixes:
            rivals = [o for o in fixes if o is not fx and _overlap(fx, o)]
            if rivals:
                other = rivals[0]
                for f in fx.findings:
                    not_fixed[_ident(f)] = NotFixed(f, (
                        f"two fixes disagree at one place: {fx.title!r} and {other.title!r} "
                        f"({other.findings[0].code}); choose by hand"))
                continue
            out.append(fx)
        return out

    def verify(self, path: str, before: LintResult, fix: Fix,
               files: Sequence[str] = ()) -> str | None:
        """None when the fix, made on top of the kept ones, removes the findings it claims and
        adds none; else why it is not made (the texts are left as they were). A fix that
        edits another file than ``path`` (values.yaml, a kustomize patch or base, which other
        inputs may read too) is checked against every one of ``files``."""
        current = self.texts.current
        for c in fix.changes:
            if self.texts.get(c.path) is None:
                return f"{c.path} could not be read"
        trial = _apply(current, fix.changes)
        if trial is None:
            return "its changes overlap each other"
        saved = dict(current)
        here = os.path.abspath(path)
        wide = [f for f in files if f != path] if any(c.path != here for c in fix.changes) else []
        olds = [self.lint(f) for f in wide]  # before the trial texts are in place
        current.update(trial)
        after = self.lint(path, trial=True)
        was, now = Counter(map(_key, before.findings)), Counter(map(_key, after.findings))
        for f, old in zip(wide, olds, strict=True):
            was.update(map(_key, old.findings))
            now.update(map(_key, self.lint(f, trial=True).findings))
        claimed = Counter(map(_key, fix.findings))
        worse = [k for k in now if now[k] > was[k] - claimed[k]]
        if len(after.errors) > len(before.errors):
            reason = f"the edited file would not read: {after.errors[-1].message}"
        elif worse:
            new = [k for k in worse if now[k] > was[k]]
            code, where = (new or worse)[0]
            reason = (f"{fix.title!r} would bring {code} in {_shown(where)}" if new else
                      f"{fix.title!r} would leave {code} in {_shown(where)}")
        else:
            self.generation += 1
            self._linted.clear()
            return None
        current.clear()
        current.update(saved)
        return reason

    def write(self, out: Outcome) -> None:
        """Each changed file written through ``safewrite`` (no link followed, atomic)."""
        from tpcheck.safewrite import WriteRefused, write_bytes

        for shown, text in out.after.items():
            root, rel = _root_and_rel(shown)
            data = (b"\xef\xbb\xbf" if out.boms.get(shown) else b"") + text.encode("utf-8")
            try:
                write_bytes(root, rel, data)
            except WriteRefused as e:
                out.write_errors.append(SourceError(shown, 1, 1, f"not fixed: {e}"))


def _overlap(a: Fix, b: Fix) -> bool:
    for x in a.changes:
        for y in b.changes:
            if x.path == y.path and x.start < y.end and y.start < x.end and x != y:
                return True
            if x.path == y.path and x.start == y.start and x.new_text != y.new_text:
                return True
    return False


def _ident(f: Finding) -> tuple[object, ...]:
    s = f.span
    return (f.code, os.path.abspath(s.path), s.line, s.column)


def _shown(abspath: str) -> str:
    """A path as the report names it: relative to here when inside it."""
    rel = os.path.relpath(abspath)
    return abspath if rel.startswith("..") else rel


def _root_and_rel(shown: str) -> tuple[Path, str]:
    """The folder a write may not leave, and the path inside it: the current folder for a file
    under it (every folder on the way is checked for links), else the file's own folder."""
    here = Path.cwd()
    full = Path(os.path.abspath(shown))
    try:
        return here, full.relative_to(here).as_posix()
    except ValueError:
        return full.parent, full.name


def fix_paths(paths: Sequence[str], linter_for: Callable[[Path | None], Linter], *,
              write: bool) -> Outcome:
    """Make every mechanical fix in ``paths`` (``write`` False: compute them only, for
    ``--diff``) and lint what is left."""
    fixer = Fixer(paths, linter_for)
    out = fixer.run()
    if write:
        fixer.write(out)
    return out


def summary_lines(out: Outcome, *, wrote: bool) -> list[str]:
    """ruff's closing line (``Found 3 errors (3 fixed, 0 remaining).``) in tpcheck's words,
    and the findings left unfixed with the reason."""
    n, files = out.fixed_count, len(out.after)
    verb = "fixed" if wrote else "would fix"
    lines = [f"tpcheck: {verb} {n} finding(s) in {files} file(s); "
             f"{len(out.result.findings)} remaining"]
    lines += [f"tpcheck: {x}" for x in out.not_fixed]
    return lines
