"""Lint one open document from its in-memory text, with the editor's settings on top.

A lint process of the server (tpcheck.lsp.worker) calls ``DocumentLinter.lint`` for every
open, save and (debounced) change. It keeps one ``Linter`` per settings combination, so the
resolver's lookups and the parsed model shapes stay warm between keystrokes; a re-lint then
costs one read and the rules.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tpcheck.checks.base import Finding
from tpcheck.lint import Linter
from tpcheck.record import record
from tpcheck.result import LintResult
from tpcheck.settings import Settings
from tpcheck.sources.base import SourceError

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

# LSP language ids → the extension that makes read_path pick the same reader.
LANGUAGE_EXT: Mapping[str, str] = {
    "yaml": ".yaml", "dockercompose": ".yaml", "helm": ".yaml",
    "shellscript": ".sh", "sh": ".sh", "bash": ".sh",
    "python": ".py",
}
KNOWN_EXT = (".yaml", ".yml", ".sh", ".bash", ".py")


@record
class EditorConfig:
    """The ``tpcheck.*`` workspace settings. ``offline`` None means the editor default: offline."""

    gpu: str | None = None
    context: int | None = None
    offline: bool | None = None

    @property
    def effective_offline(self) -> bool:
        return self.offline is not False


_NO_SETTINGS = EditorConfig()  # the editor sent no tpcheck.* settings


def editor_config(raw: object) -> tuple[EditorConfig, list[str]]:
    """Read ``{"gpu", "context", "offline"}`` (or ``{"tpcheck": {...}}``); problems as text."""
    if not isinstance(raw, Mapping):
        return EditorConfig(), []
    table: Any = raw.get("tpcheck", raw)
    if not isinstance(table, Mapping):
        return EditorConfig(), ["tpcheck settings must be an object"]
    problems: list[str] = []
    gpu = table.get("gpu")
    if gpu is not None and not isinstance(gpu, str):
        problems.append("tpcheck.gpu must be a string")
        gpu = None
    context = table.get("context")
    if context is not None and (isinstance(context, bool) or not isinstance(context, int)
                                or context < 1):
        problems.append("tpcheck.context must be a positive number of tokens")
        context = None
    offline = table.get("offline")
    if offline is not None and not isinstance(offline, bool):
        problems.append("tpcheck.offline must be true or false")
        offline = None
    return EditorConfig(gpu=gpu or None, context=context, offline=offline), problems


@record
class DocResult:
    """What one lint of one document produced; ``name`` is the path the reader saw."""

    name: str
    findings: tuple[Finding, ...] = ()
    errors: tuple[SourceError, ...] = ()
    settings_problem: str | None = None  # bad [tool.tpcheck]: the user must be told
    settings_file: str = ""  # the settings file in force ("" for none), and its stamp
    settings_stamp: int = 0


def reader_name(path: str, language_id: str | None) -> str:
    """The file name to read ``path`` as: its own, or with the extension its language implies."""
    if path.lower().endswith(KNOWN_EXT):
        return path
    ext = LANGUAGE_EXT.get(language_id or "")
    return path + ext if ext else path


def wants(path: str, language_id: str | None) -> bool:
    """Whether the server lints this document at all (YAML, shell and Python only)."""
    return path.lower().endswith(KNOWN_EXT) or (language_id or "") in LANGUAGE_EXT


class DocumentLinter:
    """Settings discovery and a warm ``Linter`` per settings; call from one thread at a time."""

    def __init__(self) -> None:
        self._settings: dict[tuple[str, int], Settings] = {}
        self._linters: dict[tuple[str, int, EditorConfig], Linter] = {}
        self.last_key: tuple[str, int] = ("", 0)

    def settings_for(self, path: str, config: EditorConfig,
                     buffers: Mapping[str, str] | None = None,
                     ) -> tuple[tuple[str, int], Settings]:
        """[tool.tpcheck] nearest the document (re-read when the file changes), editor on top.
        ``buffers``: settings files the editor has open, by path, with the text it holds (read
        instead of the disk, so an unsaved edit applies).

        Returns the settings and a key naming them (file and modification time, or the
        buffer's hash).
        """
        from tpcheck.settings import find_settings_file, load_settings

        folder = Path(path).parent if path else Path.cwd()
        sfile = find_settings_file(folder)
        held = buffers.get(str(sfile)) if buffers and sfile is not None else None
        key = ("", 0) if sfile is None else (
            str(sfile), _mtime(sfile) if held is None else hash(held))
        self.last_key = key  # named even when the file turns out broken (it is polled too)
        base = self._settings.get(key)
        if base is None:
            base = load_settings(sfile, held)
            self._settings = {k: v for k, v in self._settings.items() if k[0] != key[0]}
            self._settings[key] = base
        return key, base.with_flags(context=config.context,
                                    offline=base.offline or config.effective_offline)

    def linter_for(self, key: tuple[str, int], settings: Settings,
                   config: EditorConfig) -> Linter:
        lkey = (*key, config)
        linter = self._linters.get(lkey)
        if linter is None:
            if len(self._linters) > 16:  # settings churn (an edited pyproject): start afresh
                self._linters.clear()
            linter = Linter(settings, gpu_flag=config.gpu, gpu_from="tpcheck.gpu")
            self._linters[lkey] = linter
        return linter

    def lint(self, path: str, text: str, *, language_id: str | None = None,
             config: EditorConfig = _NO_SETTINGS,
             buffers: Mapping[str, str] | None = None) -> DocResult:
        """Findings and read errors for ``text`` standing for ``path``; never raises."""
        from tpcheck import UsageError
        from tpcheck.checks import UnknownRule
        from tpcheck.settings import SettingsError
        from tpcheck.sources import read_path

        name = reader_name(path, language_id)
        self.last_key = key = ("", 0)
        try:
            key, settings = self.settings_for(path, config, buffers)
            linter = self.linter_for(key, settings, config)
        except SettingsError as e:
            key = self.last_key
            return DocResult(name, (), (SourceError(name, 1, 1, str(e)),), str(e), *key)
        except (UsageError, UnknownRule) as e:
            key = self.last_key
            problem = str(e).strip("'\"")
            return DocResult(name, (), (SourceError(name, 1, 1, problem),), problem, *key)
        out = LintResult()
        try:
            rr = read_path(name, text, max_bytes=settings.max_file_size)
            linter.lint_read(rr, out)
        except Exception as e:  # a reader bug must not take the editor session down
            if os.environ.get("TPCHECK_DEBUG"):
                raise
            return DocResult(name, (), (SourceError(
                name, 1, 1, f"internal error: {type(e).__name__}: {e}"),), None, *key)
        findings = sorted(out.findings, key=lambda f: (f.span.line, f.span.column, f.code))
        return DocResult(name, tuple(findings), tuple(out.errors), None, *key)


def tune_gc() -> None:
    """As the CLI does: the imported modules' objects are set aside from collection and the
    young generation is collected every 10,000 allocations instead of 700 (a re-lint allocates
    and frees nodes by the thousand; issue 20 measured p90 re-diagnose of a 2,000-line manifest
    at 12-16 ms before, 3.6 ms after)."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def settings_stamp(path: str) -> int:
    """A settings file's modification time in ns (0 when it is gone): the one ``stat`` the
    server's poll costs per settings file."""
    return _mtime(Path(path))


def _mtime(p: Path) -> int:
    try:
        return p.stat().st_mtime_ns
    except OSError:
        return 0


__all__ = ["DocResult", "DocumentLinter", "EditorConfig", "editor_config", "reader_name",
           "tune_gc", "wants"]
