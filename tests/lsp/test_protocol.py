"""The base protocol against a real ``tpcheck lsp`` process: malformed framing, bad params,
requests after shutdown, exit codes. The wire cases write bytes no conforming client sends, so
they talk to the server's stdio directly; the rest use pytest-lsp's client."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.lsp.conftest import ENV, recording_client, server_command

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": None, "rootUri": None, "capabilities": {}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
SHUTDOWN = {"jsonrpc": "2.0", "id": 99, "method": "shutdown"}
EXIT = {"jsonrpc": "2.0", "method": "exit"}


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def converse(*chunks: bytes) -> tuple[int, list[dict[str, Any]]]:
    """Send ``chunks`` in one go; the exit code and every message the server wrote."""
    proc = subprocess.run(server_command(), input=b"".join(chunks), capture_output=True,
                          env=ENV, timeout=60, check=False)
    out, messages = proc.stdout, []
    while out:
        head, _, rest = out.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        messages.append(json.loads(rest[:length]))
        out = rest[length:]
    return proc.returncode, messages


def by_id(messages: list[dict[str, Any]], msg_id: object) -> dict[str, Any]:
    (m,) = [m for m in messages if m.get("id") == msg_id and "method" not in m]
    return m


def test_a_malformed_content_length_does_not_wedge_the_server() -> None:
    code, messages = converse(frame(INIT), frame(INITIALIZED),
                              b"Content-Length: abc\r\n\r\n{}",  # no length, a stray body
                              frame(SHUTDOWN), frame(EXIT))
    assert code == 0
    assert by_id(messages, 99)["result"] is None  # shutdown answered: the reader resynchronised


def test_a_body_that_is_not_json_gets_parse_error() -> None:
    junk = b"{not json"
    code, messages = converse(frame(INIT), b"Content-Length: %d\r\n\r\n" % len(junk) + junk,
                              frame(SHUTDOWN), frame(EXIT))
    assert code == 0
    assert by_id(messages, None)["error"]["code"] == lsp.ErrorCodes.ParseError
    assert by_id(messages, 99)["result"] is None


def test_exit_without_shutdown_exits_1() -> None:
    code, _ = converse(frame(INIT), frame(INITIALIZED), frame(EXIT))
    assert code == 1


def test_exit_after_shutdown_exits_0() -> None:
    code, _ = converse(frame(INIT), frame(INITIALIZED), frame(SHUTDOWN), frame(EXIT))
    assert code == 0


def test_invalid_params_get_an_error_response() -> None:
    hover = {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
             "params": {"textDocument": 5}}
    code, messages = converse(frame(INIT), frame(INITIALIZED), frame(hover), frame(SHUTDOWN),
                              frame(EXIT))
    assert code == 0
    assert by_id(messages, 2)["error"]["code"] == lsp.ErrorCodes.InvalidParams


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command(), server_env=ENV,
                                              client_factory=recording_client))
async def shut_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """A session the test shuts down itself; teardown only says exit."""
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code")))
    yield
    lsp_client.exit(None)


@pytest.mark.asyncio
async def test_requests_after_shutdown_get_invalid_request(shut_client: LanguageClient) -> None:
    client = shut_client
    await client.shutdown_async(None)
    with pytest.raises(JsonRpcException) as err:
        await client.text_document_hover_async(lsp.HoverParams(
            lsp.TextDocumentIdentifier("file:///x.yaml"), lsp.Position(0, 0)))
    assert "shut down" in str(err.value)
