"""``tpcheck PATH...`` / ``tpcheck check PATH...``: lint deployments."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click


@click.command("check")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif", "github"]),
    default="text",
    show_default=True,
)
@click.option("--select", help="Comma-separated codes or prefixes to run (TP1,TP201).")
@click.option("--ignore", help="Comma-separated codes or prefixes to skip.")
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "info"]),
    help="Lowest severity that makes the exit code 1 (default: warning).",
)
@click.option("--gpu", help="GPU for deployments whose manifest names none (h100-sxm, l40s, ...).")
@click.option("--context", type=click.IntRange(1), help="Tokens per sequence for capacity.")
@click.option("--topology", type=click.Path(dir_okay=False), help="Saved `nvidia-smi topo -m`.")
@click.option("--model-config", type=click.Path(), help="config.json (or folder) for every model.")
@click.option("--offline", is_flag=True, default=None, help="Never contact the hub.")
@click.option(
    "--engine-version", help="Engine release whose defaults apply when no image pins one."
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="Settings file (default: nearest .tpcheck.toml or pyproject.toml).",
)
@click.option("--stdin-filename", help="Name (and so reader) for input read from `-`.")
@click.option(
    "--report-unused-ignores", is_flag=True, help="Report suppressions that match nothing."
)
@click.option("--statistics", is_flag=True, help="Count findings per rule.")
@click.option("-q", "--quiet", is_flag=True, help="Findings only: no formulas, no summary.")
@click.option(
    "--color/--no-color", default=None, help="Colour (default: on a terminal, unless NO_COLOR)."
)
def lint_cmd(
    paths: tuple[str, ...],
    fmt: str,
    select: str | None,
    ignore: str | None,
    fail_on: str | None,
    gpu: str | None,
    context: int | None,
    topology: str | None,
    model_config: str | None,
    offline: bool | None,
    engine_version: str | None,
    config_file: str | None,
    stdin_filename: str | None,
    report_unused_ignores: bool,
    statistics: bool,
    quiet: bool,
    color: bool | None,
) -> int:
    """Lint vLLM / SGLang deployments in PATHS (files, folders, or - for stdin).

    Exit 0: nothing at or above --fail-on; 1: findings; 2: usage or input error.
    """
    from tpcheck.checks import UnknownRule
    from tpcheck.lint import Linter, UsageError, exit_code
    from tpcheck.report import render
    from tpcheck.settings import SettingsError, find_settings_file, load_settings

    try:
        sfile = Path(config_file) if config_file else find_settings_file(Path.cwd())
        settings = load_settings(sfile)
    except SettingsError as e:
        raise click.UsageError(str(e)) from None
    settings = settings.with_flags(
        select=_codes(select),
        ignore=_codes(ignore),
        fail_on=fail_on,
        context=context,
        topology=topology,
        model_config=model_config,
        offline=offline,
        engine_version=engine_version,
    )
    try:
        linter = Linter(settings, gpu_flag=gpu, report_unused_ignores=report_unused_ignores)
    except (UsageError, UnknownRule) as err:
        raise click.UsageError(str(err).strip("'\"")) from None
    stdin_text = sys.stdin.read() if "-" in paths else None
    result = linter.run(paths, stdin_text=stdin_text, stdin_filename=stdin_filename)
    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    text = render(fmt, result, color=color, statistics=statistics, quiet=quiet)
    if text:
        click.echo(text, nl=False)
    if fmt in ("text", "github"):
        for problem in result.errors:
            click.echo(f"tpcheck: {problem}", err=True)
    return exit_code(result, settings.fail_on)


def _codes(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())
