"""TP005 deprecated-option: an option the release still takes but warns about.

The option table of the pinned release decides (``checks._options``); this module reports the
option uses whose outcome is ``deprecated``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._options import findings
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext

CODE = "TP005"
NAME = "deprecated-option"
SEVERITY = Severity.WARNING
NEEDS_SHAPE = False
NEEDS_KNOWN_TP = False
NEEDS_GPU_PHYSICS = False
NEEDS_VALID_LAYOUT = False
USES_MEMORY_MODEL = False
REFUSAL_VERDICT = False
DEPENDS_ON: tuple[str, ...] = ()
SUMMARY = "An option the pinned release still accepts but warns about and will remove."


def check(ctx: CheckContext) -> Iterator[Finding]:
    yield from findings(ctx, sys.modules[__name__], "deprecated",
                        "remove it, or use the replacement the engine's warning names: later "
                        "releases drop deprecated options")
