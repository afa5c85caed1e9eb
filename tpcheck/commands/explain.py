"""``tpcheck explain CODE``: the rule's shipped documentation (rules/CODE.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from tpcheck import CommandError, UsageError
from tpcheck.commands import base

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

DESCRIPTION = "Print the documentation of rule CODE (what, why, formula, example, fix)."


def _complete_code(ctx: click.Context, param: click.Parameter,
                   incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    from tpcheck.checks import RULES

    return [CompletionItem(m.code, help=m.name) for m in RULES
            if m.code.startswith(incomplete.upper())]


@click.command("explain", cls=base.Command, help=DESCRIPTION)
@click.argument("code", metavar="CODE", shell_complete=_complete_code)
def command(**params: Any) -> int:
    return run(base.parsed(params))


def run(args: base.Args) -> int:
    from tpcheck.checks import UnknownRule, get
    from tpcheck.ruledocs import NOTICES, doc

    code = args.code.strip().upper()
    if code not in NOTICES:
        try:
            code = get(code).code
        except UnknownRule as e:
            raise UsageError(str(e).strip("'\"")) from None
    text = doc(code)
    if text is None:
        raise CommandError(f"no documentation shipped for {code}")
    # the docs' `<!-- tpcheck-args: ... -->` lines tell the doc tests how to run an example
    shown = [ln for ln in text.rstrip("\n").splitlines() if not ln.lstrip().startswith("<!--")]
    print("\n".join(shown))
    return 0
