"""TP000 model-unresolved: the model's config.json could not be found."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext

CODE = "TP000"
NAME = "model-unresolved"
SEVERITY = Severity.WARNING
NEEDS_SHAPE = False
SUMMARY = "The model's config.json could not be found; shape-based rules were skipped."


def check(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.shape is not None or ctx.model_problem is None:
        return
    d = ctx.deployment
    yield ctx.finding(
        sys.modules[__name__],
        f"{ctx.model_problem}; rules that need the model's shape were skipped for this deployment",
        span=d.span_of("model"),
        fix="pass --model-config PATH, map the name in [tool.tpcheck.models], or populate the "
        "Hugging Face cache (huggingface-cli download MODEL config.json)",
    )
