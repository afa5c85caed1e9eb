"""Readers against hand-written fixtures: values and the exact position of the TP token."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.sources import iter_files, read_path
from tpcheck.sources.base import Deployment

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"


def one(name: str) -> Deployment:
    res = read_path(str(FIX / name))
    assert res.errors == ()
    assert len(res.deployments) == 1, res.deployments
    return res.deployments[0]


def tp_at(d: Deployment) -> tuple[int, int, int]:
    s = d.spans["tensor_parallel_size"]
    return s.line, s.column, s.end_column


def test_k8s_folded_sh_c_maps_tp_inside_the_folded_scalar() -> None:
    d = one("k8s-folded-sh-c.yaml")
    assert (d.engine, d.model) == ("vllm", "meta-llama/Llama-3.1-70B-Instruct")
    assert (d.tensor_parallel_size, d.pipeline_parallel_size, d.data_parallel_size) == (4, 2, 1)
    assert d.max_num_seqs == 128
    # line 21 is 14 spaces + "--tensor-parallel-size " (23 chars): the 4 is column 38
    assert tp_at(d) == (21, 38, 39)
    # line 22: 14 spaces + "--max-num-seqs " (15 chars) -> "128" at columns 30..32
    s = d.spans["max_num_seqs"]
    assert (s.line, s.column, s.end_column) == (22, 30, 33)
    assert d.gpus_requested == 8
    assert d.gpu_product == "NVIDIA-H100-80GB-HBM3"
    assert (d.image, d.engine_version) == ("vllm/vllm-openai:v0.6.4", "0.6.4")


def test_lws_sglang_prefixes_env_expansion_and_ambiguous_pp() -> None:
    d = one("lws-sglang.yaml")
    assert (d.engine, d.model) == ("sglang", "deepseek-ai/DeepSeek-V3")
    # --tp is the only prefix of --tp-size; $(TP) comes from env value "16" on line 15
    assert d.tensor_parallel_size == 16
    assert tp_at(d) == (15, 25, 27)
    assert d.data_parallel_size == 2
    assert d.enable_dp_attention is True and d.attn_dp_size == 2
    assert d.max_num_seqs == 256
    # --pp is ambiguous on SGLang 0.5.23: not read, and the refusal is recorded
    assert d.pipeline_parallel_size is None
    assert any("ambiguous option: --pp" in n for n in d.notes)
    assert (d.group_size, d.gpus_requested, d.engine_version) == (2, 8, "0.4.6")


def test_compose_args_only_with_default_expansion() -> None:
    d = one("compose.yaml")
    assert (d.engine, d.model, d.tensor_parallel_size, d.max_num_seqs) == (
        "vllm", "Qwen/Qwen3-8B", 2, 32,
    )
    # ${TP:-2}: the span is the default "2" itself;
    # line 8 is 6 spaces + "--tensor-parallel-size ${TP:-" (29 chars) -> column 36
    assert tp_at(d) == (8, 36, 37)
    assert d.gpus_requested == 2
    assert d.pipeline_parallel_size is None and d.data_parallel_size is None


def test_vllm_config_yaml_dashes_and_underscores() -> None:
    d = one("vllm-config.yaml")
    assert (d.model, d.tensor_parallel_size, d.pipeline_parallel_size) == (
        "meta-llama/Llama-3.1-8B-Instruct", 2, 1,
    )
    assert (d.max_num_seqs, d.max_model_len, d.data_parallel_size) == (64, 8192, None)
    assert tp_at(d) == (2, 23, 24)


def test_production_stack_values() -> None:
    d = one("prodstack-values.yaml")
    assert (d.model, d.tensor_parallel_size, d.max_model_len) == (
        "Qwen/Qwen2.5-7B-Instruct", 2, 8192,
    )
    assert d.max_num_seqs == 48  # from extraArgs
    assert d.gpus_requested == 2 and d.engine_version == "0.8.5"
    assert tp_at(d) == (9, 29, 30)
    assert d.pipeline_parallel_size is None and d.data_parallel_size is None


def test_kubeai_model_prefix_abbreviation_and_profile() -> None:
    d = one("kubeai-model.yaml")
    assert d.model == "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8"
    assert (d.tensor_parallel_size, d.pipeline_parallel_size, d.max_num_seqs) == (2, 4, 512)
    assert d.max_num_batched_tokens == 32768  # --max-num-batched-token, argparse prefix
    assert (d.gpus_requested, d.gpu_product) == (8, "nvidia-gpu-l4")
    # line 9: 4 spaces + "- --tensor-parallel-size=" (25 chars) -> "2" at column 30
    assert tp_at(d) == (9, 30, 31)
    assert d.data_parallel_size is None


def test_shell_script_variables_heredoc_and_underscores() -> None:
    d = one("launch.sh")
    assert (d.engine, d.model) == ("vllm", "deepseek-ai/DeepSeek-R1")
    assert d.tensor_parallel_size == 8  # TP=8 on line 3, not the 99 in the heredoc
    assert tp_at(d) == (3, 4, 5)
    assert d.data_parallel_size == 2  # --data_parallel_size: vLLM reads _ as -
    assert d.enable_expert_parallel is True and d.enable_dp_attention is True
    assert d.max_num_seqs == 256 and d.pipeline_parallel_size is None


def test_python_llm_constants_and_subprocess() -> None:
    res = read_path(str(FIX / "offline.py"))
    assert res.errors == ()
    llm, sub = res.deployments
    assert (llm.engine, llm.model, llm.tensor_parallel_size, llm.max_num_seqs) == (
        "vllm", "Qwen/Qwen3-32B", 4, 64,
    )
    assert llm.entrypoint == "llm"
    assert llm.pipeline_parallel_size is None
    assert llm.unresolved["pipeline_parallel_size"] == "get_pp()"
    assert tp_at(llm) == (4, 6, 7)  # the constant TP = 4
    assert (sub.engine, sub.model, sub.tensor_parallel_size) == ("sglang", "Qwen/Qwen3-32B", 2)
    # line 9: '"2"' is the last list element; the 2 sits at column 95
    assert tp_at(sub) == (9, 95, 96)
    assert sub.data_parallel_size is None and sub.max_num_seqs is None


@pytest.mark.parametrize(("name", "line", "col"),
                         [("broken.yaml", 7, 2), ("broken.py", 2, 37)])  # Python: the interpreter's
def test_unparsable_files_give_one_line_error_with_position(name: str, line: int, col: int) -> None:
    res = read_path(str(FIX / name))
    assert len(res.errors) == 1
    e = res.errors[0]
    assert (e.line, e.column) == (line, col)
    assert "\n" not in str(e) and str(e).startswith(f"{FIX / name}:{line}:{col}: ")


def test_stdin_text_uses_stdin_filename_reader() -> None:
    res = read_path("-", "vllm serve m -tp 2\n", stdin_filename="run.sh")
    assert res.path == "run.sh"
    (d,) = res.deployments
    assert d.tensor_parallel_size == 2 and tp_at(d) == (1, 18, 19)


def test_size_limit_skips_with_error(tmp_path: Path) -> None:
    p = tmp_path / "big.yaml"
    p.write_text("a: " + "x" * 2000 + "\n")
    res = read_path(str(p), max_bytes=1000)
    assert res.deployments == () and "limit" in res.errors[0].message


def test_iter_files_skips_hidden_ignored_and_symlinks(tmp_path: Path) -> None:
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "a.yaml").write_text("a: 1\n")
    (tmp_path / "keep.yaml").write_text("a: 1\n")
    (tmp_path / "ignored.yaml").write_text("a: 1\n")
    (tmp_path / "notes.txt").write_text("x\n")
    (tmp_path / ".gitignore").write_text("ignored.yaml\n")
    outside = tmp_path.parent / (tmp_path.name + "-outside")
    outside.mkdir()
    (outside / "x.yaml").write_text("a: 1\n")
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    got = [Path(p).name for p in iter_files([str(tmp_path)])]
    assert got == ["keep.yaml"]


def test_alias_bomb_is_linear() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 20):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    res = read_path("bomb.yaml", "\n".join(lines) + "\n")
    assert res.errors == () and res.deployments == ()


@pytest.mark.parametrize(("image", "engine", "version"), [
    ("vllm/vllm-openai:v0.6.4", "vllm", "0.6.4"),
    ("docker.io/lmsysorg/sglang:v0.5.2", "sglang", "0.5.2"),
    # Wrappers version themselves: NGC's container release and Dynamo's runtime pin no engine.
    ("nvcr.io/nvidia/vllm:26.02-py3", "vllm", None),
    ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.1", "vllm", None),
    ("ai-dynamo-vllm-runtime:1.2.0", "vllm", None),
    ("vllm/vllm-openai:v0.6.4", "sglang", None),
])
def test_engine_version_only_from_the_engines_own_images(image: str, engine: str,
                                                         version: str | None) -> None:
    from tpcheck.sources.kube import engine_version

    assert engine_version(image, engine) == version  # type: ignore[arg-type]


def test_a_command_written_after_its_args_spans_both_forwards() -> None:
    # The property test's find: `command:` below `args:` put the launch's span from the command
    # (line 24) back to the last arg (line 20), a span that ran backwards.
    pod = """\
apiVersion: v1
kind: Pod
metadata: {name: q}
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.33.0
      args:
        - Qwen/Qwen3-32B
        - --tensor-parallel-size
        - "16"
      command: ["vllm", "serve"]
"""
    (d,) = read_path("pod.yaml", pod).deployments
    assert d.tensor_parallel_size == 16
    # from `Qwen/Qwen3-32B` (line 9, column 11) to the end of `"serve"` (line 12, column 32)
    assert (d.span.line, d.span.column, d.span.end_line, d.span.end_column) == (9, 11, 12, 32)
