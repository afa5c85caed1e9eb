"""The editor integration: ``tpcheck lsp`` speaks the Language Server Protocol on stdio.

``engine`` lints one in-memory document (no pygls), ``suppress`` finds a safe place for a
``# tpcheck: ignore[CODE]`` comment, ``convert`` turns findings into LSP values and ``server``
wires them to pygls. Only ``server`` imports pygls, and only the ``lsp`` command imports it.
"""

from __future__ import annotations

__all__ = ["serve"]


def serve() -> int:
    """Run the server on stdin/stdout until the client says exit; the process's exit code."""
    from tpcheck.lsp.server import serve as _serve

    return _serve()
