"""``tpcheck rules``: the rule table, one line per code."""

from __future__ import annotations

import argparse

from tpcheck.commands._args import Parser

DESCRIPTION = "List the rule codes, names and default severities."


def add_arguments(p: Parser) -> None:
    """No options: the table is the same for every run."""


def run(args: argparse.Namespace) -> int:
    from tpcheck.checks import RULES

    for m in RULES:
        print(f"{m.CODE}  {m.NAME:<24} {m.SEVERITY.value:<8} {m.SUMMARY}")
    return 0
