"""TP103 ffn-not-divisible: see SUMMARY and rules/TP103.md."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks._refusal import refusal_findings
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext

CODE = "TP103"
NAME = "ffn-not-divisible"
SEVERITY = Severity.ERROR
NEEDS_SHAPE = True
NEEDS_KNOWN_TP = True
NEEDS_GPU_PHYSICS = False
NEEDS_VALID_LAYOUT = True
USES_MEMORY_MODEL = False
REFUSAL_VERDICT = False
# the MoE width is divided over t·dp
DEPENDS_ON: tuple[str, ...] = ("data_parallel_size", "ep_size", "enable_expert_parallel")
SUMMARY = (
    "The FFN, expert or quantization-group width per rank "
    "does not divide: the parallel linear layer refuses."
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    yield from refusal_findings(ctx, sys.modules[__name__])
