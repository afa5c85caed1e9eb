"""The pygls server behind ``tpcheck lsp``.

Every lint runs in a lint process (tpcheck.lsp.worker), one document per process at a time:
linting is pure Python, and on a thread it held the interpreter lock that the event loop and the
other documents' lints need (a 14k-line document slowed every other one about 40x, issue 30).
A change cancels its document's running lint at once (that text is gone) and the next lint
starts after the debounce; a result is published only for the text the client still holds, so
version n's diagnostics never follow n+1's. A document known to lint slowly never takes the last
free process: the others keep theirs. Results are kept per document version; hover and code
actions answer only from the result for the text the client is looking at.
"""

from __future__ import annotations

import asyncio
import contextlib

from lsprotocol import types as lsp

from tpcheck.lsp.documents import (
    DEBOUNCE_SECONDS,
    LINT_WORKERS,
    LIVE_BYTES,
    LIVE_SECONDS,
    PRESUME_SLOW_CHARS,
    SLOW_SECONDS,
    STATUS,
    WORKER_RSS_KIB,
    WORKER_START_TRIES,
    TpcheckServer,
)
from tpcheck.lsp.engine import tune_gc
from tpcheck.lsp.published import Published, Run
from tpcheck.lsp.settings_watch import (
    CONFIG_WAIT_SECONDS,
    SETTINGS_FILES,
    is_settings_file,
)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


def make_server() -> TpcheckServer:
    """A server with every feature registered (separate from ``serve`` so tests can build one)."""
    server = TpcheckServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: TpcheckServer, params: lsp.InitializeParams) -> None:
        if params.initialization_options is not None:
            ls.set_config(params.initialization_options)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: TpcheckServer, params: lsp.InitializedParams) -> None:
        ls.grow()  # the first lint process starts while the client is still busy
        if ls.supports_configuration():
            await ls.pull_config()
        else:
            ls.config_ready = True
            ls.pump()
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
        ls.opened(params.text_document.uri)

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

    @server.feature(STATUS)
    def status(ls: TpcheckServer, params: Any) -> dict[str, object]:
        return ls.status()

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: TpcheckServer, *args: Any) -> None:
        for timer in ls.timers.values():
            timer.cancel()
        ls.timers.clear()
        # Reaped before the reply: the client's exit may close the event loop right after.
        waits = [w.proc.wait() for w in ls.stop_workers() if w.proc is not None]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*waits), timeout=2)
        with contextlib.suppress(Exception):
            ls.action_pool.shutdown(wait=False, cancel_futures=True)

    return server


def serve() -> int:
    server = make_server()
    tune_gc()
    server.start_io()
    return server.exit_code


__all__ = ["CONFIG_WAIT_SECONDS", "DEBOUNCE_SECONDS", "LINT_WORKERS", "LIVE_BYTES", "LIVE_SECONDS",
           "PRESUME_SLOW_CHARS", "SETTINGS_FILES", "SLOW_SECONDS", "STATUS", "WORKER_RSS_KIB",
           "WORKER_START_TRIES", "Published", "Run", "TpcheckServer", "is_settings_file",
           "make_server", "serve", "tune_gc"]
