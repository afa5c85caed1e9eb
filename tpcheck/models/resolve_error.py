"""Why a model reference did not resolve, with credentials redacted from every message."""

from __future__ import annotations

import os
import re

from tpcheck.deferred import lazy_re

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Literal
    Kind = Literal["unresolved", "gated", "not-found", "timeout", "bad-json", "network"]


class ResolveError(Exception):
    """Why no config.json was found; ``message`` is one line, ``tried`` lists each place."""

    def __init__(self, kind: Kind, message: str, tried: tuple[str, ...] = ()) -> None:
        message = scrub(message)  # every way a resolve error reaches a user passes here
        super().__init__(message)
        self.kind: Kind = kind
        self.message = message
        self.tried = tried

    def with_tried(self, tried: tuple[str, ...]) -> ResolveError:
        return ResolveError(self.kind, self.message, tried)

    def copy(self) -> ResolveError:
        """The same error as a new exception (no traceback, no context), for a memo to raise
        again: ``message`` was scrubbed when it was made, so it is not scrubbed twice."""
        e = ResolveError.__new__(ResolveError)
        Exception.__init__(e, self.message)
        e.kind, e.message, e.tried = self.kind, self.message, self.tried
        return e


# user:password@ in any URL, and anything shaped like a hub token, wherever a message quotes them
_USERINFO = lazy_re(r"(?<=://)[^/@\s'\"]+@")
_HUB_TOKEN = lazy_re(r"\bhf_[A-Za-z0-9]{8,}")
# a URL's query (?token=..., &sig=...): the names stay, every value goes
_URL = lazy_re(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_QUERY_VALUE = lazy_re(r"(?<=[?&;])([^=&;#]*)=[^&;#]*")


def redact(text: str) -> str:
    """Credentials out of any text tpcheck prints that may quote a URL or a request: the token
    variables' values, userinfo (``***@``), every query value (``?token=***``), the path of
    HF_ENDPOINT (a proxy may take its token as a path segment: ``https://proxy/***``) and
    anything shaped like a hub token. The one redaction: resolve errors, the endpoint as
    messages name it and the hub worker's answers all pass here."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        token = os.environ.get(name)
        if token and len(token) >= 4:
            text = text.replace(token, "***")
    text = _USERINFO.sub("***@", text)
    text = _URL.sub(lambda m: _QUERY_VALUE.sub(r"\1=***", m.group(0)), text)
    text = _endpoint_path(text)
    return _HUB_TOKEN.sub("hf_***", text)


def _endpoint_path(text: str) -> str:
    """HF_ENDPOINT's own path (and query) after its host, wherever the text quotes it."""
    from urllib.parse import urlsplit

    raw = os.environ.get("HF_ENDPOINT", "")
    try:
        parts = urlsplit(raw.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return text
    path = parts.path.rstrip("/")
    if not host or not path:
        return text
    netloc = host if port is None else f"{host}:{port}"
    return text.replace(f"{netloc}{path}", f"{netloc}/***")


def scrub(text: str) -> str:
    """``redact`` on one line: the HTTP client's error text quotes the URL with the userinfo
    of HF_ENDPOINT, and a proxy page may echo a header."""
    return " ".join(redact(text).split())


def redact_url(url: str) -> str:
    """The endpoint as messages show it: without its userinfo at all, and ``redact``ed."""
    return redact(re.sub(r"(?<=://)[^/@\s'\"]+@", "", url))
