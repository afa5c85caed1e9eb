"""TP004 removed-option: an option an older release took and the pinned one refuses.

The option table of the pinned release decides (``checks._options``); this module reports the
option uses whose outcome is ``removed``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._options import findings
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext

CODE = "TP004"
NAME = "removed-option"
SEVERITY = Severity.ERROR
NEEDS_SHAPE = False
NEEDS_KNOWN_TP = False
NEEDS_GPU_PHYSICS = False
NEEDS_VALID_LAYOUT = False
USES_MEMORY_MODEL = False
REFUSAL_VERDICT = False
DEPENDS_ON: tuple[str, ...] = ()
SUMMARY = "An option an older release accepted and the pinned release no longer registers."


def check(ctx: CheckContext) -> Iterator[Finding]:
    yield from findings(ctx, sys.modules[__name__], "removed",
                        "drop it, or use what replaced it in this release")
