"""``tpcheck diff`` against the lint of the same repository: what comparing REV costs.

A git repository of N varied manifests (``_common.vary``: each names another catalogued model and
TP size), committed, then every tenth file's TP size changed in the work tree. Timed end to end,
one process each, interleaved rounds: ``tpcheck .`` (the lint of the work tree) and ``tpcheck
diff`` (REV laid out from git, both sides linted, the figures compared). The diff lints every
file twice, so about 2× the lint is the expected ratio; more is the layout of REV's tree.

    python bench/diff_corpus.py [--corpus DIR] [--n 300] [--runs 3]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

from _common import BIN, bench_env, corpus_source, interleaved, med, time_cmd, vary

GIT_ID = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
          "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
TP = re.compile(r"(--tensor-parallel-size|--tp-size|--tp|tensor-parallel-size:)([= ]+)(\d+)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp, files, distinct = vary(corpus_source(a.corpus), a.n)
    env = {**bench_env(), **GIT_ID, "HF_HUB_OFFLINE": "1"}
    try:
        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=tmp, env=env, check=True, capture_output=True)

        git("init", "-q")
        git("add", ".")
        git("commit", "-qm", "base")
        changed = 0
        for f in files[::10]:
            text = Path(f).read_text(encoding="utf-8")
            new = TP.sub(lambda m: f"{m.group(1)}{m.group(2)}{int(m.group(3)) * 2}", text)
            if new != text:
                Path(f).write_text(new, encoding="utf-8")
                changed += 1
        tp = str(BIN / "tpcheck")
        flags = ["--offline", "--gpu", "h100-sxm"]
        times = interleaved({
            "lint": lambda: time_cmd([tp, *flags, "."], env, cwd=str(tmp)),
            "diff": lambda: time_cmd([tp, "diff", *flags], env, cwd=str(tmp)),
        }, a.runs)
        lint, diff = med(times["lint"]), med(times["diff"])
        print(f"{a.n} files ({distinct} distinct), {changed} with a changed TP size; "
              f"median of {a.runs} interleaved runs")
        print(f"  tpcheck .     {lint:8.2f} s")
        print(f"  tpcheck diff  {diff:8.2f} s   ({diff / lint:.2f}× the lint)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
