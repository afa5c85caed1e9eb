"""The lint processes behind ``tpcheck lsp``, through pytest-lsp's real client over stdio.

Every assertion is about order and content of what the client receives, or what the server
says it holds (the ``tpcheck/status`` request), never about how long anything took. The slow
document is the 1,000-launch script of tests/lsp/test_server.py: MAX_LAUNCHES deployments to
check, seconds of work, so a lint of it is surely still under way when the test acts.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.test_server import SERVE, change, open_doc, publish, published
from tpcheck.sources.base import MAX_LAUNCHES

pytestmark = pytest.mark.asyncio

SLOW = "from vllm import LLM\n" + "".join(
    f'llm{i} = LLM("Qwen/Qwen3-32B", tensor_parallel_size=16)\n' for i in range(MAX_LAUNCHES))
# Three launches at TP 16 > 8 KV heads: three TP201, one per line.
SMALL = "from vllm import LLM\n" + "".join(
    f'llm{i} = LLM("Qwen/Qwen3-32B", tensor_parallel_size=16)\n' for i in range(3))


def field(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


async def status(client: LanguageClient) -> dict[str, Any]:
    got = await client.protocol.send_request_async("tpcheck/status", {})
    keys = ("open", "published", "timers", "wanted", "running", "generations", "costs",
            "cancelled", "on_save_only", "settings", "futures", "workers")
    out = {k: field(got, k) for k in keys}
    out["workers"] = [{k: field(w, k) for k in ("pid", "busy", "lints")} for w in out["workers"]]
    return out


async def until(client: LanguageClient, what: str, test: Any) -> dict[str, Any]:
    """Poll the server's status until ``test`` holds (30 s at most: a hung server fails)."""
    for _ in range(3000):
        now = await status(client)
        if test(now):
            return now
        await asyncio.sleep(0.01)
    raise AssertionError(f"the server never reached: {what}; last status {now}")


def of(client: LanguageClient, uri: str) -> list[lsp.PublishDiagnosticsParams]:
    return [p for p in published(client) if p.uri == uri]


async def test_a_superseded_version_is_never_published(client: LanguageClient,
                                                       tmp_path: Path) -> None:
    uri = (tmp_path / "launch.py").as_uri()
    open_doc(client, uri, SLOW, "python")
    await until(client, "version 1 being linted", lambda s: s["running"] == 1)
    change(client, uri, 2, None, SMALL)  # version 1's lint is now moot
    diags = await publish(client, uri, 2)
    assert [d.code for d in diags] == ["TP201"] * 3
    assert [d.range.start.line for d in diags] == [1, 2, 3]
    # One lint per document at a time: version 2 started only after version 1's ended, so
    # every publish version 1 could make has been made by now: none.
    assert of(client, uri) == []
    s = await status(client)
    assert s["cancelled"] == 1  # stopped mid-lint, not run to the end and thrown away
    assert s["running"] == 0 and s["published"] == 1


async def test_close_clears_diagnostics_and_state(client: LanguageClient,
                                                  tmp_path: Path) -> None:
    fast, slow = (tmp_path / "fast.sh").as_uri(), (tmp_path / "slow.py").as_uri()
    open_doc(client, fast, SERVE, "shellscript")
    (d,) = await publish(client, fast, 1)
    assert d.code == "TP201"
    open_doc(client, slow, SLOW, "python")
    await until(client, "the slow document being linted", lambda s: s["running"] == 1)
    for uri in (slow, fast):
        client.text_document_did_close(lsp.DidCloseTextDocumentParams(
            lsp.TextDocumentIdentifier(uri)))
    assert await publish(client, slow, None) == []
    assert await publish(client, fast, None) == []
    s = await until(client, "the slow lint stopped", lambda s: s["running"] == 0)
    assert {k: s[k] for k in ("open", "published", "timers", "wanted", "generations", "costs",
                              "on_save_only", "settings")} == dict.fromkeys(
        ("open", "published", "timers", "wanted", "generations", "costs", "on_save_only",
         "settings"), 0)
    assert s["cancelled"] == 1
    # The cancelled lint has answered (running is 0): nothing of it reached the client.
    assert of(client, slow) == [] and of(client, fast) == []


async def test_slow_documents_do_not_hold_up_a_fast_one(client: LanguageClient,
                                                        tmp_path: Path) -> None:
    slow = [(tmp_path / f"slow{i}.py").as_uri() for i in range(2)]
    fast, other = (tmp_path / "fast.sh").as_uri(), (tmp_path / "other.sh").as_uri()
    await until(client, "both lint processes ready", lambda s: len(s["workers"]) == 2)
    open_doc(client, fast, SERVE, "shellscript")  # two at once: one to each process, so
    open_doc(client, other, SERVE, "shellscript")  # both have read a launch before the test
    for uri in (fast, other):
        assert [x.code for x in await publish(client, uri, 1)] == ["TP201"]
    for uri in slow:  # two large documents: together they would take both lint processes
        open_doc(client, uri, SLOW, "python")
    await until(client, "a slow document being linted", lambda s: s["running"] >= 1)
    for version, tp, codes in ((2, "8", []), (3, "16", ["TP201"]), (4, "8", [])):
        change(client, fast, version, None, SERVE.replace("16", tp))
        assert [x.code for x in await publish(client, fast, version)] == codes
    # Three publishes of the fast document while neither slow one had been answered.
    assert not any(p.uri in slow for p in published(client)), [
        (p.uri, p.version) for p in published(client)]
    for uri in slow:
        diags = await publish(client, uri, 1)
        assert len(diags) == MAX_LAUNCHES and {x.code for x in diags} == {"TP201"}


async def test_a_worker_that_dies_is_replaced(client: LanguageClient, tmp_path: Path) -> None:
    slow, fast = (tmp_path / "slow.py").as_uri(), (tmp_path / "fast.sh").as_uri()
    open_doc(client, slow, SLOW, "python")
    s = await until(client, "the slow document being linted",
                    lambda s: any(w["busy"] for w in s["workers"]))
    (victim,) = [w["pid"] for w in s["workers"] if w["busy"]]
    os.kill(victim, signal.SIGKILL)  # as the kernel's OOM killer would
    (d,) = await publish(client, slow, 1)
    assert d.message == ("tpcheck could not lint this document: the lint process was stopped "
                         "by SIGKILL; it was restarted")
    assert d.severity == lsp.DiagnosticSeverity.Error and d.range.start.line == 0
    assert any("SIGKILL" in m.message and slow in m.message for m in client.log_messages)
    # The server lives on and lints with a new process.
    open_doc(client, fast, SERVE, "shellscript")
    (d,) = await publish(client, fast, 1)
    assert d.code == "TP201"
    s = await status(client)
    assert victim not in [w["pid"] for w in s["workers"]] and s["workers"]
    # The document that was being linted is linted again at its next change.
    change(client, slow, 2, None, SMALL)
    assert [x.code for x in await publish(client, slow, 2)] == ["TP201"] * 3


async def test_edits_leave_no_handler_futures_behind(client: LanguageClient,
                                                    tmp_path: Path) -> None:
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE, "shellscript")
    await publish(client, uri, 1)
    for version in range(2, 22):  # 20 edits, each waited for
        change(client, uri, version, None, SERVE.replace("16", ("8", "16")[version % 2]))
        await publish(client, uri, version)
    s = await status(client)
    # pygls 2.1 alone keeps one future per notification it dispatches through a generator or
    # coroutine: 20 didChange + 1 didOpen + the session's 2 before them = 23 here (observed
    # with the fix taken out). Nothing is in flight now (the status request is answered
    # synchronously), so none may be left.
    assert s["futures"] == 0
    assert s["published"] == 1 and s["generations"] == 1 and s["timers"] == 0
