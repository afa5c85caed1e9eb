"""The pygls server behind ``tpcheck lsp``.

Every lint runs on one worker thread: model resolution may touch the disk or (when the user
enables it) the network, and the event loop must keep answering hovers meanwhile. Results are
kept per document version; hover and code actions answer only from the result for the text the
client is looking at, so an edit never lands on a stale position.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from tpcheck import __version__
from tpcheck.checks.base import Edit, Finding
from tpcheck.lsp import convert, wire
from tpcheck.lsp.engine import (
    DocResult,
    DocumentLinter,
    EditorConfig,
    editor_config,
    settings_stamp,
    wants,
)
from tpcheck.lsp.suppress import TextChange, ignore_change
from tpcheck.record import record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

log = logging.getLogger("tpcheck.lsp")

DEBOUNCE_SECONDS = 0.15
LINT_THREADS = 3
# Past either budget a document is linted on open and save only, and the user is told why.
LIVE_SECONDS = 2.0
LIVE_BYTES = 1024 * 1024
SETTINGS_FILES = ("pyproject.toml", ".tpcheck.toml")
CONFIG_WAIT_SECONDS = 2.0


@record
class Published:
    """The diagnostics of one document version, with the findings behind them."""

    version: int | None
    text: str
    result: DocResult
    diagnostics: tuple[lsp.Diagnostic, ...]


class TpcheckServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("tpcheck", __version__,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=wire.Protocol)
        self.exit_code = 0
        # A few lint threads, each with its own warm DocumentLinter: one slow document takes
        # one thread, the others keep being linted. One lint per document at a time.
        self.lint_pool = ThreadPoolExecutor(max_workers=LINT_THREADS,
                                            thread_name_prefix="tpcheck-lint")
        self.thread_linters = threading.local()
        self.running: set[str] = set()
        self.rerun: set[str] = set()
        self.on_save_only: set[str] = set()
        self.action_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tpcheck-fix")
        self.config = EditorConfig()
        self.config_problems: list[str] = []
        self.told: set[str] = set()
        self.config_ready = False
        self.published: dict[str, Published] = {}
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.debounce = DEBOUNCE_SECONDS
        # Settings files in force for open documents, with the modification time last seen:
        # without the client's file watching they are polled (one stat each) at every lint.
        self.watching = False
        self.polled: dict[str, int] = {}
        self.doc_settings: dict[str, str] = {}

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdio with tpcheck's hardened reader (tpcheck.lsp.wire); ``exit_code`` is
        what the ``exit`` notification asked for: 1 without a ``shutdown`` before it."""
        from pygls.io_ import StdinAsyncReader, StdoutWriter

        assert isinstance(self.protocol, wire.Protocol)
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(wire.read_messages(reader, self.protocol))
        except SystemExit as e:  # pygls' exit handler: 0 after shutdown, else 1
            self.exit_code = e.code if isinstance(e.code, int) else 1
        except BrokenPipeError:
            log.error("the client closed the connection")
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]

    # ---- settings ---------------------------------------------------------------------------
    def supports_configuration(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.workspace and caps.workspace.configuration)

    def set_config(self, raw: object) -> None:
        self.config, self.config_problems = editor_config(raw)
        for p in self.config_problems:
            self.tell(lsp.MessageType.Warning, f"tpcheck: {p}")

    def tell(self, kind: lsp.MessageType, message: str) -> None:
        """A problem the user must see (window/showMessage), once per distinct message; also
        in the log."""
        self.window_log_message(lsp.LogMessageParams(kind, message))
        if message not in self.told:
            self.told.add(message)
            self.window_show_message(lsp.ShowMessageParams(kind, message))

    async def watch_settings(self) -> None:
        """Re-lint open documents when a settings file changes (the client watches the files:
        dynamic registration of workspace/didChangeWatchedFiles)."""
        caps = self.client_capabilities
        watched = caps and caps.workspace and caps.workspace.did_change_watched_files
        if not (watched and watched.dynamic_registration):
            return
        options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=[
            lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in SETTINGS_FILES])
        try:
            await self.client_register_capability_async(lsp.RegistrationParams(registrations=[
                lsp.Registration(id="tpcheck-settings-files",
                                 method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                 register_options=options)]))
            self.watching = True
        except Exception as e:  # a client that refuses: the settings files are polled instead
            log.warning("could not watch settings files: %s", e)

    def poll_settings(self) -> None:
        """Without file watching (Neovim 0.12 on Linux offers none): at each lint, one stat per
        settings file in force; one that changed re-lints every open document."""
        if self.watching:
            return
        changed = False
        for path, seen in list(self.polled.items()):
            now = settings_stamp(path)
            if now != seen:
                self.polled[path] = now
                changed = True
        if changed:
            self.relint_all()

    def note_settings(self, uri: str, result: DocResult) -> None:
        """Remember the settings file a lint used; a document whose nearest settings file is
        new (one was created above it) re-lints the others, which may share it."""
        path = result.settings_file
        before = self.doc_settings.get(uri)
        self.doc_settings[uri] = path
        if not path:
            return
        known = path in self.polled
        if not known:
            self.polled[path] = settings_stamp(path)
        if before is not None and before != path and not known:
            self.relint_all(but=uri)

    def forget(self, uri: str) -> None:
        """A closed document: its results go; a closed settings file's disk text applies again
        (the client's buffer is no longer read)."""
        timer = self.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self.published.pop(uri, None)
        self.on_save_only.discard(uri)
        self.doc_settings.pop(uri, None)
        from urllib.parse import unquote, urlsplit

        if is_settings_file(unquote(urlsplit(uri).path)):
            self.relint_all(but=uri)

    def settings_buffers(self) -> dict[str, str]:
        """The settings files the client has open, by path, with the text it holds."""
        return {doc.path: doc.source for uri, doc in list(self.workspace.text_documents.items())
                if is_settings_file(doc.path)}

    def settings_edited(self, uri: str, saved: bool) -> bool:
        """A settings file the client has open was edited or saved: every open document is
        linted again with it (an unsaved edit applies too: its buffer is read, not the disk)."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None or not is_settings_file(doc.path):
            return False
        if saved:
            self.polled[doc.path] = settings_stamp(doc.path)
        self.relint_all(delay=0 if saved else self.debounce, but=uri)
        return True

    async def pull_config(self) -> None:
        try:
            got = await asyncio.wait_for(self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="tpcheck")])),
                timeout=CONFIG_WAIT_SECONDS)
            self.set_config(got[0] if got else None)
        except Exception as e:  # a client that cannot answer leaves the defaults
            log.warning("workspace/configuration failed: %s", e)
        finally:
            self.config_ready = True

    async def wait_config(self) -> None:
        waited = 0.0
        while not self.config_ready and waited < CONFIG_WAIT_SECONDS:
            await asyncio.sleep(0.01)
            waited += 0.01

    # ---- linting ----------------------------------------------------------------------------
    def schedule(self, uri: str, delay: float) -> None:
        old = self.timers.pop(uri, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self.timers[uri] = loop.call_later(delay, self._start, uri)

    def _start(self, uri: str) -> None:
        self.timers.pop(uri, None)
        task = asyncio.get_running_loop().create_task(self.lint_and_publish(uri))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def linter(self) -> DocumentLinter:
        """This lint thread's own linter (a DocumentLinter is used by one thread at a time)."""
        mine: DocumentLinter | None = getattr(self.thread_linters, "linter", None)
        if mine is None:
            mine = self.thread_linters.linter = DocumentLinter()
        return mine

    def _lint_timed(self, path: str, text: str, language_id: str | None,
                    config: EditorConfig, buffers: dict[str, str]) -> tuple[DocResult, float]:
        start = time.perf_counter()
        result = self.linter().lint(path, text, language_id=language_id, config=config,
                                    buffers=buffers)
        return result, time.perf_counter() - start

    def on_change(self, uri: str) -> None:
        if uri not in self.on_save_only:
            self.schedule(uri, self.debounce)

    def _budget(self, uri: str, name: str, size: int, seconds: float) -> None:
        """A document past the time or size budget is linted on open and save only."""
        if uri in self.on_save_only or (seconds <= LIVE_SECONDS and size <= LIVE_BYTES):
            return
        self.on_save_only.add(uri)
        why = (f"took {seconds:.1f} s to lint, over the {LIVE_SECONDS:g} s"
               if seconds > LIVE_SECONDS else
               f"is {size / 1024:,.0f} KiB, over the {LIVE_BYTES // 1024:,} KiB")
        self.tell(lsp.MessageType.Info,
                  f"tpcheck: {Path(name).name} {why} budget for linting as you type; it is now "
                  "linted when opened or saved")

    async def lint_and_publish(self, uri: str) -> None:
        if uri in self.running:
            self.rerun.add(uri)  # the running lint's result is stale: lint again after it
            return
        self.running.add(uri)
        try:
            await self._lint_and_publish(uri)
        finally:
            self.running.discard(uri)
            if uri in self.rerun:
                self.rerun.discard(uri)
                self.schedule(uri, 0)

    async def _lint_and_publish(self, uri: str) -> None:
        try:
            await self.wait_config()
            doc = self.workspace.text_documents.get(uri)
            if doc is None or not wants(doc.path, doc.language_id):
                return
            self.poll_settings()
            version, text = doc.version, doc.source
            result, seconds = await asyncio.get_running_loop().run_in_executor(
                self.lint_pool, partial(self._lint_timed, doc.path, text, doc.language_id,
                                        self.config, self.settings_buffers()))
            self.note_settings(uri, result)
            self._budget(uri, result.name, len(text.encode("utf-8", "surrogatepass")), seconds)
            current = self.workspace.text_documents.get(uri)
            if current is None or current.version != version:
                return  # the text moved on; its own lint is queued
            lines = convert.split_lines(text)
            enc = self.encoding()
            diags = [convert.diagnostic(f, lines, uri, result.name, enc) for f in result.findings]
            diags += [convert.error_diagnostic(e, lines, result.name, enc) for e in result.errors]
            if result.settings_problem:
                self.tell(lsp.MessageType.Error, f"tpcheck settings: {result.settings_problem}")
            self.published[uri] = Published(version, text, result, tuple(diags))
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version))
        except Exception as e:
            log.exception("lint failed for %s", uri)
            self.window_log_message(lsp.LogMessageParams(
                lsp.MessageType.Error, f"tpcheck: lint failed for {uri}: {type(e).__name__}: {e}"))

    def relint_all(self, delay: float = 0, but: str | None = None) -> None:
        for uri in list(self.workspace.text_documents):
            if uri != but:
                self.schedule(uri, delay)

    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(enc.value if isinstance(enc, lsp.PositionEncodingKind) else enc or "utf-16")

    def current(self, uri: str) -> Published | None:
        """The published result, if it is for the text the client has now."""
        pub = self.published.get(uri)
        doc = self.workspace.text_documents.get(uri)
        if pub is None or doc is None or doc.version != pub.version:
            return None
        return pub

    # ---- hover and code actions ---------------------------------------------------------------
    def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        pub = self.current(params.text_document.uri)
        if pub is None:
            return None
        lines = convert.split_lines(pub.text)
        line0 = params.position.line
        if line0 >= len(lines):
            return None
        col0 = convert.code_points(lines[line0], params.position.character, self.encoding())
        hits = [f for f in pub.result.findings if convert.contains(f.span, line0, col0)]
        if not hits:
            return None
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown,
                                       value=convert.hover_markdown(hits)),
            range=convert.span_range(hits[0].span, lines, self.encoding()))

    async def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        pub = self.current(uri)
        if pub is None:
            return None
        lines = convert.split_lines(pub.text)
        enc = self.encoding()
        hits = self._hits(pub, params, lines)
        if not hits:
            return None
        from tpcheck.sources import reader_kind

        kind = reader_kind(pub.result.name, pub.text)
        fixes, ignores = await asyncio.get_running_loop().run_in_executor(
            self.action_pool, partial(_changes, pub.text, kind, pub.result.name,
                                      [f for f, _ in hits]))
        if self.current(uri) is not pub:
            return None
        # One action per distinct change: three refusals on one token share "Set TP to 4".
        merged: dict[tuple[object, ...], lsp.CodeAction] = {}
        for (_, d), per_finding, ignore in zip(hits, fixes, ignores, strict=True):
            for e, changes in per_finding:
                self._offer(merged, e.title, changes, d, uri, lines, enc, e.preferred)
            if ignore is not None:
                self._offer(merged, ignore.title, [ignore], d, uri, lines, enc, False)
        return list(merged.values()) or None

    def _hits(self, pub: Published, params: lsp.CodeActionParams,
              lines: list[str]) -> list[tuple[Finding, lsp.Diagnostic]]:
        """Findings the request is about: on the lines of its range (the cursor anywhere on a
        diagnosed line), or named in ``context.diagnostics``."""
        r = params.range
        asked = {(d.range.start.line, str(d.code)) for d in params.context.diagnostics or ()}
        out = []
        for f, d in zip(pub.result.findings, pub.diagnostics, strict=False):
            on_lines = r.start.line <= d.range.start.line <= r.end.line or (
                d.range.start.line <= r.start.line <= d.range.end.line)
            if on_lines or (d.range.start.line, f.code) in asked:
                out.append((f, d))
        return out

    @staticmethod
    def _offer(merged: dict[tuple[object, ...], lsp.CodeAction], title: str,
               changes: Sequence[TextChange], d: lsp.Diagnostic, uri: str, lines: list[str],
               enc: str, preferred: bool) -> None:
        key = (title, *((c.path, c.line, c.column, c.end_line, c.end_column, c.new_text)
                        for c in changes))
        action = merged.get(key)
        if action is not None:
            if d not in (action.diagnostics or ()):
                action.diagnostics = [*(action.diagnostics or ()), d]
            return
        by_uri: dict[str, list[lsp.TextEdit]] = {}
        for c in changes:
            target, at = (uri, lines) if c.path is None else (Path(c.path).as_uri(),
                                                              _file_lines(c.path))
            by_uri.setdefault(target, []).append(
                lsp.TextEdit(convert.change_range(c, at, enc), c.new_text))
        merged[key] = lsp.CodeAction(
            title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[d],
            is_preferred=preferred or None, edit=lsp.WorkspaceEdit(changes=by_uri))


def _changes(text: str, kind: str, name: str, findings: Sequence[Finding],
             ) -> tuple[list[list[tuple[Edit, list[TextChange]]]], list[TextChange | None]]:
    """Each finding's fixes as verified text changes, and its ignore comment (a worker thread)."""
    from tpcheck.lsp.fixes import changes_for, verified

    lines = text.split("\n")
    fixes = []
    for f in findings:
        mine = []
        for e in f.edits:
            if e.also or not _same_file(e.span.path, name):
                # written elsewhere (values.yaml) or with a GPU request: --fix's own changes
                moved = _changes_elsewhere(f, e, text, name)
                if moved is not None:
                    mine.append((e, moved))
                continue
            changes = changes_for(e, lines, kind)
            if changes is None:
                continue
            if e.add_option is not None and not verified(
                    text, name, changes, "data_parallel_size", int(e.add_option[1])):
                continue
            mine.append((e, changes))
        fixes.append(mine)
    return fixes, _ignore_changes(text, kind, name, findings)


def _same_file(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _file_lines(path: str) -> list[str]:
    try:
        return convert.split_lines(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError):
        return []


def _changes_elsewhere(f: Finding, e: Edit, text: str, name: str) -> list[TextChange] | None:
    """An edit whose value is written in another file (a Helm chart's values.yaml), or that
    carries more changes (the GPU request), as the text changes ``--fix`` makes: the document
    as the editor has it, the other files as they are on disk."""
    from tpcheck.report.fix import Texts, changes_for

    texts = Texts()
    key = os.path.abspath(name)
    texts.original[key] = texts.current[key] = text
    got = changes_for(f, e, texts)
    if isinstance(got, str):
        return None
    out = []
    for c in got:
        body = texts.current[c.path]
        a_line, a_col = _line_col(body, c.start)
        b_line, b_col = _line_col(body, c.end)
        out.append(TextChange(a_line, a_col, b_line, b_col, c.new_text, e.title,
                              None if c.path == key else c.path))
    return out


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """0-based line and code-point column of ``offset``."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start


def _ignore_changes(text: str, kind: str, name: str,
                    findings: Sequence[Finding]) -> list[TextChange | None]:
    return [ignore_change(text, kind, f.span.line, f.code, name) for f in findings]


def is_settings_file(path: str) -> bool:
    return Path(path).name in SETTINGS_FILES


def make_server() -> TpcheckServer:
    """A server with every feature registered (separate from ``serve`` so tests can build one)."""
    server = TpcheckServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: TpcheckServer, params: lsp.InitializeParams) -> None:
        if params.initialization_options is not None:
            ls.set_config(params.initialization_options)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: TpcheckServer, params: lsp.InitializedParams) -> None:
        if ls.supports_configuration():
            await ls.pull_config()
        else:
            ls.config_ready = True
        await ls.watch_settings()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TpcheckServer,
                                 params: lsp.DidChangeWatchedFilesParams) -> None:
        ls.relint_all()  # settings are re-read by modification time on the next lint

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: TpcheckServer,
                                       params: lsp.DidChangeConfigurationParams) -> None:
        if ls.supports_configuration():
            await ls.pull_config()
        elif isinstance(params.settings, dict):
            ls.set_config(params.settings)
        ls.relint_all()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TpcheckServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TpcheckServer, params: lsp.DidChangeTextDocumentParams) -> None:
        if not ls.settings_edited(params.text_document.uri, saved=False):
            ls.on_change(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TpcheckServer, params: lsp.DidSaveTextDocumentParams) -> None:
        if not ls.settings_edited(params.text_document.uri, saved=True):
            ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TpcheckServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.forget(uri)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: TpcheckServer, params: lsp.HoverParams) -> lsp.Hover | None:
        return ls.hover(params)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    async def code_action(ls: TpcheckServer,
                          params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        return await ls.code_actions(params)

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: TpcheckServer, *args: Any) -> None:
        for timer in ls.timers.values():
            timer.cancel()
        ls.timers.clear()
        for pool in (ls.lint_pool, ls.action_pool):
            with contextlib.suppress(Exception):
                pool.shutdown(wait=False, cancel_futures=True)

    return server


def tune_gc() -> None:
    """As the CLI does: the imported modules' objects are set aside from collection and the
    young generation is collected every 10,000 allocations instead of 700 (a re-lint allocates
    and frees nodes by the thousand; issue 20 measured p90 re-diagnose of a 2,000-line manifest
    at 12-16 ms before, 3.6 ms after)."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def serve() -> int:
    server = make_server()
    tune_gc()
    server.start_io()
    return server.exit_code


__all__ = ["TpcheckServer", "make_server", "serve"]
