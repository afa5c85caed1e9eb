"""``tpcheck inspect`` prints the engine's start-up lines tpcheck predicts for each launch
(issue 32), so a user can diff them against the first pod log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.shared import chdir
from tpcheck.cli import main

# Observation row 30 (fixtures/observations/vllm-startup.jsonl): vLLM 0.19.0, Llama-3.1-8B at
# TP2 on H100 80GB, u = 0.95, max_model_len 8192; it logged 7.51 GiB of weights, 2.07 GiB of
# non-torch memory, 63.76 GiB available and 1,044,688 tokens.
LAUNCH = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 "
          "--gpu-memory-utilization 0.95 --max-model-len 8192\n")


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    (tmp_path / "run.sh").write_text(LAUNCH)
    (tmp_path / ".tpcheck.toml").write_text('gpu = "h100-sxm"\noffline = true\n')
    with chdir(tmp_path):
        code = main(["inspect", "run.sh", "--engine-version", "0.19.0", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_text_names_the_lines_of_row_30(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(tmp_path, capsys)
    got = [x.removeprefix("    predicted: ") for x in out.splitlines() if "predicted:" in x]
    assert got[0] == "Model loading took 7.51 GiB memory (h100-sxm, t=2)"
    assert "2.07 GiB for non-torch memory" in got[1]
    assert got[2].startswith("Available KV cache memory: ")
    pool = float(got[2].split(": ")[1].removesuffix(" GiB"))
    assert abs(pool - 63.76) / 63.76 < 0.01
    tokens = int(got[3].removeprefix("GPU KV cache size: ").removesuffix(" tokens")
                 .replace(",", ""))
    assert abs(tokens - 1_044_688) / 1_044_688 < 0.01
    assert got[4].startswith("Maximum concurrency for 8,192 tokens per request: ")


def test_json_carries_the_lines_or_why_not(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (d,) = json.loads(_run(tmp_path, capsys, "--format", "json"))["deployments"]
    assert d["predicted_log"][0] == "Model loading took 7.51 GiB memory (h100-sxm, t=2)"
    # no GPU known: no lines, and the reason
    (tmp_path / ".tpcheck.toml").write_text("offline = true\n")
    with chdir(tmp_path):
        assert main(["inspect", "run.sh", "--format", "json"]) == 0
    (d,) = json.loads(capsys.readouterr().out)["deployments"]
    assert d["predicted_log"] is None and "no GPU known" in d["predicted_problem"]
