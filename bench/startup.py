"""Start-up: ``tpcheck --version`` and one-file lints against ``python -c pass``.

Issue 8 targets: ≤ 60 ms over bare Python for --version, ≤ 150 ms for a one-file YAML lint.
Each command runs --runs times, interleaved, with bytecode caching on (as after
`pip install`); medians and the difference to the bare interpreter are printed. Then the
instructions each process executes (valgrind's callgrind, which a noisy machine cannot move),
as ratios to ``python -c pass`` and, for the YAML lint, to yamllint on the same file (issue 30:
a one-file YAML lint ≤ 6× bare Python and below yamllint). Then, in a fresh
interpreter per input kind, which heavy modules a lint loaded (libcst, huggingface_hub and pygls
must not load for YAML or shell input) and the ten largest cumulative imports
(``python -X importtime``) of the one-file YAML lint.

    python bench/startup.py [--runs 21] [--no-instructions]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from _common import BIN, REPO, bench_env, instructions, interleaved, med, mega, ms, time_cmd

YAML_FILE = REPO / "fixtures" / "lint" / "qwen3-32b-tp16.yaml"
SHELL_FILE = REPO / "fixtures" / "lint" / "llama70b-tp6.sh"
PY_FILE = REPO / "fixtures" / "manifests" / "offline.py"
HEAVY = ("libcst", "huggingface_hub", "pygls", "lsprotocol", "jsonschema")

PROBE = """
import sys
from tpcheck.cli import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
print(",".join(m for m in {heavy!r} if m in sys.modules) or "-")
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--no-instructions", action="store_true",
                    help="skip the callgrind counts (each takes a few seconds)")
    a = ap.parse_args()
    env = bench_env()
    tp = str(BIN / "tpcheck")
    lint = [tp, "--offline", "--gpu", "h100-sxm", "-q"]
    cmds = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "tpcheck --version": [tp, "--version"],
        "lint one YAML file": [*lint, str(YAML_FILE)],
        "lint one shell file": [*lint, str(SHELL_FILE)],
    }
    for c in cmds.values():
        time_cmd(c, env)
    t = interleaved({k: (lambda c=c: time_cmd(c, env)) for k, c in cmds.items()}, a.runs)
    bare = med(t["python -c pass"])
    print(f"runs: {a.runs}, interleaved; bytecode cache: {env['PYTHONPYCACHEPREFIX']}")
    for k in cmds:
        extra = "" if k.startswith("python") else f"  (+{ms(med(t[k]) - bare)} over bare Python)"
        print(f"{k:22s} median {ms(med(t[k]))}{extra}")
    print("targets: --version <= +60 ms, one-file YAML lint <= +150 ms")
    if not a.no_instructions:
        counted = dict(cmds)
        yamllint = shutil.which("yamllint", path=str(BIN)) or shutil.which("yamllint")
        if yamllint:
            counted["yamllint, same YAML file"] = [yamllint, str(YAML_FILE)]
        for c in counted.values():  # once more, so every bytecode cache is written
            time_cmd(c, env)
        n = {k: instructions(c, env) for k, c in counted.items()}
        base = n["python -c pass"]
        print("instructions (callgrind), ratio to python -c pass:")
        for k, v in n.items():
            ratio = f"{v / base:5.2f}x" if v and base else "  n/a"
            print(f"  {k:26s} {mega(v):>12s}  {ratio}")
        y, one = n.get("yamllint, same YAML file"), n["lint one YAML file"]
        if y and one:
            print(f"  one-file YAML lint / yamllint: {one / y:.2f}x")
        print("targets: one-file YAML lint <= 6x python -c pass, and below yamllint")
    for label, f in (("YAML", YAML_FILE), ("shell", SHELL_FILE), ("Python", PY_FILE)):
        out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), "--offline",
                              "--gpu", "h100-sxm", str(f)], capture_output=True, text=True,
                             env=env).stdout.strip().splitlines()
        print(f"heavy modules loaded for {label} input: {out[-1] if out else '?'}")
    imp = subprocess.run([sys.executable, "-X", "importtime", "-c", PROBE.format(heavy=HEAVY),
                          *lint[1:], str(YAML_FILE)], capture_output=True, text=True, env=env)
    rows = []
    for line in imp.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print("largest cumulative imports, one-file YAML lint (-X importtime, us):")
    for us, name in sorted(rows, reverse=True)[:10]:
        print(f"  {us:8d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
