"""A vllm/vllm-openai container with only `args`: the image's entrypoint is `vllm serve`."""

from __future__ import annotations

from tpcheck.sources import read_path

POD = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.33.0
      args: [meta-llama/Llama-3.1-70B-Instruct, --tensor-parallel-size, "6"]
"""


def test_args_only_container_reads_the_positional_model() -> None:
    [d] = read_path("pod.yaml", POD).deployments
    assert (d.engine, d.model, d.tensor_parallel_size) == (
        "vllm", "meta-llama/Llama-3.1-70B-Instruct", 6)
    # line 8: `      args: [meta-llama/...` — the model starts after "[" at column 14
    assert (d.spans["model"].line, d.spans["model"].column) == (8, 14)
