"""Command line entry point.

The CLI is a click group (``tpcheck.commands.base.LazyGroup``) over the registry below: each
sub-command is a module in ``tpcheck/commands/`` defining ``command`` and ``run(args)``, imported
only when that command runs or its help is shown, so a one-file lint pays for neither libcst,
pygls, huggingface_hub nor the other commands. ``tpcheck --version`` is answered before click is
imported. ``tpcheck PATH...`` (no sub-command) lints, as DESIGN.md's contract says.

Adding a command: a module with ``command`` (a ``base.Command``, or a ``base.Group`` of them for
a command with subcommands, e.g. ``models pull`` / ``models list``; see ``tests/commands/
test_group.py``) and one line in COMMANDS.
"""

from __future__ import annotations

import os
import sys

from tpcheck import CommandError, UsageError, __version__

# typing's constant without importing typing, so `tpcheck --version` stays small (a command run
# imports typing anyway, with click); type checkers take any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    import click

__all__ = ["COMMANDS", "CommandError", "UsageError", "main"]

# errno values of a failed write to the report: ENOSPC (/dev/full, a full disk), EIO, EBADF
# (a closed descriptor), EFBIG (past the file size limit), EDQUOT. Spelled as numbers so that
# `tpcheck --version` imports no errno module; Linux's values (tests check them against errno).
_OUTPUT_ERRNOS = frozenset({28, 5, 9, 27, 122})

COMPLETE_VAR = "_TPCHECK_COMPLETE"  # _TPCHECK_COMPLETE=bash_source tpcheck: the shell script

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
    "allreduce": ("tpcheck.commands.allreduce", "expected all-reduce time and busbw per "
                  "message size on a topology (all_reduce_perf's table)"),
    "diff": ("tpcheck.commands.diff", "what a change does to each deployment's layout, seats "
             "and speed (REV against the work tree)"),
}

DEFAULT_COMMAND = "check"

DESCRIPTION = """\
Check vLLM and SGLang tensor-parallel layouts before anyone books a GPU.

\b
  tpcheck PATH...            lint manifests, scripts and Python (same as `tpcheck check`)
  tpcheck inspect PATH...    show what was read from each file
  tpcheck plan MODEL --gpu   capacity table across tensor-parallel sizes
  tpcheck rules / explain    the rule codes and their documentation
  tpcheck models pull PATH   fetch every named model's config.json for offline runs
  tpcheck allreduce --tp T   expected all-reduce time per size (all_reduce_perf's table)
  tpcheck diff [REV] [PATH]  what a change does to each deployment's layout and seats
"""

EPILOG = """\
\b
Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 usage or input error.
Run 'tpcheck COMMAND --help' for a command's options."""


def group() -> click.Group:
    """The top-level click group; builds (and imports click) only when a command runs."""
    from tpcheck.commands.base import LazyGroup, flag  # tpcheck.commands imports click

    g = LazyGroup("tpcheck", COMMANDS, default=DEFAULT_COMMAND, help=DESCRIPTION, epilog=EPILOG,
                  usage=["[OPTIONS] PATH...", "COMMAND [OPTIONS] [ARGS]..."])
    g.params += [
        flag(["--version"], expose_value=False, is_eager=True,
             callback=_print_version, help="Show the version and exit."),
        flag(["--debug"], expose_value=False,
             help="Let an internal error end with its traceback (also TPCHECK_DEBUG=1)."),
    ]
    return g


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        sys.stdout.write(f"tpcheck, version {__version__}\n")
        ctx.exit(0)


def _run(args: list[str], standalone: bool, github: bool = False) -> int:
    """Parse with the group, run the one command; --help returns 0 through click's Exit."""
    g = group()
    import click
    try:
        with g.make_context("tpcheck", args, obj={"standalone": standalone}) as ctx:
            rc = g.invoke(ctx)
    except click.exceptions.Exit as e:  # --help printed
        return e.exit_code
    except click.UsageError as e:
        path = e.ctx.command_path if e.ctx is not None else "tpcheck"
        return _say_error(e.format_message(), path, github)
    except click.ClickException as e:
        return _say_error(e.format_message(), None, github)
    return int(rc or 0)


def _github_format(args: Sequence[str]) -> bool:
    """Whether the command line asks for workflow commands (the last ``--format`` wins, as
    click reads it): a usage error then also becomes an annotation the checks view shows."""
    words = args[:args.index("--")] if "--" in args else args
    fmt = None
    for i, w in enumerate(words):
        if w == "--format" and i + 1 < len(words):
            fmt = words[i + 1]
        elif w.startswith("--format="):
            fmt = w.split("=", 1)[1]
    return fmt == "github"


def _say_error(message: str, hint: str | None, github: bool = False) -> int:
    from tpcheck.oneline import one_line  # here, so `tpcheck --version` imports nothing more

    see = f" (see '{hint} --help')" if hint else ""
    line = f"tpcheck: error: {message}{see}"
    if github:  # stdout, where the findings' annotations go
        from tpcheck.oneline import github_data, github_property

        sys.stdout.write(f"::error title={github_property('tpcheck usage error')}::"
                         f"{github_data(line)}\n")
        sys.stdout.flush()
    sys.stderr.write(one_line(line) + "\n")
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; no traceback reaches the user unless TPCHECK_DEBUG or --debug asks."""
    if COMPLETE_VAR in os.environ:  # the shell asks for its script or for completions
        g = group()
        from click.shell_completion import shell_complete

        return shell_complete(g, {}, "tpcheck", COMPLETE_VAR, os.environ[COMPLETE_VAR])
    args = list(sys.argv[1:] if argv is None else argv)
    cut = args.index("--") if "--" in args else len(args)  # after --, "--debug" is a file name
    debug = "--debug" in args[:cut] or bool(os.environ.get("TPCHECK_DEBUG"))
    args = [a for a in args[:cut] if a != "--debug"] + args[cut:]
    if args[:1] == ["--version"]:  # answered before any parser exists
        sys.stdout.write(f"tpcheck, version {__version__}\n")
        return 0
    if not args:
        return _say_error("no PATH or COMMAND given", "tpcheck")
    github = _github_format(args)
    if sys.stdout is None:  # started with >&-: print() would drop every finding and exit 0
        return _say_error("standard output is closed; nothing could be reported", None) \
            if sys.stderr is not None else 2
    if argv is None:
        # Our own process: no collection while the command's modules import (~11 million
        # instructions of a one-file lint, each pass walking every object imported so far;
        # imports leave next to no cyclic garbage). Each command's callback turns it back on
        # (``base.parsed``); the lint first sets its imports aside (``gc.freeze``).
        import gc

        gc.disable()
    try:
        return _run(args, standalone=argv is None, github=github)
    except UsageError as e:  # raised outside a command's run (commands add their own --help)
        return _say_error(str(e), "tpcheck", github)
    except CommandError as e:
        return _say_error(str(e), None, github)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python's final flush from
        # failing on the closed pipe too.
        _quiet_stdout()
        return 0
    except OSError as e:
        if debug or e.errno not in _OUTPUT_ERRNOS:
            raise
        # The output could not be written (> /dev/full, a disk filled, a closed descriptor):
        # the readers turn their own OSErrors into findings, so this one is the report's.
        _quiet_stdout()
        return _say_error(f"cannot write the report: {e.strerror or e}", None)
    except Exception as e:
        if debug:
            raise
        from tpcheck.oneline import one_line

        sys.stderr.write(f"tpcheck: internal error: {type(e).__name__}: {one_line(str(e))} "
                         "(rerun with --debug for a traceback)\n")
        return 2


def console() -> int:
    """The ``tpcheck`` console script: ``main()``, then the process ends without Python's
    interpreter tear-down, which frees every imported module's objects one by one (~12.5
    million instructions of a one-file lint, a third as much as a bare ``python -c pass``)
    for a process that is about to exit anyway. The report is flushed first, as the tear-down
    would. Python's own exit runs instead whenever the tear-down may matter: something
    registered an exit handler (``atexit`` is imported: logging, coverage, a caller's own),
    another thread is alive, a profiler or tracer is on, or a flush failed (the tear-down
    then reports it, as it always did)."""
    code = main()
    if _teardown_needed():
        return code
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:  # Python's exit reports it, exactly as it did
        return code
    os._exit(code & 0xFF)  # what sys.exit(code) makes of it


def _teardown_needed() -> bool:
    """Whether Python's own exit has work beyond freeing memory (see ``console``)."""
    if "atexit" in sys.modules or sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so Python's final flush does not fail a second time."""
    import contextlib

    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
