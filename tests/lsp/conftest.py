"""A real ``tpcheck lsp`` subprocess on stdio, driven by pytest-lsp's client."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES

REPO = Path(__file__).resolve().parents[2]


def server_command() -> list[str]:
    """The installed console script beside this interpreter, else the module."""
    exe = Path(sys.executable).parent / "tpcheck"
    if exe.exists():
        return [str(exe), "lsp"]
    found = shutil.which("tpcheck")
    return [found, "lsp"] if found else [sys.executable, "-m", "tpcheck.cli", "lsp"]


def recording_client() -> LanguageClient:
    """pytest-lsp's client, but every publishDiagnostics is also kept in order (with its version),
    so a test can tell one publish from two."""
    client = LanguageClient(converter_factory=default_converter)
    published: list[lsp.PublishDiagnosticsParams] = []
    client.published = published  # type: ignore[attr-defined]
    for method, handler in DEFAULT_CLIENT_FEATURES.items():
        if method != lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            client.feature(method)(handler)

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def record(ls: LanguageClient, params: lsp.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        published.append(params)

    registrations: list[lsp.Registration] = []
    client.registrations = registrations  # type: ignore[attr-defined]

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(ls: LanguageClient, params: lsp.RegistrationParams) -> None:
        registrations.extend(params.registrations)

    return client


# No hub: the editor default is offline anyway; this keeps a misconfigured test from waiting.
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command(), server_env=ENV,
                                              client_factory=recording_client))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """A server whose workspace settings say the GPUs are H100 SXM."""
    lsp_client.set_configuration({"gpu": "h100-sxm"}, section="tpcheck")
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code")))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command(), server_env=ENV,
                                              client_factory=recording_client))
async def bare_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """A server with no workspace settings: only [tool.tpcheck] and the manifest speak."""
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code")))
    yield
    await lsp_client.shutdown_session()
