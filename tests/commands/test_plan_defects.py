"""``tpcheck plan`` agrees with the lint and with itself: the manifest's GPU wins as in the lint,
one JSON document per file, per-replica seats independent of the GPU budget, the settings file
honoured, options honoured or refused, and the words of the header."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.commands.test_plan_recommend import by_label, tpcheck

MI300X_MODEL = """\
apiVersion: kubeai.org/v1
kind: Model
metadata:
  name: deepseek-r1-mi300x
spec:
  features: [TextGeneration]
  url: hf://deepseek-ai/DeepSeek-R1
  engine: VLLM
  args:
    - --max-model-len=32768
    - --max-num-batched-tokens=32768
    - --max-num-seqs=1024
    - --gpu-memory-utilization=0.90
    - --tensor-parallel-size=8
    - --kv-cache-dtype=fp8
  resourceProfile: amd-gpu-mi300x:8
"""


def _json(p: Any) -> dict[str, Any]:
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    return doc


def test_the_manifests_gpu_wins_over_gpu_as_in_the_lint(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(MI300X_MODEL)
    lint = _json_lint(tpcheck("--offline", "--gpu", "h100-sxm", "--format", "json",
                              str(path)))
    # the lint's TP203 counts the seats on the manifest's MI300X, not on --gpu's H100
    [tp203] = [f for f in lint["findings"] if f["code"] == "TP203"]
    seats = next(e["values"]["seats"] for e in tp203["evidence"]
                 if e.get("name") == "binding_limit")
    assert seats == 80
    doc = _json(tpcheck("plan", "--offline", "--gpu", "h100-sxm", "--format", "json",
                        str(path)))
    assert doc["gpu"] == "mi300x" and doc["gpus"] == 8
    assert by_label(doc)["TP 8"]["seats"] == seats
    sweep = _json(tpcheck("plan", "--offline", "--gpu", "h100-sxm", "--tp", "8", "--format",
                          "json", str(path)))
    assert sweep["gpu"] == "mi300x" and sweep["rows"][0]["seats"] == seats


def _json_lint(p: Any) -> dict[str, Any]:
    assert p.returncode in (0, 1), p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    return doc


def test_a_file_of_several_deployments_is_one_json_document(tmp_path: Path) -> None:
    path = tmp_path / "two.sh"
    path.write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8\n"
                    "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4\n")
    for extra in ((), ("--gpus", "8")):
        doc = _json(tpcheck("plan", "--offline", "--gpu", "h100-sxm", "--format", "json",
                            *extra, str(path)))  # json.loads refuses two documents in a row
        assert [p["model"] for p in doc["plans"]] == ["Qwen/Qwen3-32B",
                                                       "meta-llama/Llama-3.1-70B-Instruct"]
        assert [p["deployment"].split(" (")[0].rsplit(":", 1)[1] for p in doc["plans"]] == [
            "1", "2"]


def test_seats_per_replica_do_not_change_with_the_budget(tmp_path: Path) -> None:
    common = ("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--context", "8192",
              "--engine-version", "0.19.0", "--format", "json")
    one = _json(tpcheck(*common, "--tp", "8"))["rows"][0]
    # t = 8: 1 KV head per GPU, 2·64·1·128·2 B = 32 KiB per token, 8,192 tokens = 256 MiB a
    # sequence; the single instance keeps vLLM 0.19's all-reduce fusion workspace (dp = 1)
    assert one["seats"] == int(one["pool_bytes_per_gpu"] // (32768 * 8192)) == 236
    eight = by_label(_json(tpcheck(*common, "--gpus", "8")))["TP 8"]
    sixteen = by_label(_json(tpcheck(*common, "--gpus", "16")))["2 × TP 8"]
    # two replicas on two nodes are two separate launches (no --data-parallel-size): each is the
    # single instance, 2 × 236 = 472 (TP201's figure for two replicas of TP 8)
    assert eight["seats"] == one["seats"]
    assert sixteen["seats"] == 2 * one["seats"] == 472
    path = tmp_path / "q16.sh"
    path.write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16 --max-model-len 8192\n")
    lint = _json_lint(tpcheck("--offline", "--gpu", "h100-sxm", "--engine-version", "0.19.0",
                              "--format", "json", str(path)))
    [tp201] = [f for f in lint["findings"] if f["code"] == "TP201"]
    at_h_kv = next(e["result"] for e in tp201["evidence"] if e.get("name") == "seats_at_h_kv")
    assert at_h_kv == one["seats"]  # TP201's TP 8 is the replica the ranking counts twice


def test_plan_model_reads_the_settings_as_lint_does(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tpcheck]\ngpu = "h100-sxm"\ncontext = 8192\nengine-version = "0.19.0"\n')
    set_ = _json(tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--tp", "8", "--format", "json",
                         cwd=tmp_path))
    flags = _json(tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm",
                          "--context", "8192", "--engine-version", "0.19.0", "--tp", "8",
                          "--format", "json"))
    assert (set_["gpu"], set_["context"]) == ("h100-sxm", 8192)
    assert set_["rows"][0]["engine_version"].startswith("0.19.0 (from [tool.tpcheck]")
    # the same figures as the flags: 236 sequences of 8,192 tokens at t = 8 (vLLM 0.19.0)
    assert set_["rows"][0]["seats"] == flags["rows"][0]["seats"] == 236
    ranked = _json(tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpus", "8", "--format",
                           "json", cwd=tmp_path))
    assert ranked["gpu"] == "h100-sxm" and ranked["context"] == 8192
    # a flag beats the file
    ctx = _json(tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--tp", "8", "--context",
                        "4096", "--format", "json", cwd=tmp_path))
    assert ctx["context"] == 4096
    (tmp_path / "pyproject.toml").write_text('[tool.tpcheck]\ngpu = "nope"\n')
    bad = tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--tp", "8", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "[tool.tpcheck] gpu: unknown GPU 'nope'" in bad.stderr


def test_an_unknown_release_names_the_one_the_figures_follow() -> None:
    doc = _json(tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--engine",
                        "sglang", "--engine-version", "0.33.0", "--tp", "8", "--format", "json"))
    # SGLang has no 0.33.0; the defaults shown are 0.5.23's (the newest read not newer)
    words = doc["rows"][0]["engine_version"]
    assert words.startswith("0.33.0 (from --engine-version; not a release tpcheck has read")
    assert "tables follow 0.5.23, the nearest known" in words
    text = tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--engine",
                   "sglang", "--engine-version", "0.33.0", "--gpus", "8", "--width", "200")
    assert "the tables follow 0.5.23, the nearest known" in text.stdout


def test_the_latency_goal_picks_the_fastest_layout() -> None:
    doc = _json(tpcheck("plan", "fixtures/lint/deepseek-v3-sglang.yaml", "--offline", "--goal",
                        "latency", "--format", "json"))
    rec = doc["recommended"]["latency"]
    one_node = [x for x in doc["layouts"] if x["serves"] and x["pp"] == 1
                and x["nodes_per_replica"] == 1]
    # 8 × H200, one node: TP 8 at 19.45 ms per token beats TP 8 attn-DP 4 at 20.27 ms (which
    # seats more, 56 vs 20: more seats is the throughput goal's tie rule, not latency's)
    fastest = min(x["token_latency_seconds"] for x in one_node)
    assert rec["token_latency_seconds"] == fastest
    assert rec["label"] == "TP 8" and doc["layouts"][0]["label"] == "TP 8"
    assert by_label(doc)["TP 8 attn-DP 4"]["token_latency_seconds"] > fastest
    text = tpcheck("plan", "fixtures/lint/deepseek-v3-sglang.yaml", "--offline", "--goal",
                   "latency", "--width", "200").stdout
    assert "then the fastest come first" in text and "seeds/" not in text


def test_comm_share_is_one_figure_in_the_ranking_the_sweep_and_tp301(tmp_path: Path) -> None:
    path = tmp_path / "r1.sh"
    path.write_text("pip install sglang==0.4.2.post4\n"
                    "python -m sglang.launch_server --model deepseek-ai/DeepSeek-R1 --tp 16 "
                    "--context-length 163840 --nnodes 2 --node-rank 0\n")
    ranked = _json(tpcheck("plan", "--offline", "--gpu", "h100-sxm", "--gpus", "16",
                           "--format", "json", str(path)))
    swept = _json(tpcheck("plan", "deepseek-ai/DeepSeek-R1", "--offline", "--gpu", "h100-sxm",
                          "--engine", "sglang", "--engine-version", "0.4.2.post4", "--tp", "16",
                          "--context", "163840", "--format", "json"))["rows"][0]
    tp16 = by_label(ranked)["TP 16"]
    # 163,840-token sequences: the pool seats 1 at t = 16, so the ranking steps batch 1 like the
    # sweep; the share is T_comm / T_weights of that one step (the floor: no calibration row)
    assert tp16["batch_per_replica"] == 1 and tp16["basis"] == "floor"
    assert tp16["comm_share"] == swept["comm_share"]
    lint = _json_lint(tpcheck("--offline", "--gpu", "h100-sxm", "--format", "json", str(path)))
    [tp301] = [f for f in lint["findings"] if f["code"] == "TP301"]
    [share] = [e for e in tp301["evidence"] if e.get("name") == "decode_comm_share"
               and e["values"]["batch"] == 1]
    assert share["result"] == swept["comm_share"]
    assert round(share["result"], 2) == 0.30  # T_comm / T_weights, not T_comm / T_step
    text = tpcheck("plan", "--offline", "--gpu", "h100-sxm", "--gpus", "16", str(path)).stdout
    assert "comm: all-reduce time of a decode step" in text


def test_options_beside_gpus_are_honoured_or_refused() -> None:
    base = ("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--gpus", "8")
    # --tp and --pp fix those axes: of 8 GPUs, t = 4 leaves 2 × TP 4 and TP 4 × PP 2
    doc = _json(tpcheck(*base, "--tp", "4", "--format", "json"))
    assert sorted(x["label"] for x in doc["layouts"]) == ["2 × TP 4", "TP 4 × PP 2"]
    doc = _json(tpcheck(*base, "--pp", "2", "--format", "json"))
    assert {x["pp"] for x in doc["layouts"]} == {2} and len(doc["layouts"]) == 3  # t = 4, 2, 1
    # contradictions are usage errors (exit 2, one line), not an empty ranking that exits 0
    for extra, said in ((("--tp", "3", "--pp", "3"), "has --tp 3 --pp 3"),
                        (("--dp", "3"), "has --dp 3"),
                        (("--batch", "8"), "--batch is the sweep's")):
        p = tpcheck(*base, *extra)
        assert p.returncode == 2 and p.stdout == "", (extra, p.stdout)
        assert p.stderr.count("\n") == 1 and said in p.stderr, p.stderr


def test_goal_without_a_budget_is_refused() -> None:
    p = tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--goal", "latency")
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1
    assert "--goal ranks the layouts of a GPU budget: give --gpus N" in p.stderr
    # a manifest's GPU count is a budget: --goal ranks it
    doc = _json(tpcheck("plan", "--offline", "fixtures/lint/qwen3-32b-tp16.yaml", "--goal",
                        "latency", "--format", "json"))
    assert doc["goal"] == "latency" and doc["gpus"] == 16


def test_tp_on_a_manifest_is_the_sweep_of_those_sizes() -> None:
    doc = _json(tpcheck("plan", "--offline", "fixtures/lint/qwen3-32b-tp16.yaml", "--tp", "8,16",
                        "--format", "json"))
    assert [r["tp"] for r in doc["rows"]] == [8, 16]
    # the manifest's --gpus budget still ranks when --gpus is given
    ranked = _json(tpcheck("plan", "--offline", "fixtures/lint/qwen3-32b-tp16.yaml", "--tp",
                           "8", "--gpus", "16", "--format", "json"))
    assert sorted(x["label"] for x in ranked["layouts"]) == ["2 × TP 8", "TP 8 × PP 2"]


def test_a_bad_set_value_names_set_not_the_catalog() -> None:
    p = tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--set",
                "num_attention_heads=abc")
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1
    assert p.stderr.startswith("tpcheck: error: argument --set: num_attention_heads: field "
                               "num_attention_heads must be a positive integer, got 'abc'")
    assert "config.json" not in p.stderr


def test_plurals_and_the_context_help() -> None:
    sweep = _json(tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--tp",
                          "1", "--format", "json"))["rows"][0]
    # one H100 of Qwen3-32B: a 9.25 GB pool over 2·64·8·128·2 B = 256 KiB per token × 32,768
    # tokens (8.59 GB a sequence) seats 1
    assert sweep["pool_bytes_per_gpu"] // (262144 * 32768) == sweep["seats"] == 1
    one = tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--gpus", "1",
                  "--width", "200").stdout
    assert "TP 1 — 1 seat, " in one and "1 seats" not in one
    none = tpcheck("plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h100-sxm", "--gpus", "1",
                   "--context", "131072", "--width", "200").stdout
    assert "no layout of 1 GPU serves a sequence" in none
    words = " ".join(tpcheck("plan", "--help").stdout.split())  # the help wraps
    # plan FILE plans at the manifest's context (131,072 where it says so): the help says both
    assert "a model named directly: its maximum capped at 32768" in words
    assert "a manifest's max-" in words
    ar = tpcheck("allreduce", "--gpu", "h100-sxm", "--tp", "1").stdout
    assert ", 1 rank, 1 node, 1 GPU," in ar


def test_a_sweep_of_more_than_256_sizes_is_refused() -> None:
    p = tpcheck("plan", "deepseek-ai/DeepSeek-V3", "--offline", "--gpu", "h100-sxm", "--tp",
                "1-4096")
    assert p.returncode == 2 and p.stdout == "" and "4,096 sizes in one sweep" in p.stderr
    ok = _json(tpcheck("plan", "deepseek-ai/DeepSeek-V3", "--offline", "--gpu", "h100-sxm",
                       "--tp", "1-256", "--format", "json"))
    assert [r["tp"] for r in ok["rows"]] == list(range(1, 257))


def test_a_manifests_release_words_have_one_pair_of_parentheses(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
                    "  - name: v\n    image: vllm/vllm-openai:latest\n"
                    '    args: ["vllm", "serve", "Qwen/Qwen3-32B", "--tensor-parallel-size", "8"]\n'
                    "    resources: {limits: {nvidia.com/gpu: 8}}\n")
    doc = _json(tpcheck("plan", "--offline", "--gpu", "h100-sxm", "--format", "json", str(path)))
    words = doc["engine_version"]
    assert words.endswith("(newest known; image vllm-openai:latest not pinned: pin it to be "
                          "exact)"), words
    assert words.count("(") == 1
