"""A command with subcommands, as ``tpcheck models pull`` / ``models list`` will be: a
``base.Group`` in a module named by the registry, loaded lazily, with one-line usage errors
that point at the subcommand's own --help. This module is such a command module."""

from __future__ import annotations

from typing import Any

import click
import pytest

from tpcheck import cli
from tpcheck.commands import base

command = base.Group("demo", help="A group of two subcommands.")
CALLS: list[base.Args] = []


@command.command("pull", help="Pull PATHS.")
@base.paths_argument()
@base.offline_option
@base.option("--jobs", type=base.IntRange(1, 8), default=2, metavar="N", help="Workers.")
def pull(**params: Any) -> int:
    CALLS.append(base.parsed(params))
    return 0


@command.command("list", help="List what was pulled.")
@base.format_option("text", "json")
def list_(**params: Any) -> int:
    CALLS.append(base.parsed(params))
    return 1


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "demo", (__name__, "a demo group"))
    CALLS.clear()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_subcommands_run_with_their_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "demo", "pull", "a.yaml", "--offline", "--jobs", "3") == (0, "", "")
    assert run(capsys, "demo", "list", "--format", "json") == (1, "", "")
    assert [(a.paths, a.offline, a.jobs) for a in CALLS[:1]] == [(("a.yaml",), True, 3)]
    assert CALLS[1].fmt == "json" and CALLS[1].standalone is False
    assert isinstance(command.commands["pull"], base.Command)


@pytest.mark.parametrize(("args", "hint", "message"), [
    (["demo"], "tpcheck demo", "missing command (one of: list, pull)"),
    (["demo", "push"], "tpcheck demo", "no such command: push (one of: list, pull)"),
    (["demo", "--bogus"], "tpcheck demo", "no such option: --bogus"),
    (["demo", "pull"], "tpcheck demo pull", "the following arguments are required: PATHS"),
    (["demo", "pull", "x", "--jobs", "9"], "tpcheck demo pull",
     "argument --jobs: 9 is not in the range 1<=x<=8"),
    (["demo", "list", "extra"], "tpcheck demo list", "unexpected extra argument: extra"),
])
def test_usage_errors_name_the_subcommand(capsys: pytest.CaptureFixture[str], args: list[str],
                                          hint: str, message: str) -> None:
    assert run(capsys, *args) == (2, "", f"tpcheck: error: {message} (see '{hint} --help')\n")


def test_help_of_the_group_and_of_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "demo", "--help")
    assert code == 0 and out.startswith("Usage: tpcheck demo [OPTIONS] COMMAND [ARGS]...")
    assert "  list" in out and "  pull" in out
    code, out, _ = run(capsys, "demo", "pull", "-h")
    assert code == 0 and out.startswith("Usage: tpcheck demo pull [OPTIONS] PATHS...")
    assert "--jobs N" in out and "Workers. [1<=x<=8]" in out


def test_the_registry_lists_and_loads_the_group() -> None:
    group = cli.group()
    assert isinstance(group, base.LazyGroup)
    with click.Context(group) as ctx:
        assert "demo" in group.list_commands(ctx)
        assert group.get_command(ctx, "demo") is command
