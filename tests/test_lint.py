"""The lint command's contract: exit codes, suppressions, settings, formats, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import said

ROOT = Path(__file__).resolve().parents[1]
TP6 = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6\n"
TP8 = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8\n"


def run(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpcheck.cli", *args], capture_output=True,
                          text=True, cwd=cwd, input=stdin, timeout=60)


def codes(p: subprocess.CompletedProcess[str]) -> list[str]:
    return [f["code"] for f in json.loads(p.stdout)["findings"]]


def test_exit_codes_0_1_2(tmp_path: Path) -> None:
    (tmp_path / "bad.sh").write_text(TP6)
    (tmp_path / "good.sh").write_text(TP8)
    assert run("--offline", "good.sh", cwd=tmp_path).returncode == 0
    p = run("--offline", "bad.sh", cwd=tmp_path)
    assert p.returncode == 1 and "bad.sh:1:69: TP101 [*] [error]" in p.stdout
    p = run("--offline", "--no-such-flag", "bad.sh", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_broken_file_is_one_line_and_others_still_checked(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("kind: Pod\nspec: [unclosed\n  containers:\n")
    (tmp_path / "bad.sh").write_text(TP6)
    p = run("--offline", ".", cwd=tmp_path)
    assert p.returncode == 2
    err = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(err) == 1
    assert err[0].startswith("tpcheck: ") and "broken.yaml:3:13: YAML does not parse" in err[0]
    assert "Traceback" not in p.stderr
    assert "TP101" in p.stdout  # the good file was still linted


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.sh", "# tpcheck: ignore[TP101, TP102, TP103]\n" + TP6),
        ("b.sh", TP6.rstrip("\n") + "  # tpcheck: ignore\n"),
        ("c.py", "from vllm import LLM\n# tpcheck: ignore[TP101,TP102,TP103]\n"
                 "llm = LLM('meta-llama/Llama-3.1-70B-Instruct', tensor_parallel_size=6)\n"),
    ],
)
def test_inline_suppression(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    p = run("--offline", "--format", "json", name, cwd=tmp_path)
    assert codes(p) == [] and p.returncode == 0


def test_suppression_names_codes_not_prefixes(tmp_path: Path) -> None:
    # `ignore[TP1]` is not a code: nothing is suppressed (prefixes are for --select only)
    (tmp_path / "c.sh").write_text("# tpcheck: ignore[TP1]\n" + TP6)
    p = run("--offline", "--format", "json", "c.sh", cwd=tmp_path)
    assert set(codes(p)) == {"TP101", "TP102", "TP103"}


def test_report_unused_ignores(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text("# tpcheck: ignore[TP201]\n" + TP8)
    p = run("--offline", "--report-unused-ignores", "a.sh", cwd=tmp_path)
    assert "a.sh:1:1: unused suppression: # tpcheck: ignore[TP201]" in p.stdout


def test_select_ignore_and_fail_on(tmp_path: Path) -> None:
    (tmp_path / "bad.sh").write_text(TP6)
    p = run("--offline", "--format", "json", "--select", "TP101", "bad.sh", cwd=tmp_path)
    assert codes(p) == ["TP101"]
    p = run("--offline", "--format", "json", "--ignore", "TP1", "bad.sh", cwd=tmp_path)
    assert codes(p) == [] and p.returncode == 0
    p = run("--offline", "--select", "TP999", "bad.sh", cwd=tmp_path)
    assert p.returncode == 2 and "unknown rule code" in p.stderr


def test_fail_on_error_passes_warnings(tmp_path: Path) -> None:
    (tmp_path / "w.sh").write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16 "
                                   "--max-model-len 32768\n")
    p = run("--offline", "--gpu", "h100-sxm", "w.sh", cwd=tmp_path)
    assert p.returncode == 1 and "TP201 [*] [warning]" in p.stdout
    p = run("--offline", "--gpu", "h100-sxm", "--fail-on", "error", "w.sh", cwd=tmp_path)
    assert p.returncode == 0


def test_settings_file(tmp_path: Path) -> None:
    (tmp_path / "w.sh").write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16 "
                                   "--max-model-len 32768\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tpcheck]\ngpu = "h100-sxm"\nignore = ["TP203"]\nfail-on = "error"\n')
    p = run("--offline", "--format", "json", "w.sh", cwd=tmp_path)
    assert codes(p) == ["TP201"] and p.returncode == 0
    (tmp_path / "pyproject.toml").write_text('[tool.tpcheck]\ngpus = "h100"\n')
    p = run("--offline", "w.sh", cwd=tmp_path)
    assert p.returncode == 2 and "unknown key 'gpus'" in p.stderr


def test_model_mapping_and_unresolved(tmp_path: Path) -> None:
    (tmp_path / "m.sh").write_text("vllm serve /models/llama-70b --tensor-parallel-size 6\n")
    p = run("--offline", "--format", "json", "m.sh", cwd=tmp_path)
    assert codes(p) == ["TP000"]
    (tmp_path / ".tpcheck.toml").write_text(
        '[models]\n"/models/llama-70b" = "meta-llama/Llama-3.1-70B-Instruct"\n')
    p = run("--offline", "--format", "json", "m.sh", cwd=tmp_path)
    assert set(codes(p)) == {"TP101", "TP102", "TP103"}


def test_stdin_with_filename(tmp_path: Path) -> None:
    p = run("--offline", "--format", "json", "--stdin-filename", "deploy.sh", "-", cwd=tmp_path,
            stdin=TP6)
    doc = json.loads(p.stdout)
    assert {f["path"] for f in doc["findings"]} == {"deploy.sh"}


def test_github_annotations(tmp_path: Path) -> None:
    (tmp_path / "bad.sh").write_text(TP6)
    p = run("--offline", "--format", "github", "--select", "TP101", "bad.sh", cwd=tmp_path)
    [line] = p.stdout.splitlines()
    assert line.startswith("::error file=bad.sh,line=1,col=69,endLine=1,endColumn=70,"
                           "title=TP101 heads-not-divisible::")


def test_statistics(tmp_path: Path) -> None:
    (tmp_path / "bad.sh").write_text(TP6 + TP6)
    p = run("--offline", "--statistics", "bad.sh", cwd=tmp_path)
    assert "    2  TP101  heads-not-divisible" in p.stdout


def test_kubernetes_annotation_suppresses(tmp_path: Path) -> None:
    manifest = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: q
  annotations:
    tpcheck.dev/ignore: "TP201,TP203: two nodes on purpose"
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: [vllm, serve, Qwen/Qwen3-32B, --tensor-parallel-size, "16",
                 --max-model-len, "32768"]
          resources: {limits: {nvidia.com/gpu: 16}}
"""
    (tmp_path / "a.yaml").write_text(manifest)
    p = run("--offline", "--gpu", "h100-sxm", "--format", "json", "a.yaml", cwd=tmp_path)
    assert codes(p) == [] and p.returncode == 0
    (tmp_path / "b.yaml").write_text(manifest.replace("TP201,TP203", "TP203"))
    p = run("--offline", "--gpu", "h100-sxm", "--format", "json", "b.yaml", cwd=tmp_path)
    assert codes(p) == ["TP201"]


def _k8s(args: str, *, gpus: int, selector: str = "", extra_spec: str = "") -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: x}}
spec:
  template:
    spec:
{selector}      containers:
        - name: engine
          image: vllm/vllm-openai:v0.33.0
          args: [{args}]
          resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
{extra_spec}"""


def test_manifest_gpu_wins_over_the_flag(tmp_path: Path) -> None:
    # Llama-3.1-70B bf16 at TP 2: 131.4 GiB / 2 ≈ 65.7 GiB of weights per GPU. On an H100
    # (79.19 GiB · 0.92 = 72.9 GiB) that fits; on an L4 (22 GiB) it does not.
    args = "vllm, serve, meta-llama/Llama-3.1-70B-Instruct, -tp, '2', --max-model-len, '4096'"
    sel = "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
    (tmp_path / "l4.yaml").write_text(_k8s(args, gpus=2, selector=sel))
    p = run("--offline", "--gpu", "h100-sxm", "--format", "json", "l4.yaml", cwd=tmp_path)
    assert "TP205" in codes(p)


def test_tpu_manifest_gets_no_gpu_physics(tmp_path: Path) -> None:
    args = "vllm, serve, meta-llama/Llama-3.1-70B-Instruct, -tp, '16'"
    sel = "      nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice}\n"
    (tmp_path / "tpu.yaml").write_text(_k8s(args, gpus=16, selector=sel))
    p = run("--offline", "--gpu", "h100-sxm", "--format", "json", "tpu.yaml", cwd=tmp_path)
    assert not [c for c in codes(p) if c.startswith(("TP2", "TP3"))]


def test_cpu_offload_counts_against_weights(tmp_path: Path) -> None:
    # 131.4 GiB of bf16 weights at TP 1 on an 80 GB H100: TP205 — unless 60 GiB stay in CPU
    # memory (--cpu-offload-gb 60): 131.4 − 60 = 71.4 GiB ≤ 79.19 · 0.98 = 77.6 GiB.
    base = "vllm, serve, meta-llama/Llama-3.3-70B-Instruct, --max-model-len, '4096', " \
           "--gpu-memory-utilization, '0.98'"
    (tmp_path / "a.yaml").write_text(_k8s(base, gpus=1))
    (tmp_path / "b.yaml").write_text(_k8s(base + ", --cpu-offload-gb, '60'", gpus=1))
    pa = run("--offline", "--gpu", "h100-sxm", "--format", "json", "a.yaml", cwd=tmp_path)
    pb = run("--offline", "--gpu", "h100-sxm", "--format", "json", "b.yaml", cwd=tmp_path)
    assert "TP205" in codes(pa) and "TP205" not in codes(pb)


def test_unresolved_tp_is_not_taken_as_one(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(
        "vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size $((NODES * 8))\n")
    p = run("--offline", "--gpu", "h100-sxm", "--format", "json", "run.sh", cwd=tmp_path)
    assert codes(p) == []


def test_ray_cluster_brings_gpus_from_worker_pods(tmp_path: Path) -> None:
    ray = """apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: r}
spec:
  headGroupSpec:
    template:
      spec:
        containers:
          - name: head
            image: vllm/vllm-openai:v0.33.0
            command: [sh, -c, "ray start --head && vllm serve Qwen/Qwen3-8B -tp 2
                              --distributed-executor-backend ray"]
            resources: {limits: {nvidia.com/gpu: 1}}
  workerGroupSpecs:
    - replicas: 1
      template:
        spec:
          containers:
            - name: worker
              resources: {limits: {nvidia.com/gpu: 1}}
"""
    (tmp_path / "ray.yaml").write_text(ray)
    p = run("--offline", "--format", "json", "ray.yaml", cwd=tmp_path)
    assert "TP401" not in codes(p)


def test_comment_above_a_continued_command_covers_it(tmp_path: Path) -> None:
    # a `\`-continued command cannot hold a comment on its inner lines: the line above the
    # launch (line 3 here, comment on line 2) suppresses the findings on the `6` (line 4)
    (tmp_path / "run.sh").write_text(
        "#!/bin/sh\n# tpcheck: ignore[TP101,TP102,TP103]\n"
        "exec vllm serve meta-llama/Llama-3.1-70B-Instruct \\\n"
        "    --tensor-parallel-size 6 \\\n    --max-model-len 8192\n")
    p = run("--offline", "--format", "json", "run.sh", cwd=tmp_path)
    assert codes(p) == []


def test_the_real_corpus_lints_without_internal_errors() -> None:
    from tests.shared import CORPUS

    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus/real not beside this checkout")
    p = run("--offline", "--gpu", "h100-sxm", "--format", "json", str(CORPUS), cwd=ROOT)
    assert p.returncode == 2  # three files in the corpus are invalid YAML as published
    doc = json.loads(p.stdout)
    assert doc["summary"]["files"] >= 120
    errors = [e["message"] for e in doc["errors"]]
    assert len(errors) == 3 and all(m.startswith("YAML does not parse") for m in errors)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    found = {(f["code"], Path(f["path"]).name) for f in doc["findings"]}
    # triaged false positives that must stay fixed (see the closing note of the rules issue):
    # --cpu-offload-gb 60 on a GH200; Ray clusters bringing GPUs from worker pods; TPU slices
    assert ("TP205", "llama-3.3-70b-instruct-bf16-gh200.yaml") not in found
    assert ("TP401", "fleet-two-node.yaml") not in found
    assert ("TP401", "deepseek-r1-huggingface.yaml") not in found
    assert not {c for c, n in found if n == "vllm-llama3-70b.yaml" and c.startswith("TP2")}
    # and the real problems stay found: 4 GPUs idle (TP 4 on 8), MLA replicated under TP
    assert ("TP401", "nvidia-vllm-post-trained-gemma3-27-deploy.yaml") in found
    assert ("TP202", "ray-service.deepseek.yaml") in found


def test_sglang_context_exceeds_pool_is_a_warning_in_its_own_words(tmp_path: Path) -> None:
    # Qwen3-32B at TP 1 on an H100 under SGLang: mem_fraction_static 0.829 (memory_hook.py rule)
    # · 79.19 GiB = 65.6 GiB, minus 61.0 GiB of weights leaves ≈ 4.6 GiB; 40,960 tokens need
    # 40,960 · 2·64·8·128·2 B = 10 GiB. SGLang warns (tp_worker.py) instead of refusing.
    (tmp_path / "s.sh").write_text("python -m sglang.launch_server --model-path Qwen/Qwen3-32B "
                                   "--tp 1 --context-length 40960\n")
    p = run("--offline", "--gpu", "h100-sxm", "--format", "json", "s.sh", cwd=tmp_path)
    [f] = [f for f in json.loads(p.stdout)["findings"] if f["code"] == "TP204"]
    assert f["severity"] == "warning"
    assert "fewer than --context-length 40960" in said(f)
    assert "10.00 GiB of KV per GPU" in said(f)
