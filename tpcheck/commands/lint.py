"""``tpcheck PATH...`` / ``tpcheck check PATH...``: lint deployments."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

from tpcheck import cli
from tpcheck.commands._args import FilePath, IntRange, Parser

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from tpcheck.lint import LintResult

DESCRIPTION = """\
Lint vLLM / SGLang deployments in PATHS (files, folders, or - for stdin).

Exit 0: nothing at or above --fail-on; 1: findings; 2: usage or input error."""


def add_arguments(p: Parser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATHS",
                   help="Files or folders to lint; - reads stdin.")
    p.add_argument("--format", dest="fmt", choices=["text", "json", "sarif", "github"],
                   default="text", help="Output format (default: text).")
    p.add_argument("--sarif-file", type=Path, metavar="FILE",
                   help="Also write SARIF 2.1.0 to FILE, from the same run (any --format).")
    p.add_argument("--select", metavar="CODES",
                   help="Comma-separated codes or prefixes to run (TP1,TP201).")
    p.add_argument("--ignore", metavar="CODES", help="Comma-separated codes or prefixes to skip.")
    p.add_argument("--fail-on", choices=["error", "warning", "info"],
                   help="Lowest severity that makes the exit code 1 (default: warning).")
    p.add_argument("--gpu", metavar="NAME",
                   help="GPU for deployments whose manifest names none (h100-sxm, l40s, ...).")
    p.add_argument("--context", type=IntRange(1), metavar="TOKENS",
                   help="Tokens per sequence for capacity.")
    p.add_argument("--topology", type=FilePath(), metavar="FILE",
                   help="Saved `nvidia-smi topo -m`.")
    p.add_argument("--model-config", metavar="PATH",
                   help="config.json (or folder) for every model.")
    p.add_argument("--offline", action="store_true", default=None,
                   help="Never contact the hub.")
    p.add_argument("--engine-version", metavar="VERSION",
                   help="Engine release whose defaults apply when no image pins one.")
    p.add_argument("--config", dest="config_file", type=FilePath(), metavar="FILE",
                   help="Settings file (default: nearest .tpcheck.toml or pyproject.toml).")
    p.add_argument("--stdin-filename", metavar="NAME",
                   help="Name (and so reader) for input read from `-`.")
    p.add_argument("--report-unused-ignores", action="store_true",
                   help="Report suppressions that match nothing.")
    p.add_argument("--statistics", action="store_true", help="Count findings per rule.")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="Findings only: no formulas, no summary.")
    p.add_argument("--color", action=argparse.BooleanOptionalAction, default=None,
                   help="Colour (default: on a terminal, unless NO_COLOR).")


def run(args: argparse.Namespace) -> int:
    from tpcheck.checks import UnknownRule
    from tpcheck.lint import Linter, UsageError, exit_code, run_with_nearest_settings
    from tpcheck.report import render
    from tpcheck.settings import Settings, SettingsError, load_settings
    from tpcheck.sources import read_stdin

    paths: list[str] = args.paths
    fmt: str = args.fmt
    config_file: str | None = args.config_file
    linters: dict[Path | None, Linter] = {}

    def settings_from(sfile: Path | None) -> Settings:
        try:
            settings = load_settings(sfile)
        except SettingsError as e:
            raise cli.UsageError(str(e)) from None
        return settings.with_flags(
            select=_codes(args.select),
            ignore=_codes(args.ignore),
            fail_on=args.fail_on,
            context=args.context,
            topology=args.topology,
            model_config=args.model_config,
            offline=args.offline,
            engine_version=args.engine_version,
        )

    def linter_for(sfile: Path | None) -> Linter:
        """One linter per settings file: ``--config`` for every file, else each file's nearest
        settings (the editor's rule)."""
        key = Path(config_file) if config_file else sfile
        if key not in linters:
            try:
                linters[key] = Linter(settings_from(key), gpu_flag=args.gpu,
                                      report_unused_ignores=args.report_unused_ignores)
            except (UsageError, UnknownRule) as err:
                raise cli.UsageError(str(err).strip("'\"")) from None
        return linters[key]

    # Usage errors in flags or in the current folder's settings surface before any input is read.
    from tpcheck.settings import find_settings_file

    here = linter_for(find_settings_file(Path.cwd()))
    settings = here.settings
    stdin_text = read_stdin(settings.max_file_size) if "-" in paths else None
    if args.standalone:
        # Our own short-lived process, which allocates and frees nodes by the hundred thousand:
        # the imported modules' objects are set aside from collection, and the young
        # generation is collected every 10,000 allocations instead of 700. ~5% of the
        # instructions on 1,000 manifests. (Not when embedded: tests, the LSP server.)
        gc.freeze()
        gc.set_threshold(10_000, 10, 10)
    result = run_with_nearest_settings(paths, linter_for, stdin_text=stdin_text,
                                       stdin_filename=args.stdin_filename)
    color: bool | None = args.color
    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    text = render(fmt, result, color=color, statistics=args.statistics, quiet=args.quiet)
    if text:
        sys.stdout.write(text)
    if fmt in ("text", "github"):
        for problem in result.errors:
            sys.stderr.write(f"tpcheck: {problem}\n")
    code = exit_code(result, settings.fail_on)
    if args.sarif_file is not None and not _write_sarif(args.sarif_file, result):
        return 2
    return code


def _write_sarif(path: Path, result: LintResult) -> bool:
    """The side output for CI: one run gives annotations and code scanning. Failing to write it
    is an error of the run, not a silent pass."""
    from tpcheck.report import render

    try:
        path.write_text(render("sarif", result), encoding="utf-8")
    except OSError as e:
        sys.stderr.write(f"tpcheck: cannot write SARIF to {path}: {e.strerror or e}\n")
        return False
    return True


def _codes(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())
