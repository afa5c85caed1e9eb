"""TP401 gpu-count-mismatch, every branch: more ranks than GPUs (error), fewer (warning), over
several pods of a LeaderWorkerSet; quiet when they match, with no GPU request, and inside a
Ray cluster whose worker pods bring the rest."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Finding, Severity
from tpcheck.sources import read_path

MODEL = "meta-llama/Llama-3.1-70B-Instruct"


def pod(tp: int, gpus: int, extra: str = "") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: x}}
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.33.0
      args: ["vllm", "serve", "{MODEL}", "--tensor-parallel-size", "{tp}"{extra}]
      resources:
        limits:
          nvidia.com/gpu: "{gpus}"
"""


def lws(tp: int, gpus: int, size: int) -> str:
    container = f"""containers:
          - name: vllm
            image: vllm/vllm-openai:v0.33.0
            args: ["vllm", "serve", "{MODEL}", "--tensor-parallel-size", "{tp}"]
            resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}"""
    return f"""apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {{name: x}}
spec:
  leaderWorkerTemplate:
    size: {size}
    leaderTemplate:
      spec:
        {container}
"""


def _formulas(f: Finding, ranks: tuple[int, int, int], gpus: tuple[int, int]) -> None:
    r, g = f.formulas
    assert (r.expression, tuple(r.values.values())) == ("t·p·dp", ranks)
    assert r.result == ranks[0] * ranks[1] * ranks[2]
    assert (g.expression, tuple(g.values.values())) == ("gpus_per_pod·pods", gpus)
    assert g.result == gpus[0] * gpus[1]


def _gpu_span(f: Finding, text: str, gpus: int) -> None:
    lines = text.splitlines()
    line = next(i for i, ln in enumerate(lines, 1) if f'nvidia.com/gpu: "{gpus}"' in ln)
    col = lines[line - 1].index(f'"{gpus}"') + 2  # 1-based, past the opening quote
    # the value inside the quotes
    assert (f.span.line, f.span.column, f.span.end_column) == (line, col, col + len(str(gpus)))


def test_more_ranks_than_gpus_cannot_start() -> None:
    text = pod(8, 4)  # t·p·dp = 8·1·1 = 8 ranks on 4 GPUs
    f = only(lint_text(text, name="pod.yaml"), "TP401")
    assert f.severity == Severity.ERROR
    _gpu_span(f, text, 4)
    _formulas(f, (8, 1, 1), (4, 1))
    assert '"World size (8) is larger than the number of available GPUs (4)"' in f.text
    assert f.fix == "request 8 GPUs, or lower the parallel sizes to fit 4"
    assert [m for _, m in f.related] == ["tensor parallel size 8"]


def test_fewer_ranks_leave_gpus_idle() -> None:
    text = pod(4, 8)  # 4 ranks on 8 GPUs: 8 − 4 = 4 idle
    f = only(lint_text(text, name="pod.yaml"), "TP401")
    assert f.severity == Severity.WARNING
    _gpu_span(f, text, 8)
    _formulas(f, (4, 1, 1), (8, 1))
    assert f.message == "t·p·dp = 4 ranks but 8 GPUs requested: 4 GPUs sit idle"


def test_over_the_pods_of_a_leader_worker_set() -> None:
    # 16 ranks on 4 GPUs per pod × 2 pods = 8
    f = only(lint_text(lws(16, 4, 2), name="lws.yaml"), "TP401")
    assert f.severity == Severity.ERROR
    _formulas(f, (16, 1, 1), (4, 2))
    assert "requests 4 per pod × 2 pods GPUs" in f.text


@pytest.mark.parametrize("text", [
    pod(8, 8),  # 8 = 8
    pod(4, 4, ', "--pipeline-parallel-size", "2", "--data-parallel-size", "1"').replace(
        'gpu: "4"', 'gpu: "8"'),  # 4·2·1 = 8
    lws(16, 8, 2),  # 16 = 8·2
    pod(8, 8).replace('          nvidia.com/gpu: "8"\n', "          cpu: 4\n"),  # no GPU request
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text, name="m.yaml") if f.code == "TP401"] == []


def test_quiet_in_a_ray_cluster() -> None:
    # a KubeRay head group with 4 GPUs runs t = 8: the worker group brings the other 4
    text = f"""apiVersion: ray.io/v1
kind: RayService
metadata: {{name: x}}
spec:
  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers:
            - name: head
              image: vllm/vllm-openai:v0.33.0
              args: ["vllm", "serve", "{MODEL}", "--tensor-parallel-size", "8"]
              resources: {{limits: {{nvidia.com/gpu: "4"}}}}
"""
    (d,) = read_path("ray.yaml", text).deployments
    assert (d.ray_cluster, d.gpus_requested, d.tensor_parallel_size) == (True, 4, 8)
    assert [f for f in lint_text(text, name="ray.yaml") if f.code == "TP401"] == []
