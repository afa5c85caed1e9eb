"""Property tests with issue 28's generators (tests/generators.py): Kubernetes env expansion,
Helm charts, Python launch code, shell scripts, kustomize JSON patches and argv lines.

The same generators feed ``bench/hostile.py --fuzz`` (200,000+ inputs); here hypothesis draws a
few dozen of each through ``st.randoms()``. Invariants: every error is one line at a 1-based
position and never read_path's "please report" safety net; the rules raise no "internal error"
on what the readers found; a reader spends at most a few seconds on any input.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.generators import GENERATORS
from tpcheck.lint import Linter, LintResult
from tpcheck.settings import Settings
from tpcheck.sources import read_path
from tpcheck.sources.base import ReadResult

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LINTER = Linter(Settings(offline=True), gpu_flag="h100-sxm")
# the slowest input class (a 20,000-entry env chain) reads in about a second; ten is a hang
MAX_SECONDS = 10.0


def _read(kind: str, rng: random.Random, root: Path) -> ReadResult:
    gen, shape = GENERATORS[kind]
    case = gen(rng)
    if shape == "file":
        name, text = case
        return read_path(name, text)
    for rel, text in case.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")
    return read_path(str(root / ("templates/pod.yaml" if kind == "helm"
                                 else "kustomization.yaml")))


@pytest.mark.parametrize("kind", sorted(GENERATORS))
@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_generated_inputs_are_read_and_linted_without_internal_errors(
        kind: str, rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        rr = _read(kind, rng, Path(tmp))
        out = LintResult()
        LINTER.lint_read(rr, out)
        seconds = time.perf_counter() - t0
    assert seconds < MAX_SECONDS, (kind, seconds)
    for e in (*rr.errors, *out.errors):
        assert "\n" not in e.message and e.line >= 1 and e.column >= 1, e
        assert "please report" not in e.message and "internal error" not in e.message, e
    for f in out.findings:
        assert "internal error" not in f.message, f
