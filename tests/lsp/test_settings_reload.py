"""Settings changes reach open documents in editors without file watching (issue 36).

Neovim 0.12 on Linux offers no dynamic registration of ``workspace/didChangeWatchedFiles``:
pytest-lsp's real client over stdio, with Neovim's capabilities (``dynamic_registration``
false), stands in for it. The server then polls the settings files in force (one stat each) at
every lint, re-lints on ``didChange``/``didSave`` of a settings file the client has open (its
buffer read, not the disk), and names the editor's settings in its messages.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.lsp.conftest import ENV, recording_client, server_command
from tests.lsp.test_server import SERVE, open_doc, publish, wait_for

pytestmark = pytest.mark.asyncio

IGNORE_TP201 = '[tool.tpcheck]\nignore = ["TP201"]\n'
IGNORE_NONE = '[tool.tpcheck]\nignore = []\n'


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command(), server_env=ENV,
                                              client_factory=recording_client))
async def nvim(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """A client that, like Neovim on Linux, cannot register file watchers."""
    caps = client_capabilities("neovim")
    assert caps.workspace is not None and caps.workspace.did_change_watched_files is not None
    assert caps.workspace.did_change_watched_files.dynamic_registration is False
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=caps))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command(), server_env=ENV,
                                              client_factory=recording_client))
async def bad_gpu(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """Workspace settings that name no GPU the catalog knows."""
    lsp_client.set_configuration({"gpu": "nope"}, section="tpcheck")
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code")))
    yield
    await lsp_client.shutdown_session()


def _rewrite(path: Path, text: str) -> None:
    """New content with a modification time surely different from the old one."""
    old = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(old + 2_000_000_000, old + 2_000_000_000))


def _project(tmp_path: Path, settings: str) -> tuple[Path, str]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(settings, encoding="utf-8")
    return project / "pyproject.toml", (project / "serve.sh").as_uri()


async def test_settings_are_polled_at_each_lint_without_watchers(nvim: LanguageClient,
                                                                 tmp_path: Path) -> None:
    settings, uri = _project(tmp_path, IGNORE_TP201)
    open_doc(nvim, uri, SERVE, "shellscript")
    # t = 16 > h_kv = 8 for Qwen3-32B is TP201, ignored by the settings
    assert await publish(nvim, uri, 1) == []
    assert nvim.registrations == []  # type: ignore[attr-defined]
    _rewrite(settings, IGNORE_NONE)  # edited outside the editor: no event reaches the server
    other = (tmp_path / "elsewhere.sh").as_uri()
    open_doc(nvim, other, SERVE, "shellscript")  # any lint polls the settings files' mtimes
    (d,) = await publish(nvim, uri, 1)  # the unchanged document, re-linted
    assert d.code == "TP201"


async def test_an_open_settings_buffer_applies_on_change_save_and_close(
        nvim: LanguageClient, tmp_path: Path) -> None:
    settings, uri = _project(tmp_path, IGNORE_TP201)
    open_doc(nvim, uri, SERVE, "shellscript")
    assert await publish(nvim, uri, 1) == []
    suri = settings.as_uri()
    open_doc(nvim, suri, IGNORE_TP201, "toml")
    nvim.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=suri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text=IGNORE_NONE)]))
    # not saved: the disk still ignores TP201, the buffer no longer does
    (d,) = await publish(nvim, uri, 1)
    assert d.code == "TP201"
    # closed unsaved: the disk's settings apply again
    nvim.text_document_did_close(lsp.DidCloseTextDocumentParams(
        lsp.TextDocumentIdentifier(uri=suri)))
    assert await publish(nvim, uri, 1) == []
    # opened again, edited and saved (written as the editor does, then didSave)
    open_doc(nvim, suri, IGNORE_TP201, "toml")
    nvim.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=suri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text=IGNORE_NONE)]))
    (d,) = await publish(nvim, uri, 1)
    _rewrite(settings, IGNORE_NONE)
    nvim.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(suri)))
    (d,) = await publish(nvim, uri, 1)
    assert d.code == "TP201"
    # the settings file itself is not linted (its close only cleared it)
    assert all(not p.diagnostics for p in nvim.published  # type: ignore[attr-defined]
               if p.uri == suri)


async def test_a_bad_gpu_setting_names_the_editor_setting(bad_gpu: LanguageClient,
                                                          tmp_path: Path) -> None:
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(bad_gpu, uri, SERVE, "shellscript")
    (d,) = await publish(bad_gpu, uri, 1)
    assert "tpcheck.gpu: unknown GPU 'nope'" in d.message
    await wait_for(lambda: [m for m in bad_gpu.messages if "nope" in m.message], "the message")
    (msg,) = [m for m in bad_gpu.messages if "nope" in m.message]
    assert msg.message.startswith("tpcheck settings: tpcheck.gpu: unknown GPU 'nope'")
    assert "--gpu" not in msg.message and "--gpu" not in d.message
