"""Print the calibration table: predicted vs logged weights, available KV and KV tokens.

Run from the repository root: ``python bench/calibration_table.py``. The rows, their
assumptions and the excluded rows live in tests/physics/test_calibration.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.physics.test_calibration import CASES, EXCLUDED, summary, table
from tpcheck.formula import GIB


def _pct(e: float | None) -> str:
    return "" if e is None else f"{e * 100:+.1f}%"


def _f(x: float | None, nd: int = 2) -> str:
    return "" if x is None else f"{x:.{nd}f}"


def main() -> int:
    preds = table()
    head = (f"{'row':>3} {'model':<34} {'ver':<7} {'W pred':>7} {'W log':>7} {'err':>7} "
            f"{'KV pred':>8} {'KV log':>7} {'err':>7} {'tok pred':>9} {'tok log':>9} {'err':>6}"
            f"  R terms (GiB)")
    print(head)
    for p in preds:
        terms = " ".join(f"{t.name[2:]}={t.result / GIB:.2f}" for t in p.reserve.terms)
        miss = ("  [known miss: weights]" if CASES[p.row].weights_miss else "") + (
            "  [known miss: KV]" if CASES[p.row].pool_miss else "")
        print(f"{p.row:>3} {p.model:<34} {p.version:<7} {_f(p.weights_gib):>7} "
              f"{_f(p.logged_weights_gib):>7} {_pct(p.weights_error):>7} {_f(p.pool_gib):>8} "
              f"{_f(p.logged_pool_gib):>7} {_pct(p.pool_error):>7} "
              f"{'' if p.tokens is None else p.tokens:>9} "
              f"{'' if p.logged_tokens is None else p.logged_tokens:>9} "
              f"{_pct(p.tokens_error):>6}  {terms}{miss}")
    print()
    for label, attr in (("weights", "weights_error"), ("available KV", "pool_error"),
                        ("KV tokens", "tokens_error")):
        errs = [e for p in preds if (e := getattr(p, attr)) is not None]
        if errs:
            med, worst = summary(errs)
            print(f"{label:<13} rows={len(errs)}  median |err| = {med * 100:.1f}%  "
                  f"worst = {worst * 100:.1f}%")
    print()
    print("excluded rows:")
    for i, reason in sorted(EXCLUDED.items()):
        print(f"  {i:>2}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
