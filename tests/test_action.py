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


def _execute(step: dict[str, Any], workspace: Path,
             runner: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``runner``: more of the variables a runner sets (GITHUB_STEP_SUMMARY, the event)."""
    script = workspace.parent / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "GIT_", "TPCHECK"))}
    env.update({**step["env"], "GITHUB_ACTION_PATH": str(REPO),
                "GITHUB_WORKSPACE": str(workspace), "GITHUB_OUTPUT": str(workspace.parent / "out"),
                "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", **(runner or {})})
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


# ---- the job summary (GITHUB_STEP_SUMMARY) and, on pull requests, the diff --------------------

GIT_ID = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
          "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
          "GIT_CONFIG_NOSYSTEM": "1"}
QWEN_TP8 = (REPO / "fixtures" / "lint" / "qwen3-32b-tp8.yaml").read_text(encoding="utf-8")
QWEN_TP16 = (REPO / "fixtures" / "lint" / "qwen3-32b-tp16.yaml").read_text(encoding="utf-8")


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=cwd, env={**env, **GIT_ID}, check=True,
                          capture_output=True, text=True).stdout.strip()


def _summary_run(tmp_path: Path, given: dict[str, str], event: str,
                 prepare: Any) -> tuple[subprocess.CompletedProcess[str], str]:
    """The lint step run as a runner runs it for ``event``, in a workspace ``prepare`` fills;
    returns the step and what it wrote to the job summary (a file the runner had created)."""
    step, ws = _stub_step(tmp_path, given)
    prepare(ws)
    summary = ws.parent / "step_summary.md"
    summary.write_text("", encoding="utf-8")
    runner = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_EVENT_NAME": event}
    if event == "pull_request":
        runner["GITHUB_BASE_REF"] = "main"
    proc = _execute(step, ws, runner)
    return proc, summary.read_text(encoding="utf-8")


def test_the_summary_lists_every_finding_past_the_annotation_cap(tmp_path: Path) -> None:
    def prepare(ws: Path) -> None:
        for i in range(12):
            (ws / f"llama{i:02}.yaml").write_text(LLAMA_TP6, encoding="utf-8")

    proc, summary = _summary_run(tmp_path, {"args": "--gpu h100-sxm"}, "push", prepare)
    assert proc.returncode == 1, proc.stderr
    # t = 6 divides none of h = 64, h_kv = 8, f = 28,672: TP101-TP103 in each of 12 files, 36
    # errors; GitHub shows 10 of them as annotations, the summary all 36.
    assert len(proc.stdout.splitlines()) == 36
    rows = [ln for ln in summary.splitlines() if ln.startswith("| llama")]
    assert len(rows) == 36
    direct = _direct(proc_ws := tmp_path / "runner temp" / "ws", "--gpu", "h100-sxm",
                     "--format", "markdown", ".")
    assert summary == direct.stdout + "\n", proc_ws  # the same report; a push has no diff
    assert "tpcheck diff" not in summary


def _base_and_change(ws: Path) -> None:
    (ws / "deploy").mkdir()
    (ws / "deploy" / "qwen.yaml").write_text(QWEN_TP8, encoding="utf-8")
    (ws / "deploy" / "same.yaml").write_text(QWEN_TP8, encoding="utf-8")
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, "commit", "-qm", "TP 8")


def test_a_pull_request_summary_has_the_diff_against_the_merge_base(tmp_path: Path) -> None:
    """actions/checkout's merge commit, parents present (fetch-depth: 0): HEAD^1 is the base."""
    def prepare(ws: Path) -> None:
        _base_and_change(ws)
        _git(ws, "checkout", "-qb", "pr")
        (ws / "deploy" / "qwen.yaml").write_text(QWEN_TP16, encoding="utf-8")
        _git(ws, "commit", "-qam", "TP 16")
        _git(ws, "checkout", "-q", "--detach", "main")
        _git(ws, "merge", "-q", "--no-ff", "-m", "merge", "pr")

    proc, summary = _summary_run(tmp_path, {"args": "--fail-on error --statistics -q"},
                                 "pull_request", prepare)
    assert proc.returncode == 1, proc.stderr  # TP402 is an error: --fail-on error still fails
    lint, _, diff = summary.partition("### tpcheck diff against ")
    assert lint.startswith("### tpcheck: 2 findings in 2 deployments (2 files read)")
    rows = [ln for ln in diff.splitlines() if ln.startswith("| deploy/")]
    # the plan's 61 seats at TP 8 and 65 at TP 16 for Qwen3-32B on H100 at c = 32,768 (see
    # tests/test_diff.py, which derives them); same.yaml did not change: no row
    assert len(rows) == 1 and rows[0].startswith(
        "| deploy/qwen.yaml | TP 8 → 16: seats 61 → 65 (1.07×) for 2× the GPUs (8 → 16)"), diff
    assert (tmp_path / "runner temp" / "out").read_text(encoding="utf-8") == "exit-code=1\n"


def test_a_shallow_pull_request_checkout_fetches_the_base(tmp_path: Path) -> None:
    """The default checkout: the merge commit alone (depth 1), as actions/checkout fetches
    refs/pull/N/merge; no parent to diff against, so the step fetches the base."""
    origin = tmp_path / "origin"
    origin.mkdir()
    _base_and_change(origin)
    _git(origin, "checkout", "-qb", "pr")
    (origin / "deploy" / "qwen.yaml").write_text(QWEN_TP16, encoding="utf-8")
    _git(origin, "commit", "-qam", "TP 16")
    _git(origin, "checkout", "-q", "--detach", "main")
    _git(origin, "merge", "-q", "--no-ff", "-m", "merge", "pr")
    _git(origin, "update-ref", "refs/pull/1/merge", "HEAD")

    def prepare(ws: Path) -> None:
        _git(ws, "init", "-q")
        _git(ws, "remote", "add", "origin", origin.as_uri())
        _git(ws, "fetch", "-q", "--no-tags", "--depth=1", "origin",
             "+refs/pull/1/merge:refs/remotes/pull/1/merge")
        _git(ws, "checkout", "-q", "--detach", "refs/remotes/pull/1/merge")
        # the shallow case: the merge commit's parents are not here
        assert _git(ws, "rev-list", "--count", "HEAD") == "1"

    proc, summary = _summary_run(tmp_path, {"paths": "deploy", "args": "--gpu h100-sxm"},
                                 "pull_request", prepare)
    assert proc.returncode == 1, proc.stderr
    assert "| deploy/qwen.yaml | TP 8 → 16: seats 61 → 65 (1.07×)" in summary, summary
    assert "### tpcheck diff against origin/main (" in summary  # the fetch updated origin/main


def test_a_base_that_cannot_be_fetched_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    def prepare(ws: Path) -> None:
        _git(ws, "init", "-q")
        (ws / "qwen.yaml").write_text(QWEN_TP8, encoding="utf-8")
        _git(ws, "add", ".")
        _git(ws, "commit", "-qm", "TP 8")  # no origin to fetch main from

    proc, summary = _summary_run(tmp_path, {}, "pull_request", prepare)
    assert proc.returncode == 0, proc.stderr  # TP 8 on 8 H100s: nothing to say
    assert proc.stdout.splitlines() == [
        "::warning title=tpcheck diff::the base branch main could not be fetched; the summary "
        "has no diff"]
    assert summary.startswith("### tpcheck: 0 findings in 1 deployment (1 file read)")
    assert "tpcheck diff" not in summary
