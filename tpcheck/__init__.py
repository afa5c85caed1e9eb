"""tpcheck: what vLLM and SGLang do with a tensor-parallel layout, before anyone books a GPU.

The package also holds the two ways a run stops early, shared by the CLI, the orchestrator and
the LSP server: here, where every import of tpcheck already is, so raising them costs no module
(``tpcheck --version`` imports nothing more for them).
"""

from __future__ import annotations

__version__ = "0.1.0"


class UsageError(ValueError):
    """Bad command line or settings: one line on stderr with a pointer to --help, exit 2.

    The package's only UsageError: click's own parse errors are turned into the same one-line
    shape by ``tpcheck.commands.base``."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(f"argument {option}: {message}" if option else message)


class CommandError(Exception):
    """The command cannot go on (model not found, no doc shipped...): one line, exit 2."""
