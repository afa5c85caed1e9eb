"""TP303 experts-cross-nodes: an expert-parallel group wider than a node all-to-alls over the
network (info, with the bytes each token sends off its node and their time); quiet inside one
node and for a dense model. More layouts (DP-attention, vLLM DP+EP) in test_groups.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Severity
from tpcheck.sources import read_path

DOC = Path(__file__).resolve().parents[2] / "rules" / "TP303.md"


def lws() -> str:
    """rules/TP303.md's example: DeepSeek-V3, --tp 16 --attn-dp-size 16 with DeepEP over a
    LeaderWorkerSet of 2 pods × 8 GPUs."""
    text = DOC.read_text(encoding="utf-8")
    return text.split("```yaml fires\n", 1)[1].split("```", 1)[0]


def test_expert_group_over_two_nodes() -> None:
    text = lws()
    f = only(lint_text(text, name="lws.yaml", gpu="h200"), "TP303")
    assert f.severity == Severity.INFO
    # the `16` of the leader's "--tp", "16" (line 14)
    line = text.splitlines()[13]
    at = line.index('"--tp", "16"') + len('"--tp", "') + 1
    assert (f.span.line, f.span.column, f.span.end_column) == (14, at, at + 2)
    group, node, a2a, secs = f.formulas
    assert (group.values["ep"], node.result) == (16, 8)
    # DeepSeek-V3: 58 MoE layers, top-8 experts, d = 7,168, bf16; each token's dispatch and
    # combine send L_moe·2·k·d·b·(ep − g)/ep = 58·2·8·7168·2·(16 − 8)/16 = 6,651,904 B off the
    # node (g = 8 ranks of the 16 share it)
    assert a2a.expression == "L_moe·2·k·d·b·(ep − g)/ep"
    assert dict(a2a.values) == {"L_moe": 58, "k": 8, "d": 7168, "b": 2, "ep": 16, "g": 8}
    assert a2a.result == 58 * 2 * 8 * 7168 * 2 * (16 - 8) / 16 == 6_651_904
    # at InfiniBand NDR, 400 Gb/s = 50 GB/s per GPU: 6,651,904 / 50e9 s = 133.0 µs
    assert secs.values["B"] == 50e9
    assert secs.result == pytest.approx(6_651_904 / 50e9)
    assert "16 ranks over 2 nodes" in f.text
    assert "each token sends 6.34 MiB off its node per forward pass (133.0 µs" in f.text
    assert (f.fix or "").startswith("expected for wide expert parallelism")
    # the node size's source, and the group's other pod template (line 26), are related spans
    assert [s.line for s, _ in f.related] == [19, 26]


def test_the_fix_speaks_of_what_the_pods_already_have() -> None:
    # the example names DeepEP but requests no NIC: the fix asks for the NICs only
    f = only(lint_text(lws(), name="lws.yaml", gpu="h200"), "TP303")
    assert f.fix == ("expected for wide expert parallelism: give the pods RDMA NICs (GPUDirect) "
                     "for the deepep all-to-all; or keep the expert group inside one node")
    # with an RDMA NIC requested too (KServe's DeepEP samples ask rdma/roce_gdr: 1), it asks to
    # check them rather than to add what is there
    nic = 'nvidia.com/gpu: "8"\n                rdma/roce_gdr: 1'
    text = lws().replace('nvidia.com/gpu: "8"', nic)
    f = only(lint_text(text, name="lws.yaml", gpu="h200"), "TP303")
    assert f.fix == ("expected for wide expert parallelism: the pods request rdma/roce_gdr=1 and "
                     "the deepep all-to-all; check that those NICs are GPUDirect RDMA, or keep "
                     "the expert group inside one node")


ONE_NODE = """apiVersion: v1
kind: Pod
metadata: {name: x}
spec:
  containers:
    - name: sglang
      image: lmsysorg/sglang:v0.5.23
      command: ["python3", "-m", "sglang.launch_server", "--model-path",
                "deepseek-ai/DeepSeek-V3", "--tp", "8", "--attn-dp-size", "8",
                "--moe-a2a-backend", "deepep"]
      resources: {limits: {nvidia.com/gpu: "8"}}
"""


@pytest.mark.parametrize("text", [
    ONE_NODE,  # 8 GPUs in one pod: the group of 8 stays inside the node
    # the example's two pods with a dense model: no experts to exchange
    lws().replace("deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-32B"),
])
def test_quiet(text: str) -> None:
    (d, *_) = read_path("m.yaml", text).deployments  # read, with its GPUs per pod
    assert d.gpus_requested == 8
    assert [f for f in lint_text(text, name="m.yaml", gpu="h200") if f.code == "TP303"] == []
