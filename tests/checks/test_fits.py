"""Issue 18: weights that do not fit, TP203 like with like under DP-attention, unresolved values.

DeepSeek-V3 (fp8 routed experts, the catalog config) at vLLM 0.33 defaults: M·u = 85,031,714,816
B (H100 SXM, 79.19 GiB reported) · 0.92 = 78,229,177,631 B; the weights per GPU at t = 8 are
85,140,101,152 B (tpcheck.physics.weights, the formula TP205 prints), 79.29 GiB > 72.86 GiB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tpcheck.checks.base import Finding
from tpcheck.lint import Linter
from tpcheck.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DS = "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --max-model-len 32768\n"


def lint(tmp_path: Path, text: str, gpu: str, name: str = "run.sh") -> list[Finding]:
    p = tmp_path / name
    p.write_text(text)
    res = Linter(Settings(offline=True, gpu=gpu)).run([str(p)])
    assert not res.errors, res.errors
    return res.findings


def plan(*args: str) -> dict[str, object]:
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([sys.executable, "-m", "tpcheck.cli", "plan", *args], capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout) if "--format" in args else {"text": p.stdout}


def test_deepseek_v3_on_8_h100_tp205_and_no_seat_quotes(tmp_path: Path) -> None:
    found = lint(tmp_path, DS, "h100-sxm")
    [f205] = [f for f in found if f.code == "TP205"]
    w = next(x for x in f205.formulas if x.name == "weights_bytes_per_gpu").result
    budget = next(x for x in f205.formulas if x.name == "budget_bytes").result
    # the checkpoint's share, 85,140,101,152 B, + the rotary cache every rank holds: 163,840
    # positions · 64 (qk_rope_head_dim) · 2 B (bf16: under torch.compile the rotary custom op
    # is off, so DeepSeek's FlashInfer fp32 path is too) = 20,971,520 B; the newest release
    # (0.33) makes no FlashInfer MLA workspace at load, and fp8 weights take no block slack
    assert w == 85_140_101_152 + 163_840 * 64 * 2 and budget == 85_031_714_816 * 0.92
    # what would start instead: TP 8 × PP 2 (16 GPUs), or TP 16 (fp8 checkpoint: no fp8 advice)
    assert f205.fix == ("use --pipeline-parallel-size 2 (TP 8 × PP 2 = 16 GPUs, the fewest stages "
                        "that leave a KV pool), or --tensor-parallel-size 16 (16 GPUs)")
    # no rule quotes seats or gains from the pool that does not exist
    for f in found:
        assert "Seats now" not in f.text and "seats_with_dp_attention" not in [
            x.name for x in f.formulas], f
        assert f.code != "TP203", f  # no "0 sequences" comparison


def test_deepseek_v3_plan_row_on_h100_does_not_start_and_on_h200_does() -> None:
    doc = plan("deepseek-ai/DeepSeek-V3", "--gpu", "h100-sxm", "--tp", "8", "--format", "json")
    [row] = doc["rows"]  # type: ignore[misc]
    assert row["legal"] is True and row["fits"] is False
    # pool = ceil(M·u) − W − R < 0: the −9.3 GiB the issue reports
    assert row["pool_bytes_per_gpu"] < 0
    assert row["fit_reason"].startswith("weights 79.3 GiB per GPU > M·u = 79.2·0.92 = 72.9 GiB")
    text = plan("deepseek-ai/DeepSeek-V3", "--gpu", "h100-sxm", "--tp", "8")["text"]
    line = next(ln for ln in str(text).splitlines() if ln.lstrip().startswith("8 "))
    assert " NO " in line and line.endswith(" no pool")  # the row's tag; its note below
    assert "  t=8: does not start: weights 79.3 GiB" in str(text)
    doc = plan("deepseek-ai/DeepSeek-V3", "--gpu", "h200", "--tp", "8", "--format", "json")
    [row] = doc["rows"]  # type: ignore[misc]
    # H200: 141 GiB class; the same 79.3 GiB of weights leave a pool and seats
    assert row["fits"] is True and row["fit_reason"] is None and row["seats"] > 0


def test_deepseek_v3_on_8_h200_lints_without_tp205(tmp_path: Path) -> None:
    found = lint(tmp_path, DS, "h200")
    assert [f.code for f in found if f.code == "TP205"] == []
    [f202] = [f for f in found if f.code == "TP202"]
    assert "seats now" in f202.text  # a pool exists: the comparison is meaningful


def test_tp203_compares_per_attention_dp_worker(tmp_path: Path) -> None:
    # SGLang divides --max-running-requests by attn_dp_size per DP worker
    # (mem_cache/kv_cache_configurator.py:3119-3172): R // 8 per worker, against one worker's
    # own pool (7 seats of 32,768 tokens here: max_concurrency 7.96 in the finding's formula,
    # with SGLang's budget T·mfs, T the free memory after context and communicators, issue 21).
    text = ("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 "
            "--attn-dp-size 8 --max-running-requests {R} --context-length 32768\n")
    found = lint(tmp_path, text.replace("{R}", "16"), "h200")
    [f] = [f for f in found if f.code == "TP203"]
    pw = next(x for x in f.formulas if x.name == "max_running_requests_per_worker")
    assert (pw.values["R"], pw.values["attn_dp"], pw.result) == (16, 8, 2)  # 16 // 8
    cmp = next(x for x in f.formulas if x.name == "binding_limit")
    assert (cmp.values["max_num_seqs"], cmp.values["seats"], cmp.result) == (2, 7, 2)
    assert "16 // attn_dp 8 = 2 per attention-DP worker" in f.text
    assert f.fix is not None and "toward 56" in f.fix  # 7 seats · 8 workers
    # R = 56 is 7 per worker = the 7 seats: neither limit wastes the other. Compared with one
    # rank's 7 seats unscaled, 56 looked like 8× too many ("memory binds, preemption").
    assert [f for f in lint(tmp_path, text.replace("{R}", "56"), "h200", "b.sh")
            if f.code == "TP203"] == []


def test_unresolved_dp_silences_the_rules_that_need_it(tmp_path: Path) -> None:
    # llm-d's wide-EP decode: --data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)). With EP
    # the experts are split over t·dp, so the weights per GPU depend on the unknown dp: TP205
    # (and TP203, whose seats come from the same pool) must not judge dp = 1 in its place.
    text = ("vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 1 --enable-expert-parallel "
            "--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) --max-num-seqs 512\n")
    codes = {f.code for f in lint(tmp_path, text, "h100-sxm")}
    assert not codes & {"TP203", "TP204", "TP205", "TP201", "TP202", "TP301", "TP303"}, codes
    # the same line with dp written out: dp = 16, experts over 16 GPUs, and TP205 is not needed
    # either; with dp = 1 written, it fires (654 GB of experts on one GPU)
    resolved = text.replace("$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))", "1")
    assert "TP205" in {f.code for f in lint(tmp_path, resolved, "h100-sxm", "b.sh")}
