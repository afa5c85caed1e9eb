"""A lint process of ``tpcheck lsp``: lints one document at a time for the server.

Linting is pure Python under one interpreter lock: on a thread of the server a 14k-line
document slowed every other open document about 40x (issue 30). In its own process a slow lint
takes a core, not the lock; the server keeps answering and other processes lint other documents.

Messages both ways are frames of a 4-byte big-endian length and a pickle (server and worker are
the same installed tpcheck; nothing from the user is unpickled: documents travel as text and are
read here with the same readers as the CLI, which never import or run them).

Server to worker: ``("lint", job, path, text, language_id, config, buffers, uri, encoding)``
and ``("cancel", job)``. Worker to server: ``("ready", pid)`` once the lint stack is imported,
then for each job one of ``("done", job, DocResult, findings, diagnostics, seconds, rss_kib)``,
``("cancelled", job)`` or ``("failed", job, message)``. End of input ends the worker.

The worker also turns the findings into the LSP diagnostics, as the JSON the server sends, and
the findings travel as one pickle the server opens only for a hover or code action: a
1,000-launch document's findings cost the server's event loop about 0.4 s to unpickle and
0.2 s to convert and serialise, time every other document would wait.

A cancel interrupts the lint where it stands (the main thread gets a signal between two
bytecodes); one that comes after its lint finished is ignored. After a cancel the worker starts
a fresh ``DocumentLinter`` (a few ms of settings and resolver warm-up): the interrupted lint may
have stopped half-way through filling one of its caches.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import struct
import sys
import threading
import time

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from tpcheck.lsp.engine import DocResult, DocumentLinter

HEADER = struct.Struct(">I")

# Started with ``python -c``: its first path entry is the working directory (the user's
# workspace), which must not shadow an import (a workspace ``yaml.py`` would run). 3.11's
# safe_path already leaves it out.
BOOT = ("import sys\n"
        "if not getattr(sys.flags, 'safe_path', False) and sys.path and sys.path[0] in ('', '.'):\n"
        "    del sys.path[0]\n"
        "from tpcheck.lsp.worker import main\n"
        "raise SystemExit(main())\n")


class Cancelled(BaseException):
    """Raised in the lint by a cancel (a BaseException: no ``except Exception`` swallows it)."""


def command() -> list[str]:
    """The command line that starts a worker with this interpreter."""
    return [sys.executable, "-c", BOOT]


def read_frame(stream: BinaryIO) -> Any:
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (n,) = HEADER.unpack(head)
    body = stream.read(n)
    return None if len(body) < n else pickle.loads(body)


def frame(message: object) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def rss_kib() -> int:
    """This process's resident memory (the server retires a worker that grew too large)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError, AttributeError):
        import resource  # not Linux: the peak is the best there is

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak // 1024 if sys.platform == "darwin" else peak


class _State:
    """The job the main thread is linting (0 for none) and the last one a cancel named."""

    def __init__(self) -> None:
        self.armed = 0
        self.cancel = 0


def main() -> int:
    # The protocol owns the real stdout; anything a library prints goes to stderr (the log).
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    from tpcheck.lsp.engine import DocumentLinter, tune_gc

    linter = DocumentLinter()
    tune_gc()
    state = _State()
    jobs: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()

    def on_signal(signum: int, frame: object) -> None:
        if state.armed and state.armed == state.cancel:
            state.armed = 0  # one cancel, one interruption
            raise Cancelled

    signal.signal(signal.SIGINT, on_signal)

    def read() -> None:
        import _thread

        while True:
            try:
                msg = read_frame(inp)
            except Exception:  # a torn frame: the server is gone or broken
                msg = None
            if msg is None:
                os._exit(0)  # the server closed our input: nothing is left to lint for
            if msg[0] == "cancel":
                state.cancel = msg[1]
                if state.armed == msg[1]:
                    _thread.interrupt_main(signal.SIGINT)
            else:
                jobs.put(msg)

    threading.Thread(target=read, name="tpcheck-worker-input", daemon=True).start()
    out.write(frame(("ready", os.getpid())))
    out.flush()
    while True:
        msg = jobs.get()
        if msg is None:
            return 0
        data, cancelled = _answer(linter, state, msg)
        out.write(data)
        out.flush()
        del msg, data  # nothing of a document outlives its answer
        if cancelled:  # the interrupted lint may have left a cache of the linter half-made
            linter = DocumentLinter()


def render(result: DocResult, text: str, uri: str, encoding: str) -> tuple[DocResult, bytes, str]:
    """The result without its findings, the findings as a pickle, the diagnostics as JSON."""
    import json

    from lsprotocol import types as lsp
    from lsprotocol.converters import get_converter

    from tpcheck.lsp import convert
    from tpcheck.record import replace

    lines = convert.split_lines(text)
    diags = [convert.diagnostic(f, lines, uri, result.name, encoding) for f in result.findings]
    diags += [convert.error_diagnostic(e, lines, result.name, encoding) for e in result.errors]
    rendered = json.dumps(get_converter().unstructure(diags, list[lsp.Diagnostic]),
                          separators=(",", ":"))
    findings = pickle.dumps(result.findings, protocol=pickle.HIGHEST_PROTOCOL)
    return replace(result, findings=()), findings, rendered


def _answer(linter: DocumentLinter, state: _State, msg: tuple[Any, ...]) -> tuple[bytes, bool]:
    """The framed answer to one lint job, and whether the job was cancelled."""
    _, job, path, text, language_id, config, buffers, uri, encoding = msg
    reply: tuple[Any, ...]
    try:
        state.armed = job
        if state.cancel == job:  # cancelled before it started
            raise Cancelled
        start = time.perf_counter()
        result = linter.lint(path, text, language_id=language_id, config=config,
                             buffers=buffers)
        state.armed = 0
        seconds = time.perf_counter() - start
        reply = ("done", job, *render(result, text, uri, encoding), seconds, rss_kib())
    except Cancelled:
        state.armed = 0
        reply = ("cancelled", job)
    try:
        return frame(reply), reply[0] == "cancelled"
    except Exception as e:  # a finding that does not pickle: say so, keep serving
        return frame(("failed", job, f"{type(e).__name__}: {e}")), False


if __name__ == "__main__":
    raise SystemExit(main())
