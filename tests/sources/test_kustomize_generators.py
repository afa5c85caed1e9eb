"""Kustomize: an overlay's configMapGenerator/secretGenerator env files and literals feed the
base's ``$(VAR)`` args through ``envFrom`` and ``valueFrom``; a remote base is named in a note
and the overlay's patches are still read.

The layout is the one the issue reports (a base Deployment with ``$(MODEL)``/``$(TP)`` args, an
overlay whose ``runtime.env`` sets them), written here because no public overlay of that shape
was found to copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.cli import main
from tpcheck.sources import read_path

BASE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.8.5
        args: ["--model", "$(MODEL)", "--tensor-parallel-size", "$(TP)",
               "--max-model-len", "$(MAXLEN)"]
        envFrom:
        - configMapRef:
            name: runtime
        env:
        - name: MAXLEN
          valueFrom:
            {kind}:
              name: runtime
              key: MAX_LEN
        resources:
          limits:
            nvidia.com/gpu: 4
"""


def _tree(tmp_path: Path, generator: str, kind: str = "configMapKeyRef") -> Path:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "deploy.yaml").write_text(BASE.replace("{kind}", kind))
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- deploy.yaml\n")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text(
        f"resources:\n- ../base\n{generator}")
    (tmp_path / "overlay" / "runtime.env").write_text(
        "# serving\nMODEL=Qwen/Qwen3-32B\nTP=4\n\nMAX_LEN=131072\n")
    return tmp_path / "overlay" / "kustomization.yaml"


def test_env_file_feeds_envfrom_and_valuefrom(tmp_path: Path) -> None:
    kz = _tree(tmp_path, "configMapGenerator:\n- name: runtime\n  envs:\n  - runtime.env\n")
    (d,) = read_path(str(kz)).deployments
    assert (d.model, d.tensor_parallel_size, d.max_model_len) == ("Qwen/Qwen3-32B", 4, 131072)
    env = str(tmp_path / "overlay" / "runtime.env")
    # each value is placed in the env file: "MODEL=" is 6 characters, "TP=" 3, "MAX_LEN=" 8
    got = {k: (s.path, s.line, s.column) for k, s in d.spans.items()
           if k in ("model", "tensor_parallel_size", "max_model_len")}
    assert got == {"model": (env, 2, 7), "tensor_parallel_size": (env, 3, 4),
                   "max_model_len": (env, 5, 9)}


def test_literals_of_a_secret_generator(tmp_path: Path) -> None:
    kz = _tree(tmp_path, "secretGenerator:\n- name: runtime\n  literals:\n"
               "  - MODEL=Qwen/Qwen3-8B\n  - TP=2\n  - MAX_LEN=8192\n", kind="secretKeyRef")
    base = (tmp_path / "base" / "deploy.yaml")
    base.write_text(base.read_text().replace("configMapRef", "secretRef"))
    (d,) = read_path(str(kz)).deployments
    assert (d.model, d.tensor_parallel_size, d.max_model_len) == ("Qwen/Qwen3-8B", 2, 8192)
    s = d.spans["max_model_len"]  # "  - MAX_LEN=" is 12 characters: the value at 13
    assert (s.path, s.line, s.column) == (str(kz), 8, 13)


def test_a_missing_env_file_is_one_error(tmp_path: Path) -> None:
    kz = _tree(tmp_path, "configMapGenerator:\n- name: runtime\n  envs:\n  - missing.env\n")
    r = read_path(str(kz))
    assert r.deployments == () and len(r.errors) == 1
    assert "missing.env: no such env file" in r.errors[0].message


def test_remote_base_is_noted_and_patches_read(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n- https://github.com/acme/serving//base?ref=v1\n"
        "patches:\n- path: decode.yaml\n")
    (tmp_path / "decode.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: vllm\n"
        '        args: ["--model", "Qwen/Qwen3-32B", "--tensor-parallel-size", "3"]\n')
    r = read_path(str(tmp_path / "kustomization.yaml"))
    (d,) = r.deployments
    assert (d.model, d.tensor_parallel_size) == ("Qwen/Qwen3-32B", 3)
    assert [n.line for n in r.notes] == [2]
    assert "remote base https://github.com/acme/serving//base?ref=v1 not fetched" in (
        r.notes[0].message)
    # 64 heads % 3 = 1: TP101 on the patch's own line; the run's exit code is the finding's
    assert main(["--offline", "--select", "TP101", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "decode.yaml:10:" in out.out and out.err.count("remote base") == 1
