"""KServe LLMInferenceService: the `vllm serve` KServe's well-known configs run for it, read from
spec.model, spec.parallelism, the main container's VLLM_ADDITIONAL_ARGS, args and resources.

fixtures/llmisvc holds KServe's own samples (Apache-2.0, fixtures/llmisvc/SOURCES.tsv); the
templates' flags are in kserve config/llmisvcconfig/*.yaml at the same commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared import chdir
from tpcheck.lint import Linter
from tpcheck.settings import Settings
from tpcheck.sources import read_path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "llmisvc"
QWEN = FIXTURES / "llm-inference-service-qwen2-7b-gpu.yaml"
DP = FIXTURES / "llm-inference-service-dp-ep-deepseek-r1-gpu-naive.yaml"
PD = FIXTURES / "llm-inference-service-pd-facebook-opt-125m-cpu.yaml"
GPT_OSS = FIXTURES / "e2e-gpt-oss"


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_single_node_service_runs_the_template_on_its_model() -> None:
    """No worker, no prefill: config-llm-template's `vllm serve /mnt/models` with no parallelism
    flag (spec.parallelism is unset); the model is the hf:// URI (line 7), the GPU count the
    container's limit (line 22: nvidia.com/gpu "1"). Before: 0 deployments."""
    (d,) = read_path(str(QWEN)).deployments
    assert (d.engine, d.model, d.tensor_parallel_size, d.gpus_requested) == (
        "vllm", "/mnt/models", None, 1)
    assert d.spans["gpus_requested"].line == 22
    assert [(h.value, h.origin) for h in d.model_hints] == [
        ("Qwen/Qwen2.5-7B-Instruct", "spec.model.uri `hf://Qwen/Qwen2.5-7B-Instruct` (line 7)"),
        ("Qwen/Qwen2.5-7B-Instruct", "spec.model.name `Qwen/Qwen2.5-7B-Instruct` (line 8)")]
    assert d.served_model_name == "Qwen/Qwen2.5-7B-Instruct"
    assert any("config-llm-template runs it" in n for n in d.notes)
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(QWEN)])
    assert res.deployments == 1
    assert "TP000" not in {f.code for f in res.findings}


def test_data_parallel_worker_gets_the_templates_dp_flags_and_group_size() -> None:
    """A worker with parallelism {data: 16, dataLocal: 8, expert: true, tensor: 1} (lines
    15-18): config-llm-worker-data-parallel passes --enable-expert-parallel,
    --tensor-parallel-size 1, --data-parallel-size 16; its LeaderWorkerSet has
    GetSize() = 16 // 8 = 2 pods of 8 GPUs (line 86). VLLM_ADDITIONAL_ARGS (line 38) adds
    --gpu-memory-utilization 0.95 --max-model-len 8192 --enforce-eager."""
    (d,) = read_path(str(DP)).deployments
    assert (d.tensor_parallel_size, d.data_parallel_size, d.enable_expert_parallel) == (1, 16, True)
    assert (d.group_size, d.gpus_requested) == (2, 8)
    assert (d.gpu_memory_utilization, d.max_model_len, d.enforce_eager) == (0.95, 8192, True)
    assert {k: d.spans[k].line for k in ("tensor_parallel_size", "data_parallel_size",
                                          "group_size", "max_model_len")} == {
        "tensor_parallel_size": 18, "data_parallel_size": 15, "group_size": 15,
        "max_model_len": 38}
    assert any("config-llm-worker-data-parallel runs it" in n for n in d.notes)
    # 2 pods x 8 GPUs = 16 = TP 1 x DP 16: no layout finding
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(DP)])
    assert not {f.code for f in res.findings} & {"TP101", "TP102", "TP103"}


def test_prefill_pool_is_a_second_launch_with_its_own_role() -> None:
    """spec.prefill: the decode pool runs config-llm-decode-template, the prefill pool
    config-llm-prefill-template; each launch spans its own main container (lines 15 and 34),
    the release is the image tag's (vllm-openai-cpu:v0.23.0)."""
    decode, prefill = read_path(str(PD)).deployments
    assert (decode.pd_role, prefill.pd_role) == ("decode", "prefill")
    assert (decode.span.line, prefill.span.line) == (15, 34)
    assert decode.engine_version == prefill.engine_version == "0.23.0"
    assert any("(prefill): vllm serve as KServe's config-llm-prefill-template" in n
               for n in prefill.notes)


def test_a_service_merges_the_config_its_base_refs_name_in_the_folder() -> None:
    """KServe's e2e sample: the service names `llmisvc-config-pd-disagg` (another file beside
    it), whose main containers set VLLM_ADDITIONAL_ARGS (kv_role kv_consumer / kv_producer,
    config lines 28 and 66); the service sets the GPUs (its lines 19 and 30). Each value is
    placed in the file that writes it, and the config is read through the service only."""
    service = GPT_OSS / "inference_pd_disaggregation.yaml"
    config = GPT_OSS / "llmisvc_config_pd_disagg.yaml"
    decode, prefill = read_path(str(service)).deployments
    assert (decode.kv_connector, decode.pd_role, prefill.pd_role) == (
        "NixlConnector", "decode", "prefill")
    assert (decode.spans["gpus_requested"].path, decode.spans["gpus_requested"].line) == (
        str(service), 19)
    assert prefill.spans["gpus_requested"].line == 30
    assert decode.span.path == str(service) and decode.span.line == 16
    assert not any("not found" in n for n in decode.notes)
    assert read_path(str(config)).deployments == ()  # read through the service
    with chdir(ROOT):
        res = Linter(Settings(offline=True)).run(["fixtures/llmisvc/e2e-gpt-oss"])
    assert res.deployments == 2


def test_a_config_no_service_names_is_read_alone(tmp_path: Path) -> None:
    """The config alone in its folder (as in the corpus): read as a service would run it,
    its kv_role telling the pools apart; GPUs from its own containers (lines 40, 78)."""
    lone = tmp_path / "llmisvc_config_pd_disagg.yaml"
    lone.write_text((GPT_OSS / "llmisvc_config_pd_disagg.yaml").read_text())
    decode, prefill = read_path(str(lone)).deployments
    assert (decode.kv_connector, decode.pd_role, prefill.pd_role) == (
        "NixlConnector", "decode", "prefill")
    assert (decode.spans["gpus_requested"].line, prefill.spans["gpus_requested"].line) == (
        40, 78)


def test_a_base_ref_found_nowhere_is_named(tmp_path: Path) -> None:
    """The service without the config beside it: its launches are read, and a note names the
    config whose fields were not."""
    alone = tmp_path / "inference_pd_disaggregation.yaml"
    alone.write_text((GPT_OSS / "inference_pd_disaggregation.yaml").read_text())
    decode, prefill = read_path(str(alone)).deployments
    assert prefill.pd_role == "prefill"
    assert decode.kv_connector is None  # the config's VLLM_ADDITIONAL_ARGS are not known
    assert any(n.startswith("baseRefs llmisvc-config-pd-disagg: not found beside this file")
               for n in decode.notes)


def test_base_refs_in_the_same_file_are_merged(tmp_path: Path) -> None:
    """The service and its config in one file (KServe's two sample files joined): the config
    is read through the service, not alone (2 launches, not 4); the config's
    VLLM_ADDITIONAL_ARGS (a NixlConnector) and the service's GPU limits both apply."""
    joined = tmp_path / "pd.yaml"
    joined.write_text((GPT_OSS / "llmisvc_config_pd_disagg.yaml").read_text()
                      + (GPT_OSS / "inference_pd_disaggregation.yaml").read_text())
    decode, prefill = read_path(str(joined)).deployments
    assert (decode.kv_connector, decode.pd_role, prefill.pd_role) == (
        "NixlConnector", "decode", "prefill")
    # the service's own limits (its file starts after the config's 101 lines: line 19 there)
    config_lines = len((GPT_OSS / "llmisvc_config_pd_disagg.yaml").read_text().splitlines())
    assert decode.spans["gpus_requested"].line == config_lines + 19
    assert not any("not found" in n for n in decode.notes)


def test_a_main_container_with_its_own_command_is_read_as_written(tmp_path: Path) -> None:
    """A command replaces the template's: the launch is the container's, TP 2 from its words
    and no template note."""
    f = tmp_path / "own.yaml"
    f.write_text(QWEN.read_text().replace(
        "      - name: main\n",
        "      - name: main\n        command: [vllm, serve, Qwen/Qwen2.5-7B-Instruct,"
        " --tensor-parallel-size, '2']\n", 1))
    (d,) = read_path(str(f)).deployments
    assert (d.model, d.tensor_parallel_size) == ("Qwen/Qwen2.5-7B-Instruct", 2)
    assert not any("config-llm-" in n for n in d.notes)


def test_other_kinds_of_the_name_are_not_read_as_a_service(tmp_path: Path) -> None:
    """The kind alone is not enough: an object of another API group named so is no launch."""
    f = tmp_path / "other.yaml"
    f.write_text(QWEN.read_text().replace("serving.kserve.io/v1alpha2", "example.com/v1"))
    assert read_path(str(f)).deployments == ()


def test_a_config_that_writes_the_command_gives_the_service_that_launch() -> None:
    """KServe's default e2e sample: the config's main container writes `command: [/bin/sh,
    -c]` and a `vllm serve /mnt/models ...` args line (its line 15), which replaces the
    well-known template's; the service (another file) gives the model (hints) and its GPU
    limit (`nvidia.com/gpu: 1`, its line 23). One launch in the folder, not two."""
    folder = FIXTURES / "e2e-gpt-oss-default"
    (d,) = read_path(str(folder / "inference_default.yaml")).deployments
    assert (d.path, d.span.line) == (str(folder / "llmisvc_config_default.yaml"), 15)
    assert (d.model, d.gpus_requested) == ("/mnt/models", 1)
    assert (d.spans["gpus_requested"].path, d.spans["gpus_requested"].line) == (
        str(folder / "inference_default.yaml"), 23)
    assert [h.value for h in d.model_hints] == ["pvc://gpt-oss-20b-pvc", "RedHatAI/gpt-oss-20b"]
    assert any("the command of LLMInferenceServiceConfig "
               "llmisvc-intelligent-inference-scheduling" in n for n in d.notes)
    assert read_path(str(folder / "llmisvc_config_default.yaml")).deployments == ()
    with chdir(ROOT):
        res = Linter(Settings(offline=True)).run(["fixtures/llmisvc/e2e-gpt-oss-default"])
    assert res.deployments == 1


def test_single_node_tensor_parallelism_and_the_v1alpha1_era_are_said(tmp_path: Path) -> None:
    """`parallelism: {tensor: 2}` on a single-node v1alpha1 service: TP 2 as today's template
    passes it (kserve #5782), with a note for each thing an older KServe did otherwise."""
    f = tmp_path / "tp.yaml"
    f.write_text(QWEN.read_text().replace("kserve.io/v1alpha2", "kserve.io/v1alpha1")
                 .replace("  replicas: 3\n", "  replicas: 3\n  parallelism:\n    tensor: 2\n"))
    (d,) = read_path(str(f)).deployments
    assert d.tensor_parallel_size == 2 and d.spans["tensor_parallel_size"].line == 12
    assert any("since kserve #5782" in n for n in d.notes)
    assert any(n.startswith("a v1alpha1 service") for n in d.notes)


def test_inspect_names_the_catalog_entry_a_hint_found() -> None:
    """`tpcheck inspect` said `catalog: tpcheck/models/catalog/Qwen--Qwen2.5-7B-Instruct/...`
    and `hf:/Qwen/...` (one slash) when a hint found the config: the text after the path is
    not part of it."""
    from tpcheck.report.paths import source_label

    where = ("catalog: /x/tpcheck/models/catalog/Qwen--Qwen2.5-7B-Instruct/config.json (model "
             "taken from spec.model.uri `hf://Qwen/Qwen2.5-7B-Instruct` (line 7))")
    assert source_label(where) == ("catalog Qwen/Qwen2.5-7B-Instruct (model taken from "
                                   "spec.model.uri `hf://Qwen/Qwen2.5-7B-Instruct` (line 7))")
