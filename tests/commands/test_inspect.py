"""``tpcheck inspect``: JSON shape, exit codes, one-line errors (through ``cli.main``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tpcheck.cli import main
from tpcheck.commands.inspect import INSPECT_KEYS

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["inspect", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_shape_and_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = inspect(capsys, str(FIX / "k8s-folded-sh-c.yaml"), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    (d,) = data["deployments"]
    assert set(INSPECT_KEYS) <= set(d)
    assert (d["engine"], d["tensor_parallel_size"], d["pipeline_parallel_size"]) == ("vllm", 4, 2)
    assert (d["max_num_seqs"], d["gpus_requested"], d["gpu"]) == (128, 8, "NVIDIA-H100-80GB-HBM3")
    assert d["max_model_len"] is None and d["kv_cache_dtype"] is None
    assert d["spans"]["tensor_parallel_size"]["line"] == 21
    assert d["spans"]["tensor_parallel_size"]["column"] == 38
    assert data["errors"] == []


def test_broken_file_alone_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = inspect(capsys, str(FIX / "broken.py"))
    assert code == 2 and out == ""
    lines = [ln for ln in err.splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith(f"{FIX / 'broken.py'}:2:37: ")


def test_broken_file_does_not_stop_the_others(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = inspect(capsys, str(FIX / "broken.py"), str(FIX / "launch.sh"),
                             "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [d["tensor_parallel_size"] for d in data["deployments"]] == [8]
    assert data["errors"][0]["line"] == 2
    assert err.startswith(f"{FIX / 'broken.py'}:2:37: ")


def test_verbose_lists_files_without_launch(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    p = tmp_path / "plain.yaml"
    p.write_text("kind: ConfigMap\n")
    for flag in ("--verbose", "-v"):
        code, out, _ = inspect(capsys, str(p), flag)
        assert code == 0 and out == f"{p}: no engine launch\n"
    code, out, _ = inspect(capsys, str(p))
    assert code == 0 and out == ""


def test_stdin_with_filename(capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(
        "args: [vllm, serve, m, --tensor-parallel-size, '2']\n"))
    code, out, err = inspect(capsys, "-", "--stdin-filename", "x.yaml", "--format", "json")
    assert code == 0, err
    (d,) = json.loads(out)["deployments"]
    assert d["path"] == "x.yaml" and d["tensor_parallel_size"] == 2


def test_usage_errors_are_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = inspect(capsys)
    assert (code, out) == (2, "")
    assert err == ("tpcheck: error: the following arguments are required: PATHS "
                   "(see 'tpcheck inspect --help')\n")
    code, _, err = inspect(capsys, "--format", "yaml", str(FIX / "launch.sh"))
    assert code == 2 and err.count("\n") == 1
    assert "'yaml'" in err and "'text', 'json'" in err and "tpcheck inspect --help" in err


def test_release_resolved_as_lint_resolves_it(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    """inspect names the release the rules check against: the image tag first, then
    --engine-version (over the settings file), then the newest known."""
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                   "  - name: vllm\n    image: vllm/vllm-openai:v0.8.5\n"
                   "    command: [vllm, serve, m]\n", encoding="utf-8")
    sh = tmp_path / "s.sh"
    sh.write_text("vllm serve m\n", encoding="utf-8")
    code, out, err = inspect(capsys, str(pod), str(sh), "--format", "json", "--offline",
                             "--engine-version", "0.15.1")
    assert code == 0, err
    rels = [d["release"] for d in json.loads(out)["deployments"]]
    assert rels == [
        {"version": "0.8.5", "source": "from the image tag vllm-openai:v0.8.5", "pinned": True,
         "option_table": "0.8.5"},
        # no table for 0.15.1: the nearest older one, 0.14.0
        {"version": "0.15.1", "source": "from --engine-version", "pinned": True,
         "option_table": "0.14.0"},
    ]


def test_a_bundled_config_is_named_by_its_catalog_id(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    # not the site-packages path it was read from (a path that differs per machine)
    (tmp_path / "s.sh").write_text("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2\n")
    code, out, _ = inspect(capsys, "--offline", str(tmp_path / "s.sh"))
    assert code == 0
    assert "    config: catalog Qwen/Qwen3-8B\n" in out
