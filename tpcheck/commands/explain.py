"""``tpcheck explain CODE``: the rule's shipped documentation (rules/CODE.md)."""

from __future__ import annotations

import argparse

from tpcheck import cli
from tpcheck.commands._args import Parser

DESCRIPTION = "Print the documentation of rule CODE (what, why, formula, example, fix)."


def add_arguments(p: Parser) -> None:
    p.add_argument("code", metavar="CODE", help="Rule code, e.g. TP201 (any case).")


def run(args: argparse.Namespace) -> int:
    from tpcheck.checks import UnknownRule, get
    from tpcheck.ruledocs import NOTICES, doc

    code = args.code.strip().upper()
    if code not in NOTICES:
        try:
            code = get(code).CODE
        except UnknownRule as e:
            raise cli.UsageError(str(e).strip("'\"")) from None
    text = doc(code)
    if text is None:
        raise cli.CommandError(f"no documentation shipped for {code}")
    print(text.rstrip("\n"))
    return 0
