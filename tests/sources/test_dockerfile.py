"""Dockerfiles and Makefiles read as the shell they hold, pip pins as the engine release, and a
named file of a format tpcheck does not read: one note, exit code untouched, a folder silent.

The Dockerfiles under fixtures/reach3 are hand-written in the shapes of koyeb/example-vllm's,
which states no licence (SOURCES.tsv there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.shared import said
from tpcheck.cli import main
from tpcheck.sources import iter_files, read_path
from tpcheck.sources.dockerfile import dockerfile_to_shell, makefile_to_shell, pin_release

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reach3"


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_shell_form_entrypoint_with_continuations_and_defaults() -> None:
    """A shell-form ENTRYPOINT: `--model ${MODEL_NAME:-meta-llama/Meta-Llama-3.1-8B-Instruct}`
    two lines after the first (dropped before), and `${REVISION:+--revision "$REVISION"}` empty
    for an unset REVISION."""
    path = FIXTURES / "handwritten--entrypoint-continuation.Dockerfile"
    (d,) = read_path(str(path)).deployments
    assert d.engine == "vllm" and d.model == "meta-llama/Meta-Llama-3.1-8B-Instruct"
    assert d.revision is None and d.image == "vllm/vllm-openai:latest"
    # the default's own characters: line 7, after "    --model ${MODEL_NAME:-" (26 columns)
    span = d.spans["model"]
    assert (span.line, span.column) == (7, 27)


def test_an_earlier_stage_keeps_its_args() -> None:
    """The fetch stage sets ARG MODEL_NAME; the serving stage's ENTRYPOINT (line 13) runs
    where that ARG does not exist, so --served-model-name is unknown."""
    path = FIXTURES / "handwritten--two-stage-baked-model.Dockerfile"
    (d,) = read_path(str(path)).deployments
    assert d.model == "/srv/model" and d.span.line == 13
    assert d.served_model_name is None and "served_model_name" in d.unresolved


def test_exec_form_entrypoint_joined_to_cmd(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text(
        "ARG BASE=vllm/vllm-openai:v0.6.3\n"
        "FROM ${BASE}\n"
        "ENV TP=2\n"
        "# the server\n"
        'ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server", \\\n'
        '    "--tensor-parallel-size", "3"]\n'
        'CMD ["--model", "Qwen/Qwen3-8B"]\n')
    (d,) = read_path(str(path)).deployments
    assert (d.model, d.tensor_parallel_size) == ("Qwen/Qwen3-8B", 3)
    assert d.image == "vllm/vllm-openai:v0.6.3" and d.engine_version == "0.6.3"
    assert (d.spans["tensor_parallel_size"].line, d.spans["tensor_parallel_size"].column) == (6, 32)
    assert (d.spans["model"].line, d.spans["model"].column) == (7, 18)


def test_bare_cmd_on_an_engine_image_and_legacy_env(tmp_path: Path) -> None:
    path = tmp_path / "serve.Dockerfile"
    path.write_text(
        "FROM vllm/vllm-openai:v0.8.5\n"
        "ENV MODEL Qwen/Qwen3-32B\n"
        'CMD ["--model", "Qwen/Qwen3-32B", "--tensor-parallel-size", "4"]\n')
    (d,) = read_path(str(path)).deployments
    assert (d.model, d.tensor_parallel_size, d.engine_version) == ("Qwen/Qwen3-32B", 4, "0.8.5")
    shell, image, _ = dockerfile_to_shell(path.read_text())
    assert shell.splitlines()[1] == "    MODEL=Qwen/Qwen3-32B"  # same length, value in place
    assert len(shell) == len(path.read_text()) and image == "vllm/vllm-openai:v0.8.5"


def test_an_entrypoint_with_nothing_to_check_is_no_launch(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text('FROM vllm/vllm-openai:v0.8.3\n'
                    'ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n')
    assert read_path(str(path)).deployments == ()


@pytest.mark.parametrize(("text", "pin"), [
    ('RUN pip install "vllm==0.6.3"\n', ("vllm", "0.6.3")),
    ('RUN uv pip install "sglang[all]==0.4.2.post4"\n', ("sglang", "0.4.2.post4")),
    ("RUN pip3 install --no-cache-dir \\\n    vllm==0.5.4 ray\n", ("vllm", "0.5.4")),
    ("RUN pip install vllm-flash-attn==2.6.1\n", None),  # another package
    ("RUN echo vllm==0.6.3\n", None),  # no install
])
def test_pins(text: str, pin: tuple[str, str] | None) -> None:
    found = pin_release(text)
    assert (found[:2] if found else None) == pin


def test_a_pin_is_the_release_the_memory_rules_assume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text("FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\n"
                    'RUN pip install "vllm==0.6.3"\n'
                    "CMD vllm serve meta-llama/Llama-3.1-70B-Instruct --max-model-len 8192\n")
    assert main(["--offline", "--gpu", "h100-sxm", "--format", "json", str(path)]) == 1
    (f,) = json.loads(capsys.readouterr().out)["findings"]
    # 70B in bf16 on one GPU: 141,107,412,992 B of weights against M·u = 76,528,543,334 B
    assert f["code"] == "TP205"
    assert f"assumes: vLLM 0.6.3, from `vllm==0.6.3` pinned at {path}:2" in said(f)


def test_makefile_recipe(tmp_path: Path) -> None:
    path = tmp_path / "Makefile"
    path.write_text("MODEL ?= Qwen/Qwen3-8B\nTP := 2\n\nserve:\n"
                    "\t@vllm serve $(MODEL) \\\n\t  --tensor-parallel-size $(TP)\n")
    (d,) = read_path(str(path)).deployments
    assert (d.model, d.tensor_parallel_size) == ("Qwen/Qwen3-8B", 2)
    # values stay in their columns: "MODEL ?= " is 9 characters, "TP := " 6
    assert (d.spans["model"].line, d.spans["model"].column) == (1, 10)
    assert (d.spans["tensor_parallel_size"].line, d.spans["tensor_parallel_size"].column) == (2, 7)
    assert len(makefile_to_shell(path.read_text())) == len(path.read_text())


def test_a_named_file_tpcheck_does_not_read(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "main.tf").write_text('resource "x" "y" {}\n')
    code = main(["--offline", str(tmp_path / "main.tf")])
    out = capsys.readouterr()
    assert code == 0
    note = f"tpcheck: note: {tmp_path / 'main.tf'}:1:1: not a format tpcheck reads; skipped\n"
    assert out.err == note
    # a folder run reads the Dockerfile and says nothing of the rest
    (tmp_path / "Dockerfile").write_text(
        "FROM vllm/vllm-openai:v0.8.5\nCMD vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2\n")
    assert [Path(p).name for p in iter_files([str(tmp_path)])] == ["Dockerfile"]
    assert main(["--offline", str(tmp_path)]) == 0
    assert "note" not in capsys.readouterr().err


def test_terraform_template_is_shell(tmp_path: Path) -> None:
    """A `.tftpl` user-data script: `${model}` is Terraform's, left unresolved; the rest is read
    as shell."""
    path = tmp_path / "startup.sh.tftpl"
    path.write_text("#!/bin/bash\ndocker run --gpus 4 vllm/vllm-openai:v0.8.5 \\\n"
                    "  --model ${model} --tensor-parallel-size 4\n")
    (d,) = read_path(str(path)).deployments
    assert (d.tensor_parallel_size, d.gpus_requested) == (4, 4)
    assert d.model is None and d.unresolved["model"] == "${model}"
