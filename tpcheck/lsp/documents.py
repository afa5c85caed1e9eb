"""TpcheckServer: the open documents, the lint processes that check them, what is published."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from lsprotocol import types as lsp

from tpcheck import __version__
from tpcheck.lsp import convert, wire
from tpcheck.lsp.actions import finding_changes, hits_of, offer
from tpcheck.lsp.engine import (
    EditorConfig,
    reader_name,
    wants,
)
from tpcheck.lsp.pool import Done, Failed, Worker, WorkerCrashed
from tpcheck.lsp.published import Published, Run
from tpcheck.lsp.settings_watch import (
    CONFIG_WAIT_SECONDS,
    SettingsWatch,
    is_settings_file,
)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

log = logging.getLogger("tpcheck.lsp")

DEBOUNCE_SECONDS = 0.15
# Lint processes: one slow document holds at most LINT_WORKERS - 1 of them (it waits rather than
# take the last free one), so two are enough for the others to keep being linted; a third would
# cost its memory (about 60 MiB each) for a second slow document at once.
LINT_WORKERS = 2
# A document whose last lint took longer than this is "slow" for that rule (the 200-line
# manifest of bench/lsp_bench.py lints in about 3 ms; a 28,000-line chart in about 0.5 s).
SLOW_SECONDS = 0.25
# Before its first lint a document is presumed slow past this size (a session restoring ten
# large tabs must not take every worker): the 200-line manifest is 6 KiB, the 1,000-launch
# script of tests/lsp 60 KiB.
PRESUME_SLOW_CHARS = 32 * 1024
# A worker past this resident size after a lint is replaced (a huge document's heap is not
# given back to the system); a fresh one starts in well under a second.
WORKER_RSS_KIB = 512 * 1024
# Worker starts that fail in a row before the server stops trying (and says so).
WORKER_START_TRIES = 3
# Past either budget a document is linted on open and save only, and the user is told why.
LIVE_SECONDS = 2.0
LIVE_BYTES = 1024 * 1024
STATUS = "tpcheck/status"  # a request: what the server holds per document, and its workers


class TpcheckServer(SettingsWatch):
    def __init__(self) -> None:
        super().__init__("tpcheck", __version__,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=wire.Protocol)
        self.exit_code = 0
        self.workers: list[Worker] = []
        self.starting = 0
        self.start_failures = 0
        self.stopped = False
        self.jobs = 0
        self.wanted: dict[str, None] = {}  # documents due a lint, in order, waiting for a worker
        self.running: dict[str, Run] = {}  # one lint per document at a time
        self.generation: dict[str, int] = {}  # which opening of the document (reopened: new)
        self.openings = 0
        self.slow_docs: dict[str, int] = {}  # lints in a row that took over SLOW_SECONDS
        self.cancelled = 0
        self.on_save_only: set[str] = set()
        self.config_timer: asyncio.TimerHandle | None = None
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
            self.stop_workers()
            self.shutdown()  # type: ignore[no-untyped-call]

    def forget(self, uri: str) -> None:
        """A closed document: its lint stops, its results and state go; a closed settings
        file's disk text applies again (the client's buffer is no longer read)."""
        timer = self.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self.cancel(uri)
        self.wanted.pop(uri, None)
        self.generation.pop(uri, None)
        self.slow_docs.pop(uri, None)
        self.published.pop(uri, None)
        self.on_save_only.discard(uri)
        self.doc_settings.pop(uri, None)
        from urllib.parse import unquote, urlsplit

        if is_settings_file(unquote(urlsplit(uri).path)):
            self.relint_all(but=uri)

    # ---- linting ----------------------------------------------------------------------------
    def opened(self, uri: str) -> None:
        """A new opening of ``uri``: nothing linted for an earlier one may land on it."""
        self.openings += 1
        self.generation[uri] = self.openings
        self.schedule(uri, 0)

    def schedule(self, uri: str, delay: float) -> None:
        old = self.timers.pop(uri, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self.timers[uri] = loop.call_later(delay, self._start, uri)

    def _start(self, uri: str) -> None:
        """The debounce is over: ``uri`` is due a lint of the text it has now."""
        self.timers.pop(uri, None)
        self.wanted[uri] = None
        self.cancel(uri)  # a lint of older text or settings is moot
        self.pump()

    def cancel(self, uri: str) -> None:
        run = self.running.get(uri)
        if run is not None:
            run.worker.cancel(run.job)

    def on_change(self, uri: str) -> None:
        self.cancel(uri)  # that text is gone: stop linting it now, not after the debounce
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

    def pump(self) -> None:
        """Give each document due a lint to a free worker, in the order they became due."""
        if self.stopped:
            return
        if not self.config_ready:
            if self.config_timer is None:  # a client that never says initialized
                self.config_timer = asyncio.get_running_loop().call_later(
                    CONFIG_WAIT_SECONDS, self._config_waited)
            return
        for uri in list(self.wanted):
            if uri in self.running:
                continue  # its cancelled lint has not answered yet
            doc = self.workspace.text_documents.get(uri)
            if doc is None or not wants(doc.path, doc.language_id):
                del self.wanted[uri]
                continue
            slow = self.is_slow(uri, len(doc.source))
            worker = self.free_worker(slow, uri)
            if worker is None:
                continue
            del self.wanted[uri]
            self.dispatch(worker, uri, doc.path, doc.source, doc.version, doc.language_id,
                          slow)
        self.grow()

    def _config_waited(self) -> None:
        self.config_ready = True
        self.pump()

    def is_slow(self, uri: str, size: int) -> bool:
        """Slow: two lints in a row over SLOW_SECONDS (one can be a cold process's first:
        imports, the model catalog), or one for a large document; before any, large."""
        big = size > PRESUME_SLOW_CHARS
        streak = self.slow_docs.get(uri)
        return big if streak is None else streak >= 2 or (big and streak >= 1)

    def free_worker(self, slow: bool, uri: str) -> Worker | None:
        """An idle worker, the one that linted ``uri`` last if it is free (its caches hold that
        document's models; a worker starts afresh after a cancel, which the slow document's
        edits cause); for a slow document only while another one stays for the rest."""
        idle = [w for w in self.workers if w.idle]
        if not idle:
            return None
        if slow and sum(1 for w in self.workers if w.job and w.slow) >= LINT_WORKERS - 1:
            return None
        return next((w for w in idle if w.last_uri == uri), idle[0])

    def grow(self) -> None:
        """Keep LINT_WORKERS workers (started with the session, replaced when one dies): a
        document never waits for a process to start while a slow one holds the other."""
        alive = sum(1 for w in self.workers if not w.dead)
        while (not self.stopped and alive + self.starting < LINT_WORKERS
               and self.start_failures < WORKER_START_TRIES):
            self.starting += 1
            self._task(self._spawn())

    def _task(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _spawn(self) -> None:
        worker = Worker()
        try:
            await worker.start()
        except Exception as e:
            worker.stop()
            self.start_failures += 1
            log.error("a lint process did not start: %s", e)
            if self.start_failures >= WORKER_START_TRIES:
                self.tell(lsp.MessageType.Error,
                          f"tpcheck: the lint process does not start ({e}); nothing is linted")
            else:
                self.grow()
            return
        finally:
            self.starting -= 1
        self.start_failures = 0
        if self.stopped:
            worker.stop()
            return
        self.workers.append(worker)
        self.pump()

    def lost(self, worker: Worker) -> None:
        worker.stop()
        with contextlib.suppress(ValueError):
            self.workers.remove(worker)

    def dispatch(self, worker: Worker, uri: str, path: str, text: str, version: int | None,
                 language_id: str | None, slow: bool) -> None:
        self.poll_settings()
        self.jobs += 1
        run = Run(uri, self.generation.get(uri, 0), version, worker, self.jobs, self.encoding())
        worker.job, worker.uri, worker.slow, worker.last_uri = run.job, uri, slow, uri
        self.running[uri] = run
        self._task(self._lint(run, path, text, language_id, self.config,
                              self.settings_buffers()))

    def is_current(self, run: Run) -> bool:
        """Whether the client still holds the text ``run`` linted (same opening, same version)."""
        doc = self.workspace.text_documents.get(run.uri)
        return (doc is not None and self.generation.get(run.uri) == run.generation
                and doc.version == run.version)

    async def _lint(self, run: Run, path: str, text: str, language_id: str | None,
                    config: EditorConfig, buffers: dict[str, str]) -> None:
        worker = run.worker
        try:
            got = await worker.lint(run.job, path, text, language_id, config, buffers, run.uri,
                                    run.encoding)
            if isinstance(got, Done):
                if worker.rss_kib > WORKER_RSS_KIB:
                    log.info("replacing a lint process of %d MiB", worker.rss_kib // 1024)
                    self.lost(worker)
                self.finish(run, text, got)
            elif got is None:
                self.cancelled += 1
            elif isinstance(got, Failed):
                self.window_log_message(lsp.LogMessageParams(
                    lsp.MessageType.Error, f"tpcheck: lint failed for {run.uri}: {got.message}"))
        except WorkerCrashed as e:
            self.lost(worker)
            self.crashed(run, path, text, language_id, e)
        except Exception as e:
            log.exception("lint failed for %s", run.uri)
            self.window_log_message(lsp.LogMessageParams(
                lsp.MessageType.Error,
                f"tpcheck: lint failed for {run.uri}: {type(e).__name__}: {e}"))
        finally:
            if self.running.get(run.uri) is run:
                del self.running[run.uri]
            self.pump()

    def finish(self, run: Run, text: str, done: Done) -> None:
        """Publish a finished lint if its text is still the client's; learn its cost."""
        uri, result = run.uri, done.result
        if self.generation.get(uri) != run.generation:
            return  # closed (and perhaps reopened) since: nothing of it is kept
        self.slow_docs[uri] = self.slow_docs.get(uri, 0) + 1 if done.seconds > SLOW_SECONDS else 0
        self.note_settings(uri, result)
        self._budget(uri, result.name, len(text.encode("utf-8", "surrogatepass")), done.seconds)
        if not self.is_current(run) or run.encoding != self.encoding():
            return  # the text moved on; its own lint is due
        if result.settings_problem:
            self.tell(lsp.MessageType.Error, f"tpcheck settings: {result.settings_problem}")
        self.published[uri] = Published(run.version, text, result, done.findings,
                                        done.diagnostics)
        assert isinstance(self.protocol, wire.Protocol)
        self.protocol.notify_json(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, (
            f'{{"uri":{json.dumps(uri)},"version":{json.dumps(run.version)},'
            f'"diagnostics":{done.diagnostics}}}'))

    def crashed(self, run: Run, path: str, text: str, language_id: str | None,
                e: WorkerCrashed) -> None:
        """The worker died on this document: one line says so where the user looks, and the
        next worker is started by ``pump``."""
        message = f"tpcheck could not lint this document: the lint process {e}; it was restarted"
        self.window_log_message(lsp.LogMessageParams(
            lsp.MessageType.Error, f"{message} ({run.uri}, version {run.version})"))
        if not self.is_current(run):
            return
        from tpcheck.sources.base import SourceError

        name = reader_name(path, language_id)
        lines = convert.split_lines(text)
        diag = convert.error_diagnostic(SourceError(name, 1, 1, message), lines, name,
                                        self.encoding())
        self.published.pop(run.uri, None)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=run.uri, diagnostics=[diag], version=run.version))

    def status(self) -> dict[str, object]:
        """What the server holds (the ``tpcheck/status`` request: tests and bug reports)."""
        return {
            "open": len(self.workspace.text_documents),
            "published": len(self.published), "timers": len(self.timers),
            "wanted": len(self.wanted), "running": len(self.running),
            "generations": len(self.generation), "costs": len(self.slow_docs),
            "cancelled": self.cancelled,
            "on_save_only": len(self.on_save_only), "settings": len(self.doc_settings),
            "tasks": len(self.tasks),
            "futures": len(getattr(self.protocol, "_request_futures", ())),
            "workers": [{"pid": w.pid, "busy": bool(w.job), "lints": w.lints,
                         "rss_kib": w.rss_kib} for w in self.workers if not w.dead],
        }

    def stop_workers(self) -> list[Worker]:
        self.stopped = True
        gone = list(self.workers)
        for w in gone:
            w.stop()
        self.workers.clear()
        return gone

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
        hits = [f for f in pub.findings if convert.contains(f.span, line0, col0)]
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
        hits = hits_of(pub, params, lines)
        if not hits:
            return None
        from tpcheck.sources import reader_kind

        kind = reader_kind(pub.result.name, pub.text)
        fixes, ignores = await asyncio.get_running_loop().run_in_executor(
            self.action_pool, partial(finding_changes, pub.text, kind, pub.result.name,
                                      [f for f, _ in hits]))
        if self.current(uri) is not pub:
            return None
        # One action per distinct change: three refusals on one token share "Set TP to 4".
        merged: dict[tuple[object, ...], lsp.CodeAction] = {}
        for (_, d), per_finding, ignore in zip(hits, fixes, ignores, strict=True):
            for e, changes in per_finding:
                offer(merged, e.title, changes, d, uri, lines, enc, e.preferred)
            if ignore is not None:
                offer(merged, ignore.title, [ignore], d, uri, lines, enc, False)
        return list(merged.values()) or None


__all__ = ["DEBOUNCE_SECONDS", "LINT_WORKERS", "LIVE_BYTES", "LIVE_SECONDS", "PRESUME_SLOW_CHARS",
           "SLOW_SECONDS", "STATUS", "WORKER_RSS_KIB", "WORKER_START_TRIES", "TpcheckServer"]
