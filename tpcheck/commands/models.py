"""``tpcheck models pull PATH...`` and ``tpcheck models list``: a thin wrapper over
``tpcheck.models.pull``, which holds the logic (the CLI declaration is all that lives here)."""

from __future__ import annotations

import argparse
import json
import sys

from tpcheck import cli
from tpcheck.commands._args import Parser

DESCRIPTION = """\
pull PATH...   fetch the config.json of every model the files name (from the HF cache or the
               hub; HF_TOKEN and HF_ENDPOINT honoured) into .tpcheck/models/<org--name>/ with
               its revision, and map each in [tool.tpcheck.models]: commit both, and every
               later run resolves those models offline and reproducibly.
list           the project's pulled models and the bundled catalog.

Exit 0; 2 when a model could not be fetched, a file could not be read, the settings file cannot
be edited safely, or the command line is wrong."""


def add_arguments(p: Parser) -> None:
    p.add_argument("action", metavar="ACTION", choices=("pull", "list"), help="pull or list")
    p.add_argument("paths", metavar="PATH", nargs="*", help="files or folders (pull)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="output format (list)")
    p.add_argument("--offline", action="store_true", default=None,
                   help="pull from the HF cache only, never the hub")


def run(args: argparse.Namespace) -> int:
    from tpcheck.models.pull import PullError, list_models, pull

    if args.action == "list":
        if args.paths:
            raise cli.UsageError(f"unexpected extra argument: {args.paths[0]}")
        rows = list_models()
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(f"{r['id']:<56} {r['source']:<8} {r['revision'] or '-'}")
        return 0
    if not args.paths:
        raise cli.UsageError("the following arguments are required: PATH")
    try:
        result = pull(args.paths, offline=args.offline)
    except PullError as e:
        raise cli.CommandError(str(e)) from None
    for p in result.pulled:
        print(f"{p.model_id} @ {p.revision or 'unknown revision'} ({p.fetched_from}) -> "
              f"{p.folder}")
    for note in result.skipped:
        sys.stderr.write(f"tpcheck: skipped: {note}\n")
    for err in result.errors:
        sys.stderr.write(f"tpcheck: error: {err}\n")
    for model_id, message in result.failed:
        sys.stderr.write(f"tpcheck: error: {model_id}: {message}\n")
    if result.pulled:
        print(f"mapped {len(result.pulled)} model(s) in {result.settings_file}")
    return 2 if result.failed or result.errors else 0
