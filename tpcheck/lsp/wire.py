"""The base protocol on stdio, hardened: what a misbehaving client sends must not wedge the
server or go unanswered.

- A header that is not ``Content-Length: N`` is skipped, and the next ``Content-Length`` is found
  even when it is glued to the end of a short body (the reader then resynchronises instead of
  waiting forever for a blank line that already went by).
- A body past ``MAX_BODY`` is discarded unread: nothing in an editor session is that large.
- A request whose params do not fit its method gets an InvalidParams error response; a body that
  is not JSON gets ParseError (JSON-RPC 2.0, id null).
- After ``shutdown`` every request but ``exit`` gets InvalidRequest (LSP "shutdown request").
- A ``didChange`` for a document that was never opened is ignored (pygls raised KeyError, which
  the editor showed as "Error in server"): an incremental change has nothing to apply to.
- A notification's handler future is dropped once it is done. pygls 2.1 files the future of a
  notification (and of each step of a generator handler) under a fresh uuid in its table of
  request futures and never removes it: one per ``didChange`` with its lock and id, about
  1.9 KiB an edit kept for the life of the server (issue 30's memory growth; tracemalloc over
  294 edits: +294 ``uuid4()`` ids and +588 blocks at json_rpc.py's ``Future()``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Generator
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.io_ import StdinAsyncReader
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

log = logging.getLogger("tpcheck.lsp")

CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d{1,12})[ \t]*\r?\n?$", re.IGNORECASE)
MAX_BODY = 64 * 1024 * 1024


class Protocol(LanguageServerProtocol):
    """pygls' protocol with the error answers the specification asks for."""

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        if self._shutdown and method not in (None, lsp.EXIT) and msg_id is not None:
            self.reply_error(msg_id, lsp.ErrorCodes.InvalidRequest,
                             f"{method}: the server has shut down")
            return
        super().handle_message(message)

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any,
                         args: tuple[Any, ...] | None = None,
                         kwargs: dict[str, Any] | None = None) -> None:
        """pygls' own, with the future forgotten when its callback has run (see above)."""
        def done(future: Any) -> None:
            try:
                callback(future)
            finally:  # a cancelled one is left: shutdown cancels them all while iterating
                if not future.cancelled() and self._request_futures.get(msg_id) is future:
                    del self._request_futures[msg_id]

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: lsp.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        """pygls' own, for open documents only: a change to a document the client never
        opened is logged and dropped (the specification allows didChange only after didOpen)."""
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.warning("didChange for %s, which was never opened: ignored",
                        params.text_document.uri)
            return
        yield from super().lsp_text_document__did_change(params)

    def notify_json(self, method: str, params: str) -> None:
        """A notification whose params are JSON already (diagnostics a lint process rendered):
        written as one message, as pygls writes its own."""
        body = f'{{"jsonrpc":"2.0","method":{json.dumps(method)},"params":{params}}}'.encode()
        if self.writer is None:
            log.error("no transport for %s", method)
            return
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def reply_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        self._send_response(msg_id, error=lsp.ResponseError(code=code, message=message))  # type: ignore[arg-type]


def _request_id(body: bytes) -> tuple[bool, int | str | None]:
    """(is a request, its id) from a raw body that did not structure."""
    try:
        raw = json.loads(body)
    except ValueError:
        return False, None
    if isinstance(raw, dict) and "method" in raw and isinstance(raw.get("id"), (int, str)):
        return True, raw["id"]
    return False, None


def dispatch(protocol: Protocol, body: bytes) -> None:
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except JsonRpcException as e:
        is_request, msg_id = _request_id(body)
        log.warning("message does not fit its method: %s", e)
        if is_request:
            code = (lsp.ErrorCodes.InvalidParams if isinstance(e, JsonRpcInvalidParams)
                    else lsp.ErrorCodes.InternalError)
            protocol.reply_error(msg_id, code, f"{type(e).__name__}: {e}")
        return
    except (ValueError, RecursionError) as e:
        log.warning("body is not JSON: %s", e)
        protocol.reply_error(None, lsp.ErrorCodes.ParseError, "the message body is not JSON")
        return
    protocol.handle_message(message)


async def read_messages(reader: StdinAsyncReader, protocol: Protocol) -> None:
    """Read framed messages until end of input (``exit`` ends the process from its handler)."""
    length: int | None = None
    while True:
        line = await reader.readline()
        if not line:
            return
        if line.strip() == b"":
            if length is None:
                continue  # a blank line with no length before it: noise between messages
            body = await reader.readexactly(length)
            length = None
            if not body:
                return
            dispatch(protocol, body)
            continue
        m = CONTENT_LENGTH.search(line)
        if m is None:
            continue  # Content-Type, or garbage: wait for the next Content-Length
        n = int(m.group(1))
        if n > MAX_BODY:
            log.warning("ignoring a message of %d bytes (limit %d)", n, MAX_BODY)
            length = None
            continue
        length = n
