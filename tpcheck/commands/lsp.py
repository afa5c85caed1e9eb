"""``tpcheck lsp``: the Language Server on stdio, for editors."""

from __future__ import annotations

import logging

import click


@click.command("lsp")
@click.option("--stdio", is_flag=True, help="Talk over stdin/stdout (the default and only mode; "
              "accepted because many editors pass it).")
@click.option("--log-file", type=click.Path(dir_okay=False, writable=True),
              help="Write the server's log here (stdout carries the protocol).")
@click.option("--debounce-ms", type=click.IntRange(0, 5000), default=150, show_default=True,
              help="Wait this long after the last keystroke before re-linting.")
def lsp_cmd(stdio: bool, log_file: str | None, debounce_ms: int) -> int:
    """Run the tpcheck Language Server on stdin/stdout.

    \b
    Diagnostics for YAML, shell and Python documents as you type, a hover with each finding's
    formula, and quick fixes (legal TP size, h_kv, `# tpcheck: ignore[CODE]`).
    Workspace settings: tpcheck.gpu, tpcheck.context, tpcheck.offline (default true in the
    editor: no hub lookups unless set to false); [tool.tpcheck] applies as on the command line.
    """
    if log_file:
        logging.basicConfig(filename=log_file, level=logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from tpcheck.lsp.server import make_server

    server = make_server()
    server.debounce = debounce_ms / 1000
    server.start_io()
    return 0
