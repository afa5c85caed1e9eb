"""``tpcheck plan``: DESIGN.md's JSON keys, the cliff marked in text, offline by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROW_KEYS = {"tp", "legal", "refusals", "kv_heads_per_gpu", "kv_replicas", "weights_bytes_per_gpu",
            "kv_bytes_per_token_per_gpu", "pool_bytes_per_gpu", "kv_pool_tokens",
            "max_concurrency", "seats", "allreduce_bytes_per_token_per_gpu",
            "decode_step_seconds", "comm_share"}


def plan(*args: str) -> subprocess.CompletedProcess[str]:
    # A hub endpoint nobody listens on: the catalog must answer without the network.
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "tpcheck.cli", "plan", *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


def test_plan_json_shape_and_numbers() -> None:
    p = plan("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--tp", "4,8,16", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert {"model", "gpu", "context", "rows"} <= set(doc)
    assert doc["gpu"] == "h100-sxm"
    # default context: min(max_position_embeddings = 40960, 32768)
    assert doc["context"] == 32768
    rows = {r["tp"]: r for r in doc["rows"]}
    for r in rows.values():
        assert set(r) >= ROW_KEYS
    # Qwen3-32B: L = 64, h_kv = 8, d_h = 128, bf16: 2·64·max(1, 8//t)·128·2
    assert [rows[t]["kv_bytes_per_token_per_gpu"] for t in (4, 8, 16)] == [65536, 32768, 32768]
    assert [rows[t]["kv_replicas"] for t in (4, 8, 16)] == [1, 1, 2]
    # ring all-reduce per token: (2·64 + 1)·2(t−1)/t·5120·2 at t = 8 → 129·1.75·10240 B
    assert rows[8]["allreduce_bytes_per_token_per_gpu"] == 129 * 1.75 * 10240


def test_plan_text_marks_the_cliff_at_h_kv() -> None:
    p = plan("Qwen/Qwen3-32B", "--gpu", "h100-sxm")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    row8 = next(ln for ln in lines if ln.strip().startswith("8 "))
    row16 = next(ln for ln in lines if ln.strip().startswith("16 "))
    assert "cliff" in row8 and "replicated 2x" in row16
    assert "source" not in p.stderr


def test_plan_refusals_named() -> None:
    p = plan("meta-llama/Llama-3.1-70B-Instruct", "--tp", "6", "--format", "json")
    [row] = json.loads(p.stdout)["rows"]
    assert row["legal"] is False
    assert {r["code"] for r in row["refusals"]} == {"TP101", "TP102", "TP103"}


def test_plan_set_overrides_config() -> None:
    # What-if: Qwen3-32B with 16 KV heads moves the cliff to 16 (h_kv/t = 1 at t = 16).
    p = plan("Qwen/Qwen3-32B", "--set", "num_key_value_heads=16", "--tp", "16",
             "--format", "json")
    [row] = json.loads(p.stdout)["rows"]
    assert row["kv_replicas"] == 1 and row["kv_heads_per_gpu"] == 1


def test_plan_bad_input_is_one_line() -> None:
    p = plan("no-such/model", "--offline")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = plan("Qwen/Qwen3-32B", "--gpu", "h900")
    assert p.returncode == 2 and "unknown GPU 'h900'" in p.stderr


def test_plan_text_deepseek_v4_has_no_kv_head_cliff() -> None:
    # V4's compressed latent has no head axis (vLLM MLAAttentionSpec max_tp_shards=1): every
    # rank holds it whole, as for MLA; h_kv = 1 is no cliff at t = 1 or past it at t = 4, 8.
    p = plan("deepseek-ai/DeepSeek-V4-Flash", "--gpu", "h100-sxm")
    assert p.returncode == 0, p.stderr
    rows = {int(ln.split()[0]): ln for ln in p.stdout.splitlines()
            if ln.strip()[:2].strip().isdigit() and ln.split()[1] in ("yes", "NO")}
    assert "cliff" not in p.stdout
    for t in (4, 8):  # 145.3 GiB at t = 1 and 73.3 GiB at t = 2 do not fit 72.9 GiB
        assert rows[t].endswith("latent ×t")
    assert "  t=4, 8: DeepSeek-V4 compressed latent replicated on every rank" in p.stdout
    assert rows[1].endswith("no pool") and rows[1].split()[1] == "NO"
    # o_groups 8 // 16 = 0 groups per rank: vLLM divides by zero (rules/TP103.md): named once,
    # by its rule's name
    assert rows[16].endswith("refused")
    assert "  t=16: refused: TP103 ffn-not-divisible: o_groups (floor(o_groups / t) = 0)" \
        in p.stdout.splitlines()
