"""``tpcheck rules`` and ``tpcheck explain CODE``."""

from __future__ import annotations

import click


@click.command("rules")
def rules_cmd() -> int:
    """List the rule codes, names and default severities."""
    from tpcheck.checks import RULES

    for m in RULES:
        click.echo(f"{m.CODE}  {m.NAME:<24} {m.SEVERITY.value:<8} {m.SUMMARY}")
    return 0


@click.command("explain")
@click.argument("code")
def explain_cmd(code: str) -> int:
    """Print the documentation of rule CODE (what, why, formula, example, fix)."""
    from tpcheck.checks import UnknownRule, get
    from tpcheck.ruledocs import doc

    try:
        m = get(code)
    except UnknownRule as e:
        raise click.UsageError(str(e).strip("'\"")) from None
    text = doc(m.CODE)
    if text is None:
        raise click.ClickException(f"no documentation shipped for {m.CODE}")
    click.echo(text.rstrip("\n"))
    return 0
