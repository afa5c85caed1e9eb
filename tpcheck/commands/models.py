"""``tpcheck models pull PATH...`` and ``tpcheck models list``: a thin wrapper over
``tpcheck.models.pull``, which holds the logic (the CLI declaration is all that lives here)."""

from __future__ import annotations

import json
import sys
from typing import Any

from tpcheck import CommandError
from tpcheck.commands import base
from tpcheck.oneline import one_line

DESCRIPTION = """\
Fetch and list the model configs the project relies on.

Exit 0; 2 when a model could not be fetched, a file could not be read, the settings file cannot
be edited safely, or the command line is wrong."""

PULL_HELP = """\
Fetch the config.json of every model the files in PATHS name (from the HF cache or the hub;
HF_TOKEN and HF_ENDPOINT honoured) into .tpcheck/models/<org--name>/ with its revision, and map
each in [tool.tpcheck.models]: commit both, and every later run resolves those models offline
and reproducibly."""

command = base.Group("models", help=DESCRIPTION)


@command.command("pull", help=PULL_HELP)
@base.paths_argument()
@base.option("--offline", is_flag=True, default=None,
             help="Pull from the HF cache only, never the hub.")
def pull_command(**params: Any) -> int:
    return run_pull(base.parsed(params))


@command.command("list", help="The project's pulled models and the bundled catalog.")
@base.format_option("text", "json")
def list_command(**params: Any) -> int:
    return run_list(base.parsed(params))


def run_list(args: base.Args) -> int:
    from tpcheck.models.pull import list_models

    rows = list_models()
    if args.fmt == "json":
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            # folder names and REVISION files a pull request may have committed: escaped
            print(one_line(f"{r['id']:<56} {r['source']:<8} {r['revision'] or '-'}"))
    return 0


def run_pull(args: base.Args) -> int:
    from tpcheck.models.pull import PullError, pull

    try:
        result = pull(list(args.paths), offline=args.offline)
    except PullError as e:
        raise CommandError(str(e)) from None
    for p in result.pulled:
        print(one_line(f"{p.model_id} @ {p.revision or 'unknown revision'} ({p.fetched_from})"
                       f" -> {p.folder}"))
    for note in result.skipped:
        sys.stderr.write(f"tpcheck: skipped: {one_line(str(note))}\n")
    for err in result.errors:
        sys.stderr.write(f"tpcheck: error: {one_line(str(err))}\n")
    for model_id, message in result.failed:
        # most messages name the repo already ("acme/x is gated on ..."): not twice
        named = message.startswith((f"{model_id}:", f"{model_id} "))
        line = message if named else f"{model_id}: {message}"
        sys.stderr.write(f"tpcheck: error: {one_line(line)}\n")
    if result.pulled:
        print(one_line(f"mapped {len(result.pulled)} model(s) in {result.settings_file}"))
    return 2 if result.failed or result.errors else 0
