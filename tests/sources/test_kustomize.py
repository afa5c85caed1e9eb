"""Kustomize overlays read as ``kustomize build`` assembles them, each value placed in the file
that supplied it (fixtures/kustomize: a base and two overlays)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.shared import CORPUS
from tpcheck.lint import Linter
from tpcheck.settings import Settings
from tpcheck.sources import iter_files, read_path
from tpcheck.sources.base import Deployment, Span

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures" / "kustomize"


def at(s: Span) -> tuple[str, int, int, int]:
    return Path(s.path).name, s.line, s.column, s.end_column


def one(path: Path) -> Deployment:
    res = read_path(str(path))
    assert res.errors == ()
    (d,) = res.deployments
    return d


def test_strategic_merge_patch_and_image_override() -> None:
    d = one(FIX / "overlays" / "h100" / "kustomization.yaml")
    # containers merged by name: the patch's args replace the base's; env merged by name (the
    # patch's MODEL_ID, the base's HF_HOME); the base's command and image stay
    assert (d.model, d.tensor_parallel_size, d.max_model_len) == (
        "meta-llama/Llama-3.1-70B-Instruct", 16, 8192)
    assert d.env == {"MODEL_ID": "meta-llama/Llama-3.1-70B-Instruct", "HF_HOME": "/cache"}
    # images: newTag v0.8.5-cu126 on vllm/vllm-openai (the base wrote v0.6.4)
    assert (d.image, d.engine_version) == ("vllm/vllm-openai:v0.8.5-cu126", "0.8.5")
    assert (d.gpus_requested, d.gpu_product) == (8, "nvidia-h100-80gb")
    # every value where it is written: patch-tp.yaml line 12 is 8 spaces + "- " +
    # "--tensor-parallel-size=" (23 characters): "16" at columns 34-35
    assert at(d.spans["tensor_parallel_size"]) == ("patch-tp.yaml", 12, 34, 36)
    # line 16: 10 spaces + "value: " → the 33 characters of the model id at 18..50
    assert at(d.spans["model"]) == ("patch-tp.yaml", 16, 18, 51)
    assert at(d.spans["gpus_requested"]) == ("patch-tp.yaml", 19, 30, 31)  # 'nvidia.com/gpu: "8"'
    # the launch starts at the base's command (line 16: 8 spaces + "command: [" → vllm at 19)
    assert (Path(d.path).name, d.span.line, d.span.column) == ("deployment.yaml", 16, 19)
    assert any("kustomize builds" in n and n.endswith("h100/kustomization.yaml")
               for n in d.notes)


def test_inline_json6902_patch_is_placed_in_the_kustomization() -> None:
    d = one(FIX / "overlays" / "json6902" / "kustomization.yaml")
    assert (d.model, d.tensor_parallel_size, d.gpus_requested) == (
        "meta-llama/Llama-3.1-8B-Instruct", 3, 2)
    # line 12 of the kustomization: 8 spaces + "value: " + "--tensor-parallel-size=" → 39
    assert at(d.spans["tensor_parallel_size"]) == ("kustomization.yaml", 12, 39, 40)
    assert at(d.spans["gpus_requested"]) == ("deployment.yaml", 28, 30, 31)  # from the base


def test_a_folder_scan_reads_each_workload_once() -> None:
    paths = list(iter_files([str(FIX)]))
    found = [d for p in paths for d in read_path(p).deployments]
    # the base once (its kustomization changes nothing), each overlay once; the listed patch
    # file is read only through its kustomization
    assert sorted((d.tensor_parallel_size, Path(d.path).name) for d in found) == [
        (2, "deployment.yaml"), (3, "deployment.yaml"), (16, "deployment.yaml")]
    assert read_path(str(FIX / "overlays" / "h100" / "patch-tp.yaml")).deployments == ()
    assert read_path(str(FIX / "base" / "kustomization.yaml")).deployments == ()


def test_overlay_findings_point_at_the_patch(tmp_path: Path) -> None:
    res = Linter(Settings(offline=True)).run([str(FIX / "overlays" / "h100")])
    assert not res.errors
    # t = 16 on 8 GPUs: TP401 on the patch's GPU count; t = 16 > h_kv = 8: TP201 on its t
    by = {f.code: f for f in res.findings}
    assert at(by["TP401"].span) == ("patch-tp.yaml", 19, 30, 31)
    assert at(by["TP201"].span) == ("patch-tp.yaml", 12, 34, 36)


DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: srv}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.4
        args: [--model=$(MODEL_ID), --tensor-parallel-size=2]
        env: [{name: MODEL_ID, value: Qwen/Qwen3-8B}]
"""
PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: srv}
spec:
  template:
    spec:
      containers:
      - name: vllm
        args: [--model=$(MODEL_ID), --tensor-parallel-size=4]
"""


def test_lone_patch_names_the_base_it_would_merge_into(tmp_path: Path) -> None:
    (tmp_path / "srv.yaml").write_text(DEPLOY)
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv" / "patch.yaml").write_text(PATCH)
    res = Linter(Settings(offline=True)).run([str(tmp_path / "srv" / "patch.yaml")])
    [f] = [f for f in res.findings if f.code == "TP000"]
    assert ("looks like a kustomize patch (no image): kustomize would merge it into Deployment "
            "srv in ../srv.yaml") in f.text
    # no guess of the model from the base: the patch alone stays unresolved
    assert "$(MODEL_ID)" in f.message


def test_corpus_patch_names_its_base() -> None:
    patch = (CORPUS / "GoogleCloudPlatform__kubernetes-engine-samples" / "ai-ml"
             / "llm-serving-gemma" / "vllm" / "vllm-7b-kvcache" / "patch.yaml")
    (d,) = read_path(str(patch)).deployments
    # eleven files beside the folder define Deployment vllm-gemma-deployment; the one named
    # like the patch's folder comes first
    assert ("looks like a kustomize patch (no image): kustomize would merge it into Deployment "
            "vllm-gemma-deployment in ../vllm-7b-kvcache.yaml (and 10 other file(s) there)"
            ) in " ".join(d.notes)


def test_bad_kustomizations_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "srv.yaml").write_text(DEPLOY)
    cases = {
        "missing": "resources:\n  - srv.yaml\n  - nothere.yaml\n",
        "op": ("resources: [srv.yaml]\npatches:\n- target: {kind: Deployment, name: srv}\n"
               "  patch: |\n    - op: move\n      from: /a\n      path: /b\n"),
        "loop": "resources:\n  - .\n",
        "fifo": "resources: [pipe.yaml]\n",  # opening a FIFO to read would wait forever
        "notmap": "- srv.yaml\n",  # was read as an empty kustomization, silently
        "scalar": "resources: srv.yaml\n",  # likewise: the app it names went unchecked
    }
    for name, text in cases.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "srv.yaml").write_text(DEPLOY)
        (tmp_path / name / "kustomization.yaml").write_text(text)
    os.mkfifo(tmp_path / "fifo" / "pipe.yaml")
    # a chain of ten distinct kustomizations, each including the next: no cycle, but past
    # MAX_DEPTH = 8 levels of nesting
    chain = tmp_path / "chain"
    for i in range(10):
        (chain / str(i)).mkdir(parents=True)
        (chain / str(i) / "kustomization.yaml").write_text(f"resources: [../{i + 1}]\n")
    ok = tmp_path / "ok.sh"
    ok.write_text("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3\n")
    p = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    err = p.stderr + p.stdout
    # line 3 of missing/kustomization.yaml: "  - nothere.yaml" (the entry at column 5)
    assert f"{tmp_path / 'missing' / 'kustomization.yaml'}:3:5: cannot read" in err
    # the inline patch's line 1 is the kustomization's line 5: 4 spaces + "- " → column 7
    assert (f"{tmp_path / 'op' / 'kustomization.yaml'}:5:7: JSON patch operation 'move' is not "
            "read by tpcheck") in err
    assert "kustomizations nest more than 8 deep" in err  # the chain
    assert (f"{tmp_path / 'notmap' / 'kustomization.yaml'}:1:1: a kustomization must be a "
            "mapping of fields") in err
    # "resources: " is 11 characters: the scalar starts at column 12
    assert f"{tmp_path / 'scalar' / 'kustomization.yaml'}:1:12: resources must be a list" in err
    # loop/kustomization.yaml line 2 is "  - ." (the entry at column 5): it includes itself
    assert (f"{tmp_path / 'loop' / 'kustomization.yaml'}:2:5: .: leads back to a kustomization "
            "already being built (a cycle)") in err
    assert f"{tmp_path / 'fifo' / 'pipe.yaml'}: not a regular file" in err
    assert "ok.sh:1:" in p.stdout and "TP101" in p.stdout  # the other files are still checked


def test_inline_suppression_in_the_patch_covers_the_overlay_finding(tmp_path: Path) -> None:
    # Qwen3-8B has 32 heads: the patch's t = 3 is refused (TP101)
    (tmp_path / "srv.yaml").write_text(DEPLOY)
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [srv.yaml]\npatchesStrategicMerge: [patch.yaml]\n")
    (tmp_path / "patch.yaml").write_text(PATCH.replace("=4", "=3"))
    res = Linter(Settings(offline=True)).run([str(tmp_path / "kustomization.yaml")])
    [f] = [f for f in res.findings if f.code == "TP101"]
    # line 9: 8 spaces + "args: [" (7) + "--model=$(MODEL_ID), " (21) + "--tensor-parallel-size="
    # (23) → "3" at column 60
    assert at(f.span) == ("patch.yaml", 9, 60, 61)
    (tmp_path / "patch.yaml").write_text(PATCH.replace("=4", "=3").replace(
        "        args: [", "        # tpcheck: ignore[TP101]\n        args: ["))
    res = Linter(Settings(offline=True)).run([str(tmp_path / "kustomization.yaml")])
    assert [f.code for f in res.findings if f.code == "TP101"] == []
    assert res.suppressed == 1


GENERATED = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: srv}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.4
        args: [--model=$(MODEL_ID), --tensor-parallel-size=$(TP)]
        envFrom:
        - configMapRef: {name: vllm-settings}
        env:
        - {name: TP, value: "2"}
"""


def test_config_map_generator_literals_feed_env_from(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "srv.yaml").write_text(GENERATED)
    (tmp_path / "base" / "kustomization.yaml").write_text(
        "resources: [srv.yaml]\n"
        "configMapGenerator:\n"
        "- name: vllm-settings\n"
        "  literals:\n"
        "  - MODEL_ID=Qwen/Qwen3-8B\n"
        "  - TP=8\n")
    (tmp_path / "prod").mkdir()
    (tmp_path / "prod" / "kustomization.yaml").write_text(
        "resources: [../base]\n"
        "configMapGenerator:\n"
        "- name: vllm-settings\n"
        "  behavior: merge\n"
        "  literals: [MODEL_ID=Qwen/Qwen3-32B]\n")
    base = one(tmp_path / "base" / "kustomization.yaml")
    # the container's own env (TP=2) wins over envFrom's TP=8, as in Kubernetes
    assert (base.model, base.tensor_parallel_size) == ("Qwen/Qwen3-8B", 2)
    # the value is in the kustomization, the word in srv.yaml: the span is the reference
    # $(MODEL_ID) in the word (line 10: 8 spaces + "args: [" + "--model=" are 23 characters,
    # so its 11 characters are columns 24..34)
    assert at(base.spans["model"]) == ("srv.yaml", 10, 24, 35)
    prod = one(tmp_path / "prod" / "kustomization.yaml")
    assert prod.model == "Qwen/Qwen3-32B"  # the overlay's literal wins over the base's
