"""The server's side of its lint processes (tpcheck.lsp.worker): start, lint, cancel, stop.

A ``Worker`` runs one job at a time; which document goes to which worker is the server's
choice (``TpcheckServer.pump``). A worker that dies mid-lint raises ``WorkerCrashed`` from
``lint``; the server replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import signal

from tpcheck.lsp.engine import DocResult, EditorConfig
from tpcheck.lsp.worker import HEADER, command, frame
from tpcheck.record import record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

log = logging.getLogger("tpcheck.lsp")

# Worker replies are pickles of tpcheck's own records; a document with MAX_LAUNCHES findings
# and their evidence stays far below this.
STREAM_LIMIT = 256 * 1024 * 1024


class WorkerCrashed(Exception):
    """The worker process ended while it held a job."""

    def __init__(self, returncode: int | None) -> None:
        self.returncode = returncode
        super().__init__(describe_exit(returncode))


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was stopped by {name}"
    return f"exited with status {returncode}"


@record
class Done:
    """A finished lint: the result (its findings apart, pickled), the diagnostics as JSON, the
    worker's time on it and the worker's memory after."""

    result: DocResult
    findings: bytes
    diagnostics: str
    seconds: float
    rss_kib: int


@record
class Failed:
    """A lint whose result could not be sent back (one line for the log)."""

    message: str


class Worker:
    """One lint process and the job it holds."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.pid = 0
        self.ready = False
        self.dead = False
        self.job = 0  # the job it holds, 0 when idle
        self.uri = ""  # the document of that job
        self.slow = False  # the document is known to lint slowly
        self.last_uri = ""  # the document it linted last
        self.lints = 0
        self.rss_kib = 0

    @property
    def idle(self) -> bool:
        return self.ready and not self.dead and not self.job

    async def start(self) -> None:
        """Start the process and wait for its ``ready`` (the lint stack imported)."""
        self.proc = await asyncio.create_subprocess_exec(
            *command(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            limit=STREAM_LIMIT)
        self.pid = self.proc.pid
        msg = await self._read()
        if not (isinstance(msg, tuple) and msg and msg[0] == "ready"):
            raise WorkerCrashed(await self._ended())
        self.ready = True

    async def lint(self, job: int, path: str, text: str, language_id: str | None,
                   config: EditorConfig, buffers: dict[str, str], uri: str,
                   encoding: str) -> Done | Failed | None:
        """Lint on the worker; None when the job was cancelled."""
        assert self.proc is not None and self.proc.stdin is not None
        self.job = job
        try:
            self.proc.stdin.write(frame(("lint", job, path, text, language_id, config,
                                         buffers, uri, encoding)))
            await self.proc.stdin.drain()
            while True:
                msg = await self._read()
                if msg is None:
                    raise WorkerCrashed(await self._ended())
                if msg[1] != job:
                    continue  # an answer to an earlier job (cannot happen: one at a time)
                self.lints += 1
                if msg[0] == "done":
                    self.rss_kib = msg[6]
                    return Done(*msg[2:7])
                if msg[0] == "failed":
                    return Failed(msg[2])
                return None
        except (ConnectionError, BrokenPipeError) as e:
            raise WorkerCrashed(await self._ended()) from e
        finally:
            self.job = 0
            self.uri = ""

    def cancel(self, job: int) -> None:
        """Ask the worker to stop ``job`` (its answer is then ``cancelled``)."""
        if self.proc is None or self.proc.stdin is None or self.dead or self.job != job:
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            self.proc.stdin.write(frame(("cancel", job)))

    def stop(self) -> None:
        """End the process (closing its input ends it; a stuck one is killed)."""
        self.dead = True
        if self.proc is None or self.proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, RuntimeError, OSError):
            self.proc.kill()

    async def _read(self) -> Any:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            head = await self.proc.stdout.readexactly(HEADER.size)
            (n,) = HEADER.unpack(head)
            return pickle.loads(await self.proc.stdout.readexactly(n))
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    async def _ended(self) -> int | None:
        self.dead = True
        assert self.proc is not None
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout=5)
        except asyncio.TimeoutError:
            self.stop()
            return None


__all__ = ["Done", "Failed", "Worker", "WorkerCrashed", "describe_exit"]
