"""The pre-commit hook, run by the real ``pre-commit try-repo`` in a throwaway git repository.

pre-commit builds the hook's environment by pip-installing tpcheck from a git clone, so this
needs the package index (reachable in CI) and takes about a minute.

``try-repo`` on a dirty checkout clones HEAD and carries over only staged and tracked-modified
files; new untracked files (a fresh ``.pre-commit-hooks.yaml``, say) would be missing. So the test
first snapshots the working tree as it is (``git ls-files --cached --others --exclude-standard``)
into a temporary repository with one commit, and points try-repo there. ``try-repo`` keeps its
store in a temporary folder of its own (not PRE_COMMIT_HOME), so each run installs afresh; pip's
wheel cache makes the second one quick.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"

MANIFEST = """\
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
          args:
            - vllm
            - serve
            - meta-llama/Llama-3.1-70B-Instruct
            - --tensor-parallel-size
            - "{tp}"
            - --max-model-len
            - "8192"
          resources:
            limits:
              nvidia.com/gpu: "{tp}"
"""


def _git(*args: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    return subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false",
                           *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def _snapshot(dest: Path) -> Path:
    """The checkout's working tree (tracked and new files, minus ignored ones) as one commit."""
    dest.mkdir()
    if (REPO / ".git").exists():
        names = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard",
                     cwd=REPO).split("\0")
    else:  # an unpacked sdist: everything but caches
        names = [str(p.relative_to(REPO)) for p in REPO.rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts]
    for name in filter(None, names):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    _git("init", "-q", cwd=dest)
    _git("add", "-A", cwd=dest)
    _git("commit", "-q", "-m", "snapshot", cwd=dest)
    return dest


def _try_repo(src: Path, infra: Path, home: Path,
              hook: str = "tpcheck") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(PRE_COMMIT_HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1", NO_COLOR="1")
    return subprocess.run(
        [str(PRE_COMMIT), "try-repo", str(src), hook, "--all-files", "--color", "never"],
        cwd=infra, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_try_repo_fails_on_tp101_and_passes_once_fixed(tmp_path: Path) -> None:
    assert PRE_COMMIT.exists(), "pre-commit is a dev dependency"
    src = _snapshot(tmp_path / "tpcheck")
    assert (src / ".pre-commit-hooks.yaml").is_file()

    infra = tmp_path / "infra"
    (infra / "deploy").mkdir(parents=True)
    _git("init", "-q", cwd=infra)
    # What an infra repo would commit: the GPU in [tool.tpcheck]; offline, since the bundled
    # catalog has Llama-3.1-70B-Instruct's config.json (h = 64, h_kv = 8, f = 28,672).
    (infra / "pyproject.toml").write_text(
        '[tool.tpcheck]\ngpu = "h100-sxm"\noffline = true\n', encoding="utf-8")
    manifest = infra / "deploy" / "llama70b.yaml"
    manifest.write_text(MANIFEST.format(tp=6), encoding="utf-8")
    (infra / "README.md").write_text("not a deployment\n", encoding="utf-8")
    _git("add", "-A", cwd=infra)

    home = tmp_path / "pre-commit-home"
    bad = _try_repo(src, infra, home)
    out = bad.stdout + bad.stderr
    assert bad.returncode == 1, out
    assert "Failed" in out
    # 64 heads mod 6 = 4: vLLM refuses. The finding names the file, the line of the "6"
    # (line 16 of the manifest, column 16 inside the quotes) and the code.
    assert "deploy/llama70b.yaml:16:16: TP101 [*] [error]" in out, out
    assert "h mod t = 4 (h=64, t=6)" in out

    manifest.write_text(MANIFEST.format(tp=8), encoding="utf-8")  # 64 mod 8 = 0, 8 mod 8 = 0
    _git("add", "-A", cwd=infra)
    good = _try_repo(src, infra, home)
    out = good.stdout + good.stderr
    assert good.returncode == 0, out
    assert "Passed" in out
    assert "TP101" not in out


@pytest.mark.slow
def test_templates_hook_reads_tpl_files(tmp_path: Path) -> None:
    src = _snapshot(tmp_path / "tpcheck")
    infra = tmp_path / "infra"
    infra.mkdir()
    _git("init", "-q", cwd=infra)
    (infra / "pyproject.toml").write_text('[tool.tpcheck]\noffline = true\n', encoding="utf-8")
    # A shell template: the `{{ .Values.port }}` action is left unresolved, the TP is literal.
    (infra / "run.sh.tpl").write_text(
        "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6 "
        "--port {{ .Values.port }}\n", encoding="utf-8")
    (infra / "README.md").write_text("not a deployment\n", encoding="utf-8")
    _git("add", "-A", cwd=infra)
    run = _try_repo(src, infra, tmp_path / "pre-commit-home", hook="tpcheck-templates")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    # 64 heads mod 6 = 4: the template's launch is checked; README.md is not passed.
    assert "run.sh.tpl:1:" in out and "TP101 [*] [error]" in out, out
    assert "README.md" not in out


@pytest.mark.slow
def test_templates_hook_reads_the_build_files_no_type_covers(tmp_path: Path) -> None:
    """A Terraform template, a Slurm batch file (mode 644) and a lower-case `.dockerfile`: the
    CLI reads each, pre-commit types none of them (identify has no tag for the three names),
    so the main hook never passes them; the templates hook does, and only them."""
    src = _snapshot(tmp_path / "tpcheck")
    infra = tmp_path / "infra"
    infra.mkdir()
    _git("init", "-q", cwd=infra)
    (infra / "pyproject.toml").write_text('[tool.tpcheck]\noffline = true\n', encoding="utf-8")
    launch = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6\n"
    (infra / "startup.sh.tftpl").write_text("#!/bin/bash\n" + launch, encoding="utf-8")
    (infra / "job.sbatch").write_text("#!/bin/bash\n#SBATCH --gres=gpu:8\n" + launch,
                                      encoding="utf-8")
    (infra / "serve.dockerfile").write_text(
        "FROM vllm/vllm-openai:v0.8.5\nCMD " + launch, encoding="utf-8")
    (infra / "README.md").write_text("not a deployment\n", encoding="utf-8")
    _git("add", "-A", cwd=infra)
    home = tmp_path / "pre-commit-home"
    main_hook = _try_repo(src, infra, home)
    assert "TP101" not in main_hook.stdout + main_hook.stderr  # the gap the hook closes
    run = _try_repo(src, infra, home, hook="tpcheck-templates")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    # 64 heads mod 6 = 4 in each: the launch lines are 2, 3 and 2
    for where in ("startup.sh.tftpl:2:", "job.sbatch:3:", "serve.dockerfile:2:"):
        assert where in out, out
    assert "README.md" not in out


@pytest.mark.slow
def test_an_extension_less_script_without_the_executable_bit(tmp_path: Path) -> None:
    # pre-commit types a file by its shebang only when it is executable: `scripts/serve` with
    # `#!/bin/bash` and mode 644 is "text, non-executable", so the main hook never sees it.
    src = _snapshot(tmp_path / "tpcheck")
    infra = tmp_path / "infra"
    (infra / "scripts").mkdir(parents=True)
    _git("init", "-q", cwd=infra)
    (infra / "pyproject.toml").write_text('[tool.tpcheck]\noffline = true\n', encoding="utf-8")
    serve = infra / "scripts" / "serve"
    serve.write_text("#!/bin/bash\nvllm serve meta-llama/Llama-3.1-70B-Instruct "
                     "--tensor-parallel-size 6\n", encoding="utf-8")
    serve.chmod(0o644)
    (infra / "Makefile").write_text("all:\n\techo hi\n", encoding="utf-8")  # not a script
    _git("add", "-A", cwd=infra)
    home = tmp_path / "pre-commit-home"
    main_hook = _try_repo(src, infra, home)
    assert "TP101" not in main_hook.stdout + main_hook.stderr  # the gap the new hook closes
    run = _try_repo(src, infra, home, hook="tpcheck-scripts")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    # 64 heads mod 6 = 4: the script's launch is checked; the Makefile is not passed.
    assert "scripts/serve:2:" in out and "TP101 [*] [error]" in out, out
    assert "Makefile" not in out


@pytest.mark.slow
def test_hook_with_fix_args_rewrites_the_file_then_passes(tmp_path: Path) -> None:
    """``args: [--fix]`` in an infra repo's own .pre-commit-config.yaml, as ruff's hook takes
    it: the first run rewrites TP 6 (refused: 64 heads mod 6 = 4) to TP 4 and the pod's GPU
    request with it, and fails because a file changed; the second run passes."""
    src = _snapshot(tmp_path / "tpcheck")
    rev = _git("rev-parse", "HEAD", cwd=src).strip()
    infra = tmp_path / "infra"
    (infra / "deploy").mkdir(parents=True)
    _git("init", "-q", cwd=infra)
    (infra / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {src}\n  rev: {rev}\n  hooks:\n  - id: tpcheck\n"
        "    args: [--fix]\n", encoding="utf-8")
    (infra / "pyproject.toml").write_text(
        '[tool.tpcheck]\ngpu = "h100-sxm"\noffline = true\n', encoding="utf-8")
    manifest = infra / "deploy" / "llama70b.yaml"
    manifest.write_text(MANIFEST.format(tp=6), encoding="utf-8")
    _git("add", "-A", cwd=infra)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "home"), PIP_DISABLE_PIP_VERSION_CHECK="1",
               NO_COLOR="1")

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PRE_COMMIT), "run", "--all-files", "--color", "never"],
                              cwd=infra, env=env, capture_output=True, text=True, timeout=900)

    first = run()
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    assert "files were modified by this hook" in out, out
    # 4 divides 64 heads and 8 KV heads; 140 GB of bf16 weights fit 4 H100s; the request follows
    assert manifest.read_text(encoding="utf-8") == MANIFEST.format(tp=4)
    second = run()
    out = second.stdout + second.stderr
    assert second.returncode == 0, out
    assert "Passed" in out
