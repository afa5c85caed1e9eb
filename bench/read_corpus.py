"""Reading 1,000 manifests with tpcheck's readers vs composing them with PyYAML's C loader.

Issue 3's acceptance: tpcheck's read ≤ 2× the floor. The corpus (../shared/corpus/real, else
fixtures/corpus-sample; YAML only) is copied round-robin into a temp dir until there are 1,000
files; each side then reads all of them in this process, interleaved, several times. Printed:
median wall and CPU seconds per side and the median of the per-round ratios.

- floor: ``yaml.compose_all(text, Loader=yaml.CSafeLoader)`` for every file (open + read + compose)
- tpcheck: ``tpcheck.sources.read_path`` for every file (read, compose, find deployments, spans)
- also shown: the floor with tag resolution off (what tpcheck's composer does; readers never use
  tags), i.e. how much of the budget the walk itself takes.

    python bench/read_corpus.py [--corpus DIR] [--n 1000] [--runs 7]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable

import yaml
from _common import compose_all, corpus_source, interleaved, med, replicate

from tpcheck.sources import read_path
from tpcheck.sources.yamlctx import NodeLoader

STOCK = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_all(files: list[str]) -> int:
    return sum(len(read_path(f).deployments) for f in files)


def timed(fn: Callable[[], object], clock: Callable[[], float]) -> Callable[[], float]:
    def run() -> float:
        t0 = clock()
        fn()
        return clock() - t0
    return run


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    tmp, files, n_src = replicate(corpus_source(a.corpus), a.n)
    try:
        found = read_all(files)  # warm: imports, page cache
        compose_all(files, STOCK)
        print(f"files: {len(files)} (from {n_src} corpus files), deployments found: {found}")
        print(f"loader: {STOCK.__name__}; runs: {a.runs}, interleaved")
        for label, clock in (("wall", time.perf_counter), ("cpu", time.process_time)):
            t = interleaved({
                "floor": timed(lambda: compose_all(files, STOCK), clock),
                "floor-tagless": timed(lambda: compose_all(files, NodeLoader), clock),
                "tpcheck": timed(lambda: read_all(files), clock),
            }, a.runs)
            ratios = [o / f for o, f in zip(t["tpcheck"], t["floor"], strict=True)]
            ratios_tl = [o / f for o, f in zip(t["tpcheck"], t["floor-tagless"], strict=True)]
            print(f"[{label}] floor (compose_all, {STOCK.__name__}): median "
                  f"{med(t['floor']):.3f} s")
            print(f"[{label}] floor, tag resolution off:        median "
                  f"{med(t['floor-tagless']):.3f} s")
            print(f"[{label}] tpcheck read_path:                 median {med(t['tpcheck']):.3f} s")
            print(f"[{label}] ratio tpcheck / floor: {med(ratios):.2f}x (target <= 2.00x); "
                  f"vs the tagless floor: {med(ratios_tl):.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
