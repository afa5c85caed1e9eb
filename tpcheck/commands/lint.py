"""``tpcheck PATH...`` / ``tpcheck check PATH...``: lint deployments."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

import click

from tpcheck import UsageError
from tpcheck.commands import base
from tpcheck.oneline import one_line

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from tpcheck.report.markdown import MarkdownSummary
    from tpcheck.report.sarif import SarifWriter
    from tpcheck.report.stream import Stream
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
    from tpcheck.report.stream import Stream
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
    # every format written file by file (--fix: what is left, at once); the side reports
    # (--sarif-file, --summary-file) fed from the same findings
    stream = Stream(fmt, sys.stdout.write, flush=sys.stdout.flush, **sarif, **style)
    sides = _SideReports(args, stream, sarif)
    if args.fix:
        stream(result.findings)
    else:
        outcome = None
        result = run_with_nearest_settings(paths, linter_for, stdin_text=stdin_text,
                                           stdin_filename=args.stdin_filename, sink=stream)
    stream.close(result)
    for note in result.notes:  # every format: stderr is not the report
        sys.stderr.write(f"tpcheck: note: {one_line(str(note))}\n")
    if fmt in ("text", "github"):
        for problem in result.errors:
            sys.stderr.write(f"tpcheck: {one_line(str(problem))}\n")
    code = exit_code(result, settings.fail_on, stream.severities)
    if outcome is not None and not _say_fixed(outcome, fmt):
        code = 2
    failed = sides.finish(result)
    if failed is not None:
        _cannot_write(failed, fmt)
        return 2
    return code


class _SideReports:
    """``--sarif-file``, written as the run goes, and ``--summary-file``, appended at its end
    (GitHub gives each step one summary file, which earlier writes may share). Failing to
    write either fails the run, not a silent pass."""

    def __init__(self, args: base.Args, stream: Stream, names: dict[str, Any]) -> None:
        self.sarif_path: Path | None = args.sarif_file
        self.summary_path: Path | None = args.summary_file
        self.sarif_file: _ReportFile | None = None
        self.sarif: SarifWriter | None = None
        self.summary: MarkdownSummary | None = None
        if self.sarif_path is not None:
            from tpcheck.report.sarif import SarifWriter

            self.sarif_file = _ReportFile(self.sarif_path, "w")
            if self.sarif_file.ok:
                self.sarif = SarifWriter(self.sarif_file.write, **names)
                stream.also(self.sarif)
        if self.summary_path is not None:
            from tpcheck.report.markdown import MarkdownSummary

            self.summary = MarkdownSummary()
            stream.also(self.summary)

    def finish(self, result: LintResult) -> str | None:
        """Each file completed and closed; the line that says what could not be written."""
        if self.sarif_file is not None:
            if self.sarif is not None:
                self.sarif.close(result)
            if not self.sarif_file.done():
                return f"tpcheck: cannot write SARIF to {self.sarif_path}: " \
                       f"{self.sarif_file.problem}"
        if self.summary is not None and self.summary_path is not None:
            report = _ReportFile(self.summary_path, "a")
            report.write(self.summary.render(result) + "\n")
            if not report.done():
                return f"tpcheck: cannot write the summary to {self.summary_path}: " \
                       f"{report.problem}"
        return None


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


class _ReportFile:
    """A report file written as the run goes (``--sarif-file``) or at its end
    (``--summary-file``, appended: GitHub gives each step one summary file, which earlier
    writes may share). A file that cannot be opened or written fails the run, once, at its end
    (under --format github, also as an annotation), not as a silent pass."""

    def __init__(self, path: Path, mode: str) -> None:
        self.problem: str | None = None
        try:
            self.fh: Any = path.open(mode, encoding="utf-8")
        except OSError as e:
            self.fh, self.problem = None, str(e.strerror or e)

    @property
    def ok(self) -> bool:
        return self.problem is None

    def write(self, text: str) -> None:
        if self.fh is None:
            return
        try:
            self.fh.write(text)
        except OSError as e:  # a full disk: said at the end, nothing more written
            self.problem = str(e.strerror or e)
            self._close()

    def done(self) -> bool:
        """Closed; False when the file could not be written."""
        self._close()
        return self.problem is None

    def _close(self) -> None:
        fh, self.fh = self.fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError as e:
                self.problem = self.problem or str(e.strerror or e)


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
