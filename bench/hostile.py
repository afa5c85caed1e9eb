"""Cost per deployment on hostile-but-legal files (issue 14 item 8): time and peak RSS of the CLI.

Each case is generated in a temp dir and linted once by ``tpcheck --offline --gpu h100-sxm
--format json`` in a fresh process; ``/usr/bin/time -v`` gives the wall time and the peak RSS
("Maximum resident set size"). Every file stays under the default 5 MiB size cap, since the goal
is that any file the cap lets through finishes in seconds.

    python bench/hostile.py [--scale 1.0] [--only NAME]

``--scale 0.1`` builds each case with a tenth of its launches (a quick look on a busy box).

Recorded 2026-12-01 on the shared 2-core box (load 4-7 from other work, so absolute seconds are
high; the before/after pairs ran back to back). "after" is the final merge: legal sizes memoised
per shape, the Python reader libcst alone (a faster ``ast`` twin was measured and left out: two
readers of one format drift apart):

    case (scale 0.25)         before (main)            after
    2,500 refused launches    53.1 s, 119 MiB          2.5 s, 146 MiB
    10,000 LLM() calls        56.1 s, 301 MiB          18.5 s, 322 MiB

Second round (issue 14 item 8, load 3-6; both columns this script, back to back): the JSON
report one finding a line through the C encoder (``indent=2`` took the pure-Python one), the
shape's hash kept, one libcst pass with positions placed a chunk of statements at a time, and
stated limits: 1,000 launches a file (every reader; YAML stops composing there), Python read
up to 512 KiB and 50,000 syntax nodes. Past a limit the file says where reading stopped
(exit 2), so "after" reads 1,000 launches where "before" read them all:

    case (scale 0.25)         before (4040379)                     after
    10k-refused-launches      3.4 s, 147 MiB (2,500 launches)      0.8 s, 45 MiB (1,000)
    40k-LLM-calls             17.6 s, 322 MiB (10,000)             3.3 s, 171 MiB (1,000)
    5MB-refused-launches      10.2 s, 542 MiB (10,000: MAX_WORDS)  1.7 s, 70 MiB (1,000)
    5MB-LLM-calls             230.4 s, 2959 MiB (100,824)          5.0 s, 179 MiB (1,000)
    5MB-pods                  40.6 s, 1344 MiB (26,083)            1.4 s, 49 MiB (1,000)
    5MB-python-code           over 300 s (timeout)                 3.9 s, 231 MiB (50,000 nodes)

At equal work (1,000 launches, user CPU seconds): refused launches 1.19 -> 0.90, Pods
1.26 -> 1.04, LLM() calls 2.26 -> 1.99. What is left in a Python file is libcst's own cost per
node (parse, one visit, positions of the launch statements: ~2 ms a launch statement).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from _common import BIN, bench_env

CAP = 5 * 1024 * 1024  # Settings.max_file_size default
MODEL = "Qwen/Qwen3-32B"  # in the bundled catalog: resolves offline; 64 heads, 8 KV heads


def refused_sh(n: int) -> str:
    """t = 3 is refused by TP101-TP104 at once: every rule lists the legal sizes."""
    return f"vllm serve {MODEL} --tensor-parallel-size 3\n" * n


def llm_py(n: int) -> str:
    return "from vllm import LLM\n" + f"LLM(model='{MODEL}', tensor_parallel_size=2)\n" * n


def refused_cap_sh(_: int) -> str:
    """As many refused launches as fit under the cap (~100,000)."""
    line = f"vllm serve {MODEL} --tensor-parallel-size 3\n"
    return line * ((CAP - 1) // len(line))


def llm_cap_py(_: int) -> str:
    """As many LLM() calls as fit under the cap (~93,000)."""
    head = "from vllm import LLM\n"
    line = f"LLM(model='{MODEL}', tensor_parallel_size=2)\n"
    return head + line * ((CAP - 1 - len(head)) // len(line))


def code_cap_py(_: int) -> str:
    """Python that names vLLM but is mostly other code (dense list literals), up to the cap:
    libcst's cost is per syntax node, not per launch."""
    head = "import vllm\n"
    line = "x = [1, 2, 3]\n"
    return head + line * ((CAP - 1 - len(head)) // len(line))


def pods_cap_yaml(_: int) -> str:
    """Kubernetes Pods (refused t = 3) in one multi-document file, up to the cap."""
    doc = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        f"  - name: vllm\n    command: [vllm, serve, {MODEL}, --tensor-parallel-size, '3']\n"
        "    resources: {limits: {nvidia.com/gpu: 3}}\n"
    )
    return doc * ((CAP - 1) // len(doc))


CASES: dict[str, tuple[str, int, Callable[[int], str]]] = {
    # name: (file name, launches at scale 1, generator)
    "10k-refused-launches": ("refused.sh", 10_000, refused_sh),
    "40k-LLM-calls": ("calls.py", 40_000, llm_py),
    "5MB-refused-launches": ("refused-cap.sh", 0, refused_cap_sh),
    "5MB-LLM-calls": ("calls-cap.py", 0, llm_cap_py),
    "5MB-pods": ("pods-cap.yaml", 0, pods_cap_yaml),
    "5MB-python-code": ("code-cap.py", 0, code_cap_py),
}


def run(path: Path, timeout: float) -> tuple[float | None, int | None, int | None, str]:
    """(seconds, peak RSS in KiB, exit code, the summary line) for one lint of ``path``."""
    cmd = ["/usr/bin/time", "-v", str(BIN / "tpcheck"), "--offline", "--gpu", "h100-sxm",
           "--format", "json", str(path)]
    # its own session, so a timeout ends tpcheck too and not only /usr/bin/time
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=bench_env(), start_new_session=True) as p:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return None, None, None, f"timeout after {timeout:.0f} s"
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    seconds = None
    if wall:
        h, m, s = wall.groups()
        seconds = int(h or 0) * 3600 + int(m) * 60 + float(s)
    summary = re.search(r'"deployments": (\d+)', stdout)
    return (seconds, int(rss.group(1)) if rss else None, p.returncode,
            f"{summary.group(1) if summary else '?'} deployments")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--only", action="append", choices=sorted(CASES))
    ap.add_argument("--timeout", type=float, default=600.0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tpcheck-hostile-") as tmp:
        for name, (fname, n, gen) in CASES.items():
            if a.only and name not in a.only:
                continue
            text = gen(max(1, int(n * a.scale)))
            path = Path(tmp) / fname
            path.write_text(text, encoding="utf-8")
            seconds, rss, rc, summary = run(path, a.timeout)
            shown = f"{seconds:7.1f} s" if seconds is not None else "      -  "
            mem = f"{rss / 1024:7.0f} MiB" if rss is not None else "      -    "
            print(f"{name:22s} {len(text) / 2**20:5.2f} MiB  {shown}  peak RSS {mem}  "
                  f"exit {rc}  {summary}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
