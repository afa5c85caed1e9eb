"""The argument parser every command shares: argparse with tpcheck's error and help rules.

Kept apart from ``tpcheck.cli`` so ``tpcheck --version`` imports neither argparse nor the
``re``/``enum`` it pulls in; the CLI imports this module only once a command is going to run.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence

from tpcheck.cli import UsageError

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, NoReturn


class ParserExit(Exception):
    """argparse wants to stop after printing (--help): main returns the status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


# ---- value types: checked while parsing, so a bad value is a usage error naming the option ---

class IntRange:
    """A whole number in [lo, hi] (either bound optional)."""

    def __init__(self, lo: int | None = None, hi: int | None = None) -> None:
        self.lo, self.hi = lo, hi
        self.label = _range_label(lo, hi, lo_open=False)

    def __call__(self, text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if (self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi):
            raise argparse.ArgumentTypeError(f"{v} is not in the range {self.label}")
        return v


class FloatRange:
    """A number in [lo, hi], or (lo, hi] with ``lo_open``; NaN is in no range."""

    def __init__(self, lo: float | None = None, hi: float | None = None, *,
                 lo_open: bool = False) -> None:
        self.lo, self.hi, self.lo_open = lo, hi, lo_open
        self.label = _range_label(lo, hi, lo_open=lo_open)

    def __call__(self, text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        below = self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo)
        above = self.hi is not None and v > self.hi
        if math.isnan(v) or below or above:
            raise argparse.ArgumentTypeError(f"{v} is not in the range {self.label}")
        return v


def _range_label(lo: float | None, hi: float | None, *, lo_open: bool) -> str:
    """``x>=1``, ``1<=x<=1024``, ``0<x<=1``: the bounds as the help and errors show them."""
    if hi is None:
        return "x" if lo is None else f"x{'>' if lo_open else '>='}{lo}"
    left = "" if lo is None else f"{lo}{'<' if lo_open else '<='}"
    return f"{left}x<={hi}"


class FilePath:
    """A file name that must not be a folder (and, with ``writable``, one we may write)."""

    def __init__(self, *, writable: bool = False) -> None:
        self.writable = writable

    def __call__(self, text: str) -> str:
        if os.path.isdir(text):
            raise argparse.ArgumentTypeError(f"{text!r} is a directory, not a file")
        if self.writable and os.path.exists(text) and not os.access(text, os.W_OK):
            raise argparse.ArgumentTypeError(f"{text!r} is not writable")
        return text


# ---- the parser -------------------------------------------------------------------------------

_MARK = "\0tpcheck-arg-"  # stands for a word after "--"; an argv word never holds a NUL


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (raised as UsageError, never printed with the usage), no
    prefix matching of long options, options allowed after positionals, ranges in the help."""

    def __init__(self, prog: str, description: str | None = None,
                 epilog: str | None = None, usage: str | None = None) -> None:
        self.option_names: list[str] = []
        self.positionals: list[str] = []  # for the one-line usage: PATHS..., MODEL
        self.required: list[tuple[str, str]] = []  # (dest, name) of required positionals
        super().__init__(prog=prog, description=description, epilog=epilog, usage=usage,
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         allow_abbrev=False, exit_on_error=False)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        kind = kwargs.get("type")
        if isinstance(kind, (IntRange, FloatRange)) and kwargs.get("help") is not None:
            kwargs["help"] = f"{kwargs['help']} [{kind.label}]"
        required = bool(args) and not str(args[0]).startswith("-") \
            and kwargs.get("nargs") in (None, "+")
        if required:
            # checked in parse() after unknown options, which are the likelier mistake:
            # `tpcheck -odd.yaml` says "no such option", not "PATHS required"
            kwargs["nargs"] = "*" if kwargs.get("nargs") == "+" else "?"
        action = super().add_argument(*args, **kwargs)
        self.option_names.extend(action.option_strings)
        if not action.option_strings:
            name = str(action.metavar or action.dest).upper()
            self.positionals.append(f"{name}..." if action.nargs in ("+", "*") else name)
            if required:
                self.required.append((action.dest, str(action.metavar or action.dest)))
        return action

    def short_usage(self) -> str:
        """``tpcheck check [OPTIONS] PATHS...``: the options are listed below it anyway."""
        return " ".join([self.prog, "[OPTIONS]", *self.positionals])

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise ParserExit(status)

    def parse(self, args: Sequence[str]) -> argparse.Namespace:
        """Options and positionals in any order; every word after ``--`` is positional.

        argparse's intermixed mode drops or misreads words after ``--`` (CPython 3.10-3.12:
        ``-- -x`` loses ``-x``, ``-- a --gpu x`` takes ``--gpu`` as an option), so those words
        go in as placeholders that cannot look like options and are put back afterwards."""
        args = list(args)
        tail: list[str] = []
        if "--" in args:
            i = args.index("--")
            args, tail = args[:i], args[i + 1:]
        if tail:
            args = [*args, "--", *(f"{_MARK}{n}" for n in range(len(tail)))]
        try:
            ns, extra = self.parse_known_intermixed_args(args)
        except argparse.ArgumentError as e:
            raise UsageError(str(e)) from None
        extra = [w for w in extra if w != "--"]  # ours, kept when nothing took the tail
        if extra:
            raise UsageError(self._unexpected(extra[0], tail))
        if tail:
            for k, v in vars(ns).items():
                setattr(ns, k, _unmark(v, tail))
        missing = [name for dest, name in self.required if getattr(ns, dest) in (None, [])]
        if missing:
            raise UsageError(f"the following arguments are required: {', '.join(missing)}")
        return ns

    def _unexpected(self, word: str, tail: list[str]) -> str:
        if word.startswith(_MARK):
            return f"unexpected extra argument: {_unmark(word, tail)}"
        if word.startswith("-") and word != "-":
            name = word.split("=", 1)[0]
            import difflib

            near = difflib.get_close_matches(name, self.option_names, n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            return f"no such option: {name}{hint}"
        return f"unexpected extra argument: {word}"


def _unmark(v: object, tail: list[str]) -> object:
    if isinstance(v, str) and v.startswith(_MARK):
        return tail[int(v[len(_MARK):])]
    if isinstance(v, list):
        return [_unmark(x, tail) for x in v]
    return v
