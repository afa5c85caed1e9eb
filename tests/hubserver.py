"""A loopback HTTP server that answers the few hub requests huggingface_hub makes for one file.

``hf_hub_download`` (2.x) sends ``HEAD {endpoint}/{repo}/resolve/{revision}/{file}`` and needs
``X-Repo-Commit``, ``ETag`` and ``Content-Length`` back, then ``GET`` on the same URL for the
bytes. Errors are told apart by ``X-Error-Code`` as the hub sends it: ``RepoNotFound``,
``GatedRepo``, ``EntryNotFound``, ``RevisionNotFound``. Any other path is a plain 404.

Use it as a context manager; it binds 127.0.0.1 only, records every request (method, path,
whether an Authorization header came), and stops itself after ``lifetime`` seconds even if a test
forgets. A hanging repo holds the request open until the server stops.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import unquote

_RESOLVE = re.compile(r"^/(?P<repo>[^/]+(?:/[^/]+)?)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    authorization: str | None


def commit_of(repo: str) -> str:
    """A stable 40-hex commit id per repo, as the hub's X-Repo-Commit."""
    return hashlib.sha1(repo.encode()).hexdigest()


def git_blob_sha(data: bytes) -> str:
    """The ETag the hub sends for a file kept in git (not LFS): its git blob id."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubServer:
    """``files``: repo -> {filename: bytes}. ``gated``: repos answering 401 GatedRepo.
    ``missing``: repos answering ``status`` with RepoNotFound (the hub says 401 to anonymous
    callers, 404 to authenticated ones). ``hang``: repos whose requests never get an answer.
    ``token``: a gated repo that has ``files`` answers a request carrying ``Bearer <token>``
    (an account that accepted the licence), and 401 GatedRepo to any other.
    ``stall_body``: repos whose GET sends the headers and the first KiB of the body, then stalls
    (a slow download caught by the timeout half-way)."""

    def __init__(
        self,
        files: Mapping[str, Mapping[str, bytes]] | None = None,
        *,
        gated: Iterable[str] = (),
        missing: Mapping[str, int] | None = None,
        hang: Iterable[str] = (),
        stall_body: Iterable[str] = (),
        lifetime: float = 60.0,
        token: str | None = None,
    ) -> None:
        self.token = token
        self.files = {repo: dict(f) for repo, f in (files or {}).items()}
        self.gated = frozenset(gated)
        self.missing = dict(missing or {})
        self.hang = frozenset(hang)
        self.stall_body = frozenset(stall_body)
        self.lifetime = lifetime
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None
        self._thread: threading.Thread | None = None
        self._endpoint = ""

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """The base URL; still valid after stop (then nothing listens there)."""
        assert self._endpoint, "server not started"
        return self._endpoint

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def start(self) -> HubServer:
        handler = _make_handler(self)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        self._server = server
        host, port = server.server_address[:2]
        self._endpoint = f"http://{host!s}:{port}"
        self._thread = threading.Thread(target=server.serve_forever, name="hubserver", daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        """Release hanging requests, stop serving and close the socket (idempotent)."""
        self._release.set()
        server, self._server = self._server, None
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- answers ----------------------------------------------------------------------------

    def _record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    def answer(self, path: str, authorization: str | None = None
               ) -> tuple[int, dict[str, str], bytes]:
        m = _RESOLVE.match(path.split("?", 1)[0])
        if m is None:
            return 404, {}, b"not found"
        repo, rev, name = m["repo"], unquote(m["rev"]), unquote(m["file"])
        commit = commit_of(repo)
        licensed = self.token is not None and authorization == f"Bearer {self.token}"
        if repo in self.gated and not (licensed and repo in self.files):
            msg = f"Access to model {repo} is restricted. You must be authenticated to access it."
            return 401, {"X-Error-Code": "GatedRepo", "X-Error-Message": msg}, msg.encode()
        if repo in self.missing or repo not in self.files:
            status = self.missing.get(repo, 401)
            msg = "Repository not found"
            return status, {"X-Error-Code": "RepoNotFound", "X-Error-Message": msg}, msg.encode()
        if rev not in ("main", commit):
            msg = "Invalid rev id"
            return 404, {"X-Error-Code": "RevisionNotFound", "X-Error-Message": msg}, msg.encode()
        data = self.files[repo].get(name)
        if data is None:
            msg = "Entry not found"
            headers = {"X-Error-Code": "EntryNotFound", "X-Error-Message": msg}
            return 404, {**headers, "X-Repo-Commit": commit}, msg.encode()
        headers = {
            "X-Repo-Commit": commit,
            "ETag": f'"{git_blob_sha(data)}"',
            "Content-Type": "application/json",
        }
        return 200, headers, data


def _make_handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: tests read hub.requests instead

        def _serve(self, with_body: bool) -> None:
            hub._record(Request(self.command, self.path, self.headers.get("Authorization")))
            m = _RESOLVE.match(self.path.split("?", 1)[0])
            if m is not None and m["repo"] in hub.hang:
                hub._release.wait(hub.lifetime)
                self.close_connection = True
                return
            status, headers, body = hub.answer(self.path, self.headers.get("Authorization"))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body and m is not None and m["repo"] in hub.stall_body:
                self.wfile.write(body[:1024])
                self.wfile.flush()
                hub._release.wait(hub.lifetime)
                self.close_connection = True
                return
            if with_body:
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._serve(with_body=False)

        def do_GET(self) -> None:
            self._serve(with_body=True)

    return Handler
