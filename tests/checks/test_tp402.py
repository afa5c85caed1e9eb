"""TP402 pod-exceeds-node: a pod asking for more GPUs than a node of its selected type has
stays Pending. The node shape is the instance type's, or the largest known machine of the
selected GPU (stated as an assumption); TP201 agrees with it about nodes."""

from __future__ import annotations

from tests.checks.rulecase import lint_text, only

POD = """apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  nodeSelector: {{{label}: {value}}}
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.33.0
      args: [vllm, serve, Qwen/Qwen3-32B, --tensor-parallel-size, '{tp}']
      resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


def pod(gpus: int, tp: int | None = None, label: str = "nvidia.com/gpu.product",
        value: str = "NVIDIA-H100-80GB-HBM3") -> str:
    return POD.format(gpus=gpus, tp=tp or gpus, label=label, value=value)


def test_sixteen_gpus_on_an_h100_node_selector() -> None:
    found = lint_text(pod(16), name="pod.yaml", gpu=None)
    f = only(found, "TP402")
    assert f.severity.value == "error"
    # H100 SXM machines in the table: p5.48xlarge, a3-*-8g, ND96isr H100 v5, BM.GPU.H100.8 → 8
    assert f.message == "pod requests 16 GPUs, its node type has 8: no node can schedule it"
    [node] = [a for a in f.assumptions if a.kind == "node"]
    assert node.text.startswith("the node label NVIDIA-H100-80GB-HBM3 names h100-sxm, whose "
                                "largest known node has 8 GPUs (")
    assert f.formulas[0].values == {"gpus_per_pod": 16, "gpus_per_node": 8}
    assert f.formulas[0].result is False
    # the span is the GPU request ("nvidia.com/gpu: 16" on line 10)
    assert f.span.line == 10
    # TP201 speaks of nodes in the same voice
    tp201 = only(found, "TP201")
    assert any("no node of the type the pod selects holds its 16 GPUs (8 each: TP402)" in n
               for n in tp201.notes)
    # TP401 has nothing to say: t·p·dp = 16 = the GPUs requested
    assert "TP401" not in {x.code for x in found}


def test_an_instance_type_is_its_own_node_shape() -> None:
    f = only(lint_text(pod(16, label="node.kubernetes.io/instance-type", value="p5.48xlarge"),
                       name="pod.yaml", gpu=None), "TP402")
    assert [a.text for a in f.assumptions if a.kind == "node"] == ["a p5.48xlarge node has 8 GPUs"]


def test_quiet_when_the_pod_fits_one_node() -> None:
    assert "TP402" not in {f.code for f in lint_text(pod(8), name="pod.yaml", gpu=None)}


def test_other_gpus_by_their_largest_node() -> None:
    # L4 machines in the table go up to 8 GPUs (g6.48xlarge): 16 in one pod do not fit
    f = only(lint_text(pod(16, value="NVIDIA-L4"), name="pod.yaml", gpu=None), "TP402")
    assert f.message.endswith("its node type has 8: no node can schedule it")


def test_quiet_without_a_node_type() -> None:
    # --gpu names the GPU for the physics, not a node the pod selects
    text = pod(16).replace("  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n",
                           "")
    assert "TP402" not in {f.code for f in lint_text(text, name="pod.yaml", gpu="h100-sxm")}
