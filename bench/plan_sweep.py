"""``plan`` sweep compute: every t from 1 to 64 for a few catalog models on an H100, and the
``plan --gpus N`` ranking (every TP × PP × DP layout of 16 and 64 GPUs, both engines).

Issue 8 target: under 50 ms of compute for a 64-value TP range. Times the sweep function
(``tpcheck.physics.plan.sweep``) in process, model already parsed — the compute, not the
start-up or the table printing. Median of --runs runs per model.

    python bench/plan_sweep.py [--runs 21]
"""

from __future__ import annotations

import argparse
import sys
import time

from _common import med, ms

from tpcheck.hardware.gpus import find_gpu
from tpcheck.models.catalog import find
from tpcheck.models.config import load_shape
from tpcheck.physics.plan import Options, sweep
from tpcheck.physics.recommend import recommend

MODELS = ("meta-llama/Llama-3.1-70B", "Qwen/Qwen3-32B", "Qwen/Qwen3-235B-A22B",
          "deepseek-ai/DeepSeek-V3")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    a = ap.parse_args()
    opts = Options(gpu=find_gpu("h100-sxm"))
    tps = list(range(1, 65))
    print(f"sweep t = 1..64 ({len(tps)} values) on h100-sxm, median of {a.runs} runs")
    for model in MODELS:
        entry = find(model)
        if entry is None:
            print(f"{model}: not in the bundled catalog")
            continue
        shape = load_shape(entry.config_path, name=model)
        sweep(shape, opts, tps)  # warm
        times = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            rows = sweep(shape, opts, tps)
            times.append(time.perf_counter() - t0)
        assert len(rows) == 64
        print(f"{model:28s} median {ms(med(times))}  (target < 50 ms)")
        for engine in ("vllm", "sglang"):
            for gpus in (16, 64):
                o = Options(gpu=find_gpu("h100-sxm"), engine=engine)
                times = []
                for _ in range(max(1, a.runs // 4)):
                    t0 = time.perf_counter()
                    plan = recommend(shape, o, gpus)
                    times.append(time.perf_counter() - t0)
                print(f"  --gpus {gpus:<3} {engine:6s} {len(plan.layouts):4d} layouts  "
                      f"median {ms(med(times))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
