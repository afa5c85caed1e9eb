"""Disaggregated prefill servers: the role is read from flags and labels, and TP203's
"seats stay empty" is silent there (a finished prefill's KV stays until the decode side reads
it: vllm 0.33.0 v1/core/sched/scheduler.py:3058-3060, sglang 0.5.23
disaggregation/prefill.py:1034, 1151-1228)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.checks.base import Finding
from tpcheck.lint import Linter
from tpcheck.settings import Settings
from tpcheck.sources import read_path

L8 = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 --max-num-seqs 8"
SGL8 = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
        "--context-length 8192 --max-running-requests 8")
NIXL = "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"%s\"}'"

LLMD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ms-prefill
spec:
  template:
    metadata:
      labels:
        llm-d.ai/role: prefill
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.0
        command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct]
        args: [--max-model-len, "8192", --max-num-seqs, "8"]
        resources: {limits: {nvidia.com/gpu: "1"}}
"""

DYNAMO = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  services:
    prefill:
      subComponentType: prefill
      extraPodSpec:
        mainContainer:
          command: [python3, -m, dynamo.sglang]
          args: [--model-path, meta-llama/Llama-3.1-8B-Instruct, --tp, "1"]
"""


def lint(tmp_path: Path, text: str, name: str = "run.sh") -> list[Finding]:
    p = tmp_path / name
    p.write_text(text + "\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    assert not res.errors, res.errors
    return res.findings


@pytest.mark.parametrize(("launch", "role"), [
    (f"{SGL8} --disaggregation-mode prefill", "prefill"),
    (f"{SGL8} --disaggregation-mode=decode", "decode"),
    (f"{SGL8} --disaggregation-mode null", None),  # SGLang's "not disaggregated"
    (f"{L8} --kv-transfer-config {NIXL % 'kv_producer'}", "prefill"),
    (f"{L8} --kv-transfer-config {NIXL % 'kv_consumer'}", "decode"),
    (f"{L8} --kv-transfer-config {NIXL % 'kv_both'}", None),  # either side, per request
    (L8, None),
    ("python3 -m dynamo.vllm --model Qwen/Qwen3-8B --is-prefill-worker --connector kvbm nixl",
     "prefill"),  # Dynamo's own flag for its vLLM prefill worker
])
def test_role_from_the_command_line(launch: str, role: str | None) -> None:
    (d,) = read_path("run.sh", launch + "\n").deployments
    assert d.pd_role == role
    assert "kv_transfer_config" not in d.unresolved


def test_role_from_llm_d_label_and_dynamo_sub_component() -> None:
    (d,) = read_path("ms.yaml", LLMD).deployments
    s = d.spans["pd_role"]
    # line 9: 8 spaces + "llm-d.ai/role: " (15) -> "prefill" at columns 24..30
    assert (d.pd_role, s.line, s.column, s.end_column) == ("prefill", 9, 24, 31)
    (g,) = read_path("g.yaml", DYNAMO).deployments
    assert (g.engine, g.pd_role, g.spans["pd_role"].line) == ("sglang", "prefill", 7)


def test_tp203_seats_past_the_cap_are_not_empty_on_a_prefill_server(tmp_path: Path) -> None:
    # rules/TP203.md's example: the pool seats 56 sequences of 8,192 tokens against 8
    [plain] = [f for f in lint(tmp_path, L8) if f.code == "TP203"]
    assert "the pool seats 56 sequences of 8,192 tokens" in plain.text
    for role, fires in (("kv_producer", False), ("kv_consumer", True), ("kv_both", True)):
        found = lint(tmp_path, f"{L8} --kv-transfer-config {NIXL % role}")
        assert any(f.code == "TP203" for f in found) is fires, role
    assert [f.code for f in lint(tmp_path, LLMD, "ms.yaml") if f.code == "TP203"] == []


def test_tp203_sglang_prefill_mode(tmp_path: Path) -> None:
    assert any(f.code == "TP203" for f in lint(tmp_path, SGL8))
    found = lint(tmp_path, f"{SGL8} --disaggregation-mode prefill")
    assert not any(f.code == "TP203" for f in found)


def test_tp203_memory_binds_still_said_on_a_prefill_server(tmp_path: Path) -> None:
    # at the model's 131,072 tokens the pool seats a few sequences (kv_B = 2·32·8·128·2 =
    # 131,072 B per token: 16 GiB each), so --max-num-seqs 256 is far above them: in-flight
    # prefills and pending transfers share that pool
    launch = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 256 "
              f"--kv-transfer-config {NIXL % 'kv_producer'}")
    [f] = [f for f in lint(tmp_path, launch) if f.code == "TP203"]
    seats = next(x for x in f.formulas if x.name == "seats").result
    assert 0 < seats * 4 < 256
    assert "memory binds" in f.text
