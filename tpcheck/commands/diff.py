"""``tpcheck diff [REV] [PATH...]``: what a change does to each deployment (tpcheck.diff)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from tpcheck import UsageError
from tpcheck.commands import base
from tpcheck.commands.lint import checked_network, codes, deployment_options
from tpcheck.oneline import one_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tpcheck.lint import Linter

DESCRIPTION = """\
Compare every deployment under PATH... (default: the whole repository) at REV (default: HEAD)
with the work tree, and print only what changed: layout (TP, PP, DP replicas), GPUs, refusals,
seats at the context, KV pool, decode tokens/s, and the findings the change brings or resolves.

REV is read with git (no checkout; nothing in the repository is written or run). A first
argument that names a commit is REV; write a path that could be one as ./PATH.

Exit 0; 2 when REV names no commit, a path is outside the repository, or a file could not be
read."""


@click.command("diff", cls=base.Command, help=DESCRIPTION)
@click.argument("words", nargs=-1, metavar="[REV] [PATH]...", type=click.Path())
@base.format_option("text", "json", "markdown")
@base.select_option
@base.ignore_option
@deployment_options
@base.option("--config", "config_file", type=base.FilePath(), metavar="FILE",
             help="Settings file for both sides (default: each file's nearest, REV's own at "
                  "REV).")
def command(**params: Any) -> int:
    return run(base.parsed(params))


def run(args: base.Args) -> int:
    from tpcheck.diff import Repository, diff
    from tpcheck.report.diff import render_diff

    words: list[str] = list(args.words)
    rev = "HEAD"
    if words:
        try:
            repo: Repository | None = Repository(".")
        except UsageError:  # not run inside a work tree: the words are paths into one
            repo = None
        first = words[0]
        if repo is not None and repo.commit(first) is not None:
            if os.path.lexists(first) and len(words) == 1:
                raise UsageError(f"{first!r} is both a revision and a path: write the path as "
                                 f"./{first}, or the revision and a path")
            rev, words = first, words[1:]
    from tpcheck.settings import find_settings_file

    linter_for = _linters(args)
    # flags and the current folder's settings are checked before git runs
    linter_for(find_settings_file(Path.cwd()))
    result = diff(rev, words, linter_for)
    sys.stdout.write(render_diff(args.fmt, result))
    if args.fmt == "text":
        for e in result.errors:
            sys.stderr.write(f"tpcheck: {one_line(str(e))}\n")
    return 2 if result.errors else 0


def _linters(args: base.Args) -> Any:
    """One linter per settings file, built as the lint builds them (the same flags win)."""
    from tpcheck.checks import UnknownRule
    from tpcheck.lint import Linter
    from tpcheck.settings import SettingsError, load_settings

    made: dict[Path | None, Linter] = {}

    def linter_for(sfile: Path | None) -> Linter:
        key = Path(args.config_file) if args.config_file else sfile
        if key not in made:
            try:
                settings = load_settings(key).with_flags(
                    select=codes(args.select), ignore=codes(args.ignore),
                    context=args.context, topology=args.topology,
                    model_config=args.model_config, offline=args.offline,
                    engine_version=args.engine_version, network=checked_network(args.network))
                made[key] = Linter(settings, gpu_flag=args.gpu)
            except SettingsError as err:
                raise UsageError(str(err)) from None
            except (UsageError, UnknownRule) as err:
                raise UsageError(str(err).strip("'\"")) from None
        return made[key]

    return linter_for
