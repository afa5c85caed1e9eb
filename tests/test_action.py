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
    r"col=(?P<col>\d+)(?:,endLine=(?P<end_line>\d+),endColumn=(?P<end_col>\d+))?,"
    r"title=(?P<title>[^,:]+)::(?P<body>.+)$")
EXPR = re.compile(r"\$\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}")

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


def _sub(text: str, values: dict[str, str]) -> str:
    return EXPR.sub(lambda m: values[m.group(1)], text)


def _runs(action: dict[str, Any], inputs: dict[str, str],
          runner_temp: Path) -> list[dict[str, Any]]:
    """The run: steps with their expressions substituted. setup-python is not run: this venv's
    Python stands in for its ``python-path`` output."""
    values = {f"inputs.{k}": v for k, v in inputs.items()}
    values["runner.temp"] = str(runner_temp)
    values["steps.python.outputs.python-path"] = sys.executable
    steps = []
    for step in action["runs"]["steps"]:
        if "run" not in step:
            assert step["uses"].startswith("actions/setup-python@")
            continue
        assert "if" not in step
        assert step.get("shell") == "bash"
        steps.append({"name": step["name"], "run": step["run"],
                      "env": {k: _sub(str(v), values) for k, v in step.get("env", {}).items()}})
    return steps


def _execute(step: dict[str, Any], workspace: Path) -> subprocess.CompletedProcess[str]:
    script = workspace.parent / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    env = {**os.environ, **step["env"], "GITHUB_ACTION_PATH": str(REPO),
           "GITHUB_WORKSPACE": str(workspace), "GITHUB_OUTPUT": str(workspace.parent / "out"),
           "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    # How GitHub runs `shell: bash` steps.
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=600)


HELM_TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: ["vllm", "serve", "{{ .Values.model }}",
                 "--tensor-parallel-size", "{{ .Values.tp }}"]
          {{- with .Values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A checkout with a folder name holding a space, a Helm chart and two findings' files."""
    ws = tmp_path / "repo"
    deploy = ws / "deploy dir"
    deploy.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (deploy / "llama70b.yaml").write_text(LLAMA_TP6, encoding="utf-8")
    shutil.copy(REPO / "fixtures" / "lint" / "qwen3-32b-tp16.yaml", deploy / "qwen.yaml")
    chart = ws / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: llm\nversion: 0.1.0\n",
                                      encoding="utf-8")
    (chart / "templates" / "deploy.yaml").write_text(HELM_TEMPLATE, encoding="utf-8")
    return ws


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RUNNER_TEMP after the action's own install step ran for real (a venv of its own)."""
    runner_temp = tmp_path_factory.mktemp("runner")
    ws = runner_temp / "ws"
    ws.mkdir()
    action = _action()
    install = _runs(action, _inputs(action, {}), runner_temp)[0]
    assert install["name"] == "Install tpcheck"
    proc = _execute(install, ws)
    assert proc.returncode == 0, proc.stderr
    assert (runner_temp / "tpcheck-venv" / "bin" / "tpcheck").is_file()
    return runner_temp


def test_action_declares_the_documented_inputs() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"paths", "args", "sarif-file", "python-version"}
    assert set(action["outputs"]) == {"exit-code"}
    setup = action["runs"]["steps"][0]
    # The Python that the workflow's later steps see stays theirs.
    assert setup["uses"].startswith("actions/setup-python@")
    assert setup["with"]["update-environment"] is False
    for step in action["runs"]["steps"]:
        # Inputs reach scripts through env, never spliced into the script text.
        assert "${{" not in step.get("run", "")


def _lint(installed: Path, workspace: Path,
          given: dict[str, str]) -> subprocess.CompletedProcess[str]:
    action = _action()
    steps = _runs(action, _inputs(action, given), installed)
    assert [s["name"] for s in steps] == ["Install tpcheck", "Run tpcheck"]
    return _execute(steps[1], workspace)


def _direct(workspace: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "tpcheck", *argv], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.slow
def test_one_run_annotates_writes_sarif_and_fails_with_tpchecks_code(
        installed: Path, workspace: Path) -> None:
    lint = _lint(installed, workspace, {"paths": "deploy dir\n  chart  \n",
                                         "args": '--gpu h100-sxm --select "TP1,TP2"',
                                         "sarif-file": "tpcheck.sarif"})
    direct = _direct(workspace, "--format", "github", "--gpu", "h100-sxm", "--select", "TP1,TP2",
                     "deploy dir", "chart")
    # Whatever tpcheck makes of the chart (read, or an input error), the step says the same and
    # exits with the same code.
    assert lint.returncode == direct.returncode != 0, lint.stderr
    assert lint.stdout == direct.stdout
    outputs = (workspace.parent / "out").read_text(encoding="utf-8")
    assert outputs == f"exit-code={lint.returncode}\n"
    got = set()
    for line in lint.stdout.splitlines():
        m = ANNOTATION.match(line)
        assert m, f"not a well-formed annotation: {line!r}"
        got.add((m["level"], m["file"], int(m["line"]), m["title"].split()[0]))
    llama_row = LLAMA_TP6.split("\n").index(
        '                 "--tensor-parallel-size", "6"]') + 1
    qwen_text = (workspace / "deploy dir" / "qwen.yaml").read_text(encoding="utf-8").split("\n")
    qwen_row = qwen_text.index('            - "16"') + 1
    assert {g for g in got if g[1].startswith("deploy dir/")} == {
        # h = 64, h_kv = 8, f = 28,672 are none of them divisible by 6: three refusals.
        ("error", "deploy dir/llama70b.yaml", llama_row, "TP101"),
        ("error", "deploy dir/llama70b.yaml", llama_row, "TP102"),
        ("error", "deploy dir/llama70b.yaml", llama_row, "TP103"),
        # t = 16 > h_kv = 8: the KV head cliff, on the `16`.
        ("warning", "deploy dir/qwen.yaml", qwen_row, "TP201"),
    }

    sarif = json.loads((workspace / "tpcheck.sarif").read_text(encoding="utf-8"))
    results = sarif["runs"][0]["results"]
    # One SARIF result per annotation: findings, and an unreadable file as TP900.
    assert len(results) == len(lint.stdout.splitlines())
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in results if r["ruleId"] == "TP101"} == {"deploy%20dir/llama70b.yaml"}
    if SCHEMA.is_file():
        import jsonschema

        schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
        jsonschema.validate(sarif, schema)


@pytest.mark.slow
def test_quoted_args_group_and_no_sarif_without_a_file(installed: Path, workspace: Path) -> None:
    lint = _lint(installed, workspace, {"paths": "deploy dir/qwen.yaml",
                                         "args": "--select 'TP201' --fail-on warning"})
    # Without --gpu the manifest's node selector (NVIDIA-H100-80GB-HBM3) names the GPU.
    assert lint.returncode == 1, lint.stderr
    (line,) = lint.stdout.splitlines()
    m = ANNOTATION.match(line)
    assert m and m["level"] == "warning" and m["title"].startswith("TP201")
    assert not list(workspace.glob("*.sarif"))


@pytest.mark.slow
def test_an_unwritable_sarif_file_fails_the_step(installed: Path, workspace: Path) -> None:
    lint = _lint(installed, workspace, {"paths": "deploy dir/qwen.yaml",
                                         "sarif-file": "no/such/dir/x.sarif"})
    assert lint.returncode == 2
    assert "tpcheck: cannot write SARIF to no/such/dir/x.sarif" in lint.stderr


def _stub_step(tmp_path: Path, given: dict[str, str]) -> tuple[dict[str, Any], Path]:
    """The lint step with this venv standing in for the installed one (its python and its
    tpcheck console script), and a workspace folder whose path holds a space."""
    action = _action()
    runner_temp = tmp_path / "runner temp"
    step = _runs(action, _inputs(action, given), runner_temp)[1]
    ws = runner_temp / "ws"
    ws.mkdir(parents=True)
    venv, here = runner_temp / "tpcheck-venv", BIN.parent
    (venv / "bin").mkdir(parents=True)
    # A venv of its own name that sees this one's packages (tpcheck among them)
    shutil.copy(here / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(here / "lib")
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "bin" / "tpcheck").symlink_to(BIN / "tpcheck")
    return step, ws


def _one_usage_annotation(stdout: str) -> str:
    (line,) = stdout.splitlines()
    assert line.startswith("::error title=tpcheck usage error::tpcheck: error: "), line
    return line


def test_unbalanced_quotes_in_args_are_one_annotation_and_exit_2(tmp_path: Path) -> None:
    step, ws = _stub_step(tmp_path, {"args": '--select "TP1'})
    proc = _execute(step, ws)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    line = _one_usage_annotation(proc.stdout)
    assert "No closing quotation" in line and "--select \"TP1" in line
    # written by the EXIT trap although the step ended before tpcheck ran
    assert (ws.parent / "out").read_text(encoding="utf-8") == "exit-code=2\n"


def test_a_format_in_args_is_refused_with_one_line(tmp_path: Path) -> None:
    step, ws = _stub_step(tmp_path, {"args": "--gpu h100-sxm --format=json"})
    proc = _execute(step, ws)
    assert proc.returncode == 2
    line = _one_usage_annotation(proc.stdout)
    assert "--format is set by the action" in line
    assert (ws.parent / "out").read_text(encoding="utf-8") == "exit-code=2\n"


def test_a_usage_error_is_an_annotation_and_exit_code_2(tmp_path: Path) -> None:
    step, ws = _stub_step(tmp_path, {"args": "--gpu nope"})
    (ws / "qwen.yaml").write_text(
        (REPO / "fixtures" / "lint" / "qwen3-32b-tp16.yaml").read_text(encoding="utf-8"),
        encoding="utf-8")
    proc = _execute(step, ws)
    assert proc.returncode == 2
    line = _one_usage_annotation(proc.stdout)
    assert "unknown GPU 'nope'" in line
    assert "tpcheck: error: --gpu: unknown GPU 'nope'" in proc.stderr
    assert (ws.parent / "out").read_text(encoding="utf-8") == "exit-code=2\n"


def test_the_default_path_annotates_repository_relative_names(tmp_path: Path) -> None:
    step, ws = _stub_step(tmp_path, {"args": "--gpu h100-sxm", "sarif-file": "out.sarif"})
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "deploy").mkdir()
    (ws / "deploy" / "llama.yaml").write_text(LLAMA_TP6, encoding="utf-8")
    proc = _execute(step, ws)  # paths: "." (the default)
    assert proc.returncode == 1, proc.stderr
    files = {m["file"] for m in map(ANNOTATION.match, proc.stdout.splitlines()) if m}
    assert files == {"deploy/llama.yaml"}, proc.stdout
    sarif = json.loads((ws / "out.sarif").read_text(encoding="utf-8"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in sarif["runs"][0]["results"]}
    assert uris == files  # one name for the file in both outputs of the run
    assert (ws.parent / "out").read_text(encoding="utf-8") == "exit-code=1\n"
