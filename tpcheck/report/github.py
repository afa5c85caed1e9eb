"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` per finding."""

from __future__ import annotations

from tpcheck.lint import LintResult
from tpcheck.oneline import one_line

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _esc_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _esc_value(s: str) -> str:
    """A path or message: its own control characters escaped (a runner's log is a terminal
    too), then the command's escapes."""
    return _esc_data(one_line(s))


def _esc_prop(s: str) -> str:
    return _esc_value(s).replace(":", "%3A").replace(",", "%2C")


def render_github(result: LintResult) -> str:
    out = []
    for f in result.findings:
        s = f.span
        props = (f"file={_esc_prop(s.path)},line={s.line},col={s.column},endLine={s.end_line},"
                 f"endColumn={s.end_column},title={_esc_prop(f'{f.code} {f.name}')}")
        body = _esc_value(f.message)
        if f.formula is not None:
            body += "%0A" + _esc_value(f.formula.render())
        out.append(f"::{LEVEL[f.severity.value]} {props}::{body}")
    for e in result.errors:
        out.append(f"::error file={_esc_prop(e.path)},line={e.line},col={e.column},"
                   f"title=tpcheck::{_esc_value(e.message)}")
    return "\n".join(out) + ("\n" if out else "")
