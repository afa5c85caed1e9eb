"""TP205/TP204 on SGLang deployments use SGLang's own budget, T·mfs (issue 21)."""

from __future__ import annotations

from pathlib import Path

from tpcheck.checks.base import Finding
from tpcheck.formula import GIB
from tpcheck.hardware.gpus import find_gpu
from tpcheck.lint import Linter
from tpcheck.physics import sglang_memory
from tpcheck.settings import Settings

LAUNCH = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct "
          "--tp 2 --context-length 8192 --mem-fraction-static {mfs}\n")


def lint(tmp_path: Path, mfs: float, code: str) -> list[Finding]:
    p = tmp_path / "serve.sh"
    p.write_text(LAUNCH.format(mfs=mfs), encoding="utf-8")
    res = Linter(Settings(offline=True, select=(code,), gpu="h100-sxm")).run([str(p)])
    assert not res.errors, res.errors
    return [f for f in res.findings if f.code == code]


def test_tp205_fires_when_the_weights_exceed_t_times_mfs(tmp_path: Path) -> None:
    """Llama-3.1-70B at t = 2 holds 65.71 GiB per GPU. M·0.85 = 79.19·0.85 = 67.31 GiB would
    let it through; SGLang's T = 79.19 − 0.40 (context) − 0.13 (NCCL) − 1.88 (NVLink buffers)
    = 76.78 GiB, and T·0.85 = 65.26 GiB < 65.71: it refuses (sglang 0.5.23
    kv_cache_configurator.py l.3043-3058)."""
    gpu = find_gpu("h100-sxm")
    assert gpu is not None
    t_free = gpu.usable_bytes - sglang_memory.baseline_overhead(2, True).result
    assert abs(t_free / GIB - 76.78) < 0.01
    assert gpu.usable_bytes * 0.85 / GIB > 65.71 > t_free * 0.85 / GIB
    found = lint(tmp_path, 0.85, "TP205")
    assert len(found) == 1
    assert "T·mfs" in found[0].text and "SGLang refuses" in found[0].text
    assert "assumes: SGLang 0.5.23" in found[0].text


def test_tp205_quiet_when_t_times_mfs_holds_the_weights(tmp_path: Path) -> None:
    """mfs 0.86: T·0.86 = 76.78·0.86 = 66.03 GiB ≥ 65.71 GiB."""
    assert lint(tmp_path, 0.86, "TP205") == []
