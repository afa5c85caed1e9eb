"""The GPUs and the engine release where the scheduler or the runner names them: Slurm
``#SBATCH`` lines, Truss ``resources.accelerator``, ``docker run --gpus``, pins in a SkyPilot
``setup``; and PowerShell launches. Files are in fixtures/reach3 (real public files, and
hand-written ones where the original states no licence: SOURCES.tsv) and
fixtures/corpus-sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.sources import read_path
from tpcheck.sources.dockerfile import powershell_to_shell
from tpcheck.sources.schedulers import slurm_gpus

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REACH3 = FIXTURES / "reach3"


def test_slurm_gres_of_a_batch_script() -> None:
    """`#SBATCH --gres=gpu:A6000:4` before `vllm serve meta-llama/Llama-3.1-70B-Instruct
    --tensor-parallel-size 4`: 4 A6000 GPUs (before: gpus=-, gpu=-)."""
    path = REACH3 / "handwritten--slurm-gres-a6000.sh"
    (d,) = read_path(str(path)).deployments
    assert (d.gpus_requested, d.gpu_product, d.tensor_parallel_size) == (4, "A6000", 4)
    s = d.spans["gpus_requested"]  # "#SBATCH --gres=" is 15 characters: the value at 16
    assert (s.line, s.column, s.end_column) == (5, 16, 27)


@pytest.mark.parametrize(("header", "gpus", "product"), [
    ("#SBATCH --gres=gpu:2\n", 2, None),
    ("#SBATCH --gres gpu:nvidia_rtx_a6000:4\n", 4, "nvidia_rtx_a6000"),
    ("#SBATCH --gpus-per-node=H100:8\n#SBATCH --nodes=1\n", 8, "H100"),
    ("#SBATCH -G A100:4\n#SBATCH -N 1\n", 4, "A100"),
    ("#SBATCH --gres=shard:2,gpu:l40s:3\n", 3, "l40s"),
    # several nodes: the per-node count is not the job's, so nothing is said
    ("#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n", None, None),
    ("#SBATCH -N 2\n#SBATCH --gres=gpu:8\n", None, None),
    # the header ends at the first command (Slurm's rule)
    ("echo hi\n#SBATCH --gres=gpu:8\n", None, None),
    # a commented-out option
    ("##SBATCH --gres=gpu:8\n", None, None),
])
def test_slurm_options(header: str, gpus: int | None, product: str | None) -> None:
    extra, _ = slurm_gpus("job.sh", "#!/bin/bash\n" + header + "vllm serve m\n")
    assert extra.get("gpus_requested") == gpus and extra.get("gpu_product") == product


def test_truss_accelerator() -> None:
    """Baseten's Llama-4-Scout truss: `resources: accelerator: H100:8` is what the
    start_command's `--tensor-parallel-size 8` runs on."""
    path = REACH3 / ("basetenlabs--truss-examples_llama_"
                     "llama-4-scout-17b-16e-instruct-bf16-vllm_config.yaml")
    (d,) = read_path(str(path)).deployments
    assert (d.model, d.tensor_parallel_size) == ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 8)
    assert (d.gpus_requested, d.gpu_product) == (8, "H100")
    assert d.spans["gpus_requested"].line == 42


def test_skypilot_setup_pin() -> None:
    """SkyPilot's DeepSeek-R1 task installs `sglang[all]==0.4.2.post4` in `setup` (line 16)
    and runs `python -m sglang.launch_server` in `run`: that release, said where."""
    path = FIXTURES / "corpus-sample" / (
        "skypilot-org--skypilot_llm_deepseek-r1_deepseek-r1-671B.yaml")
    (d,) = read_path(str(path)).deployments
    assert d.engine == "sglang" and d.engine_version == "0.4.2.post4"
    assert d.engine_version_from == (f"from `sglang==0.4.2.post4` pinned in setup at {path}:16")


KIMI = FIXTURES / "reach" / "skypilot-org--skypilot_llm_kimi-k2_kimi-k2.sky.yaml"


def test_skypilot_accelerators_name_the_gpu(tmp_path: Path) -> None:
    """`accelerators: H100:8` (line 16) names the product of every node; the task has
    num_nodes: 2 (line 22), so the 8 are one node's and the launch's GPU count stays unset
    (the checks count one pod's GPUs against the whole t·p = 16 ranks). The same task on one
    node gets its 8 GPUs. Before: gpu=- and gpus=-."""
    (d,) = read_path(str(KIMI)).deployments
    assert (d.gpu_product, d.gpus_requested) == ("H100", None)
    assert d.spans["gpu_product"].line == 16
    one = tmp_path / "one-node.sky.yaml"
    one.write_text(KIMI.read_text().replace("num_nodes: 2", "num_nodes: 1"))
    (d1,) = read_path(str(one)).deployments
    assert (d1.gpu_product, d1.gpus_requested) == ("H100", 8)


def test_skypilot_accelerator_choices_name_no_product() -> None:
    """`{H200:8, H100:8, A100-80GB:8}`: SkyPilot picks one of three products, so none is the
    launch's; one count (8) for all three, but num_nodes: 2 leaves it unset too."""
    path = FIXTURES / "corpus-sample" / (
        "skypilot-org--skypilot_llm_deepseek-r1_deepseek-r1-671B.yaml")
    (d,) = read_path(str(path)).deployments
    assert (d.gpu_product, d.gpus_requested) == (None, None)


def test_powershell_docker_run() -> None:
    """`docker run ... vllm/vllm-openai:v0.6.6.post1 --model deepseek-ai/DeepSeek-V3` in a
    .ps1: the image's entrypoint is vLLM's server, the words after the image its arguments."""
    (d,) = read_path(str(REACH3 / "handwritten--docker-run.ps1")).deployments
    assert (d.engine, d.model) == ("vllm", "deepseek-ai/DeepSeek-V3")
    assert d.image == "vllm/vllm-openai:v0.6.6.post1" and d.engine_version == "0.6.6.post1"
    # line 3: the model's characters start after the 129 of "docker run ... --model "
    assert (d.spans["model"].line, d.spans["model"].column) == (3, 130)


def test_powershell_backticks_and_env(tmp_path: Path) -> None:
    text = ('$env:MODEL = "Qwen/Qwen3-8B"\n$TP = 4\n'
            "docker run --gpus '\"device=0,1,2,3\"' vllm/vllm-openai:v0.8.5 `\n"
            "  --model $env:MODEL `\n  --tensor-parallel-size $TP\n")
    assert len(powershell_to_shell(text)) == len(text)
    path = tmp_path / "serve.ps1"
    path.write_text(text)
    (d,) = read_path(str(path)).deployments
    assert (d.model, d.tensor_parallel_size, d.gpus_requested) == ("Qwen/Qwen3-8B", 4, 4)
    assert d.engine_version == "0.8.5"
    # the model's characters are where the assignment wrote them: line 1 after `= "`
    assert (d.spans["model"].line, d.spans["model"].column) == (1, 15)


@pytest.mark.parametrize(("gpus", "count"), [
    ("2", 2), ("'\"device=0,1\"'", 2), ("all", None),
])
def test_docker_run_gpus(tmp_path: Path, gpus: str, count: int | None) -> None:
    path = tmp_path / "run.sh"
    path.write_text(f"docker run --rm --gpus {gpus} -p 8000:8000 vllm/vllm-openai:v0.8.5 \\\n"
                    "  --model Qwen/Qwen3-8B --tensor-parallel-size 2\n")
    (d,) = read_path(str(path)).deployments
    assert (d.model, d.gpus_requested, d.image) == ("Qwen/Qwen3-8B", count,
                                                    "vllm/vllm-openai:v0.8.5")


def test_docker_run_with_its_own_entrypoint_is_no_engine_launch(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("docker run --entrypoint /bin/bash vllm/vllm-openai:v0.8.5 "
                    "--model Qwen/Qwen3-8B\n")
    assert read_path(str(path)).deployments == ()


def test_modal_app() -> None:
    """Modal's vLLM example: `cmd = ["vllm", "serve", "--uvicorn-log-level=info", MODEL_NAME,
    ...]` inside `@app.function(gpu=f"H100:{N_GPU}")` with N_GPU = 1, run as
    `subprocess.Popen(" ".join(cmd), shell=True)`, on an image that pip-installs vllm==0.7.2."""
    path = REACH3 / "modal-labs--modal-examples_06_gpu_and_ml_llm-serving_vllm_inference.py"
    (d,) = read_path(str(path)).deployments
    assert d.model == "neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"
    assert d.revision == "a7c09948d9a632c2c840722f519672cd94af885d"
    assert (d.gpus_requested, d.gpu_product) == (1, "H100")
    assert d.spans["gpus_requested"].line == 93  # gpu=f"H100:{N_GPU}"
    assert d.spans["model"].line == 61  # MODEL_NAME = "..."
    assert d.engine_version == "0.7.2"
    assert d.engine_version_from == f"from `vllm==0.7.2` pinned in pip_install at {path}:31"


def test_python_argv_lists(tmp_path: Path) -> None:
    path = tmp_path / "launch.py"
    path.write_text(
        "import os, shlex, subprocess\n"
        "class Server:\n"
        "    MODEL = 'Qwen/Qwen3-32B'\n"
        "    TP = 4\n"
        "def main():\n"
        "    base = ['vllm', 'serve', Server.MODEL]\n"
        "    cmd = ['vllm', 'serve', MODEL] + ['--tensor-parallel-size', str(TP)]\n"
        "    subprocess.run(cmd)\n"
        "    os.execvp('python', ['python', '-m', 'sglang.launch_server', '--model-path',\n"
        "                          MODEL, '--tp', str(TP)])\n"
        "    subprocess.run(shlex.join(['vllm', 'serve', 'Qwen/Qwen3-8B', '-tp', '2']),\n"
        "                   shell=True)\n"
        "MODEL = 'Qwen/Qwen3-32B'\nTP = 4\n")
    ds = read_path(str(path)).deployments
    assert [(d.engine, d.model, d.tensor_parallel_size) for d in ds] == [
        ("vllm", "Qwen/Qwen3-32B", 4), ("sglang", "Qwen/Qwen3-32B", 4),
        ("vllm", "Qwen/Qwen3-8B", 2)]
    assert ds[0].spans["tensor_parallel_size"].line == 14  # TP = 4, read through str(TP)
