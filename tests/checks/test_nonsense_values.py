"""Issue 18: zero and nonsense values get the engine's own check as one line, never silence.

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


def errors_for(tmp_path: Path, line: str) -> list[str]:
    p = tmp_path / "run.sh"
    p.write_text(line + "\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    assert exit_code(res, "warning") == 2  # an input error, whatever the findings
    assert res.findings == [], res.findings  # the deployment is not checked
    return [str(e) for e in res.errors]


@pytest.mark.parametrize(("flag", "value", "check"), [
    ("--tensor-parallel-size", "0", "config/parallel.py:142 Field(ge=1)"),
    ("--pipeline-parallel-size", "0", "config/parallel.py:140 Field(ge=1)"),
    ("--data-parallel-size", "0", "config/parallel.py:147 Field(ge=1)"),
    ("--max-num-seqs", "-1", "config/scheduler.py:62 Field(ge=1)"),
    ("--tensor-parallel-size", "-2", "config/parallel.py:142 Field(ge=1)"),
])
def test_vllm_refuses_below_one(tmp_path: Path, flag: str, value: str, check: str) -> None:
    line = f"vllm serve {MODEL} {flag} {value}"
    [err] = errors_for(tmp_path, line)
    col = line.index(f"{flag} {value}") + len(flag) + 2  # the value's 1-based column
    assert err == (f"{tmp_path / 'run.sh'}:1:{col}: {flag} {value}: vllm 0.33 refuses it "
                   f"({check}: \"Input should be greater than or equal to 1\"); the deployment "
                   "is not checked")


def test_vllm_utilization_out_of_range(tmp_path: Path) -> None:
    [err] = errors_for(tmp_path, f"vllm serve {MODEL} --gpu-memory-utilization 0")
    assert "--gpu-memory-utilization 0: vllm 0.33 refuses it (config/cache.py:215" in err


def test_sglang_zero_tp_and_negative_running_requests(tmp_path: Path) -> None:
    [err] = errors_for(tmp_path, f"python3 -m sglang.launch_server --model-path {MODEL} --tp 0")
    assert "--tp-size 0: sglang 0.5.23 has no check of its own" in err
    [err] = errors_for(tmp_path, f"python3 -m sglang.launch_server --model-path {MODEL} "
                                 "--max-running-requests -1")
    assert "runs it silently as 1 request per DP worker: max(1, R // attn_dp_size)" in err
    [err] = errors_for(tmp_path, f"python3 -m sglang.launch_server --model-path {MODEL} "
                                 "--attn-dp-size 0")
    assert '"--attn-dp-size must be positive"' in err


def test_other_files_still_checked_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text(f"vllm serve {MODEL} --tensor-parallel-size 0\n")
    good = tmp_path / "good.sh"
    good.write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 6\n")  # 64 heads % 6
    p = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--format", "json",
                        str(bad), str(good)], capture_output=True, text=True, cwd=ROOT,
                       timeout=60, check=False)
    assert p.returncode == 2, p.stderr
    doc = json.loads(p.stdout)
    assert [e["path"] for e in doc["errors"]] == [str(bad)]
    assert "TP101" in {f["code"] for f in doc["findings"]}
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
    return [f.message for f in res.findings if f.code == "TP000"]


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
