"""Issues 17/18: zero and nonsense values get the engine's own check as a TP003 finding at the
value, never silence and never a modulo by zero.

vLLM 0.33.0 validates with pydantic: config/parallel.py:140-147 ``pipeline_parallel_size``,
``tensor_parallel_size``, ``data_parallel_size`` ``Field(ge=1)``; config/scheduler.py:62
``max_num_seqs`` ``Field(ge=1)``; config/cache.py:215 ``gpu_memory_utilization``
``Field(gt=0, le=1)``. SGLang 0.5.23: ``--attn-dp-size must be positive``
(arg_groups/parallel_hook.py:285); max_running_requests per worker is max(1, R // attn_dp)
(mem_cache/kv_cache_configurator.py:3119-3172).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import SHARED
from tpcheck.lint import Linter, exit_code
from tpcheck.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def findings_for(tmp_path: Path, line: str) -> list[tuple[str, int, str]]:
    """(code, column, message) of every finding: a value the engine refuses is the manifest's
    mistake, a TP003 finding at the value (issue 17), and the layout rules do not run on it."""
    p = tmp_path / "run.sh"
    p.write_text(line + "\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    assert res.errors == [], res.errors
    assert exit_code(res, "warning") == 1
    return [(f.code, f.span.column, f.text) for f in res.findings]


@pytest.mark.parametrize(("flag", "value"), [
    ("--tensor-parallel-size", "0"),
    ("--pipeline-parallel-size", "0"),
    ("--data-parallel-size", "0"),
    ("--max-num-seqs", "-1"),
    ("--tensor-parallel-size", "-2"),
])
def test_vllm_refuses_below_one(tmp_path: Path, flag: str, value: str) -> None:
    line = f"vllm serve {MODEL} {flag} {value}"
    [(code, col, msg)] = findings_for(tmp_path, line)
    assert code == "TP003"
    assert col == line.index(f"{flag} {value}") + len(flag) + 2  # the value's 1-based column
    # pydantic's own words for Field(ge=1) (config/parallel.py:140-147, scheduler.py:62)
    assert "Input should be greater than or equal to 1" in msg
    assert f"[input_value={value}]" in msg


def test_vllm_utilization_out_of_range(tmp_path: Path) -> None:
    [(code, _, msg)] = findings_for(tmp_path, f"vllm serve {MODEL} --gpu-memory-utilization 0")
    # config/cache.py:215 Field(gt=0, le=1)
    assert code == "TP003" and "Input should be greater than 0" in msg


def test_sglang_zero_tp_and_negative_running_requests(tmp_path: Path) -> None:
    [(code, _, msg)] = findings_for(
        tmp_path, f"python3 -m sglang.launch_server --model-path {MODEL} --tp 0")
    assert code == "TP003" and msg.startswith("--tp-size 0 is below 1: nothing runs with it")
    assert "sglang 0.5.23 has no check of its own" in msg
    [(code, _, msg)] = findings_for(tmp_path, f"python3 -m sglang.launch_server --model-path "
                                              f"{MODEL} --max-running-requests -1")
    assert "runs it silently as 1 request per DP worker: max(1, R // attn_dp_size)" in msg
    [(code, _, msg)] = findings_for(tmp_path, f"python3 -m sglang.launch_server --model-path "
                                              f"{MODEL} --attn-dp-size 0")
    assert '"--attn-dp-size must be positive"' in msg


def test_other_files_still_checked(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text(f"vllm serve {MODEL} --tensor-parallel-size 0\n")
    good = tmp_path / "good.sh"
    good.write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 6\n")  # 64 heads % 6
    p = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--format", "json",
                        str(bad), str(good)], capture_output=True, text=True, cwd=ROOT,
                       timeout=60, check=False)
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc["errors"] == []
    assert {(Path(f["path"]).name, f["code"]) for f in doc["findings"]} >= {
        ("bad.sh", "TP003"), ("good.sh", "TP101")}
    assert "Traceback" not in p.stderr


def write_config(tmp_path: Path, src: str, **changes: object) -> Path:
    cfg = json.loads((SHARED / "models" / src / "config.json").read_text())
    for k, v in changes.items():
        if k == "weight_block_size":
            cfg["quantization_config"][k] = v
        else:
            cfg[k] = v
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def lint_model(tmp_path: Path, model_dir: Path) -> list[str]:
    p = tmp_path / "run.sh"
    p.write_text(f"vllm serve {model_dir} --tensor-parallel-size 4\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    assert not res.errors, res.errors
    return [f.text for f in res.findings if f.code == "TP000"]


def test_more_kv_heads_than_heads_is_named(tmp_path: Path) -> None:
    d = write_config(tmp_path, "meta-llama--Llama-3.1-8B-Instruct", num_key_value_heads=64)
    [msg] = lint_model(tmp_path, d)
    # vLLM attention.py:329 asserts num_heads % num_kv_heads == 0: 32 % 64 = 32 at t = 1
    assert "64 key-value heads > 32 attention heads" in msg
    assert '"num_heads (32) is not divisible by num_kv_heads (64)"' in msg


def test_zero_weight_block_size_is_named_not_a_modulo_by_zero(tmp_path: Path) -> None:
    d = write_config(tmp_path, "Qwen--Qwen3-32B-FP8", weight_block_size=[0, 0])
    [msg] = lint_model(tmp_path, d)
    assert "weight_block_size is [0, 0]" in msg and "modulo" not in msg
