"""KServe: an InferenceService read on the ServingRuntime it names or auto-selects, in the same
file, the same folder or the folder's kustomization; a runtime alone gets no TP000.

fixtures/reach4/kserve-* are hand-written (fixtures/reach4/SOURCES.tsv): no public pair found
under a stated licence had a vLLM command line on both sides."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared import chdir
from tpcheck.lint import Linter
from tpcheck.settings import Settings
from tpcheck.sources import read_path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reach4"
PAIR = FIXTURES / "kserve-pair"


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_inference_service_read_on_its_runtime() -> None:
    """The runtime's command and image with the InferenceService's args after the runtime's
    (KServe's MergeRuntimeContainers); its resources and nodeSelector win."""
    first, second = read_path(str(PAIR / "inferenceservice.yaml")).deployments
    assert (first.engine, first.model, first.tensor_parallel_size) == ("vllm", "/mnt/models", 8)
    assert first.image == "vllm/vllm-openai:v0.8.5" and first.engine_version == "0.8.5"
    assert (first.max_model_len, first.gpus_requested) == (16384, 4)  # the ISVC's 4, not 1
    assert first.gpu_product == "NVIDIA-H100-80GB-HBM3"
    assert [h.value for h in first.model_hints] == ["meta-llama/Llama-3.1-70B-Instruct"]
    # each value where it is written: the runtime's --model, the InferenceService's TP
    assert first.spans["model"].path.endswith("servingruntime.yaml")
    assert first.spans["model"].line == 17
    tp = first.spans["tensor_parallel_size"]
    assert tp.path.endswith("inferenceservice.yaml") and (tp.line, tp.column) == (16, 34)
    assert any("KServe InferenceService llama-70b on ServingRuntime vllm-openai "
               "(servingruntime.yaml)" in n for n in first.notes)
    # qwen3-8b names no runtime: its format `vllm` is the one the runtime auto-selects
    assert second.tensor_parallel_size == 1 and second.gpus_requested == 1  # the runtime's
    assert [h.value for h in second.model_hints] == ["gs://models-bucket/Qwen/Qwen3-8B"]


def test_a_used_runtime_is_read_through_its_inference_services() -> None:
    assert read_path(str(PAIR / "servingruntime.yaml")).deployments == ()


def test_a_runtime_alone_is_checked_but_gets_no_tp000() -> None:
    """Before: TP000 `/mnt/models: no such local folder`; its args are still read (TP001)."""
    path = FIXTURES / "kserve-alone" / "servingruntime.yaml"
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(path)])
    assert [(f.code, f.span.line) for f in res.findings] == [("TP001", 15)]
    assert res.deployments == 1


def test_the_pair_over_the_folder_runs_the_capacity_rules() -> None:
    """Llama-3.1-70B at TP 8 on the 4 GPUs the InferenceService asks for: TP401 at its
    resources line; the Qwen model is resolved from the bucket path's folder names."""
    with chdir(FIXTURES.parent.parent):
        res = Linter(Settings(offline=True, gpu="h100-sxm")).run(["fixtures/reach4/kserve-pair"])
    assert res.deployments == 2
    codes = [(f.code, Path(f.span.path).name, f.span.line) for f in res.findings]
    assert ("TP401", "inferenceservice.yaml", 20) in codes
    assert not [c for c in codes if c[0] == "TP000"]


def test_runtime_through_the_folders_kustomization(tmp_path: Path) -> None:
    """The runtime lives in ../runtimes and the InferenceService's kustomization lists it."""
    (tmp_path / "runtimes").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "runtimes" / "rt.yaml").write_text(
        (FIXTURES / "kserve-alone" / "servingruntime.yaml").read_text())
    (tmp_path / "app" / "isvc.yaml").write_text(
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
        "metadata:\n  name: qwen\nspec:\n  predictor:\n    model:\n"
        "      modelFormat:\n        name: vLLM\n      runtime: vllm-cluster\n"
        "      storageUri: hf://Qwen/Qwen3-32B\n      args: [--tensor-parallel-size=2]\n")
    (tmp_path / "app" / "kustomization.yaml").write_text(
        "resources:\n  - ../runtimes/rt.yaml\n  - isvc.yaml\n")
    (d,) = read_path(str(tmp_path / "app" / "isvc.yaml")).deployments
    assert (d.tensor_parallel_size, d.image) == (2, "vllm/vllm-openai:v0.8.5")
    assert any("(../runtimes/rt.yaml)" in n for n in d.notes)


@pytest.mark.parametrize(("model", "why"), [
    ("      runtime: some-other-runtime\n", "a runtime name nobody defines"),
    ("      modelFormat:\n        name: sklearn\n", "a format the runtime does not select"),
])
def test_no_pair_leaves_the_inference_service_as_written(tmp_path: Path, model: str,
                                                         why: str) -> None:
    (tmp_path / "rt.yaml").write_text((PAIR / "servingruntime.yaml").read_text())
    (tmp_path / "isvc.yaml").write_text(
        "kind: InferenceService\nmetadata:\n  name: m\nspec:\n  predictor:\n    model:\n"
        + model + "      args: [--tensor-parallel-size=2]\n")
    (d,) = read_path(str(tmp_path / "isvc.yaml")).deployments
    assert d.image is None and d.model is None, why  # the ISVC's args alone, as before
    (alone,) = read_path(str(tmp_path / "rt.yaml")).deployments
    assert any("none in this folder uses it" in n for n in alone.notes)


def test_one_file_with_both(tmp_path: Path) -> None:
    text = (PAIR / "servingruntime.yaml").read_text() + "---\n" + (
        PAIR / "inferenceservice.yaml").read_text().split("---\n")[0]
    (tmp_path / "both.yaml").write_text(text)
    found = read_path(str(tmp_path / "both.yaml")).deployments
    assert [(d.tensor_parallel_size, d.gpus_requested) for d in found] == [(8, 4)]


@pytest.mark.parametrize("containers", ["[]", "[1, x]", "[{name: kserve-container, args: 3}]"])
def test_odd_runtimes_read_nothing_and_say_no_internal_error(tmp_path: Path,
                                                             containers: str) -> None:
    p = tmp_path / "x.yaml"
    p.write_text(f"kind: ServingRuntime\nmetadata: {{name: r}}\nspec: {{containers: {containers}}}"
                 "\n---\nkind: InferenceService\nmetadata: {name: i}\n"
                 "spec: {predictor: {model: {runtime: r, args: {a: 1}, storageUri: 5}}}\n")
    res = read_path(str(p))
    assert res.errors == () and res.deployments == ()


def test_the_folder_is_indexed_once_per_state(tmp_path: Path) -> None:
    """Every InferenceService file of a folder looks at the others: the folder is composed
    once (one cache miss) for all of them, and again after a file changes."""
    from tpcheck.sources import kserve

    (tmp_path / "rt.yaml").write_text((PAIR / "servingruntime.yaml").read_text())
    for i in range(3):
        (tmp_path / f"i{i}.yaml").write_text((PAIR / "inferenceservice.yaml").read_text())
    before = kserve._index.cache_info().misses
    found = [d for i in range(3) for d in read_path(str(tmp_path / f"i{i}.yaml")).deployments]
    assert len(found) == 6 and kserve._index.cache_info().misses == before + 1
    (tmp_path / "i0.yaml").write_text((PAIR / "inferenceservice.yaml").read_text() + "\n")
    read_path(str(tmp_path / "i1.yaml"))
    assert kserve._index.cache_info().misses == before + 2
