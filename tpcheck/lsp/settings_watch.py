"""The server's settings: the editor's configuration and the settings files it watches or polls."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from tpcheck.lsp.engine import DocResult, EditorConfig, editor_config, settings_stamp

log = logging.getLogger("tpcheck.lsp")

SETTINGS_FILES = ("pyproject.toml", ".tpcheck.toml")
CONFIG_WAIT_SECONDS = 2.0


class SettingsWatch(LanguageServer):
    """The settings half of ``TpcheckServer`` (which sets these attributes and re-lints)."""

    config: EditorConfig
    config_problems: list[str]
    told: set[str]
    config_ready: bool
    debounce: float
    watching: bool
    polled: dict[str, int]
    doc_settings: dict[str, str]

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        def relint_all(self, delay: float = 0, but: str | None = None) -> None: ...

        def pump(self) -> None: ...

    def supports_configuration(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.workspace and caps.workspace.configuration)

    def set_config(self, raw: object) -> None:
        self.config, self.config_problems = editor_config(raw)
        for p in self.config_problems:
            self.tell(lsp.MessageType.Warning, f"tpcheck: {p}")

    def tell(self, kind: lsp.MessageType, message: str) -> None:
        """A problem the user must see (window/showMessage), once per distinct message; also
        in the log."""
        self.window_log_message(lsp.LogMessageParams(kind, message))
        if message not in self.told:
            self.told.add(message)
            self.window_show_message(lsp.ShowMessageParams(kind, message))

    async def watch_settings(self) -> None:
        """Re-lint open documents when a settings file changes (the client watches the files:
        dynamic registration of workspace/didChangeWatchedFiles)."""
        caps = self.client_capabilities
        watched = caps and caps.workspace and caps.workspace.did_change_watched_files
        if not (watched and watched.dynamic_registration):
            return
        options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=[
            lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in SETTINGS_FILES])
        try:
            await self.client_register_capability_async(lsp.RegistrationParams(registrations=[
                lsp.Registration(id="tpcheck-settings-files",
                                 method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                 register_options=options)]))
            self.watching = True
        except Exception as e:  # a client that refuses: the settings files are polled instead
            log.warning("could not watch settings files: %s", e)

    def poll_settings(self) -> None:
        """Without file watching (Neovim 0.12 on Linux offers none): at each lint, one stat per
        settings file in force; one that changed re-lints every open document."""
        if self.watching:
            return
        changed = False
        for path, seen in list(self.polled.items()):
            now = settings_stamp(path)
            if now != seen:
                self.polled[path] = now
                changed = True
        if changed:
            self.relint_all()

    def note_settings(self, uri: str, result: DocResult) -> None:
        """Remember the settings file a lint used; a document whose nearest settings file is
        new (one was created above it) re-lints the others, which may share it."""
        path = result.settings_file
        before = self.doc_settings.get(uri)
        self.doc_settings[uri] = path
        if not path:
            return
        known = path in self.polled
        if not known:
            self.polled[path] = settings_stamp(path)
        if before is not None and before != path and not known:
            self.relint_all(but=uri)

    def settings_buffers(self) -> dict[str, str]:
        """The settings files the client has open, by path, with the text it holds."""
        return {doc.path: doc.source for uri, doc in list(self.workspace.text_documents.items())
                if is_settings_file(doc.path)}

    def settings_edited(self, uri: str, saved: bool) -> bool:
        """A settings file the client has open was edited or saved: every open document is
        linted again with it (an unsaved edit applies too: its buffer is read, not the disk)."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None or not is_settings_file(doc.path):
            return False
        if saved:
            self.polled[doc.path] = settings_stamp(doc.path)
        self.relint_all(delay=0 if saved else self.debounce, but=uri)
        return True

    async def pull_config(self) -> None:
        try:
            got = await asyncio.wait_for(self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="tpcheck")])),
                timeout=CONFIG_WAIT_SECONDS)
            self.set_config(got[0] if got else None)
        except Exception as e:  # a client that cannot answer leaves the defaults
            log.warning("workspace/configuration failed: %s", e)
        finally:
            self.config_ready = True
            self.pump()


def is_settings_file(path: str) -> bool:
    return Path(path).name in SETTINGS_FILES


__all__ = ["CONFIG_WAIT_SECONDS", "SETTINGS_FILES", "SettingsWatch", "is_settings_file"]
