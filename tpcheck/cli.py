"""Command line entry point.

Sub-commands live in ``tpcheck/commands/``, one module each with ``DESCRIPTION``,
``add_arguments(parser)`` and ``run(args) -> int``. Only the module of the command being run is
imported, and only its parser is built, so a one-file lint pays for neither libcst, pygls,
huggingface_hub nor the other commands, and ``tpcheck --version`` builds no parser at all.
The parser is the standard library's argparse (``commands/_args.py``): it imports in a few ms,
where the previous third-party parser took ~50 (issue 8's start-up budget).
``tpcheck PATH...`` (no sub-command) lints, as DESIGN.md's contract says.
"""

from __future__ import annotations

import importlib
import os
import sys

from tpcheck import __version__

# typing's constant without importing typing (~5 ms of start-up); type checkers take any name
# TYPE_CHECKING as true. The same two lines recur across the package.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from tpcheck.commands._args import Parser

# name -> (module, one-line summary for `tpcheck --help`). The registry is an explicit list,
# greppable; the summaries sit here so the top-level help imports no command module.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("tpcheck.commands.lint", "lint files, folders or - (the default: tpcheck PATH...)"),
    "inspect": ("tpcheck.commands.inspect", "show what was read from each file, and the model's "
                "config.json source"),
    "plan": ("tpcheck.commands.plan", "capacity table across tensor-parallel sizes, cliff "
             "marked"),
    "rules": ("tpcheck.commands.rules", "list the rule codes, names and default severities"),
    "explain": ("tpcheck.commands.explain", "print the documentation of a rule code"),
    "lsp": ("tpcheck.commands.lsp", "run the Language Server on stdin/stdout, for editors"),
    "models": ("tpcheck.commands.models", "pull the models the files name into .tpcheck/models "
               "(offline CI afterwards), or list them"),
}

DEFAULT_COMMAND = "check"

DESCRIPTION = """\
Check vLLM and SGLang tensor-parallel layouts before anyone books a GPU.

  tpcheck PATH...            lint manifests, scripts and Python (same as `tpcheck check`)
  tpcheck inspect PATH...    show what was read from each file
  tpcheck plan MODEL --gpu   capacity table across tensor-parallel sizes
  tpcheck rules / explain    the rule codes and their documentation
  tpcheck models pull PATH   fetch every named model's config.json for offline runs
"""

EPILOG = """\
Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 usage or input error.
Run 'tpcheck COMMAND --help' for a command's options."""


class UsageError(Exception):
    """Bad command line: one line on stderr with a pointer to the command's --help, exit 2."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(f"argument {option}: {message}" if option else message)


class CommandError(Exception):
    """The command cannot go on (model not found, no doc shipped...): one line, exit 2."""


def _top_parser() -> Parser:
    from tpcheck.commands._args import Parser

    width = max(len(n) for n in COMMANDS) + 3
    lines = "".join(f"  {name:<{width}}{summary}\n" for name, (_, summary) in COMMANDS.items())
    p = Parser("tpcheck", description=f"{DESCRIPTION}\ncommands:\n{lines}", epilog=EPILOG,
               usage="tpcheck [OPTIONS] PATH...\n       tpcheck COMMAND [OPTIONS] [ARGS]...")
    p.add_argument("--version", action="store_true", help="show the version and exit")
    p.add_argument("--debug", action="store_true",
                   help="let an internal error end with its traceback (also TPCHECK_DEBUG=1)")
    return p


def _run(name: str, args: list[str], standalone: bool) -> int:
    """Import the one command module, build its parser, parse, run."""
    from tpcheck.commands._args import Parser, ParserExit

    module = importlib.import_module(COMMANDS[name][0])
    parser = Parser(f"tpcheck {name}", description=module.DESCRIPTION)
    module.add_arguments(parser)
    parser.usage = parser.short_usage()
    try:
        ns = parser.parse(args)
    except ParserExit as e:  # --help printed
        return e.status
    ns.standalone = standalone  # the process is ours (console script), not a caller's
    run: Callable[[argparse.Namespace], int] = module.run
    return run(ns)


def _say_error(message: str, hint: str | None) -> int:
    see = f" (see '{hint} --help')" if hint else ""
    sys.stderr.write(f"tpcheck: error: {message}{see}\n")
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; no traceback reaches the user unless TPCHECK_DEBUG or --debug asks."""
    args = list(sys.argv[1:] if argv is None else argv)
    cut = args.index("--") if "--" in args else len(args)  # after --, "--debug" is a file name
    debug = "--debug" in args[:cut] or bool(os.environ.get("TPCHECK_DEBUG"))
    args = [a for a in args[:cut] if a != "--debug"] + args[cut:]
    if args[:1] == ["--version"]:  # answered before any parser exists
        sys.stdout.write(f"tpcheck, version {__version__}\n")
        return 0
    if not args:
        return _say_error("no PATH or COMMAND given", "tpcheck")
    name = args[0] if args[0] in COMMANDS else DEFAULT_COMMAND
    try:
        if args[0] in ("-h", "--help"):
            sys.stdout.write(_top_parser().format_help())
            return 0
        return _run(name, args[1:] if args[0] in COMMANDS else args, standalone=argv is None)
    except UsageError as e:
        return _say_error(str(e), f"tpcheck {name}")
    except CommandError as e:
        return _say_error(str(e), None)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python's final flush from
        # failing on the closed pipe too.
        import contextlib

        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:
        if debug:
            raise
        sys.stderr.write(f"tpcheck: internal error: {type(e).__name__}: {e} "
                         "(rerun with --debug for a traceback)\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
