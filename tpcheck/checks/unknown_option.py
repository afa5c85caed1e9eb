"""TP001 unknown-option: an option or Python keyword the pinned release does not know.

The option table of the pinned release decides (``checks._options``); this module reports the
option uses whose outcome is ``unknown``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._options import findings
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext

CODE = "TP001"
NAME = "unknown-option"
SEVERITY = Severity.ERROR
NEEDS_SHAPE = False
NEEDS_KNOWN_TP = False
NEEDS_GPU_PHYSICS = False
NEEDS_VALID_LAYOUT = False
USES_MEMORY_MODEL = False
REFUSAL_VERDICT = False
DEPENDS_ON: tuple[str, ...] = ()
SUMMARY = "An option (or Python keyword) the engine release does not know: it exits at start-up."


def check(ctx: CheckContext) -> Iterator[Finding]:
    yield from findings(ctx, sys.modules[__name__], "unknown",
                        "remove it, or spell an option of this release")
