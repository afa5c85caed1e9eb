"""``tpcheck PATH...`` / ``tpcheck check PATH...``: lint deployments."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

import click

from tpcheck.commands import base
from tpcheck.errors import UsageError
from tpcheck.oneline import one_line

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from tpcheck.result import LintResult

DESCRIPTION = """\
Lint vLLM / SGLang deployments in PATHS (files, folders, or - for stdin).

Exit 0: nothing at or above --fail-on; 1: findings; 2: usage or input error."""


def deployment_options(f: base.F) -> base.F:
    """What the rules assume of a deployment the files leave open (GPU, context, topology,
    model config, release, network): the same options on `check` and `diff`."""
    for decorate in reversed((
        base.gpu_option("GPU for deployments whose manifest names none (h100-sxm, l40s, ...)."),
        base.option("--context", type=base.IntRange(1), metavar="TOKENS",
                    help="Tokens per sequence for capacity."),
        base.option("--topology", type=base.FilePath(), metavar="FILE",
                    help="Saved `nvidia-smi topo -m`."),
        base.model_config_option,
        base.offline_option,
        base.option("--engine-version", type=base.Release(), metavar="VERSION",
                    help="Engine release the rules check against (option tables, defaults) "
                         "when no image pins one."),
        base.option("--network", metavar="NICS",
                    help="NICs per node between nodes, e.g. 8x400G-ib (default: the instance "
                         "type's)."),
    )):
        f = decorate(f)
    return f


@click.command("check", cls=base.Command, help=DESCRIPTION)
@base.paths_argument()
@base.format_option("text", "json", "sarif", "github", "markdown")
@base.option("--sarif-file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
             help="Also write SARIF 2.1.0 to FILE, from the same run (any --format).")
@base.option("--summary-file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
             help="Also append the markdown report to FILE, from the same run (a job summary: "
                  "$GITHUB_STEP_SUMMARY).")
@base.option("--sarif-category", metavar="ID",
             help="SARIF automationDetails.id (default: tpcheck/ plus the settings' folder).")
@base.select_option
@base.ignore_option
@base.option("--fail-on", type=base.Choice(["error", "warning", "info"]),
             help="Lowest severity that makes the exit code 1 (default: warning).")
@deployment_options
@base.option("--config", "config_file", type=base.FilePath(), metavar="FILE",
             help="Settings file (default: nearest .tpcheck.toml or pyproject.toml).")
@base.stdin_filename_option
@base.option("--report-unused-ignores", is_flag=True,
             help="Report suppressions that match nothing.")
@base.option("--statistics", is_flag=True, help="Count findings per rule.")
@base.option("--output-format", "output_format", type=base.Choice(["full", "concise"]),
             default="full", help="Text: the headline with its evidence and fix (full), or "
             "one line per finding (concise).")
@base.option("-q", "--quiet", is_flag=True,
             help="Findings only: the headline and its fix, no evidence, no summary.")
@base.option("--color/--no-color", default=None,
             help="Colour (default: on a terminal, unless NO_COLOR).")
@base.option("--fix", is_flag=True, help="Apply the fixes of findings marked [*], where each "
             "value is written (values.yaml for a Helm chart), then report what is left.")
@base.option("--diff", is_flag=True, help="Print the fixes --fix would make as a unified "
             "diff and write nothing (exit 1 when there is one).")
def command(**params: Any) -> int:
    return run(base.parsed(params, collect=False))


def run(args: base.Args) -> int:
    from tpcheck.checks import UnknownRule
    from tpcheck.lint import Linter, exit_code, run_with_nearest_settings
    from tpcheck.report import render
    from tpcheck.report.stream import STREAMED, Stream
    from tpcheck.settings import Settings, SettingsError, load_settings
    from tpcheck.sources import read_stdin

    paths: list[str] = list(args.paths)
    fmt: str = args.fmt
    config_file: str | None = args.config_file
    linters: dict[Path | None, Linter] = {}

    def settings_from(sfile: Path | None) -> Settings:
        return load_settings(sfile).with_flags(
            select=codes(args.select),
            ignore=codes(args.ignore),
            fail_on=args.fail_on,
            context=args.context,
            topology=args.topology,
            model_config=args.model_config,
            offline=args.offline,
            engine_version=args.engine_version,
            network=checked_network(args.network),
        )

    def linter_for(sfile: Path | None) -> Linter:
        """One linter per settings file: ``--config`` for every file, else each file's nearest
        settings (the editor's rule)."""
        key = Path(config_file) if config_file else sfile
        if key not in linters:
            try:
                linters[key] = Linter(settings_from(key), gpu_flag=args.gpu,
                                      report_unused_ignores=args.report_unused_ignores)
            except SettingsError as err:  # a file's or a rule option's: it may end in a quote
                raise UsageError(str(err)) from None
            except (UsageError, UnknownRule) as err:
                raise UsageError(str(err).strip("'\"")) from None
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
        gc.enable()  # off since start-up (tpcheck.cli.main)
    if args.fix or args.diff:
        outcome = _fix(args, paths, linter_for)
        if args.diff:
            return _say_diff(outcome)
        result = outcome.result
    color: bool | None = args.color
    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    sarif = {"scope": settings.root if settings.source else None,
             "category": args.sarif_category}
    style = {"color": color, "statistics": args.statistics, "quiet": args.quiet,
             "concise": args.output_format == "concise"}
    stream = None
    if not (args.fix or args.diff):
        outcome = None
        # written file by file, unless a side report needs the whole run (SARIF, markdown)
        if fmt in STREAMED and args.sarif_file is None and args.summary_file is None:
            stream = Stream(fmt, sys.stdout.write, flush=sys.stdout.flush, **style)
        result = run_with_nearest_settings(paths, linter_for, stdin_text=stdin_text,
                                           stdin_filename=args.stdin_filename, sink=stream)
    if stream is not None:
        stream.close(result)
    else:
        text = render(fmt, result, scope=sarif["scope"], category=sarif["category"], **style)
        if text:
            sys.stdout.write(text)
    for note in result.notes:  # every format: stderr is not the report
        sys.stderr.write(f"tpcheck: note: {one_line(str(note))}\n")
    if fmt in ("text", "github"):
        for problem in result.errors:
            sys.stderr.write(f"tpcheck: {one_line(str(problem))}\n")
    code = exit_code(result, settings.fail_on, stream.severities if stream else ())
    if outcome is not None and not _say_fixed(outcome, fmt):
        code = 2
    if args.sarif_file is not None and not _write_sarif(args.sarif_file, result, fmt, **sarif):
        return 2
    if args.summary_file is not None and not _append_summary(args.summary_file, result, fmt):
        return 2
    return code


def _append_summary(path: Path, result: LintResult, fmt: str) -> bool:
    """The markdown report appended (GitHub gives each step one summary file, which earlier
    writes may share); failing to write it fails the run, as a SARIF file does."""
    from tpcheck.report import render

    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(render("markdown", result) + "\n")
    except OSError as e:
        return _cannot_write(f"tpcheck: cannot write the summary to {path}: {e.strerror or e}",
                             fmt)
    return True


def _fix(args: base.Args, paths: list[str], linter_for: Any) -> Any:
    """``--fix`` / ``--diff``: every mechanical fix made (or, for --diff, only computed)."""
    if "-" in paths:
        raise UsageError("standard input cannot be fixed; name the files",
                         "--diff" if args.diff else "--fix")
    from tpcheck.report.fix import fix_paths

    return fix_paths(paths, linter_for, write=not args.diff)


def _say_fixed(outcome: Any, fmt: str) -> bool:
    """What --fix did, after the findings left (on stderr under a machine format, never inside
    its report); False when a file could not be written."""
    from tpcheck.report.fix import summary_lines

    stream = sys.stdout if fmt == "text" else sys.stderr
    for line in summary_lines(outcome, wrote=True):
        stream.write(one_line(line) + "\n")
    for problem in outcome.write_errors:
        sys.stderr.write(f"tpcheck: {one_line(str(problem))}\n")
    return not outcome.write_errors


def _say_diff(outcome: Any) -> int:
    """``--diff``: the unified diff on stdout, what it fixes on stderr; exit 1 when there is a
    change to make (ruff's), 2 when a file could not be read."""
    from tpcheck.report.fix import summary_lines

    sys.stdout.write(outcome.diff())
    for line in summary_lines(outcome, wrote=False):
        sys.stderr.write(one_line(line) + "\n")
    for problem in outcome.result.errors:
        sys.stderr.write(f"tpcheck: {one_line(str(problem))}\n")
    if outcome.result.errors:
        return 2
    return 1 if outcome.after else 0


def _write_sarif(path: Path, result: LintResult, fmt: str, **names: str | None) -> bool:
    """The side output for CI: one run gives annotations and code scanning. Failing to write it
    is an error of the run, not a silent pass (and, under --format github, an annotation)."""
    from tpcheck.report import render

    try:
        path.write_text(render("sarif", result, scope=names.get("scope"),
                               category=names.get("category")), encoding="utf-8")
    except OSError as e:
        return _cannot_write(f"tpcheck: cannot write SARIF to {path}: {e.strerror or e}", fmt)
    return True


def _cannot_write(line: str, fmt: str) -> bool:
    """A report file that could not be written: one line on stderr (and an annotation in the
    checks view for GitHub output); the run fails."""
    if fmt == "github":
        from tpcheck.report.github import usage_annotation

        sys.stdout.write(usage_annotation(line) + "\n")
    sys.stderr.write(one_line(line) + "\n")
    return False


def codes(text: str | None) -> tuple[str, ...]:
    """--select / --ignore: comma-separated codes or prefixes, upper-cased."""
    if not text:
        return ()
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())


def checked_network(value: str | None) -> str | None:
    """--network as given, after checking it parses (a usage error otherwise)."""
    if value is None:
        return None
    from tpcheck.hardware.network import parse_network

    if parse_network(value) is None:
        raise UsageError(f"{value!r} is not NICs per node such as 8x400G-ib "
                         "(kinds: ib, roce, efa, tcpxo, tcp)", "--network")
    return value
