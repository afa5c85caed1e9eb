"""Print the decode-step table: floor, calibrated and leave-one-out predictions vs measured.

Run from the repository root: ``python bench/step_table.py``. Rows are
``fixtures/observations/step-sweeps.jsonl``; the helpers (and the acceptance bars) live in
tests/physics/test_step.py. Issue 22's acceptance: leave-one-out median TPOT error ≤ 15 % over
rows with batch ≤ 16, TP-doubling gain within 10 % of measured in every series; large-batch rows
are listed separately (they mix chunked prefill into decode steps, so they calibrate nothing).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.physics.test_step import (
    GAIN_BAR,
    LOO_MEDIAN_BAR,
    ROWS,
    era_key,
    floor_of,
    leave_one_out,
    loo_predictions,
    predict,
    series_gains,
    small,
    uncalibrated,
)
from tpcheck.physics import step


def main() -> None:
    loo = leave_one_out(ROWS)
    print(f"{'row':<36} {'t':>2} {'batch':>5} {'meas ms':>8} {'floor':>7} {'×floor':>6} "
          f"{'calib':>7} {'err':>6} {'LOO':>7} {'err':>6}")
    ratios = []
    for r in small(ROWS):
        fl, _ = floor_of(r)
        era = era_key(r)
        assert era is not None
        y = float(str(r["measured_ms"]))
        cal = predict(r, era.a, era.c, era.k) * 1000
        e = loo[str(r["id"])]
        ratios.append(y / 1000 / fl.result)
        print(f"{r['id']!s:<36} {r['tp']!s:>2} {r['batch']!s:>5} {y:>8.2f} "
              f"{fl.result * 1000:>7.2f} {y / 1000 / fl.result:>6.2f} {cal:>7.2f} "
              f"{cal / y - 1:>+6.1%} {y * (1 + e):>7.2f} {e:>+6.1%}")
    med = statistics.median(abs(e) for e in loo.values())
    print(f"\nleave-one-out median |error| (batch ≤ 16, {len(loo)} rows): {med:.1%} "
          f"(bar {LOO_MEDIAN_BAR:.0%}); max {max(abs(e) for e in loo.values()):.1%}")
    print(f"measured ÷ floor over these rows: {min(ratios):.3f}–{max(ratios):.3f}")
    for e in step.ERAS:
        print(f"era {e.label}: a = {e.a}, c = {e.c * 1e6:.2f} µs/layer, k = {e.k} "
              f"({len(e.rows)} rows)")
    print("\nTP-doubling gain per series (leave-one-out predictions; floor for comparison):")
    preds = loo_predictions(ROWS)
    floors = {str(r["id"]): floor_of(r)[0].result for r in small(ROWS)}
    by_id = {str(r["id"]): r for r in small(ROWS)}
    worst = 0.0
    for sid, t0, t1, meas, pred in series_gains(ROWS, preds):
        lo = next(i for i, r in by_id.items() if r["series"] == sid and r["tp"] == t0)
        hi = next(i for i, r in by_id.items() if r["series"] == sid and r["tp"] == t1)
        fg = floors[lo] / floors[hi]
        worst = max(worst, abs(pred / meas - 1))
        print(f"  {sid:<32} TP{t0}→TP{t1}: measured {meas:.3f}×, calibrated {pred:.3f}× "
              f"({pred / meas - 1:+.1%}), floor {fg:.3f}× ({fg / meas - 1:+.1%})")
    print(f"worst gain error {worst:.1%} (bar {GAIN_BAR:.0%})")
    print("\nexcluded rows:")
    for r in ROWS:
        if r.get("excluded"):
            print(f"  {r['id']!s:<40} measured {r['measured_ms']} ms: {r['excluded']}")
    print("\nrows of releases no era calibrates (the floor's stated range must hold them):")
    lo, hi = step.RATIO_RANGE
    for r in uncalibrated(ROWS):
        fl, _ = floor_of(r)
        y = float(str(r["measured_ms"]))
        print(f"  {r['id']!s:<40} {r['engine']} {r['version']} t={r['tp']} batch {r['batch']}: "
              f"measured {y:.2f} ms, floor {fl.result * 1000:.2f} "
              f"({y / 1000 / fl.result:.2f}×, stated range {lo:.2f}–{hi:.2f}×)")
    print("\nlarge-batch rows (not fitted; chunked prefill mixed into decode steps):")
    for r in ROWS:
        if not r.get("large_batch"):
            continue
        fl, _ = floor_of(r)
        era = step.era_for(str(r["engine"]), str(r["version"]), str(r["gpu"]))
        y = float(str(r["measured_ms"]))
        cal = predict(r, era.a, era.c, era.k) * 1000 if era else float("nan")
        print(f"  {r['id']!s:<40} t={r['tp']} batch {r['batch']}: measured {y:.2f} ms, floor "
              f"{fl.result * 1000:.2f} ({y / 1000 / fl.result:.2f}×), calibrated {cal:.2f} "
              f"({cal / y - 1:+.0%})")


if __name__ == "__main__":
    main()
