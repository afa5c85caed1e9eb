"""Print the decode-step table: floor, calibrated and leave-one-out predictions vs measured.

Run from the repository root: ``python bench/step_table.py``. Rows are
``fixtures/observations/step-sweeps.jsonl`` and, for prefill, ``prefill-sweeps.jsonl``; the
helpers (and the acceptance bars) live in tests/physics/test_step.py and test_prefill.py. Issue
22's acceptance: leave-one-out median TPOT error ≤ 15 % over rows with batch ≤ 16, TP-doubling
gain within 10 % of measured in every series; large-batch rows are listed separately (they mix
chunked prefill into decode steps, so they calibrate nothing). The prefill rows follow: each at
the assumed η, the η it implies, and η from the other rows (leave-one-out).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.physics.test_prefill import ROWS as PREFILL_ROWS
from tests.physics.test_prefill import terms as prefill_terms
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
        if era is None:
            cal_text = f"uncalibrated ({r['engine']} {r['version']} on {r['gpu']}: no era)"
        else:
            cal = predict(r, era.a, era.c, era.k) * 1000
            cal_text = f"calibrated {cal:.2f} ({cal / y - 1:+.0%})"
        print(f"  {r['id']!s:<40} t={r['tp']} batch {r['batch']}: measured {y:.2f} ms, floor "
              f"{fl.result * 1000:.2f} ({y / 1000 / fl.result:.2f}×), {cal_text}")
    prefill_table()


def prefill_table() -> None:
    """The prefill rows: predicted at the assumed η, the η each implies, leave-one-out."""
    print(f"\nprefill rows ({step.PREFILL_SWEEPS}; T = (T_linear + T_attn)/η + T_comm):")
    assumed = f"η={step.PREFILL_EFFICIENCY}"
    print(f"  {'row':<34} {'t':>2} {'tokens':>6} {'meas ms':>8} {assumed:>7} {'×':>5} "
          f"{'η implied':>9} {'LOO η':>6} {'LOO err':>7}")
    pts = [prefill_terms(r) for r in PREFILL_ROWS]
    for i, (r, (x, c, y)) in enumerate(zip(PREFILL_ROWS, pts, strict=True)):
        pred = x / step.PREFILL_EFFICIENCY + c
        others = [p for j, p in enumerate(pts) if j != i]
        eta = step.fit_efficiency(others) if others else float("nan")
        loo = x / eta + c
        print(f"  {r['id']!s:<34} {r['tp']!s:>2} {r['input_tokens']!s:>6} {y * 1000:>8.2f} "
              f"{pred * 1000:>7.2f} {y / pred:>5.2f} {x / (y - c):>9.3f} {eta:>6.3f} "
              f"{loo / y - 1:>+7.1%}")
    eras = ", ".join(f"{e.engine} {e.low}–{e.high} {e.gpu_class}: η = {e.efficiency}"
                     for e in step.PREFILL_ERAS)
    eras = eras or "none (every row is uncalibrated: see its reason)"
    print(f"prefill eras: {eras}")


if __name__ == "__main__":
    main()
