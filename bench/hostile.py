"""Cost per deployment on hostile-but-legal files (issue 14 item 8): time and peak RSS of the CLI.

Each case is generated in a temp dir and linted once by ``tpcheck --offline --gpu h100-sxm
--format json`` in a fresh process; ``/usr/bin/time -v`` gives the wall time and the peak RSS
("Maximum resident set size"). Every file stays under the default 5 MiB size cap, since the goal
is that any file the cap lets through finishes in seconds.

    python bench/hostile.py [--scale 1.0] [--only NAME]
    python bench/hostile.py --bombs            # issue 28's bombs: each <= 2 s and 300 MiB
    python bench/hostile.py --fuzz 200000 [--seed 28] [--kinds k8s-env,helm,...]

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

Third round (issue 28), recorded 2026-12-01 on the same box (load 8-10): ``--bombs``, each in a
fresh process, all under 2 s and 300 MiB with one line where a limit applies — the 10.5 KB
``--a`` chain 0.60 s (libcst took 35-80 s), 27 doubling env entries 0.40 s / 23 MiB (13 s,
1.9 GB; 23 GB before it was killed here), the 20,000-entry env chain 1.51 s / 109 MiB (1.9 GB),
24,000 assignments + 25,000 commands 1.18 s (72 s), 10,000 chained assignments 0.46 s (4.9 s),
nindent 400000000 0.31 s (800 MiB then MemoryError). ``--fuzz 70000`` with seeds 28, 29 and 30
(three processes at once, 210,000 inputs, ~1,940 s wall each, peak RSS 209 MiB): 0 "please
report"; 5 internal errors, all TP203's float ratio on a 400-digit --max-num-seqs (fixed
after the run); 75 inputs over 10 s of *wall* time, every one a 20,000-entry env chain (1.05 s
replayed alone) or a 49,000-line script (0.42 s alone) slowed by the load.
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


def run(path: Path, timeout: float, args: list[str] | None = None, cwd: str | None = None
        ) -> tuple[float | None, int | None, int | None, str]:
    """(seconds, peak RSS in KiB, exit code, the summary line) for one lint of ``path``
    (or one ``tpcheck ARGS`` run)."""
    cmd = ["/usr/bin/time", "-v", str(BIN / "tpcheck"), *(args if args is not None else [
        "--offline", "--gpu", "h100-sxm", "--format", "json", str(path)])]
    # its own session, so a timeout ends tpcheck too and not only /usr/bin/time
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=bench_env(), start_new_session=True, cwd=cwd) as p:
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
    said = [ln for ln in stderr.splitlines() if ln.startswith("tpcheck")]
    errs = re.findall(r'"message": "([^"]*)"', stdout.split('"errors"', 1)[-1])
    line = (said or errs or [""])[0][:110]
    return (seconds, int(rss.group(1)) if rss else None, p.returncode,
            f"{summary.group(1) if summary else '?'} deployments" + (f"; {line}" if line else ""))


# ---- issue 28: the bombs, each a small tree and the tpcheck arguments that read it ---------
LINT = ["--offline", "--gpu", "h100-sxm", "--format", "json"]
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n"
       "    - name: vllm\n      image: vllm/vllm-openai\n{extra}"
       f"      command: [vllm, serve, {MODEL}, --tensor-parallel-size, '{{tp}}'{{more}}]\n")
CHART = "apiVersion: v2\nname: c\nversion: 0.1.0\n"


def _pod(extra: str = "", tp: str = "3", more: str = "") -> str:
    return POD.format(extra=extra, tp=tp, more=more)


def _env(entries: list[str]) -> str:
    return "      env:\n" + "".join(f"        {e}\n" for e in entries)


BOMBS: dict[str, tuple[dict[str, str], list[str]]] = {
    # name: ({relative path: text}, tpcheck arguments)
    "python --a chain + syntax error (10.5 KB)": (
        {"u.py": "from vllm import LLM\nx = " + "--a" * 3500 + "\ny = (\n"}, [*LINT, "u.py"]),
    "k8s env: 27 doubling entries": (
        {"pod.yaml": _pod(_env(["- {name: V0, value: abcdefghij}"] + [
            f"- {{name: V{i}, value: '$(V{i - 1})$(V{i - 1})'}}" for i in range(1, 28)]),
            more=", --served-model-name, '$(V27)'")}, [*LINT, "pod.yaml"]),
    "k8s env: 20,000-entry chain": (
        {"pod.yaml": _pod(_env(["- {name: V0, value: x}"] + [
            f"- {{name: V{i}, value: '$(V{i - 1})x'}}" for i in range(1, 20_000)]),
            more=", --served-model-name, '$(V19999)'")}, [*LINT, "pod.yaml"]),
    "shell: 24,000 assignments + 25,000 commands": (
        {"many.sh": "".join(f"A{i}=v\n" for i in range(24_000)) + "true\n" * 25_000
         + f"vllm serve {MODEL} --tensor-parallel-size 3\n"}, [*LINT, "many.sh"]),
    "shell: 10,000 chained assignments": (
        {"chain.sh": "A0=4\n" + "".join(f"A{i}=$A{i - 1}\n" for i in range(1, 10_000))
         + f"vllm serve {MODEL} --tensor-parallel-size 3 --max-num-seqs $A9999\n"},
        [*LINT, "chain.sh"]),
    "helm: 5,000-digit number in values.yaml": (
        {"c/Chart.yaml": CHART, "c/values.yaml": "tp: " + "9" * 5000 + "\n",
         "c/templates/pod.yaml": _pod(tp="{{ .Values.tp }}")}, [*LINT, "c"]),
    "helm: 5,000-digit number in an action": (
        {"c/Chart.yaml": CHART, "c/values.yaml": "tp: 3\n",
         "c/templates/pod.yaml": _pod(tp="{{ " + "9" * 5000 + " }}")}, [*LINT, "c"]),
    "helm: nindent 400000000": (
        {"c/Chart.yaml": CHART, "c/values.yaml": "args: [a]\n", "c/templates/pod.yaml": _pod(
            "      args:\n{{ .Values.args | toYaml | nindent 400000000 }}\n")}, [*LINT, "c"]),
    "helm: nindent 10^29": (
        {"c/Chart.yaml": CHART, "c/values.yaml": "args: [a]\n", "c/templates/pod.yaml": _pod(
            "      args:\n{{ .Values.args | toYaml | nindent 1" + "0" * 29 + " }}\n")},
        [*LINT, "c"]),
    "kustomize: JSON 6902 add through a missing args": (
        {"kustomization.yaml": "resources: [pod.yaml]\npatches:\n  - target: {kind: Pod, "
         "name: p}\n    patch: |-\n      - op: add\n        path: /spec/containers/0/args/-\n"
         "        value: --x\n", "pod.yaml": _pod()}, [*LINT, "kustomization.yaml"]),
    "plan --set text_config= 30,000 brackets": (
        {}, ["plan", "--offline", "--gpu", "h100-sxm", MODEL, "--set",
             "text_config=" + "[" * 30_000 + "]" * 30_000]),
    "yaml: node ending past the last line": (
        {"x.yaml": "pipeline-parallel-size:\nmax-num-seqs:\n{{}}n:"}, [*LINT, "x.yaml"]),
    "bad values beside each other on one line": (
        {"n.sh": f"vllm serve {MODEL} --kv-cache-dtype fp9 --gpu-memory-utilization 90\n"},
        [*LINT, "n.sh"]),
}
BOMB_SECONDS, BOMB_MIB = 2.0, 300


def bombs(timeout: float) -> int:
    """Each bomb once in a fresh process: time, peak RSS, exit code, its one line."""
    over = 0
    for name, (tree, args) in BOMBS.items():
        with tempfile.TemporaryDirectory(prefix="tpcheck-bomb-") as tmp:
            for rel, text in tree.items():
                f = Path(tmp) / rel
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text, encoding="utf-8")
            seconds, rss, rc, summary = run(Path(tmp), timeout, args, cwd=tmp)
        bad = seconds is None or rss is None or seconds > BOMB_SECONDS or (
            rss / 1024 > BOMB_MIB) or "please report" in summary or "internal" in summary
        over += bad
        shown = f"{seconds:5.2f} s" if seconds is not None else "    - "
        mem = f"{rss / 1024:4.0f} MiB" if rss is not None else "   -    "
        print(f"{'OVER ' if bad else 'ok   '}{name:46s} {shown} {mem} exit {rc}  {summary}",
              flush=True)
    print(f"{len(BOMBS)} bombs, {over} over {BOMB_SECONDS:g} s / {BOMB_MIB} MiB or unclear")
    return 1 if over else 0


# ---- issue 28: the fuzz driver ---------------------------------------------------------------
class _Slow(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Slow


def fuzz(n: int, seed: int, kinds: list[str], per_input: float, lint_every: int) -> int:
    """``n`` generated inputs (tests/generators.py) through the readers in this process, each
    time-boxed by SIGALRM; every ``lint_every``-th (and every argv line) also through the
    rules. Counts: internal errors (an exception out of tpcheck, or a line saying "internal
    error"), "please report" lines, inputs over ``per_input`` seconds."""
    import random
    import resource
    import sys
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.generators import GENERATORS
    from tpcheck.lint import Linter, LintResult
    from tpcheck.settings import Settings
    from tpcheck.sources import read_path

    # a bomb that still expands ends in a MemoryError (counted) instead of taking the box
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    linter = Linter(Settings(offline=True), gpu_flag="h100-sxm")
    signal.signal(signal.SIGALRM, _alarm)
    rng = random.Random(seed)
    stats = {k: [0, 0, 0, 0, 0.0, 0.0] for k in kinds}  # runs, internal, report, slow, max, sum
    examples: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="tpcheck-fuzz-"))
    t_start = time.perf_counter()
    for i in range(n):
        kind = kinds[i % len(kinds)]
        gen, shape = GENERATORS[kind]
        case = gen(rng)
        st = stats[kind]
        st[0] += 1
        t0 = time.perf_counter()
        lines: list[str] = []
        signal.setitimer(signal.ITIMER_REAL, per_input)
        try:
            if shape == "file":
                name, text = case  # type: ignore[misc]
                rr = read_path(name, text)
            else:
                root = tmp / f"c{i % 64}"  # 64 trees in turn: the values cache keys on mtime
                for rel, text in case.items():  # type: ignore[union-attr]
                    f = root / rel
                    f.parent.mkdir(parents=True, exist_ok=True)
                    f.write_text(text, encoding="utf-8")
                main = "templates/pod.yaml" if kind == "helm" else "kustomization.yaml"
                rr = read_path(str(root / main))
            lines += [e.message for e in rr.errors]
            if kind == "argv" or i % lint_every == 0:
                out = LintResult()
                linter.lint_read(rr, out)
                lines += [e.message for e in out.errors] + [f.message for f in out.findings]
        except _Slow:
            st[3] += 1
            examples.append(f"{kind} #{i}: over {per_input:g} s")
        except Exception as e:  # the count is the point
            st[1] += 1
            examples.append(f"{kind} #{i}: {type(e).__name__}: {str(e)[:100]}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.perf_counter() - t0
        st[4], st[5] = max(st[4], dt), st[5] + dt
        if dt > per_input and not any(x.startswith(f"{kind} #{i}:") for x in examples[-1:]):
            st[3] += 1
            examples.append(f"{kind} #{i}: {dt:.1f} s")
        internal = sum("internal error" in m for m in lines)
        report = sum("please report" in m for m in lines)
        st[1] += internal
        st[2] += report
        if internal or report:
            said = next(m for m in lines if "report" in m or "internal" in m)
            examples.append(f"{kind} #{i}: {said[:120]}")
        if (i + 1) % 10_000 == 0:
            print(f"  {i + 1:,} inputs, {time.perf_counter() - t_start:,.0f} s", flush=True)
    wall = time.perf_counter() - t_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{'reader':10s} {'inputs':>8s} {'internal':>8s} {'report':>7s} {'>10s':>5s} "
          f"{'max s':>6s} {'mean ms':>8s}")
    totals = [0, 0, 0, 0]
    for kind, (runs, internal, report, slow, mx, total) in stats.items():
        print(f"{kind:10s} {runs:8,d} {internal:8d} {report:7d} {slow:5d} {mx:6.2f} "
              f"{1000 * total / max(runs, 1):8.2f}")
        for k, v in enumerate((runs, internal, report, slow)):
            totals[k] += v
    print(f"{'all':10s} {totals[0]:8,d} {totals[1]:8d} {totals[2]:7d} {totals[3]:5d}   "
          f"(seed {seed}, {wall:,.0f} s wall, peak RSS {peak:,.0f} MiB)")
    for x in examples[:20]:
        print("  " + x)
    return 1 if any(totals[1:]) else 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--only", action="append", choices=sorted(CASES))
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--bombs", action="store_true", help="issue 28's bombs, then stop")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N", help="N generated inputs")
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--kinds", default="k8s-env,helm,python,shell,argv,kustomize")
    ap.add_argument("--per-input", type=float, default=10.0)
    ap.add_argument("--lint-every", type=int, default=10)
    a = ap.parse_args()
    if a.bombs:
        return bombs(a.timeout)
    if a.fuzz:
        return fuzz(a.fuzz, a.seed, a.kinds.split(","), a.per_input, a.lint_every)
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
