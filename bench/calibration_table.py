"""Print the calibration table: predicted vs logged weights, available KV and KV tokens.

Run from the repository root: ``python bench/calibration_table.py``. The rows, their
assumptions and the excluded rows live in tests/physics/test_calibration.py. The second table
is issue 19's acceptance: each row's pool predicted with the sampler bytes per logit refitted on
the other rows of its release era (engine era and sampler implementation), before and after,
and what the same row would get if its release were not known (the newest assumed).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataclasses import replace

from tests.physics.test_calibration import (
    CASES,
    EXCLUDED,
    _num,
    era_of,
    leave_one_out,
    load_rows,
    pool_error,
    predict,
    summary,
    table,
)
from tpcheck.engines.defaults import NEWEST
from tpcheck.formula import GIB

# Pool errors of tpcheck before issue 19 (main at 6c2aa0e: fixed sampler bytes 30/12 per logit
# beyond b switched at 0.21, non-torch 0.35 GiB in every era, rows 21-24 read as 0.10.1; row 22
# added with that label), measured with this script's predict(); the pool of row 12 is its
# printed blocks × block bytes.
BEFORE: dict[int, float] = {0: 0.012, 1: 0.013, 12: 0.037, 21: 0.012, 22: 0.011, 23: 0.020,
                            24: -0.947, 26: -0.009,
                            # rows 29-47 (issue 32) at main a998bcb: N at t > 1 was NCCL +
                            # custom all-reduce (0.22/0.28 GiB), not the fusion workspace;
                            # rows 32-33 (PP) against the pool their printed tokens imply
                            29: -0.004, 30: 0.024, 31: 0.022, 32: -0.004, 33: 0.003,
                            34: -0.005, 35: 0.022, 36: 0.021, 37: 0.074, 38: -0.032,
                            39: -0.013, 40: -0.006, 41: 0.010, 42: 0.012, 43: 0.026,
                            44: 0.037, 45: 0.032, 46: 0.042, 47: 0.267,
                            # rows 48-58 (issue 32, second collection) at main 316f6ba with the
                            # same row assumptions (the sampler the log shows, --quantization
                            # fp8 for row 54): only row 53 moved (Marlin pads each rank's slice)
                            48: 0.002, 49: 0.002, 50: -0.005, 51: 0.004, 52: 0.001, 53: 0.016,
                            54: 0.012, 55: 0.012, 56: 0.005, 57: -0.016, 58: 0.005}
# Weights errors at main e88e98c (before issue 32 items 3-4: no rotary cache, MXFP4 padded on
# every release, PP as total/p), for the rows this round moved past 1 %.
BEFORE_WEIGHTS: dict[int, float] = {26: -0.020, 33: -0.122, 43: -0.041, 44: -0.011, 45: -0.020,
                                    47: -0.055,
                                    # row 53 at main 316f6ba: Marlin's 2880 → 2944 padded
                                    # before the split, not each rank's 720 → 768
                                    53: -0.040}
# Printed-token errors at main a998bcb for the hybrid rows (issue 32: whole-attention tokens
# divided by the effective per-token cost, not the engine's group layout).
BEFORE_TOKENS: dict[int, float] = {38: 0.290, 39: 0.317, 43: 1.019}


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
    breakdown_section(preds)
    print()
    print("weights before/after this round (rows that were past 1 %):")
    for p in preds:
        if p.row in BEFORE_WEIGHTS:
            print(f"{p.row:>3} {p.model:<34} before {_pct(BEFORE_WEIGHTS[p.row]):>7}  after "
                  f"{_pct(p.weights_error):>7}")
    print()
    for label, attr in (("weights", "weights_error"), ("available KV", "pool_error"),
                        ("KV tokens", "tokens_error")):
        errs = [e for p in preds if (e := getattr(p, attr)) is not None]
        if errs:
            med, worst = summary(errs)
            print(f"{label:<13} rows={len(errs)}  median |err| = {med * 100:.1f}%  "
                  f"worst = {worst * 100:.1f}%")
    print()
    print("leave-one-out pool error (sampler bytes refitted on the other rows of the era; "
          f"'unpinned' = the same row read as the newest release, {NEWEST['vllm']}):")
    print(f"{'row':>3} {'era':<16} {'fit s':>6} {'before':>7} {'after':>7} {'unpinned':>9}")
    eras: dict[str, list[tuple[float, float]]] = {}
    rows = load_rows()
    for p, fit in leave_one_out():
        after = pool_error(p)
        if after is None:
            continue
        newest = replace(CASES[p.row], version=NEWEST["vllm"])
        unpinned = pool_error(predict(p.row, rows[p.row], newest))
        miss = "  [excluded from the bar: " + CASES[p.row].pool_miss[:60] + "…]" if CASES[
            p.row].pool_miss else ""
        era = era_of(p.version, CASES[p.row].sampler)
        print(f"{p.row:>3} {era:<16} {_f(fit, 1):>6} {_pct(BEFORE.get(p.row)):>7} "
              f"{_pct(after):>7} {_pct(unpinned):>9}{miss}")
        if not miss:
            eras.setdefault(era, []).append((BEFORE[p.row], after))
    print()
    every: list[tuple[float, float]] = []
    for era, pairs in sorted(eras.items()):
        every += pairs
        b, a = summary([x for x, _ in pairs]), summary([y for _, y in pairs])
        print(f"{era:<16} rows={len(pairs)}  before median {b[0] * 100:.1f}% worst "
              f"{b[1] * 100:.1f}%  after median {a[0] * 100:.1f}% worst {a[1] * 100:.1f}%")
    b, a = summary([x for x, _ in every]), summary([y for _, y in every])
    print(f"{'all':<16} rows={len(every)}  before median {b[0] * 100:.1f}% worst "
          f"{b[1] * 100:.1f}%  after median {a[0] * 100:.1f}% worst {a[1] * 100:.1f}%")
    print()
    print("excluded rows:")
    for i, reason in sorted(EXCLUDED.items()):
        print(f"  {i:>2}: {reason}")
    sglang_section()
    return 0


def breakdown_section(preds: list) -> None:  # type: ignore[type-arg]
    """Issue 32: each term against the log's breakdown line (weights, torch peak increase,
    non-torch increase, CUDA graphs) where the row kept it, with the one fitted non-torch
    figure (the 0.19 TP group's lazily made NCCL communicator) refitted leaving the row out
    (median over the other rows of the same t), then the pool and the printed tokens."""
    import statistics

    from tpcheck.physics import memory

    rows = load_rows()
    print()
    print("terms against the logged breakdown (GiB; A = torch peak increase, N = non-torch "
          "increase; N loo = C_nccl refitted on the other rows of the same t and scheme):")
    print(f"{'row':>3} {'model':<34} {'t':>2} {'pp':>2} {'W err':>6} {'A pred':>7} {'A log':>6} "
          f"{'err':>7} {'N pred':>7} {'N log':>6} {'err':>7} {'N loo':>7} {'G':>5} "
          f"{'G log':>6} {'pool':>6} {'tokens':>7}")
    resid: dict[int, tuple[int, float]] = {}
    for p in preds:
        r = rows[p.row]
        n_log = r.get("non_torch_gib")
        nt = p.reserve.terms[2]
        c = nt.values.get("C_nccl")
        if isinstance(n_log, (int, float)) and isinstance(c, (int, float)) and c:
            key = (int(r.get("tp") or 1), str(nt.values.get("scheme")))  # type: ignore[call-overload]
            resid[p.row] = (key, n_log - (nt.result - c) / GIB)
    for p in preds:
        r = rows[p.row]
        a_log, n_log = r.get("activation_gib"), r.get("non_torch_gib")
        if not isinstance(a_log, (int, float)) or not isinstance(n_log, (int, float)):
            continue
        act, graphs, nontorch = (x.result / GIB for x in p.reserve.terms)
        loo = ""
        if p.row in resid:
            key = resid[p.row][0]  # (t, scheme): 0.19's rows and 0.12's refit apart
            others = [v for j, (u, v) in resid.items() if u == key and j != p.row]
            if others:
                fit = statistics.median(others)
                n_loo = nontorch - memory.lazy_nccl_bytes(key[0]) / GIB + fit
                loo = _pct((n_loo - n_log) / n_log)
        print(f"{p.row:>3} {p.model:<34} {r.get('tp')!s:>2} {r.get('pp')!s:>2} "
              f"{_pct(p.weights_error):>6} {act:>7.2f} {a_log:>6.2f} "
              f"{_pct((act - a_log) / a_log):>7} {nontorch:>7.2f} {n_log:>6.2f} "
              f"{_pct((nontorch - n_log) / n_log):>7} {loo:>7} {graphs:>5.2f} "
              f"{_f(_num(r, 'graphs_gib')):>6} {_pct(pool_error(p)):>6} "
              f"{_pct(p.tokens_error):>7}")
    print("  (rows 32-33 are PP ranks 0: their logged A and N are the first stage's, which runs "
          "no sampler; the pool is the sampling stage's. G log: the CUDA graph memory the log "
          "prints; releases before 0.21 size the pool before capturing graphs, so G = 0 in "
          "their budget)")
    print()
    print("printed tokens of hybrid sliding-window rows ('GPU KV cache size'), before/after:")
    for p in preds:
        if p.row in BEFORE_TOKENS:
            print(f"{p.row:>3} {p.model:<34} before {_pct(BEFORE_TOKENS[p.row]):>7}  after "
                  f"{_pct(p.tokens_error):>7}")


def sglang_section() -> None:
    """Issue 21: SGLang pools against fixtures/observations/sglang-startup.jsonl, before (M·mfs −
    W, nothing held back) and after (T·mfs − W, the context refitted leaving the row out)."""
    from tests.physics import test_sglang_calibration as sg
    from tpcheck.physics import memory

    rows = sg.load_rows()
    print()
    print("SGLang: pool per GPU (GiB) against #tokens × cell; 'before' = M·mfs − W (main before "
          "issue 21), 'after' = T·mfs − W with the context C refitted on the other rows")
    print(f"{'row':>3} {'model':<34} {'rel':<7} {'logged':>7} {'before':>7} {'err':>7} "
          f"{'after':>7} {'err':>7} {'C fit':>6} {'tok pred':>9} {'tok log':>9}")
    before_errs, after_errs = [], []
    for p, fit in sg.leave_one_out():
        case = sg.CASES[p.row]
        mem = sg.memory_of(rows[p.row], case)
        mfs = float(rows[p.row]["mem_fraction_static"])  # type: ignore[arg-type]
        old = memory.pool_per_gpu(memory=mem, utilization=mfs, weights=p.weights_gib * GIB,
                                  reserve_bytes=0, engine="sglang").result / GIB
        b = (old - p.logged_pool_gib) / p.logged_pool_gib
        before_errs.append(b)
        after_errs.append(p.pool_error)
        miss = f"  [{case.pool_miss[:50]}…]" if case.pool_miss else ""
        print(f"{p.row:>3} {p.model:<34} {p.version:<7} {p.logged_pool_gib:>7.2f} {old:>7.2f} "
              f"{_pct(b):>7} {p.pool_gib:>7.2f} {_pct(p.pool_error):>7} {fit / GIB:>6.2f} "
              f"{p.tokens:>9} {p.logged_tokens:>9}{miss}")
    bm, bw = summary(before_errs)
    am, aw = summary(after_errs)
    print(f"{'all':<16} rows={len(after_errs)}  before median {bm * 100:.1f}% worst "
          f"{bw * 100:.1f}%  after median {am * 100:.1f}% worst {aw * 100:.1f}%")
    print("excluded rows:")
    for i, reason in sorted(sg.EXCLUDED.items()):
        print(f"  {i:>2}: {reason}")
    hybrid_section(rows)


def hybrid_section(rows: list[dict[str, object]]) -> None:
    """Issue 21, hybrid pools and MLA: the sizes SGLang logged against tpcheck's cell and state
    for the rows that print them (no pool prediction: see EXCLUDED for why)."""
    from tests.physics.test_sglang_pools import reduced_qwen35, shape
    from tpcheck.physics import sglang_pools as sp

    print()
    print("SGLang hybrid/MLA sizes (GiB): logged vs tpcheck's cell and state")
    red = reduced_qwen35()
    per = sp.mamba_state_per_request(red, 1)
    r12 = rows[12]
    slots = int(r12["mamba_slots"])  # type: ignore[call-overload]
    assert per is not None
    state = (slots + 1) * per.result / GIB
    logged_state = float(r12["mamba_ssm_gib"]) + float(r12["mamba_conv_gib"])  # type: ignore[arg-type]
    k12 = int(r12["kv_tokens"]) * sp.cell_bytes(red, 1).result / 2 / GIB  # type: ignore[call-overload]
    print(f" 12 reduced Qwen3.5-MoE  state ({slots} + 1 slots): {state:.2f} vs {logged_state:.2f}"
          f"   K size: {k12:.2f} vs {r12['k_size_gib']}")
    r13 = rows[13]
    kimi = shape("moonshotai/Kimi-K2-Instruct")
    kv13 = int(r13["kv_tokens"]) * sp.cell_bytes(kimi, 8).result / GIB  # type: ignore[call-overload]
    print(f" 13 Kimi-K2.6 TP 8 (MLA)  KV size: {kv13:.2f} vs {r13['kv_size_gib']}")


if __name__ == "__main__":
    raise SystemExit(main())
