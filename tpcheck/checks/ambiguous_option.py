"""TP002 ambiguous-option: an abbreviation that matches several options of the release.

The option table of the pinned release decides (``checks._options``); this module reports the
option uses whose outcome is ``ambiguous``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._options import findings
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext

CODE = "TP002"
NAME = "ambiguous-option"
SEVERITY = Severity.ERROR
NEEDS_SHAPE = False
NEEDS_KNOWN_TP = False
NEEDS_GPU_PHYSICS = False
NEEDS_VALID_LAYOUT = False
USES_MEMORY_MODEL = False
REFUSAL_VERDICT = False
DEPENDS_ON: tuple[str, ...] = ()
SUMMARY = "An abbreviated option that matches several options of the release: argparse refuses it."


def check(ctx: CheckContext) -> Iterator[Finding]:
    yield from findings(ctx, sys.modules[__name__], "ambiguous",
                        "write the option in full")
