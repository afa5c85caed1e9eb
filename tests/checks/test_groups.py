"""Issue 18: the groups that really all-reduce (DP-attention, EP) and one finding per LWS group.

Engine facts (cited from /work/shared/engines/ and the released wheels):
- SGLang 0.5.23 ``attn_tp_size = tp_size // attn_dp_size // attn_cp_size``
  (runtime_context.py:73-76); ``moe_tp_size = tp_size // moe_ep_size // moe_dp_size``
  (model_executor/model_runner_components/moe_ep_setup.py:154); ``--ep-size`` defaults to 1
  (arg_groups/fields/parallel.py:281); the all-to-all backends (deepep, ...) set
  ``ep_size = tp_size`` (arg_groups/overrides.py:1578-1619).
- vLLM 0.33 ``FusedMoEParallelConfig.make`` flattens the MoE group to t·dp (fused_moe/config.py
  l.1112) and, with ``--enable-expert-parallel``, splits the experts over it (ep = t·dp).
"""

from __future__ import annotations

from pathlib import Path

from tpcheck.checks.base import Finding
from tpcheck.lint import Linter
from tpcheck.physics.groups import a2a_bytes_per_token, comm_groups
from tpcheck.settings import Settings

LWS = """apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: deepseek
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
          - name: leader
            image: lmsysorg/sglang:v0.5.23
            command: ["python3", "-m", "sglang.launch_server", "--model-path",
                      "deepseek-ai/DeepSeek-V3", "--tp", "16",{flags} "--nnodes", "2",
                      "--node-rank", "0"]
            resources:
              limits:
                nvidia.com/gpu: "8"
    workerTemplate:
      spec:
        containers:
          - name: worker
            image: lmsysorg/sglang:v0.5.23
            command: ["python3", "-m", "sglang.launch_server", "--model-path",
                      "deepseek-ai/DeepSeek-V3", "--tp", "16",{flags} "--nnodes", "2",
                      "--node-rank", "1"]
            resources:
              limits:
                nvidia.com/gpu: "8"
"""
DPA_DEEPEP = (' "--dp", "16", "--enable-dp-attention", "--moe-a2a-backend", "deepep",'
              ' "--moe-dense-tp-size", "1",')
DPA_ONLY = ' "--dp", "16", "--enable-dp-attention",'


def run(tmp_path: Path, flags: str) -> tuple[Path, list[Finding]]:
    p = tmp_path / "lws.yaml"
    p.write_text(LWS.replace("{flags}", flags))
    res = Linter(Settings(offline=True, gpu="h200")).run([str(p)])
    assert not res.errors, res.errors
    return p, res.findings


def codes(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


def test_multi_node_dp_attention_lws_gets_no_tp301(tmp_path: Path) -> None:
    # tp 16, attn_dp 16 → attn_tp = 16 // 16 = 1; deepep → ep = tp = 16, moe_tp = 16 // 16 = 1;
    # --moe-dense-tp-size 1: no group wider than 1 all-reduces, so nothing crosses the nodes.
    _, found = run(tmp_path, DPA_DEEPEP)
    assert codes(found, "TP301") == []
    # The experts' all-to-all does span both pods: one TP303 (info) for the whole group.
    [f] = codes(found, "TP303")
    assert f.severity.value == "info"
    assert f.span.line == 14  # the leader's "16" (the worker's is related information)
    assert [sp.line for sp, _ in f.related] == [18, 25]  # the nvidia.com/gpu "8", the worker
    assert "not an all-reduce" in f.text
    # DeepSeek-V3: 61 layers, first_k_dense_replace 3 → 58 MoE layers, top-8, d = 7168, bf16:
    # 58·2·8·7168·2 B · (16 − 8)/16 = 6,651,904 B = 6.34 MiB per token off the node;
    # over InfiniBand NDR 50 GB/s: 6,651,904 / 50e9 = 133.0 µs
    per_tok = next(x for x in f.formulas if x.name == "a2a_bytes_per_token")
    assert per_tok.result == 58 * 2 * 8 * 7168 * 2 * 8 / 16 == 6_651_904
    assert "6.34 MiB" in f.text and "133.0 µs" in f.text


def test_tp16_lws_without_dp_attention_gets_exactly_one_tp301(tmp_path: Path) -> None:
    _, found = run(tmp_path, "")
    [f] = codes(found, "TP301")
    assert f.span.line == 14 and "t=16 spans 2 nodes of 8 GPUs" in f.message
    # the worker template's identical finding is related information, not a second finding
    worker = [text for sp, text in f.related if sp.line == 25]
    assert worker and "other pod template" in worker[0]
    assert codes(found, "TP303") == []
    # the same in JSON: one finding, the worker under "related"
    js = f.to_json()
    assert [r["line"] for r in js["related"]] == [18, 25]  # type: ignore[index]


def test_dp_attention_without_ep_still_all_reduces_the_moe_over_16(tmp_path: Path) -> None:
    # --ep-size defaults to 1 (fields/parallel.py:281): moe_tp = 16 // 1 = 16, so the MoE layers'
    # collectives span both pods even though attention TP is 16 // 16 = 1.
    _, found = run(tmp_path, DPA_ONLY)
    [f] = codes(found, "TP301")
    assert "the MoE layers' TP group of 16 ranks spans 2 nodes" in f.message
    assert f.fix is not None and "--ep-size 16" in f.fix
    grp = next(x for x in f.formulas if x.name == "allreduce_group")
    assert (grp.values["attn_tp"], grp.values["moe_tp"], grp.result) == (1, 16, 16)


def test_comm_groups_sglang_attention_tp() -> None:
    # tp 16, attn_dp 4 → attn_tp = 4; deepep → ep 16, moe_tp 1; dense MLPs at --moe-dense-tp 1
    g = comm_groups(engine="sglang", tp=16, attn_dp=4, is_moe=True, dense_layers=3,
                    a2a_backend="deepep", moe_dense_tp=1)
    assert (g.allreduce, g.expert) == (4, 16)
    # without --moe-dense-tp-size, DeepSeek's 3 dense MLP layers stay TP 16
    g = comm_groups(engine="sglang", tp=16, attn_dp=16, is_moe=True, dense_layers=3, ep_size=16)
    assert (g.allreduce, g.expert) == (16, 16) and g.allreduce_what.startswith("dense")
    # a dense model: the FFN stays TP over the whole group (parallel.py:81)
    assert comm_groups(engine="sglang", tp=8, attn_dp=8).allreduce == 8


def test_comm_groups_vllm_dp_ep() -> None:
    # vLLM DP 16 × TP 1 + EP: attention is DP (all-reduce group 1), experts over t·dp = 16
    g = comm_groups(engine="vllm", tp=1, dp=16, is_moe=True, enable_expert_parallel=True)
    assert (g.allreduce, g.expert) == (1, 16)
    # without EP the MoE is TP-sharded over the flattened t·dp = 2·8 = 16 ranks
    g = comm_groups(engine="vllm", tp=2, dp=8, is_moe=True)
    assert (g.allreduce, g.expert) == (16, 1)
    # a dense model: DP ranks are independent replicas, the group is t
    assert comm_groups(engine="vllm", tp=2, dp=8).allreduce == 2


def test_a2a_bytes_inside_one_node_is_zero() -> None:
    f = a2a_bytes_per_token(moe_layers=58, top_k=8, hidden=7168, b=2, ep=8, per_node=8)
    assert f.result == 0  # (8 − 8)/8 of the experts are elsewhere


def test_tp302_judges_the_attention_tp_group_under_dp_attention() -> None:
    # l40s-2socket-8: GPUs 0-3 on socket 0, 4-7 on socket 1. SGLang tp 8 with attn_dp 4 and
    # deepep on an MoE model without dense layers (Qwen3-30B-A3B): attn_tp = 8 // 4 = 2,
    # moe_tp = 8 // 8 = 1, so the all-reduce groups are pairs {0,1}, {2,3}, {4,5}, {6,7} — none
    # crosses the sockets. Plain TP 8 all-reduces over both sockets.
    from tpcheck.checks import BY_CODE
    from tpcheck.checks.context import CheckContext
    from tpcheck.hardware.topology import parse_topology
    from tpcheck.models import catalog
    from tpcheck.models.config import load_config, parse_config
    from tpcheck.sources.base import Deployment, Span

    root = Path(__file__).resolve().parents[2] / "fixtures" / "topology"
    topo = parse_topology((root / "l40s-2socket-8.txt").read_text(), "l40s-2socket-8.txt")
    entry = catalog.find("Qwen/Qwen3-30B-A3B")
    assert entry is not None
    shape = parse_config(load_config(entry.config_path), name="Qwen/Qwen3-30B-A3B")
    assert shape.moe is not None and shape.dense_layers == 0

    def tp302(**kw: object) -> list[Finding]:
        d = Deployment(path="x", engine="sglang", span=Span("x", 1, 1, 1, 2),
                       model="Qwen/Qwen3-30B-A3B", tensor_parallel_size=8, **kw)  # type: ignore[arg-type]
        ctx = CheckContext(d, shape=shape, settings=Settings(), topology=topo)
        return list(BY_CODE["TP302"].check(ctx))

    assert tp302(attn_dp_size=4, enable_dp_attention=True, moe_a2a_backend="deepep") == []
    [f] = tp302()
    assert "the TP group [0, 1, 2, 3, 4, 5, 6, 7]" in f.text and "GPU0–GPU4" in f.text


def test_vllm_dp_ep_lws_all_reduces_inside_a_node(tmp_path: Path) -> None:
    # vLLM TP 8 × DP 2 + --enable-expert-parallel on 2 pods of 8: each DP rank's TP group of 8
    # is one pod (rank order DP, PP, TP); the experts span t·dp = 16 ranks (fused_moe/config.py
    # l.1112): no TP301, one TP303 for the all-to-all.
    text = (LWS.replace('"python3", "-m", "sglang.launch_server", "--model-path",',
                        '"vllm", "serve",')
            .replace('"--tp", "16",{flags} "--nnodes", "2",',
                     '"--tensor-parallel-size", "8", "--data-parallel-size", "2", '
                     '"--enable-expert-parallel",')
            .replace('"--node-rank", "0"]', '"--max-model-len", "8192"]')
            .replace('"--node-rank", "1"]', '"--max-model-len", "8192"]')
            .replace("lmsysorg/sglang:v0.5.23", "vllm/vllm-openai:v0.33.0"))
    p = tmp_path / "lws.yaml"
    p.write_text(text)
    res = Linter(Settings(offline=True, gpu="h200")).run([str(p)])
    assert not res.errors, res.errors
    assert codes(res.findings, "TP301") == []
    [f] = codes(res.findings, "TP303")
    grp = next(x for x in f.formulas if x.name == "allreduce_group")
    assert (grp.values["t"], grp.values["dp"], grp.result) == (8, 2, 8)
    assert "16 ranks over 2 nodes" in f.text
