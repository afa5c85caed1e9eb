"""``tpcheck rules``: the rule table, one line per code."""

from __future__ import annotations

from typing import Any

import click

from tpcheck.commands import base

DESCRIPTION = "List the rule codes, names and default severities."


@click.command("rules", cls=base.Command, help=DESCRIPTION)
def command(**params: Any) -> int:
    """No options: the table is the same for every run."""
    return run(base.parsed(params))


def run(args: base.Args) -> int:
    from tpcheck.checks import RULES
    from tpcheck.ruledocs import NOTICES

    for m in RULES:
        print(f"{m.code}  {m.name:<24} {m.severity.value:<8} {m.summary}")
    for code, (name, summary) in NOTICES.items():  # reported as an error, exit code 2
        print(f"{code}  {name:<24} {'error':<8} {summary}")
    return 0
