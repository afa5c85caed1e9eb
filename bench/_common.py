"""Helpers shared by the bench scripts: the replicated corpus, medians, subprocess timing.

Every figure is a median of several runs, and every comparison is a ratio of medians taken in
the same session (interleaved), so a busy machine slows both sides alike.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_CORPUS = REPO.parent / "shared" / "corpus" / "real"
SAMPLE_CORPUS = REPO / "fixtures" / "corpus-sample"
BIN = Path(sys.executable).parent


def corpus_source(arg: str | None) -> Path:
    """The corpus to replicate: --corpus, else ../shared/corpus/real, else the sample."""
    if arg:
        return Path(arg)
    return SHARED_CORPUS if SHARED_CORPUS.is_dir() else SAMPLE_CORPUS


def replicate(src: Path, n: int) -> tuple[Path, list[str], int]:
    """Copy the corpus's YAML files round-robin into a temp dir until there are ``n``."""
    files = sorted(str(p) for p in src.rglob("*") if p.suffix in (".yaml", ".yml"))
    if not files:
        raise SystemExit(f"no YAML files under {src}")
    tmp = Path(tempfile.mkdtemp(prefix="tpcheck-bench-"))
    out = []
    for i in range(n):
        dst = tmp / f"{i:04d}-{Path(files[i % len(files)]).name}"
        shutil.copyfile(files[i % len(files)], dst)
        out.append(str(dst))
    return tmp, out, len(files)


CATALOG = REPO / "tpcheck" / "models" / "catalog"
TP_SIZES = (1, 2, 4, 8, 16, 3, 6)


def vary(src: Path, n: int) -> tuple[Path, list[str], int]:
    """Like ``replicate``, but as a real repository is: copy ``i`` names the i-th model of
    tpcheck's catalog in place of every catalogued model its text names, and the i-th TP size of
    ``TP_SIZES`` in every ``--tensor-parallel-size`` / ``--tp`` (so memo caches keyed by model
    and layout hit about as often as they would across a monorepo)."""
    import re

    files = sorted(str(p) for p in src.rglob("*") if p.suffix in (".yaml", ".yml"))
    if not files:
        raise SystemExit(f"no YAML files under {src}")
    models = sorted(d.name.replace("--", "/", 1) for d in CATALOG.iterdir() if d.is_dir())
    named = re.compile("|".join(re.escape(m) for m in sorted(models, key=len, reverse=True)))
    tp = re.compile(r"(--tensor-parallel-size|--tp-size|--tp|tensor-parallel-size:)([= ]+)\d+")
    texts = [Path(f).read_text(encoding="utf-8", errors="replace") for f in files]
    tmp = Path(tempfile.mkdtemp(prefix="tpcheck-bench-varied-"))
    out = []
    for i in range(n):
        k = i % len(files)
        model = models[(i * 7 + k) % len(models)]
        size = TP_SIZES[(i + i // len(files)) % len(TP_SIZES)]
        text = named.sub(model, texts[k])
        text = tp.sub(lambda m, size=size: f"{m.group(1)}{m.group(2)}{size}", text)
        dst = tmp / f"{i:06d}-{Path(files[k]).name}"
        dst.write_text(text, encoding="utf-8")
        out.append(str(dst))
    return tmp, out, len(files)


def bench_env() -> dict[str, str]:
    """Subprocess environment with bytecode caching on (as after `pip install`), kept out of
    the source tree."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "tpcheck-bench-pyc"))
    return env


def time_cmd(cmd: Sequence[str], env: dict[str, str], cwd: str | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd,
                   check=False)
    return time.perf_counter() - t0


def interleaved(fns: dict[str, Callable[[], float]], runs: int) -> dict[str, list[float]]:
    """Run each timing function once per round, ``runs`` rounds; one list of times per name."""
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for k, fn in fns.items():
            out[k].append(fn())
    return out


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def compose_all(files: Sequence[str], loader: object) -> None:
    """The floor: open, read and compose every YAML document of every file with ``loader``."""
    import yaml

    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        try:
            for _ in yaml.compose_all(text, Loader=loader):  # type: ignore[arg-type]
                pass
        except yaml.YAMLError:
            pass


def instructions(cmd: Sequence[str], env: dict[str, str], cwd: str | None = None) -> int | None:
    """Instructions a whole process executes, counted by valgrind's callgrind (deterministic:
    a busy machine cannot move it); None when valgrind is not installed."""
    if shutil.which("valgrind") is None:
        return None
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                       cwd=cwd, check=False)
    for line in p.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    return None


def mega(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 1e6:,.1f} M"
