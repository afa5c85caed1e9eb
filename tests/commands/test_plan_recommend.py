"""``tpcheck plan --gpus N``: every layout of a GPU budget ranked, the recommended ones with the
command lines that launch them (checked by tpcheck's own option rules), a manifest as input,
``--dp`` counted, and the table within 100 columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}
OPTION_RULES = "TP001,TP002,TP003,TP004,TP005,TP006"


def tpcheck(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in ENV.items() if not k.startswith("TPCHECK")}
    return subprocess.run([sys.executable, "-m", "tpcheck.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


def plan_json(*args: str) -> dict[str, Any]:
    p = tpcheck("plan", *args, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    return doc


def sweep_row(tp: int, batch: int, *extra: str) -> dict[str, Any]:
    """The same layout through the plain sweep (``plan --tp T --batch B``): the figures the
    recommendation must agree with, computed by the other path."""
    doc = plan_json("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--tp", str(tp), "--batch",
                    str(batch), *extra)
    [row] = doc["rows"]
    return dict(row)


def by_label(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {x["label"]: x for x in doc["layouts"]}


def test_qwen3_32b_on_16_h100_recommends_two_replicas_of_tp8() -> None:
    doc = plan_json("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--gpus", "16")
    rec = doc["recommended"]["throughput"]
    assert (rec["tp"], rec["pp"], rec["dp"]) == (8, 1, 2)
    assert doc["layouts"][0]["label"] == "2 × TP 8"
    layouts = by_label(doc)
    # seats: pool / (KV bytes per token · c); at t = 8 a sequence of 32,768 tokens costs
    # 2·64 layers·1 KV head·128·2 B = 32 KiB per token → 1 GiB, and the pool is 61.5 GiB → 61;
    # at t = 16 the cache is replicated (still 32 KiB/token) and the pool 65.7 GiB → 65.
    tp8, tp16 = sweep_row(8, 1), sweep_row(16, 1)
    assert tp8["seats"] == int(tp8["pool_bytes_per_gpu"] // (32768 * 32768)) == 61
    assert tp16["seats"] == int(tp16["pool_bytes_per_gpu"] // (32768 * 32768)) == 65
    assert rec["seats"] == 2 * 61 and layouts["TP 16"]["seats"] == 65
    # the seeds' comparison: 2 × TP 8 doubles capacity, TP 16 buys 65 / 61 = 1.07×
    assert round(65 / 61, 2) == 1.07 and rec["seats"] / tp8["seats"] == 2
    # tokens/s per GPU at the batch the seats admit (max-num-seqs 1024 does not bind):
    # 61 / T_step(t = 8, batch 61) / 8 GPUs of a replica, T_step from the sweep at batch 61
    at61 = sweep_row(8, 61)
    assert rec["batch_per_replica"] == 61
    assert abs(rec["decode_tokens_per_second_per_gpu"]
               - 61 / at61["decode_step_seconds"] / 8) < 1e-6
    at65 = sweep_row(16, 65)
    assert abs(layouts["TP 16"]["decode_tokens_per_second_per_gpu"]
               - 65 / at65["decode_step_seconds"] / 16) < 1e-6
    assert rec["decode_tokens_per_second_per_gpu"] > 2 * layouts["TP 16"][
        "decode_tokens_per_second_per_gpu"]
    assert rec["basis"] == "floor"  # no published sweep calibrates vLLM 0.33 on H100
    cmds = rec["commands"]
    assert cmds["vllm"]["line"] == ("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8 "
                                    "--max-model-len 32768")
    assert cmds["sglang"]["line"] == ("sglang serve --model-path Qwen/Qwen3-32B --tp-size 8 "
                                      "--context-length 32768")
    assert cmds["vllm"]["where"] == "on each of 2 nodes"


def test_latency_goal_is_the_batch_one_step() -> None:
    doc = plan_json("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--gpus", "16", "--goal", "latency")
    rec = doc["recommended"]["latency"]
    assert doc["goal"] == "latency" and (rec["tp"], rec["pp"]) == (8, 1)
    # batch-1 time per token at p = 1 is the decode step at batch 1
    assert abs(rec["token_latency_seconds"] - sweep_row(8, 1)["decode_step_seconds"]) < 1e-12
    # TP 16 spans two nodes: its all-reduces run on the network and its step is slower
    layouts = by_label(doc)
    assert layouts["TP 16"]["token_latency_seconds"] > rec["token_latency_seconds"]
    # the layouts come sorted by the goal (the first is the pick)
    assert doc["layouts"][0]["label"] == rec["label"]


def _lint_lines(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "launch.sh"
    script.write_text("".join(f"{ln}\n" for ln in lines), encoding="utf-8")
    return tpcheck("--offline", "--select", OPTION_RULES, "--format", "json", str(script))


def _command_lines(doc: dict[str, Any]) -> list[str]:
    out = []
    for goal in ("throughput", "latency"):
        rec = doc["recommended"][goal]
        for engine in ("vllm", "sglang"):
            c = rec["commands"][engine]
            assert c["refused"] is None and c["line"], (goal, engine, c)
            out.append(c["line"])
    return out


def test_command_lines_pass_tpchecks_own_option_rules(tmp_path: Path) -> None:
    lines = _command_lines(plan_json("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--gpus", "16"))
    # multi-node forms: a DeepSeek-V3 replica over two nodes with attention DP (SGLang), and
    # vLLM's DP ranks with the experts spread (its form of attention DP)
    lines += _command_lines(plan_json("deepseek-ai/DeepSeek-V3", "--gpu", "h200", "--gpus",
                                      "16", "--engine", "sglang"))
    lines += _command_lines(plan_json("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--gpus", "16",
                                      "--pp", "2", "--dp", "1"))
    lines += _command_lines(plan_json("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--gpus", "8",
                                      "--dp", "4"))
    assert any("--nnodes 2" in ln for ln in lines)
    assert any("--data-parallel-address" in ln for ln in lines)
    assert any("--dp-size 4" in ln for ln in lines) and any("--attn-dp-size" in ln
                                                             for ln in lines)
    p = _lint_lines(tmp_path, lines)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert doc["findings"] == [] and doc["errors"] == []
    # the same check does catch a command line the engine would refuse
    bad = _lint_lines(tmp_path, [lines[0] + " --tensor-parallel-sise 8"])
    assert bad.returncode == 1 and {f["code"] for f in json.loads(bad.stdout)["findings"]} == {
        "TP001"}


def test_dp_fixes_the_replicas_and_counts_them() -> None:
    doc = plan_json("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--gpus", "16", "--dp", "4")
    assert {x["dp"] for x in doc["layouts"]} == {4}
    # 4 replicas of 4 GPUs: TP 4 (26 seats each), TP 2 × PP 2, TP 1 × PP 4
    assert {x["label"] for x in doc["layouts"]} == {"4 × TP 4", "4 × TP 2 × PP 2",
                                                    "4 × TP 1 × PP 4"}
    assert by_label(doc)["4 × TP 4"]["seats"] == 4 * sweep_row(4, 1)["seats"] == 4 * 26
    # without --gpus, the sweep counts every replica: GPUs t·dp, seats dp × a replica's
    one = sweep_row(8, 1)
    two = sweep_row(8, 1, "--dp", "2")
    assert two["gpus"] == 16 and two["seats_all_replicas"] == 2 * one["seats"] == 122


def test_refused_layouts_say_why_with_the_rule_name() -> None:
    doc = plan_json("meta-llama/Llama-3.1-70B-Instruct", "--gpu", "h100-sxm", "--gpus", "12")
    layouts = by_label(doc)
    # h = 64, h_kv = 8, f = 28,672: t = 12 divides none of them; t = 3 divides none either
    bad = layouts["TP 12"]["refused"]
    assert bad["kind"] == "refusal"
    assert [x["code"] for x in bad["refusals"]] == ["TP101", "TP102", "TP103"]
    assert [x["rule"] for x in bad["refusals"]] == ["heads-not-divisible",
                                                    "kv-heads-not-divisible", "ffn-not-divisible"]
    # t = 1: 131.4 GiB of weights per GPU; t = 2 starts with a 3.8 GiB pool that holds 25k
    # tokens, not one sequence of 32,768 (TP204), so neither serves
    assert layouts["12 × TP 1"]["refused"]["kind"] == "does_not_start"
    assert layouts["6 × TP 2"]["refused"]["kind"] == "no_seat"
    assert layouts["6 × TP 2"]["refused"]["reason"].startswith("TP204 context-exceeds-pool")


def test_a_manifest_gives_model_gpu_context_and_gpu_count() -> None:
    doc = plan_json("fixtures/lint/qwen3-32b-tp16.yaml")
    # the manifest: Qwen/Qwen3-32B on NVIDIA-H100-80GB-HBM3, max-model-len 32768, 16 GPUs
    assert (doc["model"], doc["gpu"], doc["gpus"], doc["context"]) == (
        "Qwen/Qwen3-32B", "h100-sxm", 16, 32768)
    assert doc["recommended"]["throughput"]["label"] == "2 × TP 8"
    # the flags go on top of the manifest's values
    doc = plan_json("fixtures/lint/qwen3-32b-tp16.yaml", "--gpus", "8")
    assert doc["gpus"] == 8 and doc["recommended"]["throughput"]["label"] == "TP 8"


def test_text_fits_100_columns_and_names_the_catalog_id() -> None:
    cases = [("Qwen/Qwen3-32B", "--gpu", "h100-sxm"),
             ("Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--gpus", "16"),
             ("deepseek-ai/DeepSeek-V3", "--gpu", "h200", "--gpus", "16", "--engine", "sglang"),
             ("MiniMaxAI/MiniMax-M2.5", "--gpu", "h100-sxm"),
             ("meta-llama/Llama-3.1-70B-Instruct", "--gpu", "h100-sxm", "--dp", "2")]
    for args in cases:
        p = tpcheck("plan", *args)
        assert p.returncode == 0, p.stderr
        wide = [ln for ln in p.stdout.splitlines() if len(ln) > 100]
        assert wide == [], (args, wide)
        first = p.stdout.splitlines()[0]
        assert first == f"{args[0]}  (catalog {args[0]})", first
        assert "site-packages" not in p.stdout and str(ROOT) not in p.stdout
    # --width widens it
    p = tpcheck("plan", "Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--width", "200")
    assert max(len(ln) for ln in p.stdout.splitlines()) > 100


def test_a_refusal_is_named_once_and_an_empty_row_is_marked() -> None:
    p = tpcheck("plan", "MiniMaxAI/MiniMax-M2.5", "--gpu", "h100-sxm")
    [t8] = [ln for ln in p.stdout.splitlines() if ln.startswith("  t=8: refused")]
    assert t8.count("TP103") == 1 and "ffn-not-divisible" in t8 and t8.count("fp8_block") == 1
    p = tpcheck("plan", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "h100-sxm", "--tp", "2,4")
    rows = {ln.split()[0]: ln.split() for ln in p.stdout.splitlines()
            if ln.split()[:1] in (["2"], ["4"])}
    # t = 2 starts (3.8 GiB of pool) but seats no sequence of 32,768 tokens: not "yes"
    assert rows["2"][1] == "none" and rows["4"][1] == "yes"
    assert "  t=2: starts, but no sequence of 32,768 tokens fits its pool" in p.stdout


def test_markdown_for_the_sweep_and_the_recommendation() -> None:
    p = tpcheck("plan", "Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--tp", "8,16", "--format",
                "markdown")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "### `tpcheck plan`: Qwen/Qwen3-32B on h100-sxm"
    table = [ln for ln in lines if ln.startswith("| ")]
    assert len(table) == 3 and table[0].startswith("| tp | ok |")  # header + t = 8, 16
    assert "past the KV-head cliff: cache replicated 2x" in table[2]
    p = tpcheck("plan", "Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--gpus", "16", "--format",
                "markdown")
    assert "**throughput: 2 × TP 8" in p.stdout
    assert ("```sh\nvllm serve Qwen/Qwen3-32B --tensor-parallel-size 8 --max-model-len 32768\n"
            "```") in p.stdout


def test_an_older_release_gets_its_own_spelling(tmp_path: Path) -> None:
    """A pinned release's command line passes that release's option table (the lint pinned to
    it by ``engine-version``): SGLang 0.4.10.post2 predates ``sglang serve``."""
    cases = [("vllm", "0.9.2"), ("sglang", "0.4.10.post2")]
    for engine, version in cases:
        doc = plan_json("deepseek-ai/DeepSeek-V3", "--gpu", "h200", "--gpus", "16", "--engine",
                        engine, "--engine-version", version)
        lines = [doc["recommended"][g]["commands"][engine]["line"]
                 for g in ("throughput", "latency")]
        assert all(lines), doc["recommended"]
        if engine == "sglang":
            assert all(ln.startswith("python -m sglang.launch_server ") for ln in lines)
        folder = tmp_path / engine
        folder.mkdir()
        (folder / ".tpcheck.toml").write_text(f'engine-version = "{version}"\n')
        (folder / "launch.sh").write_text("".join(f"{ln}\n" for ln in lines))
        p = tpcheck("--offline", "--select", OPTION_RULES, "--format", "json", "launch.sh",
                    cwd=folder)
        assert p.returncode == 0, (engine, lines, p.stdout, p.stderr)
        assert json.loads(p.stdout)["findings"] == []
