"""Start-up: ``tpcheck --version`` and one-file lints against ``python -c pass``.

Issue 8 targets: ≤ 60 ms over bare Python for --version, ≤ 150 ms for a one-file YAML lint.
Each command runs --runs times, interleaved, with bytecode caching on (as after
`pip install`); medians and the difference to the bare interpreter are printed. Then, in a fresh
interpreter per input kind, which heavy modules a lint loaded (libcst, huggingface_hub and pygls
must not load for YAML or shell input) and the ten largest cumulative imports
(``python -X importtime``) of the one-file YAML lint.

    python bench/startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from _common import BIN, REPO, bench_env, interleaved, med, ms, time_cmd

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
