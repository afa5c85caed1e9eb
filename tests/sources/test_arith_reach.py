"""Layouts written as shell arithmetic over variables the manifest fixes (real files copied into
fixtures/reach and fixtures/corpus-sample), and what an orchestrator injects."""

from __future__ import annotations

import time
from pathlib import Path

from tpcheck.sources import read_path
from tpcheck.sources.base import Deployment

ROOT = Path(__file__).resolve().parents[2]
REACH = ROOT / "fixtures" / "reach"
SAMPLE = ROOT / "fixtures" / "corpus-sample"


def one(path: Path | str, text: str | None = None) -> Deployment:
    res = read_path(str(path), text)
    assert res.errors == ()
    assert len(res.deployments) == 1, res.deployments
    return res.deployments[0]


def at(d: Deployment, name: str) -> tuple[int, int, int, int]:
    s = d.spans[name]
    return s.line, s.column, s.end_line, s.end_column


def test_llm_d_wide_ep_decode_dp_is_group_size_times_local_dp() -> None:
    d = one(REACH / "zetxqx--llm-d_guides_wide-ep-lws_modelserver_gpu_vllm_base_decode.yaml")
    # l.117 `--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))`: size: 2 (l.15) × the
    # env value "8" (l.152) = 16
    assert (d.data_parallel_size, d.tensor_parallel_size, d.group_size) == (16, 1, 2)
    # 18 spaces + "--data-parallel-size " (21 chars): `$((` at column 40; the expression is
    # 3 + 14 + 3 + 13 + 2 = 35 characters ($(( LWS_GROUP_SIZE " * " DP_SIZE_LOCAL )), to 75
    assert at(d, "data_parallel_size") == (117, 40, 117, 75)
    assert ("data_parallel_size 16 = $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) (l.117) with "
            "LWS_GROUP_SIZE 2 (leaderWorkerTemplate.size, l.15), DP_SIZE_LOCAL 8 (env, l.152)"
            ) in d.notes
    assert "data_parallel_size" not in d.unresolved
    # vLLM: dp > 1 with --enable-expert-parallel is DP-attention
    assert d.enable_expert_parallel is True and d.enable_dp_attention is True


def test_llm_d_wide_ep_prefill_and_deepseek_v4_decode() -> None:
    p = one(REACH / "zetxqx--llm-d_guides_wide-ep-lws_modelserver_gpu_vllm_base_prefill.yaml")
    assert p.data_parallel_size == 2 * 8  # size: 2 (l.15), DP_SIZE_LOCAL "8" (l.108)
    assert at(p, "data_parallel_size")[:2] == (72, 40)
    v4 = one(REACH /
             "zetxqx--llm-d_guides_wide-ep-lws_modelserver_gpu_vllm-deepseek-v4_base_decode.yaml")
    assert v4.data_parallel_size == 2 * 4  # size: 2 (l.11), DP_SIZE_LOCAL "4" (l.129)
    assert any(n.startswith("data_parallel_size 8 = ") and "DP_SIZE_LOCAL 4 (env, l.129)" in n
               for n in v4.notes)


def test_skypilot_tp_is_gpus_per_node_times_nodes() -> None:
    d = one(SAMPLE / "skypilot-org--skypilot_llm_deepseek-r1_deepseek-r1-671B.yaml")
    # l.26 `TP=$(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES))`: every choice of
    # {H200:8, H100:8, A100-80GB:8} (l.4) has 8 GPUs, num_nodes: 2 (l.12): 8 × 2 = 16, and
    # `--tp $TP` (l.30) points at the expression: 2 spaces + "TP=", `$((` at column 6,
    # 3 + 27 + 3 + 19 + 2 = 54 characters long, to column 60
    assert d.tensor_parallel_size == 16
    assert at(d, "tensor_parallel_size") == (26, 6, 26, 60)
    assert ("tensor_parallel_size 16 = $(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES)) "
            "(l.26) with SKYPILOT_NUM_GPUS_PER_NODE 8 (resources.accelerators, l.4), "
            "SKYPILOT_NUM_NODES 2 (num_nodes, l.12)") in d.notes
    assert d.nnodes == 2  # `--nnodes ${SKYPILOT_NUM_NODES}` (l.32) read too


def test_skypilot_variables_used_directly() -> None:
    d = one(REACH / "skypilot-org--skypilot_llm_kimi-k2_kimi-k2.sky.yaml")
    # accelerators: H100:8 (l.16), num_nodes: 2 (l.22)
    assert (d.tensor_parallel_size, d.pipeline_parallel_size) == (8, 2)
    # the tp points at the count in `  accelerators: H100:8`: the 8 is column 22
    assert at(d, "tensor_parallel_size") == (16, 22, 16, 23)
    assert at(d, "pipeline_parallel_size") == (22, 12, 22, 13)  # "num_nodes: " is 11 chars



def test_skypilot_image_id_pins_the_engine_release() -> None:
    # `image_id: docker:vllm/vllm-openai:v0.10.0` (l.14): the task's run executes in that
    # container, so the release is 0.10.0, not the newest known
    d = one(REACH / "skypilot-org--skypilot_llm_kimi-k2_kimi-k2.sky.yaml")
    assert (d.image, d.engine_version) == ("vllm/vllm-openai:v0.10.0", "0.10.0")
    # an image_id that is no container (a cloud image) pins nothing
    d = one("task.yaml", "resources:\n  accelerators: H100:8\n  image_id: ami-0123\nrun: |\n"
                         "  vllm serve m -tp 8\n")
    assert (d.image, d.engine_version) == (None, None)

SKY = """\
resources:
  accelerators: {acc}
{nodes}
run: |
  vllm serve m --tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE \\
    --pipeline-parallel-size $SKYPILOT_NUM_NODES
"""


def sky(acc: str, nodes: str = "num_nodes: 2") -> Deployment:
    return one("task.yaml", SKY.format(acc=acc, nodes=nodes))


def test_skypilot_accelerator_spellings() -> None:
    assert sky("H100:8").tensor_parallel_size == 8
    assert sky("{H100: 4}").tensor_parallel_size == 4  # a mapping: name → count
    assert sky("[L4:2, A10G:2]").tensor_parallel_size == 2  # every choice 2
    assert sky("L4").tensor_parallel_size == 1  # a bare name is one accelerator
    # choices that disagree, or a fraction: the count is not known
    for acc in ("{H100:8, A100:4}", "[L4:1, A10G:2]", "T4:0.5", "{H100: many}"):
        d = sky(acc)
        assert d.tensor_parallel_size is None, acc
        assert d.unresolved["tensor_parallel_size"] == "$SKYPILOT_NUM_GPUS_PER_NODE"
    # num_nodes not written: not bound (SkyPilot's default is not assumed)
    d = sky("H100:8", nodes="")
    assert d.pipeline_parallel_size is None
    assert d.unresolved["pipeline_parallel_size"] == "$SKYPILOT_NUM_NODES"
    # the task's own envs win over what SkyPilot would inject
    d = sky("H100:8", nodes="num_nodes: 2\nenvs:\n  SKYPILOT_NUM_NODES: 3")
    assert d.pipeline_parallel_size == 3


LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
spec:
  leaderWorkerTemplate:
    size: {size}
    workerTemplate:
      spec:
        containers:
          - name: vllm
            command: ["/bin/sh", "-c"]
            args:
              - |
                vllm serve m --data-parallel-size {dp} \\
                  --pipeline-parallel-size $(LWS_GROUP_SIZE)
            env:
{env}"""


def lws(dp: str, size: str = "3", env: str = "              - name: L\n"
        "                value: \"4\"\n") -> Deployment:
    return one("lws.yaml", LWS.format(size=size, dp=dp, env=env))


def test_lws_group_size_binds_and_the_container_env_wins() -> None:
    d = lws("$((LWS_GROUP_SIZE * L))")
    assert (d.data_parallel_size, d.pipeline_parallel_size) == (3 * 4, 3)  # size 3, L "4"
    # the kubelet's $(LWS_GROUP_SIZE) is expanded from the injected value too
    assert at(d, "pipeline_parallel_size")[:2] == (5, 11)  # `    size: 3`: the 3
    # LWS_WORKER_INDEX is set on every pod, differently: its :- default never applies
    for dp in ("$(( ${LWS_WORKER_INDEX:-0} + 2 ))", "${LWS_WORKER_INDEX:-2}"):
        assert lws(dp).unresolved["data_parallel_size"] == dp
    own = ("              - name: L\n                value: \"4\"\n"
           "              - name: LWS_GROUP_SIZE\n                value: \"5\"\n")
    d = lws("$((LWS_GROUP_SIZE * L))", env=own)
    assert d.data_parallel_size == 5 * 4  # the container's own LWS_GROUP_SIZE, not size: 3
    assert any("LWS_GROUP_SIZE 5 (env, l.19)" in n for n in d.notes)


def test_lws_unknown_parts_keep_the_expression_as_written() -> None:
    for dp in ("$((LWS_GROUP_SIZE * NOPE))", "$((LWS_GROUP_SIZE / 0))",
               "$((LWS_GROUP_SIZE << 1))"):
        d = lws(dp)
        assert d.data_parallel_size is None, dp
        assert d.unresolved["data_parallel_size"] == dp
    d = lws("$((LWS_GROUP_SIZE * L))", size="'{{ .Values.size }}'")  # a template: not a size
    assert d.unresolved["data_parallel_size"] == "$((LWS_GROUP_SIZE * L))"


def test_arithmetic_in_a_flags_only_args_string_is_not_evaluated() -> None:
    # no shell reads `args: "--tp ..."` handed to the image's entrypoint: kept as written
    text = ("kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
            "        - image: vllm/vllm-openai:v0.10.0\n"
            "          args: \"--model m --tensor-parallel-size $((2 * 4))\"\n")
    d = one("dep.yaml", text)
    assert d.tensor_parallel_size is None
    assert d.unresolved["tensor_parallel_size"] == "$((2 * 4))"


def test_script_arithmetic_positions_and_hostile_nesting() -> None:
    d = one("run.sh", "A=2\nB=8\nTP=$((A * B))\nvllm serve m --tensor-parallel-size $TP "
                      "--data-parallel-size=$(( (A+1) * ${C:-3} ))\n")
    assert (d.tensor_parallel_size, d.data_parallel_size) == (16, 9)  # 2·8; (2+1)·3
    assert at(d, "tensor_parallel_size") == (3, 4, 3, 14)  # `$((A * B))` after "TP="
    assert "data_parallel_size 9 = $(( (A+1) * ${C:-3} )) (l.4) with A 2 (set, l.1)" in d.notes
    deep = "(" * 50_000 + "1" + ")" * 50_000
    start = time.perf_counter()
    d = one("deep.sh", f"vllm serve m --tensor-parallel-size $({deep})\n")
    assert time.perf_counter() - start < 2.0
    assert d.tensor_parallel_size is None and "tensor_parallel_size" in d.unresolved


def test_llm_d_benchmark_scenario_parallelism_block() -> None:
    res = read_path(str(REACH / "llm-d--llm-d-benchmark_config_scenarios_guides_wide-ep-lws.yaml"))
    assert res.errors == ()
    prefill, decode = res.deployments
    # prefill (l.347): workers: 2 (l.374) × dataLocal: 8 (l.373) = 16; TP_SIZE from tensor: 1
    assert (prefill.data_parallel_size, prefill.tensor_parallel_size) == (16, 1)
    assert ("data_parallel_size 16 = $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) (l.347) with "
            "LWS_GROUP_SIZE 2 (parallelism.workers, l.374), DP_SIZE_LOCAL 8 "
            "(parallelism.dataLocal, l.373)") in prefill.notes
    assert at(prefill, "tensor_parallel_size")[:2] == (371, 17)  # `        tensor: 1`
    assert at(decode, "data_parallel_size")[:2] == (476, 32)  # 10 spaces + 21: `$((` at 32
    assert decode.data_parallel_size == 2 * 8  # workers l.504, dataLocal l.503


MS = """decode:
  {multinode}
  parallelism:
{par}
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.10.0
      command: ["/bin/sh", "-c"]
      args:
        - vllm serve m --tensor-parallel-size $TP_SIZE --data-parallel-size $DP_SIZE
          --max-num-seqs $DP_SIZE_LOCAL --pipeline-parallel-size ${{LWS_GROUP_SIZE:-1}}
"""


def ms(par: str, multinode: str = "multinode: true") -> Deployment:
    return one("values.yaml", MS.format(multinode=multinode, par=par))


def test_modelservice_helpers_fill_what_is_not_written() -> None:
    # llm-d-modelservice _helpers.tpl: data = dataLocal·workers, dataLocal = data / workers,
    # tensor defaults to 1, and the LWS size is workers (multinode). DP_SIZE_LOCAL is seen
    # through --max-num-seqs, a field the Deployment keeps.
    d = ms("    dataLocal: 4\n    workers: 2")
    assert (d.tensor_parallel_size, d.data_parallel_size, d.pipeline_parallel_size) == (1, 8, 2)
    assert d.max_num_seqs == 4
    d = ms("    data: 16\n    workers: 2\n    tensor: 2")
    assert (d.tensor_parallel_size, d.data_parallel_size, d.max_num_seqs) == (2, 16, 8)
    # 5 / 2 leaves a remainder: the chart fails, so DP_SIZE_LOCAL is not bound
    d = ms("    data: 5\n    workers: 2")
    assert d.unresolved["max_num_seqs"] == "$DP_SIZE_LOCAL"
    assert d.data_parallel_size == 5  # data as written
    # no LeaderWorkerSet without multinode: LWS_GROUP_SIZE unset, its default 1 applies
    d = ms("    dataLocal: 4\n    workers: 2", multinode="multinode: false")
    assert d.pipeline_parallel_size == 1
    # a templated value: nothing bound from the block
    d = ms("    dataLocal: '{{ .Values.dpl }}'\n    workers: 2")
    assert d.unresolved["tensor_parallel_size"] == "$TP_SIZE"
