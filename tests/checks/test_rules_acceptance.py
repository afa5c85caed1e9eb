"""The rules issue's acceptance cases, run through the real CLI on fixture manifests."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import said
from tpcheck.hardware.gpus import find_gpu
from tpcheck.models import catalog
from tpcheck.models.config import load_config, parse_config
from tpcheck.physics.plan import Options, evaluate

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures" / "lint"


def lint(*args: str) -> tuple[int, dict[str, object]]:
    p = subprocess.run([sys.executable, "-m", "tpcheck.cli", "--format", "json", "--offline",
                        *args], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


def findings(doc: dict[str, object], code: str) -> list[dict[str, object]]:
    fs = doc["findings"]
    assert isinstance(fs, list)
    return [f for f in fs if f["code"] == code]


def shape(model_id: str):  # type: ignore[no-untyped-def]
    e = catalog.find(model_id)
    assert e is not None
    return parse_config(load_config(e.config_path), name=model_id)


def test_llama_70b_tp6_refusals_at_the_6() -> None:
    rc, doc = lint(str(FIX / "llama70b-tp6.sh"))
    assert rc == 1
    codes = {f["code"] for f in doc["findings"]}  # type: ignore[union-attr]
    assert codes == {"TP101", "TP102", "TP103"}
    for f in doc["findings"]:  # type: ignore[union-attr]
        # line 5 is `    --tensor-parallel-size 6 \`; the `6` is column 5 + 23 = 28 (1-based)
        assert (f["line"], f["column"], f["end_column"]) == (5, 28, 29)
        assert f["severity"] == "error"
        assert ("Legal sizes for this model (meta-llama/Llama-3.1-70B-Instruct): "
                "1, 2, 4, 8, 16, 32, 64") in said(f)
    tp101 = findings(doc, "TP101")[0]
    # h mod t = 64 mod 6 = 4
    assert tp101["formula"]["result"] == 64 % 6  # type: ignore[index]
    assert tp101["fix"] == "use tensor parallel size 4 or 8"


def test_qwen3_32b_tp16_cliff_on_h100() -> None:
    rc, doc = lint(str(FIX / "qwen3-32b-tp16.yaml"))
    assert rc == 1
    [f] = findings(doc, "TP201")
    # `- "16"` on line 19: the scalar's 16 starts after the quote at column 16
    assert (f["line"], f["column"], f["severity"]) == (19, 16, "warning")
    s = shape("Qwen/Qwen3-32B")
    opts = Options(gpu=find_gpu("h100-sxm"), context=32768)
    r8, r16 = evaluate(s, 8, opts), evaluate(s, 16, opts)
    assert r8.pool is not None and r16.pool is not None
    # Derive the seats from the pool: KV per token per GPU is 2·64·1·128·2 = 32,768 B at both
    # t (one KV head per GPU), a sequence needs ceil(32768/16) = 2048 blocks of 16 tokens.
    kv_b = 2 * 64 * 1 * 128 * 2
    for r in (r8, r16):
        pool = r.pool.values["M"] * r.pool.values["u"] - r.pool.values["W_gpu"] - r.pool.values["R"]  # type: ignore[operator]
        blocks = math.floor(math.ceil(pool) / (kv_b * 16))
        assert r.seats is not None and r.seats.result == math.floor(blocks / 2048)
    seats8, seats16 = r8.seats.result, r16.seats.result  # type: ignore[union-attr]
    ratio = seats16 / seats8
    # the "about 1.07× for 2× GPUs": 1.05 with the calibrated reserve (seats 62 → 65)
    assert 1.03 <= ratio <= 1.09
    msg = said(f)
    assert f"{seats16} seats at t=16 vs {seats8} at t=8" in msg
    assert f"{ratio:.2f}× the sequences for 2× the GPUs" in msg
    assert "2 replicas of TP 8" in msg and "fp8 KV cache" in msg
    _, doc8 = lint(str(FIX / "qwen3-32b-tp8.yaml"))
    assert not findings(doc8, "TP201")


def test_deepseek_v3_sglang_mla_replicated_and_dp_attention_fix() -> None:
    _, doc = lint(str(FIX / "deepseek-v3-sglang.yaml"))
    [f] = findings(doc, "TP202")
    assert f["severity"] == "warning"
    # (kv_lora_rank + qk_rope_head_dim)·L·2 = (512 + 64)·61·2 = 70,272 B per token at any t
    assert "70,272 B per token per GPU" in said(f)
    _, doc = lint(str(FIX / "deepseek-v3-sglang-dp-attention.yaml"))
    assert not findings(doc, "TP202")


def test_sarif_output_is_valid_against_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from tests.shared import SARIF_SCHEMA as schema_path

    if not schema_path.is_file():
        pytest.skip("../shared/schemas not beside this checkout")
    p = subprocess.run([sys.executable, "-m", "tpcheck.cli", "--format", "sarif", "--offline",
                        str(FIX)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, json.loads(schema_path.read_text()))
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"TP101", "TP201", "TP202"}
    tp201 = next(r for r in results if r["ruleId"] == "TP201")
    region = tp201["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == (19, 16, 18)
