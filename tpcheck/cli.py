"""Command line entry point.

Sub-commands live in ``tpcheck/commands/`` and are imported only when invoked, so
``tpcheck --version`` and a one-file lint do not pay for libcst, pygls or huggingface_hub.
``tpcheck PATH...`` (no sub-command) lints, as DESIGN.md's contract says.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from tpcheck import __version__

# name -> "module:attribute"; the registry is an explicit list, greppable.
COMMANDS: dict[str, str] = {
    "check": "tpcheck.commands.lint:lint_cmd",
    "inspect": "tpcheck.commands.inspect:inspect_cmd",
    "plan": "tpcheck.commands.plan:plan_cmd",
    "rules": "tpcheck.commands.rules:rules_cmd",
    "explain": "tpcheck.commands.rules:explain_cmd",
    "lsp": "tpcheck.commands.lsp:lsp_cmd",
}


def _build_cli() -> Any:
    """The click group, built on first use: importing click costs ~50 ms, which
    ``tpcheck --version`` (answered in ``main`` without it) need not pay."""
    import click

    class TpcheckGroup(click.Group):
        """A group whose commands load lazily and whose default command is ``check``."""

        def list_commands(self, ctx: click.Context) -> list[str]:
            return list(COMMANDS)

        def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
            target = COMMANDS.get(cmd_name)
            if target is None:
                return None
            module, attr = target.split(":")
            cmd = getattr(importlib.import_module(module), attr)
            assert isinstance(cmd, click.Command)
            return cmd

        def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
            if args and args[0] not in COMMANDS and args[0] not in ("--help", "-h", "--version"):
                args = ["check", *args]
            return super().parse_args(ctx, args)


    @click.group(
        cls=TpcheckGroup,
        context_settings={"help_option_names": ["-h", "--help"]},
        invoke_without_command=False,
    )
    @click.version_option(__version__, "--version", prog_name="tpcheck")
    def cli() -> None:
        """Check vLLM and SGLang tensor-parallel layouts before anyone books a GPU.

        \b
        tpcheck PATH...            lint manifests, scripts and Python (same as `tpcheck check`)
        tpcheck inspect PATH...    show what was read from each file
        tpcheck plan MODEL --gpu   capacity table across tensor-parallel sizes
        tpcheck rules / explain    the rule codes and their documentation

        Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 usage or input error.
        """

    return cli


_CLI: Any = None


def _cli() -> Any:
    global _CLI
    if _CLI is None:
        _CLI = _build_cli()
    return _CLI


def __getattr__(name: str) -> Any:
    """``tpcheck.cli.cli`` (the click group) stays importable, built lazily."""
    if name == "cli":
        return _cli()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; no traceback reaches the user unless TPCHECK_DEBUG or --debug asks."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or bool(os.environ.get("TPCHECK_DEBUG"))
    if "--debug" in args:
        args.remove("--debug")
    if args == ["--version"]:
        sys.stdout.write(f"tpcheck, version {__version__}\n")  # click's wording, without click
        return 0
    import click

    try:
        rv: Any = _cli().main(args=args, prog_name="tpcheck", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("tpcheck: aborted", err=True)
        return 2
    except click.UsageError as e:
        hint = f" (see 'tpcheck {e.ctx.info_name} --help')" if e.ctx and e.ctx.info_name and \
            e.ctx.info_name != "tpcheck" else " (see 'tpcheck --help')"
        click.echo(f"tpcheck: error: {e.format_message()}{hint}", err=True)
        return 2
    except click.ClickException as e:
        click.echo(f"tpcheck: error: {e.format_message()}", err=True)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:
        if debug:
            raise
        click.echo(
            f"tpcheck: internal error: {type(e).__name__}: {e} "
            "(rerun with --debug for a traceback)",
            err=True,
        )
        return 2
    return int(rv) if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
