"""A run over many folders: each file checked with the settings file nearest to it."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from tpcheck import UsageError
from tpcheck.checks.base import Finding
from tpcheck.result import LintResult
from tpcheck.sources import iter_files
from tpcheck.sources.base import SourceError

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Protocol

    class FileLinter(Protocol):
        """What this run asks of ``tpcheck.lint.Linter`` (which imports this module)."""

        topology_error: SourceError | None

        def run(self, paths: Iterable[str], *, stdin_text: str | bytes | None = None,
                stdin_filename: str | None = None) -> LintResult: ...

        def lint_path(self, p: str, out: LintResult, *, stdin_text: str | bytes | None = None,
                      stdin_filename: str | None = None) -> None: ...


def finding_order(f: Finding) -> tuple[str, int, int, str]:
    """The order findings are reported in: by file, position, then code."""
    return (f.span.path, f.span.line, f.span.column, f.code)


def settings_file_for(path: str, stdin_filename: str | None = None,
                      cache: dict[str, Path | None] | None = None) -> Path | None:
    """The settings file that governs ``path``: the nearest ``.tpcheck.toml`` or
    ``pyproject.toml`` with [tool.tpcheck] above its folder (for stdin, above
    ``--stdin-filename``, else the current folder). The one rule lint and inspect both follow,
    so inspect says what lint will use (issue 28 item 5). ``cache``: folder → answer."""
    from tpcheck.settings import find_settings_file

    named = stdin_filename if path == "-" else path
    folder = os.path.abspath(os.path.dirname(named) if named else ".")
    if cache is None:
        return find_settings_file(Path(folder))
    if folder not in cache:
        cache[folder] = find_settings_file(Path(folder))
    return cache[folder]


def run_with_nearest_settings(paths: Iterable[str], linter_for: Callable[[Path | None], FileLinter],
                              *, stdin_text: str | bytes | None = None,
                              stdin_filename: str | None = None,
                              sink: Callable[[list[Finding]], None] | None = None) -> LintResult:
    """Check each file with the settings nearest to it, as the editor does and as ruff does:
    the closest ``.tpcheck.toml`` or ``pyproject.toml`` with [tool.tpcheck] above the file (for
    stdin, above ``--stdin-filename``, else the current folder). ``linter_for`` builds the
    linter for one settings file (None: no settings file).

    With ``sink``, each file's findings go to it as soon as that file is checked, in the
    report's order (files by path, as the sorted report has them), and the result keeps none
    of them: memory stays flat however many files there are (``report.stream``)."""
    from tpcheck.sources.files import run_over

    paths = list(paths)
    with run_over(paths):
        return _run_nearest(paths, linter_for, stdin_text=stdin_text,
                            stdin_filename=stdin_filename, sink=sink)


def _run_nearest(paths: list[str], linter_for: Callable[[Path | None], FileLinter], *,
                 stdin_text: str | bytes | None, stdin_filename: str | None,
                 sink: Callable[[list[Finding]], None] | None) -> LintResult:
    out = LintResult()
    nearest: dict[str, Path | None] = {}
    if sink is not None:
        _stream(((p, settings_file_for(p, stdin_filename, nearest))
                 for p in iter_files(paths, out.errors)), linter_for, out, sink,
                stdin_text=stdin_text, stdin_filename=stdin_filename)
        return out
    groups: dict[Path | None, list[str]] = {}
    for p in iter_files(paths, out.errors):
        groups.setdefault(settings_file_for(p, stdin_filename, nearest), []).append(p)
    for sfile, files in groups.items():
        linter = _linter_or_error(sfile, len(files), linter_for, out)
        if linter is not None:
            out.merge(linter.run(files, stdin_text=stdin_text, stdin_filename=stdin_filename))
    out.findings.sort(key=finding_order)
    return out


def _linter_or_error(sfile: Path | None, n: int, linter_for: Callable[[Path | None], FileLinter],
                     out: LintResult) -> FileLinter | None:
    try:
        return linter_for(sfile)
    except UsageError as e:
        if sfile is None:
            raise
        # A broken settings file deeper in the tree costs its own files, not the run's:
        # one error naming it, and every other folder is still checked.
        problem = str(e).removeprefix(f"{sfile}: ")
        out.errors.append(SourceError(str(sfile), 1, 1, f"{problem}; the {n} "
                                      f"file(s) it governs were not checked"))
        return None


def _stream(files: Iterable[tuple[str, Path | None]],
            linter_for: Callable[[Path | None], FileLinter], out: LintResult,
            sink: Callable[[list[Finding]], None], *, stdin_text: str | bytes | None,
            stdin_filename: str | None) -> None:
    """``run_with_nearest_settings`` file by file, in path order, each file's findings sorted
    and handed to ``sink``. Only the (path, settings file) pairs are held: the path order needs
    every name before the first file is read."""
    order = sorted(files, key=lambda pair: pair[0])
    governed = Counter(sfile for _, sfile in order)
    linters: dict[Path | None, FileLinter | None] = {}
    for p, sfile in order:
        if sfile not in linters:
            linter = linters[sfile] = _linter_or_error(sfile, governed[sfile], linter_for, out)
            if linter is not None and linter.topology_error is not None \
                    and linter.topology_error not in out.errors:
                out.errors.append(linter.topology_error)
        linter = linters[sfile]
        if linter is None:
            continue
        start = len(out.findings)
        linter.lint_path(p, out, stdin_text=stdin_text, stdin_filename=stdin_filename)
        found = out.findings[start:]
        del out.findings[start:]
        found.sort(key=finding_order)
        sink(found)


__all__ = ["finding_order", "run_with_nearest_settings", "settings_file_for"]
