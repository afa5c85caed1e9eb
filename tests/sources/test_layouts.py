"""Layouts people commit (issue 16): heredoc scripts, Helm templates, dstack, LWS-style CRDs.

Every position asserted here is counted by hand in the fixture beside it (1-based columns,
end exclusive)."""

from __future__ import annotations

from pathlib import Path

from tpcheck.sources import read_path
from tpcheck.sources.base import Deployment

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "layouts"


def span(d: Deployment, name: str) -> tuple[int, int, int, int]:
    s = d.spans[name]
    return s.line, s.column, s.end_line, s.end_column


def test_heredoc_scripts_written_to_files_are_read_with_positions() -> None:
    res = read_path(str(FIX / "bootstrap.sh"))
    assert res.errors == ()
    # the usage text printed by `cat <<USAGE` and the body fed to python3 are not launches
    vllm, sglang = res.deployments
    assert (vllm.engine, vllm.model, vllm.tensor_parallel_size, vllm.max_num_seqs) == (
        "vllm", "meta-llama/Llama-3.1-70B-Instruct", 8, 64)
    # line 6 is "  --tensor-parallel-size 8 ...": 2 + 23 characters before the 8 -> column 26
    assert span(vllm, "tensor_parallel_size") == (6, 26, 6, 27)
    # $MODEL expands from the assignment on line 3: "MODEL=" is 6 characters -> column 7
    assert span(vllm, "model")[:2] == (3, 7)
    assert (sglang.engine, sglang.model, sglang.tensor_parallel_size) == (
        "sglang", "Qwen/Qwen3-32B", 4)
    # line 9 is a tab + "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp "
    # (1 + 64 characters) -> the 4 at column 66 (<<- strips the tab when run, not the column)
    assert span(sglang, "tensor_parallel_size") == (9, 66, 9, 67)


def test_heredoc_nested_in_a_manifest_sh_c_string() -> None:
    text = (
        "apiVersion: v1\n"
        "kind: Pod\n"
        "spec:\n"
        "  containers:\n"
        "  - name: c\n"
        "    image: vllm/vllm-openai:v0.8.5\n"
        "    command: [\"/bin/bash\", \"-c\"]\n"
        "    args:\n"
        "    - |\n"
        "      cat > /tmp/run.sh <<'EOF'\n"
        "      vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2\n"
        "      EOF\n"
        "      bash /tmp/run.sh\n"
    )
    res = read_path("pod.yaml", text)
    assert res.errors == ()
    (d,) = res.deployments
    assert (d.model, d.tensor_parallel_size) == ("Qwen/Qwen3-8B", 2)
    # line 11: 6 spaces + "vllm serve " (11) + "Qwen/Qwen3-8B " (14) + "--tensor-parallel-size "
    # (23) = 54 characters before the 2 -> column 55
    assert span(d, "tensor_parallel_size") == (11, 55, 11, 56)


def test_helm_template_reads_values_with_spans_on_the_actions() -> None:
    res = read_path(str(FIX / "chart" / "templates" / "deploy.yaml"))
    assert res.errors == ()
    (d,) = res.deployments  # values.yaml beside Chart.yaml is not a launch (no vLLM config)
    # values.yaml: model Qwen/Qwen3-32B, engine.tp 16 (via $eng := .Values.engine),
    # engine.maxNumSeqs 64, gpus 8, extraArgs [--max-model-len, "32768"], image repo:tag
    assert (d.engine, d.model, d.tensor_parallel_size, d.max_num_seqs, d.max_model_len) == (
        "vllm", "Qwen/Qwen3-32B", 16, 64, 32768)
    assert (d.gpus_requested, d.image, d.engine_version) == (8, "vllm/vllm-openai:v0.8.5",
                                                             "0.8.5")
    # multinode.enabled is false: the {{- else }} branch (line 25) is the one read
    assert d.pipeline_parallel_size == 1
    assert span(d, "pipeline_parallel_size") == (25, 36, 25, 37)
    # line 17: 8 spaces + "- --tensor-parallel-size=" (25) -> "{{ $eng.tp }}" at 34..46
    assert span(d, "tensor_parallel_size") == (17, 34, 17, 47)
    # line 19: 8 spaces + '- "' (3) -> "{{ $eng.maxNumSeqs }}" (21 characters) at 12..32
    assert span(d, "max_num_seqs") == (19, 12, 19, 33)
    # line 21: the toYaml action alone on its line, 8 spaces then 43 characters: 9..51
    assert span(d, "max_model_len") == (21, 9, 21, 52)
    # line 16: 8 spaces + "- " -> "{{ .Values.model | quote }}" (27 characters) at 11..37;
    # the value inside the quotes `quote` adds spans the whole action
    assert span(d, "model") == (16, 11, 16, 38)
    # line 29: 12 spaces + "nvidia.com/gpu: " (16) -> the action starts at column 29
    assert span(d, "gpus_requested")[:2] == (29, 29)
    # .Release.Name is not in values: unresolved, shown as written
    assert d.served_model_name is None
    assert d.unresolved == {"served_model_name": "{{ .Release.Name }}"}
    assert any(n.startswith("Helm template: values from ") and n.endswith(
        "3 action(s) left unresolved") for n in d.notes)


def test_helm_helpers_and_values_files_yield_nothing() -> None:
    # _helpers.tpl is define blocks only; values.yaml is read through the templates (and
    # its `model:` among 6 top-level keys does not make it a vLLM --config file)
    for name in ("templates/_helpers.tpl", "values.yaml"):
        res = read_path(str(FIX / "chart" / name))
        assert (res.errors, res.deployments) == ((), ()), name


def test_folder_scan_includes_tpl_files(tmp_path: Path) -> None:
    from tpcheck.sources import iter_files

    names = sorted(Path(p).name for p in iter_files([str(FIX / "chart")]))
    assert names == ["Chart.yaml", "_helpers.tpl", "deploy.yaml", "values.yaml"]
    for name in ("a.yaml.tpl", "b.yml.tpl", "run.sh.tpl", "job.py.tpl", "svc.tpl",
                 "nginx.conf.tpl", "mail.html.tpl"):
        (tmp_path / name).write_text("x: 1\n")
    assert sorted(Path(p).name for p in iter_files([str(tmp_path)])) == [
        "a.yaml.tpl", "b.yml.tpl", "job.py.tpl", "run.sh.tpl", "svc.tpl"]


def test_helm_yaml_tpl_defaults_and_missing_values(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: s\nversion: 0.1.0\n")
    (tmp_path / "values.yaml").write_text("enabled: true\nextra: [--enable-metrics]\n")
    tpl = tmp_path / "templates" / "sts.yaml.tpl"
    tpl.parent.mkdir()
    tpl.write_text(
        "{{- if .Values.enabled }}\n"
        "apiVersion: apps/v1\n"
        "kind: StatefulSet\n"
        "spec:\n"
        "  template:\n"
        "    spec:\n"
        "      containers:\n"
        "      - image: lmsysorg/sglang:v0.4.6\n"
        "        command:\n"
        "        - python3\n"
        "        - -m\n"
        "        - sglang.launch_server\n"
        "        - --model-path={{ .Values.model }}\n"
        "        - --tp\n"
        "        - {{ .Values.tp | default 4 }}\n"
        "        {{- range .Values.extra }}\n"
        "        - {{ . | quote }}\n"
        "        {{- end }}\n"
        "{{- end }}\n")
    res = read_path(str(tpl))
    assert res.errors == ()
    (d,) = res.deployments
    # enabled: true keeps the body; .Values.tp is not set, so `default 4` gives 4
    assert (d.engine, d.tensor_parallel_size) == ("sglang", 4)
    # line 15: 8 spaces + "- " -> "{{ .Values.tp | default 4 }}" at column 11; a value of
    # one character is placed on the action's first
    assert span(d, "tensor_parallel_size") == (15, 11, 15, 12)
    # .Values.model is not set: unresolved; the range over extra is unrolled (1 item)
    assert d.model is None
    assert d.unresolved["model"] == "{{ .Values.model }}"
    assert d.notes[-1].endswith("; 1 action(s) left unresolved")


def test_template_outside_a_chart_reads_the_first_branch(tmp_path: Path) -> None:
    f = tmp_path / "templates" / "pod.yaml"
    f.parent.mkdir()
    f.write_text(
        "kind: Pod\n"
        "spec:\n"
        "  containers:\n"
        "  - image: vllm/vllm-openai:v0.8.5\n"
        "    args:\n"
        "    {{- if .Values.big }}\n"
        "    - --tensor-parallel-size=8\n"
        "    {{- else }}\n"
        "    - --tensor-parallel-size=1\n"
        "    {{- end }}\n"
        "    - --model={{ .Values.model | default \"Qwen/Qwen3-8B\" }}\n")
    (d,) = read_path(str(f)).deployments
    # no values.yaml: .Values.big is unknown, the first branch is read; the default is not
    # taken either, since the user's values are not known
    assert d.tensor_parallel_size == 8 and span(d, "tensor_parallel_size")[:2] == (7, 30)
    assert d.unresolved["model"] == '{{ .Values.model | default "Qwen/Qwen3-8B" }}'
    assert d.notes[-1] == "Go template: actions set aside, no chart values; 1 action(s) " \
        "left unresolved"


def test_helm_template_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    from tpcheck.sources import iter_files

    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 1.0.0\n")
    (chart / "templates" / "a.yaml").write_text("kind: Pod\nspec:\n  x: {{ .Values.y\n")
    (chart / "templates" / "b.yaml").write_text(
        "kind: Pod\nspec:\n  containers:\n  - name: {{ .Values.n }}\n   bad: [\n")
    (chart / "run.sh").write_text("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2\n")
    results = [read_path(p) for p in iter_files([str(chart)])]
    errors = [str(e) for r in results for e in r.errors]
    assert errors == [
        f"{chart}/templates/a.yaml:3:6: Helm template action is not closed ('}}}}' missing)",
        f"{chart}/templates/b.yaml:5:4: Helm template does not parse once its actions are "
        "set aside: did not find expected key",
    ]
    assert [d.tensor_parallel_size for r in results for d in r.deployments] == [2]


def test_dstack_gpus_num_takes_the_count_from_resources() -> None:
    res = read_path(str(FIX / "llama.dstack.yml"))
    assert res.errors == ()
    (d,) = res.deployments  # `pip install vllm` is no launch; the file is no vLLM --config
    assert (d.engine, d.model, d.max_model_len) == (
        "vllm", "meta-llama/Llama-3.1-70B-Instruct", 8192)
    # $DSTACK_GPUS_NUM is the 8 of "  gpu: H100:8" (line 18, "  gpu: H100:" is 12 characters)
    assert (d.tensor_parallel_size, d.gpus_requested, d.gpu_product) == (8, 8, "H100")
    assert span(d, "tensor_parallel_size") == (18, 13, 18, 14)
    assert span(d, "gpu_product") == (18, 8, 18, 12)
    # $MODEL_ID from "  - MODEL_ID=..." on line 7: "  - MODEL_ID=" is 13 characters
    assert span(d, "model")[:2] == (7, 14)


def test_dstack_amd_sglang_service() -> None:
    (d,) = read_path(str(FIX / "deepseek.dstack.yml")).deployments
    assert (d.engine, d.model, d.tensor_parallel_size, d.gpus_requested, d.gpu_product) == (
        "sglang", "deepseek-ai/DeepSeek-R1", 8, 8, "MI300X")
    assert d.image == "lmsysorg/sglang:v0.4.6-rocm630"
    # "  gpu: MI300X:" is 14 characters: the count at column 15
    assert span(d, "tensor_parallel_size") == (18, 15, 18, 16)


def test_dstack_multi_node_task_multiplies_nodes(tmp_path: Path) -> None:
    f = tmp_path / "task.dstack.yml"
    f.write_text(
        "type: task\n"
        "nodes: 2\n"
        "commands:\n"
        "  - vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size $DSTACK_GPUS_PER_NODE\n"
        "    --pipeline-parallel-size $DSTACK_NODES_NUM\n"
        "  - vllm serve x --tensor-parallel-size $DSTACK_GPUS_NUM\n"
        "resources:\n"
        "  gpu: {name: H200, count: 8}\n"
        "  shm_size: 24GB\n")
    a, b = read_path(str(f)).deployments
    assert (a.tensor_parallel_size, a.pipeline_parallel_size, a.gpus_requested) == (8, 2, 8)
    assert (a.gpu_product, b.tensor_parallel_size) == ("H200", 16)  # 2 nodes x 8 GPUs


def test_dstack_count_range_stays_unresolved(tmp_path: Path) -> None:
    f = tmp_path / ".dstack.yml"
    f.write_text("type: service\ncommands:\n  - vllm serve m --tensor-parallel-size "
                 "$DSTACK_GPUS_NUM\nresources:\n  gpu: 24GB:1..2\n")
    (d,) = read_path(str(f)).deployments
    assert d.tensor_parallel_size is None and d.gpus_requested is None
    assert d.unresolved["tensor_parallel_size"] == "$DSTACK_GPUS_NUM"


def test_hostile_templates_are_one_error_or_read_linearly() -> None:
    # 100,000 unclosed "{{": a scan retried from each one would be 10^10 steps
    res = read_path("c/templates/x.yaml", "kind: Pod\n" + "{{" * 100_000)
    assert [str(e) for e in res.errors] == [
        "c/templates/x.yaml:2:1: Helm template action is not closed ('}}' missing)"]
    # 5,000 nested ifs and 20,000 actions on one line: no per-action rescan of the stack/line
    deep = "kind: Pod\n" + "{{ if .Values.a }}\n" * 5000 + "x: 1\n" + "{{ end }}\n" * 5000
    assert read_path("c/templates/d.yaml", deep).errors == ()
    wide = "kind: Pod\nx: " + "{{ .Values.a }}" * 10_000 + "\n"
    assert read_path("c/templates/w.yaml", wide).errors == ()
    big = "x: {{ .Values.a }}\n" + "y: 1\n" * 60_000  # 300,019 characters
    assert [e.message for e in read_path("c/templates/b.yaml", big).errors] == [
        "template is over 262144 characters; not read"]


def test_ome_leader_worker_group_is_one_leader_plus_worker_size() -> None:
    (d,) = read_path(str(FIX / "ome-runtime.yaml")).deployments
    assert (d.engine, d.model, d.tensor_parallel_size, d.nnodes) == (
        "sglang", "deepseek-ai/DeepSeek-R1", 16, 2)
    # a leader pod + worker.size 1 worker pod = 2 pods of 8 GPUs; "      size: 1" on line 28
    assert (d.group_size, d.gpus_requested) == (2, 8)
    assert span(d, "group_size") == (28, 13, 28, 14)


def test_llmaz_service_workload_template_size() -> None:
    res = read_path(str(FIX / "llmaz-service.yaml"))
    (d,) = res.deployments  # the worker's `ray start` is no launch
    assert (d.model, d.tensor_parallel_size, d.pipeline_parallel_size) == (
        "meta-llama/Llama-3.1-405B-Instruct", 8, 2)
    # workloadTemplate.size 2 on line 11 ("    size: 2"): 2 pods of 8 GPUs = t·p = 16
    assert (d.group_size, d.gpus_requested) == (2, 8)
    assert span(d, "group_size") == (11, 11, 11, 12)


def test_sglang_lws_chart_values_read_per_role() -> None:
    # the chart's template takes its command from _helpers.tpl by `include`: no launch is
    # readable there, so the values file beside Chart.yaml is read (not skipped as a chart's)
    for name in ("templates/decode.yaml", "templates/_helpers.tpl"):
        got = read_path(str(FIX / "sglang-lws-values" / name))
        assert (got.errors, got.deployments) == ((), ()), name
    res = read_path(str(FIX / "sglang-lws-values" / "values.yaml"))
    assert res.errors == ()
    prefill, decode = res.deployments
    for d in (prefill, decode):
        # global.model.path (line 8) and contextLength (line 9), global.image repository:tag
        assert (d.engine, d.model, d.max_model_len) == (
            "sglang", "/models/DeepSeek-R1-0528", 32768)
        assert (d.image, d.engine_version) == ("lmsysorg/sglang:v0.4.6", "0.4.6")
        # leaderWorkerSet.size 2 pods of leader.resources.limits["nvidia.com/gpu"] 8
        assert (d.group_size, d.gpus_requested) == (2, 8)
    # prefill writes `tp` (a prefix of --tp-size), decode `tpSize`
    assert prefill.tensor_parallel_size == decode.tensor_parallel_size == 16
    assert span(prefill, "tensor_parallel_size") == (21, 10, 21, 12)  # '    tp: "16"'
    assert span(decode, "tensor_parallel_size") == (36, 14, 36, 16)  # '    tpSize: "16"'
    # dpSize 16 with enableDpAttention: SGLang's attention DP size
    assert (prefill.enable_dp_attention, prefill.attn_dp_size) == (True, 16)
    assert (prefill.gpu_memory_utilization, prefill.max_num_seqs) == (0.7, 1024)
    assert (decode.gpu_memory_utilization, decode.max_num_seqs) == (0.849, 2048)
    assert decode.enable_dp_attention is None


def test_chart_values_with_top_level_tensor_parallel_size() -> None:
    # the shape of GoogleCloudPlatform's ai-inference chart values (corpus): no vLLM --config
    # (1 of 9 top-level keys is a vLLM option), read as chart values instead
    text = (
        "replicaCount: 1\n"
        "image:\n"
        "  repository: vllm/vllm-openai\n"
        "  tag: v0.19.1\n"
        "model:\n"
        "  id: google/gemma-7b-it\n"
        "resources:\n"
        "  limits:\n"
        "    nvidia.com/gpu: \"1\"\n"
        "nodeSelector:\n"
        "  cloud.google.com/gke-accelerator: nvidia-l4\n"
        "hpa:\n"
        "  enabled: true\n"
        "tensorParallelSize: 1\n"
        "maxModelLen: 512\n"
        "service:\n"
        "  port: 80\n"
    )
    (d,) = read_path("values.yaml", text).deployments
    assert (d.model, d.tensor_parallel_size, d.max_model_len, d.gpus_requested) == (
        "google/gemma-7b-it", 1, 512, 1)
    assert (d.image, d.engine_version, d.notes) == ("vllm/vllm-openai:v0.19.1", "0.19.1", ())
    assert span(d, "model") == (6, 7, 6, 25)  # "  id: " is 6 characters
    assert span(d, "tensor_parallel_size") == (14, 21, 14, 22)


def test_helm_range_unrolled_and_compound_conditions(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: s\nversion: 0.1.0\n")
    (tmp_path / "values.yaml").write_text(
        "mode: lws\n"
        "lws: {enabled: true, size: 2}\n"
        "args: [--tp-size, \"16\", --dp-size, \"2\"]\n"
        "env: {TP: \"16\", MODEL: deepseek-ai/DeepSeek-V3}\n")
    tpl = tmp_path / "templates" / "lws.yaml"
    tpl.parent.mkdir()
    tpl.write_text(
        '{{- if and (eq .Values.mode "lws") .Values.lws.enabled }}\n'
        "apiVersion: leaderworkerset.x-k8s.io/v1\n"
        "kind: LeaderWorkerSet\n"
        "spec:\n"
        "  leaderWorkerTemplate:\n"
        "    size: {{ .Values.lws.size }}\n"
        "    leaderTemplate:\n"
        "      spec:\n"
        "        containers:\n"
        "        - image: lmsysorg/sglang:v0.4.6\n"
        "          env:\n"
        "          {{- range $k, $v := .Values.env }}\n"
        "          - name: {{ $k }}\n"
        "            value: {{ $v | quote }}\n"
        "          {{- end }}\n"
        "          command: [python3, -m, sglang.launch_server, --model-path, $(MODEL)]\n"
        "          args:\n"
        "          {{- range .Values.args }}\n"
        "          - {{ . | quote }}\n"
        "          {{- end }}\n"
        "{{- else }}\n"
        "kind: Deployment\n"
        "{{- end }}\n")
    res = read_path(str(tpl))
    assert res.errors == ()
    (d,) = res.deployments
    # the env map (keys sorted: MODEL, TP) and the args list are unrolled from values.yaml
    assert (d.engine, d.model, d.tensor_parallel_size, d.data_parallel_size) == (
        "sglang", "deepseek-ai/DeepSeek-V3", 16, 2)
    assert d.group_size == 2
    # each args item sits on the action of line 19 ("          - " is 12 characters, the
    # action "{{ . | quote }}" 15: columns 13..27); "16" is the second pass over the body
    assert span(d, "tensor_parallel_size") == (19, 13, 19, 28)
    assert d.notes[-1].startswith("Helm template: values from ")
    assert "unresolved" not in d.notes[-1]


def test_nested_ranges_are_bounded(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: s\nversion: 0.1.0\n")
    (tmp_path / "values.yaml").write_text("xs: [" + ", ".join(["1"] * 200) + "]\n")
    tpl = tmp_path / "templates" / "x.yaml"
    tpl.parent.mkdir()
    # 200^4 bodies if unrolled blindly: the unrolling budget stops it at a few hundred KB
    tpl.write_text("kind: Pod\nx: |\n" + "  {{ range .Values.xs }}\n" * 4 + "  " + "y" * 500
                   + "\n" + "  {{ end }}\n" * 4)
    res = read_path(str(tpl))
    assert res.errors == ()


def test_shell_template_reads_values_not_braces(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: s\nversion: 0.1.0\n")
    (tmp_path / "values.yaml").write_text("tp: 4\n")
    sh = tmp_path / "templates" / "run.sh.tpl"
    sh.parent.mkdir()
    sh.write_text("#!/bin/sh\n"
                  "exec vllm serve {{ .Values.model }} --tensor-parallel-size {{ .Values.tp }}\n")
    res = read_path(str(sh))
    assert res.errors == ()
    (d,) = res.deployments
    # line 2: "exec vllm serve {{ .Values.model }} --tensor-parallel-size " is 59 characters
    assert d.tensor_parallel_size == 4 and span(d, "tensor_parallel_size")[:2] == (2, 60)
    assert d.model is None and d.unresolved["model"] == "{{ .Values.model }}"


def test_helm_to_yaml_of_a_values_map_and_with(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: s\nversion: 0.1.0\n")
    (tmp_path / "values.yaml").write_text(
        "resources:\n  limits:\n    nvidia.com/gpu: 4\n    memory: 64Gi\n"
        "nodeSelector:\n  cloud.google.com/gke-accelerator: nvidia-h100-80gb\n")
    tpl = tmp_path / "templates" / "d.yaml"
    tpl.parent.mkdir()
    tpl.write_text(
        "kind: Deployment\n"
        "spec:\n"
        "  template:\n"
        "    spec:\n"
        "      containers:\n"
        "      - image: vllm/vllm-openai:v0.8.5\n"
        "        args: [Qwen/Qwen3-32B, --tensor-parallel-size, \"2\"]\n"
        "        resources:\n"
        "          {{- toYaml .Values.resources | nindent 10 }}\n"
        "      {{- with .Values.nodeSelector }}\n"
        "      nodeSelector:\n"
        "        {{- toYaml . | nindent 8 }}\n"
        "      {{- end }}\n")
    res = read_path(str(tpl))
    assert res.errors == ()
    (d,) = res.deployments
    # resources.limits["nvidia.com/gpu"] 4 from values.yaml, placed on the action (line 9)
    assert (d.tensor_parallel_size, d.gpus_requested) == (2, 4)
    assert span(d, "gpus_requested")[0] == 9
    # `with` binds `.` to .Values.nodeSelector: the GKE accelerator label is read (line 12)
    assert d.gpu_product == "nvidia-h100-80gb" and span(d, "gpu_product")[0] == 12
