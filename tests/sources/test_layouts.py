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
