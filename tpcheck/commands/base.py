"""What every command shares: click's command and lazy group with tpcheck's one-line errors,
the value types, and the options several commands take (declared once, here).

Imported only once a command runs or a help page is asked for, so ``tpcheck --version`` loads
no click. A command module defines ``command`` (a ``Command``, or a ``click.Group`` of them for
a command with subcommands such as ``models pull``) and ``run(args)``; ``tpcheck.cli.COMMANDS``
names the module, and ``LazyGroup`` imports it only when that command is used.

Parse errors keep the wording scripts and tests have relied on since the argparse days
(``argument --context: 0 is not in the range x>=1``, ``no such option: --cont (did you mean
--context?)``); ``tpcheck.cli.main`` prints them as one line with the command's ``--help``.
"""

from __future__ import annotations

import gc
import importlib
import math
import os
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tpcheck import UsageError

if TYPE_CHECKING:  # click.shell_completion is imported only when the shell asks
    from click.shell_completion import CompletionItem

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"],
                                    "max_content_width": 100}


class Args(SimpleNamespace):
    """The parsed command line as attributes (what each command's ``run(args)`` reads), plus
    ``standalone``: the process is ours (console script), not an embedding caller's."""


def parsed(params: dict[str, Any], *, collect: bool = True) -> Args:
    """The click callback's keyword arguments as an ``Args``. The garbage collector, off while
    ``tpcheck.cli.main`` imported, is on again, unless ``collect`` is False: that command turns
    it on itself once its own imports are done (the lint)."""
    root = click.get_current_context().find_root().obj
    standalone = bool(root.get("standalone")) if isinstance(root, dict) else False
    if collect and standalone:
        gc.enable()
    return Args(**params, standalone=standalone)


# ---- value types: checked while parsing, so a bad value is a usage error naming the option ---

def _range_label(lo: float | None, hi: float | None, *, lo_open: bool) -> str:
    """``x>=1``, ``1<=x<=1024``, ``0<x<=1``: the bounds as the help and errors show them."""
    if hi is None:
        return "x" if lo is None else f"x{'>' if lo_open else '>='}{lo}"
    left = "" if lo is None else f"{lo}{'<' if lo_open else '<='}"
    return f"{left}x<={hi}"


class IntRange(click.ParamType[int]):
    """A whole number in [lo, hi] (either bound optional)."""

    name = "integer"

    def __init__(self, lo: int | None = None, hi: int | None = None) -> None:
        self.lo, self.hi = lo, hi
        self.label = _range_label(lo, hi, lo_open=False)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        try:
            v = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a whole number", param, ctx)
        if (self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi):
            self.fail(f"{v} is not in the range {self.label}", param, ctx)
        return v


class FloatRange(click.ParamType[float]):
    """A number in [lo, hi], or (lo, hi] with ``lo_open``; NaN is in no range."""

    name = "float"

    def __init__(self, lo: float | None = None, hi: float | None = None, *,
                 lo_open: bool = False) -> None:
        self.lo, self.hi, self.lo_open = lo, hi, lo_open
        self.label = _range_label(lo, hi, lo_open=lo_open)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        try:
            v = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        below = self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo)
        above = self.hi is not None and v > self.hi
        if math.isinf(v):  # no quantity tpcheck takes is infinite (--alpha inf was accepted)
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if math.isnan(v) or below or above:
            self.fail(f"{v} is not in the range {self.label}", param, ctx)
        return v


class FilePath(click.ParamType[str]):
    """A file name that must not be a folder (and, with ``writable``, one we may write)."""

    name = "file"

    def __init__(self, *, writable: bool = False) -> None:
        self.writable = writable

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        text = str(value)
        if os.path.isdir(text):
            self.fail(f"{text!r} is a directory, not a file", param, ctx)
        if self.writable and os.path.exists(text) and not os.access(text, os.W_OK):
            self.fail(f"{text!r} is not writable", param, ctx)
        folder = os.path.dirname(text) or "."
        if self.writable and not os.path.exists(text) and not os.path.isdir(folder):
            self.fail(f"{text!r} cannot be created: no folder {folder!r}", param, ctx)
        return text

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(incomplete, type="file")]


class Release(click.ParamType[str]):
    """An engine release such as 0.8.5 or v0.8.5: a value with no MAJOR.MINOR in it would name
    no defaults and be printed back as if it were one (``engine=vllm latest``)."""

    name = "version"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        from tpcheck.settings import has_release_number

        text = str(value)
        if not has_release_number(text):
            self.fail(f"{text!r} is not a release number such as 0.8.5 or v0.8.5", param, ctx)
        return text


class Choice(click.Choice[str]):
    """click's Choice with argparse's message, which scripts match on."""

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        listed = ", ".join(repr(c) for c in self.choices)
        return f"invalid choice: {value!r} (choose from {listed})"


# ---- options shared by several commands (declared once) ---------------------------------------

def option(*decls: str, **attrs: Any) -> Callable[[F], F]:
    """``click.option``, with a range type's bounds after the help (``[x>=1]``)."""
    kind = attrs.get("type")
    if isinstance(kind, (IntRange, FloatRange)) and attrs.get("help"):
        attrs["help"] = f"{attrs['help']} [{kind.label}]"
    return click.option(*decls, **attrs)


def flag(decls: list[str], **attrs: Any) -> click.Option:
    """An on/off ``click.Option`` for a parameter list built by hand (the top-level group)."""
    return click.Option(decls, is_flag=True, **attrs)


def paths_argument() -> Callable[[F], F]:
    """PATHS...: files or folders, ``-`` for stdin; the shell completes file names. (click shows
    no help line for an argument: each command's description says what PATHS are.)"""
    return click.argument("paths", nargs=-1, required=True,
                          type=click.Path())


def format_option(*choices: str) -> Callable[[F], F]:
    """``--format`` (stored as ``fmt``); the first choice is the default."""
    return option("--format", "fmt", type=Choice(choices), default=choices[0],
                  help=f"Output format (default: {choices[0]}).")


def _complete_gpu(ctx: click.Context, param: click.Parameter,
                  incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    from tpcheck.hardware.gpus import gpu_names

    return [CompletionItem(n) for n in gpu_names() if n.startswith(incomplete)]


def gpu_option(help_text: str, dest: str = "gpu") -> Callable[[F], F]:
    """``--gpu NAME``; the shell completes the catalog's names."""
    return option("--gpu", dest, metavar="NAME", help=help_text, shell_complete=_complete_gpu)


offline_option = option("--offline", is_flag=True, default=None, help="Never contact the hub.")
model_config_option = option("--model-config", metavar="PATH", type=click.Path(exists=True),
                             help="config.json (or folder) for every model.")
stdin_filename_option = option("--stdin-filename", metavar="NAME",
                               help="Name (and so reader) for input read from `-`.")
select_option = option("--select", metavar="CODES",
                       help="Comma-separated codes or prefixes to run (TP1,TP201).")
ignore_option = option("--ignore", metavar="CODES",
                       help="Comma-separated codes or prefixes to skip.")


# ---- the command and the group ----------------------------------------------------------------

class ShortFirstParser(click.parser._OptionParser):
    """click's parser, minus a spell-check on every short option: click first looks ``-q`` up
    as a long option and builds a ``NoSuchOption`` with close matches (importing ``difflib``,
    ~28 million instructions) that it then drops to parse ``-q`` as a short option. A word
    that will go the short way now skips the suggestions; ``--cont`` still gets them."""

    def _match_long_opt(self, opt: str, explicit_value: str | None,
                        state: click.parser._ParsingState) -> None:
        if opt not in self._long_opt and opt[:2] not in self._opt_prefixes:
            raise click.NoSuchOption(opt, ctx=self.ctx)
        super()._match_long_opt(opt, explicit_value, state)


class Command(click.Command):
    """A click command whose parse errors read as tpcheck's always have, whose ``UsageError``
    from ``run`` keeps the pointer to this command's --help, and which names the first word
    it could not place (``unexpected extra argument: b``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", {})
        kwargs["context_settings"] = {**CONTEXT_SETTINGS, "allow_extra_args": True,
                                      **kwargs["context_settings"]}
        super().__init__(*args, **kwargs)

    def make_parser(self, ctx: click.Context) -> click.parser._OptionParser:
        parser = ShortFirstParser(ctx)
        for param in self.get_params(ctx):
            param.add_to_parser(parser, ctx)
        return parser

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            rest = super().parse_args(ctx, list(args))
        except click.UsageError as e:
            raise click.UsageError(_message(e, self, args), ctx) from None
        if ctx.args and not ctx.resilient_parsing:
            raise click.UsageError(f"unexpected extra argument: {ctx.args[0]}", ctx)
        return rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as e:
            raise click.UsageError(str(e), ctx) from None


class Group(click.Group):
    """A command with subcommands (``tpcheck models pull``): ``@group.command(...)`` makes a
    ``Command``, and a missing or unknown subcommand is a one-line usage error like any other.

        command = base.Group("models", help=DESCRIPTION)

        @command.command("pull", help="...")
        @base.paths_argument()
        @base.offline_option
        def pull(**params: Any) -> int:
            return run_pull(base.parsed(params))
    """

    command_class = Command

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["context_settings"] = {**CONTEXT_SETTINGS, **kwargs.get("context_settings", {})}
        kwargs.setdefault("no_args_is_help", False)
        super().__init__(*args, **kwargs)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            raise click.UsageError(f"missing command ({self._choices(ctx)})", ctx)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise click.UsageError(_message(e, self, args), ctx) from None

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if not ctx.resilient_parsing and not name.startswith("-") \
                and self.get_command(ctx, name) is None:
            raise click.UsageError(f"no such command: {name} ({self._choices(ctx)})", ctx)
        return super().resolve_command(ctx, args)

    def _choices(self, ctx: click.Context) -> str:
        return "one of: " + ", ".join(self.list_commands(ctx))


class LazyGroup(Group):
    """Commands from a registry ``name -> (module, summary)``: a module is imported when its
    command runs, its help is shown or the shell completes it; the group's own help lists the
    registry's summaries and imports none. A first word that is no command name (nor a group
    option) means ``default``: ``tpcheck PATH...`` is ``tpcheck check PATH...``."""

    def __init__(self, name: str, registry: dict[str, tuple[str, str]], *,
                 default: str | None = None, usage: Sequence[str] = (), **kwargs: Any) -> None:
        kwargs["context_settings"] = {**CONTEXT_SETTINGS, **kwargs.get("context_settings", {})}
        super().__init__(name, **kwargs)
        self.registry = registry
        self.default = default
        self.usage = list(usage)  # usage lines after the program name, when click's won't do

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not self.usage:
            super().format_usage(ctx, formatter)
            return
        formatter.write_usage(ctx.command_path, self.usage[0])
        for line in self.usage[1:]:
            formatter.write(f"{'':>7}{ctx.command_path} {line}\n")

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.registry)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.registry:
            return None
        module = importlib.import_module(self.registry[cmd_name][0])
        command: click.Command = module.command
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        own = {o for p in self.params for o in (*p.opts, *p.secondary_opts)}
        own.update(ctx.help_option_names)
        if self.default and args and args[0] not in self.registry and args[0] not in own:
            args = [self.default, *args]
        return super().parse_args(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in self.registry.items()])


# ---- parse errors in argparse's words ---------------------------------------------------------

def _label(param: click.Parameter) -> str:
    """``--gpu-memory-utilization/--mem-fraction-static``, ``--color/--no-color``, ``PATHS``."""
    if isinstance(param, click.Option):
        return "/".join([*param.opts, *param.secondary_opts])
    return param.human_readable_name


def _message(e: click.UsageError, command: click.Command, args: Sequence[str]) -> str:
    """One line, worded as tpcheck's errors have always been."""
    words = list(args[:args.index("--")] if "--" in args else args)
    if isinstance(e, click.NoSuchOption):
        name = e.option_name
        if not name.startswith("--"):  # click splits -odd.yaml into -o -d ...; name the word
            name = next((w for w in words if w.startswith(name)), name)
        near = f" (did you mean {', '.join(e.possibilities)}?)" if e.possibilities else ""
        return f"no such option: {name}{near}"
    if isinstance(e, click.BadOptionUsage):
        param = next((p for p in command.params if isinstance(p, click.Option)
                      and e.option_name in (*p.opts, *p.secondary_opts)), None)
        label = _label(param) if param is not None else e.option_name
        given = next((w.split("=", 1)[1] for w in words if w.startswith(f"{e.option_name}=")),
                     None)
        if isinstance(param, click.Option) and param.is_flag and given is not None:
            return f"argument {label}: ignored explicit argument {given!r}"
        return f"argument {label}: expected one argument"
    if isinstance(e, click.MissingParameter) and isinstance(e.param, click.Argument):
        return f"the following arguments are required: {_label(e.param)}"
    if isinstance(e, click.BadParameter) and e.param is not None:
        return f"argument {_label(e.param)}: {e.message}"
    return e.message
