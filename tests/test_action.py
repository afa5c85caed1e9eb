"""The composite action's own ``run:`` steps, executed locally as GitHub would run them.

setup-python is skipped (the current venv stands in for it) and the install step runs with
``--dry-run`` added to its ``pip install``: pip resolves and builds the action's folder but leaves
this venv's editable install alone. The lint steps run for real against fixtures; their
annotations must be well-formed workflow commands and the SARIF must validate against the
SARIF 2.1.0 schema.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
from tests.shared import SARIF_SCHEMA as SCHEMA  # noqa: E402

BIN = Path(sys.executable).parent

ANNOTATION = re.compile(
    r"^::(?P<level>error|warning|notice) file=(?P<file>[^,:]+),line=(?P<line>\d+),"
    r"col=(?P<col>\d+),endLine=(?P<end_line>\d+),endColumn=(?P<end_col>\d+),"
    r"title=(?P<title>[^,:]+)::(?P<body>.+)$")
EXPR = re.compile(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}")
IF_NOT_EMPTY = re.compile(r"^inputs\.([A-Za-z0-9_-]+)\s*!=\s*''$")

LLAMA_TP6 = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-70b
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct",
                 "--tensor-parallel-size", "6"]
          resources:
            limits:
              nvidia.com/gpu: 6
"""


def _action() -> dict[str, Any]:
    data = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _inputs(action: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    declared = action["inputs"]
    unknown = set(given) - set(declared)
    assert not unknown, f"not inputs of action.yml: {unknown}"
    return {k: given.get(k, str(v.get("default", ""))) for k, v in declared.items()}


def _sub(text: str, inputs: dict[str, str]) -> str:
    return EXPR.sub(lambda m: inputs[m.group(1)], text)


def _runs(action: dict[str, Any], inputs: dict[str, str]) -> list[dict[str, Any]]:
    """The run: steps whose if: holds, with inputs substituted (setup-python is not one)."""
    steps = []
    for step in action["runs"]["steps"]:
        if "run" not in step:
            assert step["uses"].startswith("actions/setup-python@")
            continue
        cond = step.get("if")
        if cond is not None:
            m = IF_NOT_EMPTY.match(cond.strip())
            assert m, f"this test only evaluates `inputs.x != ''` conditions, not {cond!r}"
            if inputs[m.group(1)] == "":
                continue
        assert step.get("shell") == "bash"
        steps.append({"name": step["name"], "run": _sub(step["run"], inputs),
                      "env": {k: _sub(str(v), inputs) for k, v in step.get("env", {}).items()}})
    return steps


def _execute(step: dict[str, Any], workspace: Path) -> subprocess.CompletedProcess[str]:
    script = workspace.parent / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    env = {**os.environ, **step["env"], "GITHUB_ACTION_PATH": str(REPO),
           "GITHUB_WORKSPACE": str(workspace), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    # How GitHub runs `shell: bash` steps.
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    (ws / "deploy").mkdir(parents=True)
    (ws / "deploy" / "llama70b.yaml").write_text(LLAMA_TP6, encoding="utf-8")
    shutil.copy(REPO / "fixtures" / "lint" / "qwen3-32b-tp16.yaml", ws / "deploy" / "qwen.yaml")
    return ws


def test_action_declares_the_documented_inputs() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"paths", "args", "sarif-file", "python-version"}
    for step in action["runs"]["steps"]:
        # Inputs reach scripts through env, never spliced into the script text.
        assert "${{" not in step.get("run", "")


@pytest.mark.slow
def test_action_steps_annotate_and_write_valid_sarif(workspace: Path) -> None:
    action = _action()
    inputs = _inputs(action, {"paths": "deploy", "args": "--gpu h100-sxm",
                              "sarif-file": "tpcheck.sarif"})
    steps = _runs(action, inputs)
    assert [s["name"] for s in steps] == ["Install tpcheck", "Write SARIF", "Run tpcheck"]

    assert steps[0]["run"].count("pip install ") == 1
    dry = {**steps[0], "run": steps[0]["run"].replace("pip install ", "pip install --dry-run ")}
    install = _execute(dry, workspace)
    assert install.returncode == 0, install.stderr
    assert "Would install tpcheck-" in install.stdout  # pip's dry-run summary

    sarif_step = _execute(steps[1], workspace)
    assert sarif_step.returncode == 0, sarif_step.stderr  # findings (exit 1) do not stop it

    lint = _execute(steps[2], workspace)
    assert lint.returncode == 1, lint.stderr  # findings fail the job
    lines = lint.stdout.splitlines()
    assert lines, lint.stderr
    got = set()
    for line in lines:
        m = ANNOTATION.match(line)
        assert m, f"not a well-formed annotation: {line!r}"
        got.add((m["level"], m["file"], int(m["line"]), int(m["col"]), m["title"].split()[0]))
        assert int(m["end_line"]) >= int(m["line"])
    llama_row = LLAMA_TP6.split("\n").index(
        '                 "--tensor-parallel-size", "6"]') + 1
    llama_col = LLAMA_TP6.split("\n")[llama_row - 1].index('"6"') + 2  # 1-based, inside quotes
    qwen_text = (workspace / "deploy" / "qwen.yaml").read_text(encoding="utf-8").split("\n")
    qwen_row = qwen_text.index('            - "16"') + 1
    assert got == {
        # h = 64, h_kv = 8, f = 28,672 are none of them divisible by 6: three refusals.
        ("error", "deploy/llama70b.yaml", llama_row, llama_col, "TP101"),
        ("error", "deploy/llama70b.yaml", llama_row, llama_col, "TP102"),
        ("error", "deploy/llama70b.yaml", llama_row, llama_col, "TP103"),
        # t = 16 > h_kv = 8: the KV head cliff, on the `16`.
        ("warning", "deploy/qwen.yaml", qwen_row, 16, "TP201"),
    }

    sarif = json.loads((workspace / "tpcheck.sarif").read_text(encoding="utf-8"))
    results = sarif["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["TP101", "TP102", "TP103", "TP201"]
    if SCHEMA.is_file():
        import jsonschema

        schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
        jsonschema.validate(sarif, schema)


def test_sarif_step_is_skipped_without_a_file(workspace: Path) -> None:
    action = _action()
    steps = _runs(action, _inputs(action, {"paths": "deploy/qwen.yaml"}))
    assert [s["name"] for s in steps] == ["Install tpcheck", "Run tpcheck"]
    lint = _execute(steps[1], workspace)
    # Without --gpu the manifest's node selector (NVIDIA-H100-80GB-HBM3) names the GPU.
    assert lint.returncode == 1
    (line,) = lint.stdout.splitlines()
    m = ANNOTATION.match(line)
    assert m and m["level"] == "warning" and m["title"].startswith("TP201")
