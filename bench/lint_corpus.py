"""Linting 1,000 manifests: tpcheck vs the PyYAML C-loader floor vs yamllint.

Issue 8: ``tpcheck --gpu h100-sxm --offline`` over 1,000 manifests (the corpus replicated)
against (a) composing the same files with PyYAML's CSafeLoader in one process — the floor — and
(b) yamllint on the same files. Targets: ≤ 2× the floor; several times faster than yamllint.

Two measurements, both medians of interleaved rounds:
- end to end, one process per tool as a user runs it (interpreter start-up included on every
  side): the floor is ``python -c`` composing every file; wall seconds and the children's cpu
  seconds (user + system, which the neighbours of a shared machine move less);
- in process (CPU seconds): ``Linter.run`` against the compose loop, no start-up on either side:
  a first run in a fresh interpreter per side (what a user's run pays), then reruns in one
  process (the physics' per-model memo caches warm: the steady state a profile sees).
Beside them, the physics' work per 1,000 files: how many layouts, capacities (budget, reserve,
pool) and decode steps the run computed (each distinct one once, issue 30), counted in one more
in-process run.

With ``--instructions`` (needs valgrind), each side's whole process also runs once under
callgrind: instruction counts do not move with the neighbours of a shared machine, where wall
times of the same code can differ by a third between two sessions.

Two corpora (issue 30): the replicated one (the corpus's files copied round-robin: most files
hit the memo caches) and, with ``--varied``, a varied one as a real repository is (each copy
names another catalogued model and another TP size, ``_common.vary``). ``--memory 1000,10000``
prints tpcheck's peak resident memory (and cpu seconds, to see time stay linear) over that
many varied files, one process each, against the floor's, and what each file beyond the
smaller size added to the peak; ``--memory`` alone is 1k, 10k and 100k files (the issue's
sizes; 100k files take about 15 cpu minutes); ``--memory-formats text,sarif,markdown`` measures
each report format (all are written as the files are checked).

    python bench/lint_corpus.py [--corpus DIR] [--n 1000] [--runs 5] [--instructions]
                                [--varied] [--memory [1000,10000,100000]]
                                [--memory-formats text,sarif]

yamllint (a dev extra) runs with its default rules and ``-f parsable``; it is skipped when not
installed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from _common import (
    BIN,
    bench_env,
    compose_all,
    corpus_source,
    interleaved,
    med,
    replicate,
    time_cmd,
    vary,
)

FLOOR = """
import sys, os, yaml
L = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    with open(os.path.join(d, name), encoding="utf-8") as fh:
        text = fh.read()
    try:
        for _ in yaml.compose_all(text, Loader=L):
            pass
    except yaml.YAMLError:
        pass
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--instructions", action="store_true",
                    help="also count each side's instructions under valgrind's callgrind")
    ap.add_argument("--varied", action="store_true",
                    help="also measure a varied corpus (distinct models and TP sizes per file)")
    ap.add_argument("--memory", metavar="N,N,...", nargs="?", const="1000,10000,100000",
                    help="peak memory of tpcheck over that many varied files, one run each "
                         "(default sizes: 1000,10000,100000)")
    ap.add_argument("--memory-formats", metavar="FMT,...", default="text",
                    help="report formats measured by --memory (default: text; sarif and "
                         "markdown are written as they go too)")
    ap.add_argument("--no-yamllint", action="store_true",
                    help="leave yamllint out (it takes about 20x tpcheck's time)")
    ap.add_argument("--memory-only", action="store_true",
                    help="only the --memory runs (no timing of the corpora)")
    a = ap.parse_args()
    corpora = [("replicated", replicate)] + ([("varied", vary)] if a.varied else [])
    for label, make in corpora if not a.memory_only else ():
        print(f"== {label} corpus ==")
        measure(a, *make(corpus_source(a.corpus), a.n))
    if a.memory:
        last: tuple[int, float] | None = None
        for n in sorted(int(x) for x in a.memory.split(",")):
            peak = memory(corpus_source(a.corpus), n, a.memory_formats.split(","))
            if last is not None and n > last[0]:
                grew = (peak - last[1]) * 1024 / (n - last[0])
                print(f"[memory] {last[0]:,} -> {n:,} files: {grew:+.2f} KiB of peak per file")
            last = (n, peak)
    return 0


# VmHWM, this process's own peak: ru_maxrss survives execve and would report the bench's.
PEAK = """
import sys, time
{setup}
t0 = time.process_time()
{body}
cpu = time.process_time() - t0
hwm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))
print(hwm, cpu)
"""


def memory(src: Path, n: int, formats: list[str]) -> float:
    """Peak RSS (VmHWM) of one tpcheck run per report format over ``n`` varied files, and the
    floor's over the same files; cpu seconds beside it (linear time: cpu / n stays level).
    The first format's peak is returned."""
    import subprocess

    tmp, _, _ = vary(src, n)
    env = bench_env()
    sides = {
        "floor": PEAK.format(setup="import os, yaml\nL = yaml.CSafeLoader\nd = sys.argv[1]",
                             body="for name in sorted(os.listdir(d)):\n"
                                  "    try:\n"
                                  "        for _ in yaml.compose_all(open(os.path.join(d, name),"
                                  " encoding='utf-8').read(), Loader=L): pass\n"
                                  "    except yaml.YAMLError: pass"),
        # the report goes to /dev/null: a StringIO would hold the whole report in the process
        **{f"tpcheck --format {fmt}": PEAK.format(
            setup="import os, contextlib\nfrom tpcheck.cli import main",
            body="with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null):\n"
                 f"    main(['--gpu', 'h100-sxm', '--offline', '-q', '--format', {fmt!r}, "
                 "sys.argv[1]])") for fmt in formats},
    }
    try:
        got = {}
        for k, code in sides.items():
            out = subprocess.run([sys.executable, "-c", code, str(tmp)], capture_output=True,
                                 text=True, env=env, check=False).stdout.split()
            got[k] = (int(out[-2]) / 1024, float(out[-1])) if len(out) >= 2 else (0.0, 0.0)
        fm, fc = got.pop("floor")
        for k, (tm, tc) in got.items():
            print(f"[memory] {n:>7,} varied files: {k} peak {tm:7.1f} MiB, cpu {tc:7.2f} s "
                  f"({tc / n * 1e3:.2f} ms/file); floor peak {fm:6.1f} MiB, cpu {fc:6.2f} s "
                  f"(target: peak <= 100 MiB at 100,000)")
        return next(iter(got.values()))[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(a: argparse.Namespace, tmp: Path, files: list[str], n_src: int) -> None:
    env = bench_env()
    py = sys.executable
    tpcheck = [str(BIN / "tpcheck"), "--gpu", "h100-sxm", "--offline", "-q", str(tmp)]
    cmds = {"floor": [py, "-c", FLOOR, str(tmp)], "tpcheck": tpcheck}
    yl = BIN / "yamllint"
    if not a.no_yamllint and (yl.exists() or shutil.which("yamllint")):
        cmds["yamllint"] = [str(yl) if yl.exists() else "yamllint", "-f", "parsable", str(tmp)]
    try:
        for cmd in cmds.values():
            time_cmd(cmd, env)  # warm: bytecode caches, page cache
        print(f"files: {len(files)} (from {n_src} corpus files); runs: {a.runs}, interleaved")
        print("tpcheck command: " + " ".join(tpcheck[:-1]) + " DIR")
        cpu: dict[str, list[float]] = {k: [] for k in cmds}

        def timed(k: str, c: list[str]) -> float:
            c0 = children_cpu()
            wall = time_cmd(c, env)
            cpu[k].append(children_cpu() - c0)
            return wall

        t = interleaved({k: (lambda k=k, c=c: timed(k, c)) for k, c in cmds.items()}, a.runs)
        for label, got in (("end to end", t), ("end to end, cpu", cpu)):
            for k in cmds:
                print(f"[{label}] {k:9s} median {med(got[k]):.3f} s")
            r = [o / f for o, f in zip(got["tpcheck"], got["floor"], strict=True)]
            print(f"[{label}] tpcheck / floor: {med(r):.2f}x (target <= 2.00x)")
            if "yamllint" in got:
                r = [y / o for y, o in zip(got["yamllint"], got["tpcheck"], strict=True)]
                print(f"[{label}] yamllint / tpcheck: {med(r):.2f}x (tpcheck is that many "
                      "times faster)")
        first_run(tmp, a.runs)
        in_process(tmp, files, a.runs)
        evaluations(tmp, len(files))
        if a.instructions:
            instructions({"floor": cmds["floor"], "tpcheck": tpcheck}, env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def instructions(cmds: dict[str, list[str]], env: dict[str, str]) -> None:
    """One callgrind run per side: instructions executed by the whole process."""
    import re
    import subprocess

    if shutil.which("valgrind") is None:
        print("[instructions] valgrind not found; skipped")
        return
    n: dict[str, int] = {}
    for k, cmd in cmds.items():
        if k == "tpcheck":
            cmd = [sys.executable, *cmd]  # the console script's interpreter, traced too
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, check=False)
        m = re.search(r"Collected : (\d+)", out.stderr)
        if m is None:
            print(f"[instructions] no count for {k}; skipped")
            return
        n[k] = int(m.group(1))
        print(f"[instructions] {k:9s} {n[k] / 1e6:,.0f} M")
    print(f"[instructions] tpcheck / floor: {n['tpcheck'] / n['floor']:.2f}x")


def children_cpu() -> float:
    """User + system cpu seconds of this process's waited-for children so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def evaluations(tmp: Path, n: int) -> None:
    """Layouts, capacities and decode steps one run computes, per 1,000 files: the physics'
    functions counted where ``plan.evaluate`` calls them (module globals, so a wrapper sees
    every call), in a fresh ``Linter`` (its memo empty)."""
    from collections import Counter

    from tpcheck.lint import Linter
    from tpcheck.physics import plan
    from tpcheck.settings import Settings

    calls: Counter[str] = Counter()
    names = ("layout", "capacity", "decode_step")
    saved = {k: getattr(plan, k) for k in names}

    def counted(name: str, fn: Any) -> Any:
        def run(*args: Any, **kw: Any) -> Any:
            calls[name] += 1
            return fn(*args, **kw)
        return run

    for k, fn in saved.items():
        setattr(plan, k, counted(k, fn))
    try:
        Linter(Settings().with_flags(offline=True), gpu_flag="h100-sxm").run([str(tmp)])
    finally:
        for k, fn in saved.items():
            setattr(plan, k, fn)
    per = {k: calls[k] * 1000 / n for k in names}
    print(f"[evaluations] per 1,000 files: {per['layout']:.0f} layouts, "
          f"{per['capacity']:.0f} capacities, {per['decode_step']:.0f} decode steps computed")


# A first run in a fresh interpreter: the run's own cpu seconds, imports done but no memo
# cache filled. The warm figure below reruns Linter.run in one process, so the physics'
# per-model caches (weights, legal sizes, exclusion lists) are already full: on the varied
# corpus it hid ~1.5 G instructions of the 10.3 G a user's run paid.
FIRST_RUN = """
import sys, time, gc
{setup}
gc.freeze()
gc.set_threshold(10_000, 10, 10)
t0 = time.process_time()
{body}
print(time.process_time() - t0)
"""
FIRST_RUN_SIDES = {
    "floor": FIRST_RUN.format(
        setup="import os, yaml\nL = yaml.CSafeLoader\nd = sys.argv[1]",
        body="for name in sorted(os.listdir(d)):\n"
             "    try:\n"
             "        for _ in yaml.compose_all(open(os.path.join(d, name),"
             " encoding='utf-8').read(), Loader=L): pass\n"
             "    except yaml.YAMLError: pass"),
    "tpcheck": FIRST_RUN.format(
        setup="from tpcheck.lint import Linter\nfrom tpcheck.settings import Settings",
        body="Linter(Settings().with_flags(offline=True), gpu_flag='h100-sxm').run([sys.argv[1]])"),
}


def first_run(tmp: Path, runs: int) -> None:
    import subprocess

    env = bench_env()

    def side(k: str) -> Callable[[], float]:
        def run() -> float:
            out = subprocess.run([sys.executable, "-c", FIRST_RUN_SIDES[k], str(tmp)],
                                 capture_output=True, text=True, env=env, check=True).stdout
            return float(out.split()[-1])
        return run

    t = interleaved({k: side(k) for k in FIRST_RUN_SIDES}, runs)
    r = [o / f for o, f in zip(t["tpcheck"], t["floor"], strict=True)]
    print(f"[in process, cpu, first run] floor median {med(t['floor']):.3f} s, Linter.run "
          f"median {med(t['tpcheck']):.3f} s, ratio {med(r):.2f}x (target <= 2.00x)")


def in_process(tmp: Path, files: list[str], runs: int) -> None:
    from tpcheck.lint import Linter
    from tpcheck.settings import Settings

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def floor() -> float:
        t0 = time.process_time()
        compose_all(files, loader)
        return time.process_time() - t0

    def lint() -> float:
        t0 = time.process_time()
        linter = Linter(Settings().with_flags(offline=True), gpu_flag="h100-sxm")
        res = linter.run([str(tmp)])
        assert res.files == len(files)
        return time.process_time() - t0

    lint()
    # The collector as the `tpcheck` command sets it for its own process (commands/lint.py);
    # both sides run under it.
    import gc

    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    t = interleaved({"floor": floor, "tpcheck": lint}, runs)
    r = [o / f for o, f in zip(t["tpcheck"], t["floor"], strict=True)]
    print(f"[in process, cpu, memo warm] floor median {med(t['floor']):.3f} s, Linter.run "
          f"median {med(t['tpcheck']):.3f} s, ratio {med(r):.2f}x (target <= 2.00x)")


if __name__ == "__main__":
    sys.exit(main())
