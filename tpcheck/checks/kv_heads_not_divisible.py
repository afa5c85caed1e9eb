"""TP102 kv-heads-not-divisible: see SUMMARY and rules/TP102.md."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._refusal import refusal_findings
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext

CODE = "TP102"
NAME = "kv-heads-not-divisible"
SEVERITY = Severity.ERROR
NEEDS_SHAPE = True
NEEDS_KNOWN_TP = True
NEEDS_GPU_PHYSICS = False
NEEDS_VALID_LAYOUT = True
USES_MEMORY_MODEL = False
REFUSAL_VERDICT = False
DEPENDS_ON: tuple[str, ...] = ()
SUMMARY = (
    "KV heads can be neither partitioned nor replicated "
    "evenly over t: the attention layer asserts at start-up."
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    yield from refusal_findings(ctx, sys.modules[__name__])
