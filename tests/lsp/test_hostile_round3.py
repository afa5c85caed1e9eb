"""``tpcheck lsp`` with the third round's hostile editor sessions (issue 28), over stdio with
pytest-lsp's real client: a ``didChange`` before any ``didOpen``, and a Python document that
libcst took about a minute to refuse while the server waited."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.test_server import SERVE, change, open_doc, publish

pytestmark = pytest.mark.asyncio


async def test_a_change_before_open_is_no_error_popup(client: LanguageClient,
                                                      tmp_path: Path) -> None:
    never_opened = (tmp_path / "ghost.sh").as_uri()
    # an incremental edit and a whole-document one, both to a document the client never opened
    change(client, never_opened, 2, lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), "x")
    change(client, never_opened, 3, None, SERVE)
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE.replace("16", "3"), "shellscript")
    diags = await publish(client, uri, 1)
    # Qwen3-32B at t = 3: 64 query heads, 64 mod 3 = 1, so TP101 is among the findings
    assert "TP101" in {d.code for d in diags}
    await asyncio.sleep(0.2)  # a popup sent with the change would have arrived by now
    errors = [m.message for m in client.messages if m.type == lsp.MessageType.Error]
    assert errors == []  # pygls' own handler raised KeyError: "Error in server: KeyError"
    # nothing was published for the document that was never opened
    assert never_opened not in client.diagnostics


async def test_a_slow_python_syntax_error_is_the_interpreters_error(
        client: LanguageClient, tmp_path: Path) -> None:
    # 3,500 `--a` terms (10.5 KB) then an open bracket: libcst's parser took 35-80 s on it
    text = "from vllm import LLM\nx = " + "--a" * 3500 + "\ny = (\n"
    uri = (tmp_path / "unary.py").as_uri()
    open_doc(client, uri, text, "python")
    (d,) = await publish(client, uri, 1)  # 30 s at most, where the wait used to be a minute
    # CPython's own message and place: line 3 (0-based 2), the '(' at column 5 (0-based 4)
    assert d.message == "Python does not parse: '(' was never closed"
    assert (d.range.start.line, d.range.start.character) == (2, 4)
    other = (tmp_path / "serve.sh").as_uri()
    open_doc(client, other, SERVE.replace("16", "3"), "shellscript")
    assert "TP101" in {x.code for x in await publish(client, other, 1)}
