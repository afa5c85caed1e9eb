"""``tpcheck lsp``: the Language Server on stdio, for editors."""

from __future__ import annotations

import logging
from typing import Any

import click

from tpcheck import UsageError
from tpcheck.commands import base

DESCRIPTION = """\
Run the tpcheck Language Server on stdin/stdout.

Diagnostics for YAML, shell and Python documents as you type, a hover with each finding's
formula, and quick fixes (legal TP size, h_kv, `# tpcheck: ignore[CODE]`).
Workspace settings: tpcheck.gpu, tpcheck.context, tpcheck.offline (default true in the
editor: no hub lookups unless set to false); [tool.tpcheck] applies as on the command line."""


@click.command("lsp", cls=base.Command, help=DESCRIPTION)
@base.option("--stdio", is_flag=True,
             help="Talk over stdin/stdout (the default and only mode; accepted because many "
             "editors pass it).")
@base.option("--log-file", type=base.FilePath(writable=True), metavar="FILE",
             help="Write the server's log here (stdout carries the protocol).")
@base.option("--debounce-ms", type=base.IntRange(0, 5000), default=150, metavar="MS",
             help="Wait this long after the last keystroke before re-linting (default: 150).")
def command(**params: Any) -> int:
    return run(base.parsed(params))


def run(args: base.Args) -> int:
    log_file: str | None = args.log_file
    debounce_ms: int = args.debounce_ms
    if log_file:
        try:  # the option's type saw the folder; it can still vanish or refuse us (EACCES)
            logging.basicConfig(filename=log_file, level=logging.INFO,
                                format="%(asctime)s %(name)s %(levelname)s %(message)s")
        except OSError as e:
            raise UsageError(f"cannot write {log_file!r}: {e.strerror or e}", "--log-file"
                             ) from None
    from tpcheck.lsp.server import make_server, tune_gc

    server = make_server()
    server.debounce = debounce_ms / 1000
    tune_gc()
    server.start_io()
    return server.exit_code
