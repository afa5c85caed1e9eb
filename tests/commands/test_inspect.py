"""``tpcheck inspect``: JSON shape, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tpcheck.commands.inspect import INSPECT_KEYS, inspect_cmd

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"


def test_json_shape_and_values() -> None:
    r = CliRunner().invoke(inspect_cmd, [str(FIX / "k8s-folded-sh-c.yaml"), "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    (d,) = data["deployments"]
    assert set(INSPECT_KEYS) <= set(d)
    assert (d["engine"], d["tensor_parallel_size"], d["pipeline_parallel_size"]) == ("vllm", 4, 2)
    assert (d["max_num_seqs"], d["gpus_requested"], d["gpu"]) == (128, 8, "NVIDIA-H100-80GB-HBM3")
    assert d["max_model_len"] is None and d["kv_cache_dtype"] is None
    assert d["spans"]["tensor_parallel_size"]["line"] == 21
    assert d["spans"]["tensor_parallel_size"]["column"] == 38
    assert data["errors"] == []


def test_broken_file_alone_exits_2_with_one_line() -> None:
    r = CliRunner().invoke(inspect_cmd, [str(FIX / "broken.py")])
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith(f"{FIX / 'broken.py'}:3:1: ")


def test_broken_file_does_not_stop_the_others() -> None:
    r = CliRunner().invoke(
        inspect_cmd, [str(FIX / "broken.py"), str(FIX / "launch.sh"), "--format", "json"]
    )
    assert r.exit_code == 0
    out = r.output[r.output.index("{"):]
    data = json.loads(out)
    assert [d["tensor_parallel_size"] for d in data["deployments"]] == [8]
    assert data["errors"][0]["line"] == 3


def test_verbose_lists_files_without_launch(tmp_path: Path) -> None:
    p = tmp_path / "plain.yaml"
    p.write_text("kind: ConfigMap\n")
    r = CliRunner().invoke(inspect_cmd, [str(p), "--verbose"])
    assert r.exit_code == 0 and "no engine launch" in r.output


def test_stdin_with_filename() -> None:
    r = CliRunner().invoke(
        inspect_cmd, ["-", "--stdin-filename", "x.yaml", "--format", "json"],
        input="args: [vllm, serve, m, --tensor-parallel-size, '2']\n",
    )
    assert r.exit_code == 0, r.output
    (d,) = json.loads(r.output)["deployments"]
    assert d["path"] == "x.yaml" and d["tensor_parallel_size"] == 2
