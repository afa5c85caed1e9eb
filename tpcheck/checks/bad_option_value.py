"""TP003 bad-option-value: a value not of the option's type, choices or range.

The option table of the pinned release decides (``checks._options``); this module reports the
option uses whose outcome is ``bad_value``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._options import findings
from tpcheck.checks.base import Assumption, Finding, Severity
from tpcheck.checks.context import CheckContext

CODE = "TP003"
NAME = "bad-option-value"
SEVERITY = Severity.ERROR
NEEDS_SHAPE = False
NEEDS_KNOWN_TP = False
NEEDS_GPU_PHYSICS = False
NEEDS_VALID_LAYOUT = False
USES_MEMORY_MODEL = False
REFUSAL_VERDICT = False
DEPENDS_ON: tuple[str, ...] = ()
SUMMARY = "A value that is not of the option's type, not one of its choices, or out of its range."


def check(ctx: CheckContext) -> Iterator[Finding]:
    yield from findings(ctx, sys.modules[__name__], "bad_value",
                        "give a value of the type, choices or range the message quotes")


def refused(ctx: CheckContext, field: str, message: str) -> Finding:
    """A value the option table lets through but the engine's model code refuses (vLLM 0.33
    takes any string for --kv-cache-dtype at parse time): the physics' own words, at the value.
    The other rules then run without it."""
    d = ctx.deployment
    flag = "--" + field.replace("_", "-")
    return ctx.finding(sys.modules[__name__],
                       f"{flag} {getattr(d, field)!r} is a value the engine refuses",
                       notes=(message,), span=d.span_of(field),
                       assumptions=(Assumption("value", f"the other rules use the engine's "
                                               f"default for {flag}"),),
                       fix=f"give {flag} a value this {d.engine} release knows")
