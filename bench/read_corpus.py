"""Reading 1,000 manifests with tpcheck's readers vs composing them with PyYAML's C loader.

The corpus (../shared/corpus/real, YAML only) is copied round-robin into a temp dir until there
are 1,000 files; each side then reads all of them in one process, several times, and the medians
are compared. Target: tpcheck ≤ 2× the floor (yaml.compose_all with CSafeLoader).

    python bench/read_corpus.py [--corpus DIR] [--n 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from tpcheck.sources import iter_files, read_path

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def floor(files: list[str]) -> None:
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        try:
            for _ in yaml.compose_all(text, Loader=LOADER):
                pass
        except yaml.YAMLError:
            pass


def ours(files: list[str]) -> int:
    n = 0
    for f in files:
        n += len(read_path(f).deployments)
    return n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared" /
                                            "corpus" / "real"))
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    src = [f for f in iter_files([a.corpus]) if f.endswith((".yaml", ".yml"))]
    if not src:
        print(f"no YAML files under {a.corpus}", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="tpcheck-bench-")
    try:
        files = []
        for i in range(a.n):
            dst = os.path.join(tmp, f"{i:04d}-{os.path.basename(src[i % len(src)])}")
            shutil.copyfile(src[i % len(src)], dst)
            files.append(dst)
        floor(files)  # warm the page cache and imports for both sides
        found = ours(files)
        t_floor, t_ours = [], []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            floor(files)
            t_floor.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ours(files)
            t_ours.append(time.perf_counter() - t0)
        mf, mo = statistics.median(t_floor), statistics.median(t_ours)
        print(f"files: {len(files)} (from {len(src)} corpus files), deployments found: {found}")
        print(f"loader: {LOADER.__name__}, runs: {a.runs}")
        print(f"yaml.compose_all floor: median {mf:.3f} s")
        print(f"tpcheck read_path:      median {mo:.3f} s")
        print(f"ratio: {mo / mf:.2f}x (target <= 2.00x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
