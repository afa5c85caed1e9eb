"""Terraform ``.tftpl`` values from the folder's ``.tf`` files, and kustomizations that take
their resources unchanged. Fixtures: fixtures/reach4 (hand-written, SOURCES.tsv there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared import chdir
from tpcheck.lint import Linter
from tpcheck.settings import Settings
from tpcheck.sources import read_path
from tpcheck.sources.terraform import template_values

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "reach4"


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_templatefile_call_maps_the_template_names() -> None:
    """`model = var.model_id` and `tp = var.tensor_parallel` take those variables' defaults,
    `served_port = 8000` its literal; `name` passes an expression default and stays unknown."""
    values = template_values(str(FIXTURES / "terraform" / "startup.sh.tftpl"))
    assert {k: v.value for k, (v, _) in values.items()} == {
        "model": "Qwen/Qwen3-32B", "tp": "3", "served_port": "8000"}
    (d,) = read_path(str(FIXTURES / "terraform" / "startup.sh.tftpl")).deployments
    assert (d.model, d.tensor_parallel_size, d.image) == (
        "Qwen/Qwen3-32B", 3, "vllm/vllm-openai:v0.8.5")
    assert d.served_model_name is None and d.unresolved["served_model_name"] == "${name}"
    # the TP is placed where its value is written: `  default = 3` is line 10, column 13
    tp = d.spans["tensor_parallel_size"]
    assert (Path(tp.path).name, tp.line, tp.column) == ("main.tf", 10, 13)
    [note] = [n for n in d.notes if n.startswith("Terraform values")]
    assert ('${tp} from var.tensor_parallel passed at main.tf:22, variable "tensor_parallel" '
            "default at main.tf:10") in note


def test_terraform_default_findings_point_into_the_tf_file() -> None:
    """Qwen3-32B (64 heads, 8 KV heads) at TP 3: 64 mod 3 = 1, so vLLM refuses (TP101)."""
    with chdir(ROOT):
        res = Linter(Settings(offline=True, gpu="h100-sxm")).run(["fixtures/reach4/terraform"])
    assert res.deployments == 1
    hit = [f for f in res.findings if f.code == "TP101"]
    assert [(f.span.path, f.span.line) for f in hit] == [("fixtures/reach4/terraform/main.tf", 10)]


def test_same_name_variables_without_a_call() -> None:
    """No templatefile call in the folder: `${model}` and `${max_model_len}` take the variables
    of those names; `${tp}`, declared nowhere, stays unresolved (as before this reader)."""
    (d,) = read_path(str(FIXTURES / "terraform-same-name" / "serve.tftpl")).deployments
    assert (d.model, d.max_model_len) == ("meta-llama/Llama-3.1-8B-Instruct", 8192)
    assert d.tensor_parallel_size is None and d.unresolved["tensor_parallel_size"] == "${tp}"


def test_escaped_dollar_is_a_shell_variable(tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text('variable "tp" {\n  default = 2\n}\n')
    (tmp_path / "run.tftpl").write_text("TP=4\nvllm serve m --tensor-parallel-size $${TP} "
                                        "--pipeline-parallel-size ${tp}\n")
    (d,) = read_path(str(tmp_path / "run.tftpl")).deployments
    assert (d.tensor_parallel_size, d.pipeline_parallel_size) == (4, 2)


def test_passthrough_overlay_renders_its_base() -> None:
    """`resources: [../../base]` and a namespace only: before, 0 deployments; now the base's
    launch, read through the overlay."""
    with chdir(ROOT):
        res = read_path("fixtures/reach4/kustomize-passthrough/overlays/prod/kustomization.yaml")
    (d,) = res.deployments
    assert d.path == "fixtures/reach4/kustomize-passthrough/base/deployment.yaml"
    assert (d.model, d.tensor_parallel_size) == ("meta-llama/Llama-3.1-8B-Instruct", 2)
    assert any("as kustomize builds" in n and "overlays/prod" in n for n in d.notes)


def test_resources_in_the_kustomizations_own_folder_are_read_there() -> None:
    """The base's own kustomization lists `deployment.yaml` beside it: a folder run reads that
    file itself, so the kustomization adds nothing (one deployment, not two)."""
    base = FIXTURES / "kustomize-passthrough" / "base"
    assert read_path(str(base / "kustomization.yaml")).deployments == ()
    with chdir(ROOT):
        res = Linter(Settings(offline=True)).run(["fixtures/reach4/kustomize-passthrough/base"])
    assert res.deployments == 1


def test_a_kustomization_named_alone_renders_the_resources_beside_it() -> None:
    """`tpcheck base/kustomization.yaml` (resources: [deployment.yaml] only): before, 0
    deployments; the run does not read deployment.yaml on its own, so the kustomization
    renders it (TP 2, line 19). Named with it, or through its folder, it is read once."""
    base = "fixtures/reach4/kustomize-passthrough/base"
    with chdir(ROOT):
        alone = Linter(Settings(offline=True)).run([f"{base}/kustomization.yaml"])
        both = Linter(Settings(offline=True)).run(
            [f"{base}/kustomization.yaml", f"{base}/deployment.yaml"])
        folder = Linter(Settings(offline=True)).run([base])
    assert (alone.deployments, both.deployments, folder.deployments) == (1, 1, 1)
    # the reader called on its own (the editor) keeps the folder rule: nothing twice
    assert read_path(str(FIXTURES / "kustomize-passthrough/base/kustomization.yaml")
                     ).deployments == ()


GKE_NEMO = FIXTURES / ("GoogleCloudPlatform--kubernetes-engine-samples_ai-ml_nemo-rl-on-gke_"
                       "nemoRL_gemma3-27b-it_nvidia-vllm-post-trained-gemma3-27-deploy.yaml")


def test_gke_model_label_names_the_checkpoint_behind_a_local_path() -> None:
    """`--model=$(MODEL_ID)` is `/data/nemo_rl_gemma3_27b_3_11/hf3-11` (before: TP000); the
    template's label `ai.gke.io/model: gemma-3-27b-it` (line 28) spells one catalog name."""
    (d,) = read_path(str(GKE_NEMO)).deployments
    assert d.model == "/data/nemo_rl_gemma3_27b_3_11/hf3-11"
    assert [(h.value, h.origin) for h in d.model_hints] == [
        ("gemma-3-27b-it", "label ai.gke.io/model `gemma-3-27b-it` (line 28)")]
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(GKE_NEMO)])
    assert "TP000" not in {f.code for f in res.findings}
    # --max-num-seqs 4 against the pool of gemma-3-27b at TP 4: TP203 (the corpus's note
    # on this file calls the 4 seats out as likely wrong)
    [f] = [f for f in res.findings if f.code == "TP203"]
    assert f.message.startswith("--max-num-seqs 4 binds before memory")
    assert any("label ai.gke.io/model `gemma-3-27b-it` (line 28) -> google/gemma-3-27b-it"
               in a.text for a in f.assumptions if a.kind == "model")


@pytest.mark.parametrize(("label", "why"), [
    ("gemma-7b-kvcache", "a sample's own name: no catalog model is spelt so"),
    ("gemma-2b-awq", "a quantized name the catalog does not hold"),
    ("aya-23-8b", "a name part two orgs hold (CohereForAI, CohereLabs): no guess"),
])
def test_a_label_that_spells_no_catalog_name_names_nothing(tmp_path: Path, label: str,
                                                           why: str) -> None:
    text = GKE_NEMO.read_text().replace("ai.gke.io/model: gemma-3-27b-it",
                                        f"ai.gke.io/model: {label}")
    p = tmp_path / "deploy.yaml"
    p.write_text(text)
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    assert "TP000" in {f.code for f in res.findings}, why


def test_an_unclosed_block_ends_at_the_next_variable(tmp_path: Path) -> None:
    """`variable "a" {` never closed: its scan stops where `variable "tp"` starts (blocks of one
    kind do not nest), so the later default is still read (and 20,000 unclosed blocks cost
    20,000 short scans, not 20,000 scans to the end of the file)."""
    (tmp_path / "main.tf").write_text('variable "a" {\n  type = string\n'
                                      + 'variable "b" {\n' * 3
                                      + 'variable "tp" {\n  default = 2\n}\n')
    (tmp_path / "run.tftpl").write_text("vllm serve m --tensor-parallel-size ${tp}\n")
    assert {k: v.value for k, (v, _) in template_values(str(tmp_path / "run.tftpl")).items()} == {
        "tp": "2"}
