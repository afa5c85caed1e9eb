"""``tpcheck diff`` in real git repositories: a commit, then a change in the work tree.

The capacity figures are the plan's own: each expected seat count is read from ``tpcheck plan``
(another path through the same physics) and derived beside the assertion from the KV pool."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = REPO / "fixtures" / "lint"
TP8 = (LINT / "qwen3-32b-tp8.yaml").read_text(encoding="utf-8")
TP16 = (LINT / "qwen3-32b-tp16.yaml").read_text(encoding="utf-8")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout


def tpcheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TPCHECK", "GIT_"))}
    env.update(HF_HUB_OFFLINE="1", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "tpcheck", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def as_json(cwd: Path, *args: str) -> dict[str, Any]:
    p = tpcheck(cwd, "diff", "--format", "json", *args)
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    return doc


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """deploy/qwen.yaml and deploy/same.yaml committed at TP 8 (Qwen3-32B on H100, c = 32,768)."""
    r = tmp_path / "repo"
    (r / "deploy").mkdir(parents=True)
    git(r, "init", "-q")
    (r / "deploy" / "qwen.yaml").write_text(TP8, encoding="utf-8")
    (r / "deploy" / "same.yaml").write_text(TP8, encoding="utf-8")
    git(r, "add", ".")
    git(r, "commit", "-qm", "TP 8")
    return r


def plan_seats(tp: int) -> int:
    p = tpcheck(REPO, "plan", "Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--context", "32768",
                "--tp", str(tp), "--format", "json")
    assert p.returncode == 0, p.stderr
    (row,) = [r for r in json.loads(p.stdout)["rows"] if r["tp"] == tp]
    seats: int = row["seats"]
    return seats


def test_a_tp_change_reports_the_seats_before_and_after_and_nothing_for_the_same_file(
        repo: Path) -> None:
    (repo / "deploy" / "qwen.yaml").write_text(TP16, encoding="utf-8")
    doc = as_json(repo)
    assert [f["path"] for f in doc["files"]] == ["deploy/qwen.yaml"]  # same.yaml: not a word
    assert doc["summary"]["files_compared"] == 2
    (dep,) = doc["files"][0]["deployments"]
    before, after = dep["before"], dep["after"]
    assert (before["tp"], after["tp"], before["gpus"], after["gpus"]) == (8, 16, 8, 16)
    # The seats are the plan's (the same physics by another command): 61 at TP 8, 65 at TP 16.
    assert (before["seats"], after["seats"]) == (plan_seats(8), plan_seats(16)) == (61, 65)
    # ... and the KV pool's: KV bytes per token per GPU 2·L·max(1, floor(h_kv/t))·d_h·b_kv =
    # 2·64·1·128·2 = 32,768 B at both t (h_kv = 8); tokens = whole 16-token blocks of the pool;
    # seats = floor(tokens / c), c = 32,768 (--max-model-len).
    for side in (before, after):
        assert side["kv_tokens"] == int(side["pool_bytes"] // 32768) // 16 * 16
        assert side["seats"] == side["kv_tokens"] // 32768
    # TP 16 > h_kv = 8 brings the KV-head cliff and a pod no node type holds (16 > 8 per node)
    assert sorted(f["code"] for f in doc["files"][0]["new_findings"]) == ["TP201", "TP402"]
    assert doc["files"][0]["resolved_findings"] == []
    text = tpcheck(repo, "diff")
    assert text.returncode == 0, text.stderr
    first = text.stdout.splitlines()[0]
    # 65 / 61 = 1.066 → 1.07×, for 16 / 8 = 2× the GPUs
    assert first.startswith("deploy/qwen.yaml: TP 8 → 16: seats 61 → 65 (1.07×) for 2× the "
                            "GPUs (8 → 16); KV pool "), first
    assert "same.yaml" not in text.stdout


def test_a_change_that_keeps_the_layout_reports_nothing(repo: Path) -> None:
    path = repo / "deploy" / "same.yaml"
    path.write_text("# a comment, the same launch\n" + TP8, encoding="utf-8")
    p = tpcheck(repo, "diff")
    assert p.returncode == 0, p.stderr
    head = git(repo, "rev-parse", "HEAD").strip()
    assert p.stdout == f"no deployment changed against HEAD ({head[:12]}); 2 files compared\n"
    assert as_json(repo)["files"] == []


def test_files_added_and_removed_are_reported_as_such(repo: Path) -> None:
    (repo / "deploy" / "same.yaml").unlink()
    (repo / "deploy" / "new.yaml").write_text(TP16, encoding="utf-8")
    doc = as_json(repo)
    got = {f["path"]: (f["status"], [d["status"] for d in f["deployments"]])
           for f in doc["files"]}
    assert got == {"deploy/new.yaml": ("added", ["added"]),
                   "deploy/same.yaml": ("removed", ["removed"])}
    text = tpcheck(repo, "diff").stdout
    assert "deploy/new.yaml: added: TP 16, 16 GPUs h100-sxm, 65 seats at 32,768 tokens" in text
    assert "deploy/same.yaml: removed (was TP 8, 8 GPUs h100-sxm, 61 seats at 32,768 tokens" \
        in text


def test_rev_and_paths_select_what_is_compared(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "deploy" / "qwen.yaml").write_text(TP16, encoding="utf-8")
    git(repo, "commit", "-qam", "TP 16")
    # against HEAD (TP 16 committed) nothing changed; against the first commit, qwen.yaml did
    assert as_json(repo)["files"] == []
    doc = as_json(repo, first)
    assert doc["commit"] == first and [f["path"] for f in doc["files"]] == ["deploy/qwen.yaml"]
    assert as_json(repo, first, "deploy/same.yaml")["files"] == []
    # from a sub-folder, paths are the work tree's; reports name them from the repository's top
    doc = as_json(repo / "deploy", "HEAD~1", "qwen.yaml")
    assert [f["path"] for f in doc["files"]] == ["deploy/qwen.yaml"]


def test_a_helm_values_change_is_read_at_rev_with_revs_values(tmp_path: Path) -> None:
    """The template is the same at both sides; only values.yaml changes (tp 8 → 16): REV's
    template must be read with REV's values, not the work tree's."""
    r = tmp_path / "chart-repo"
    (r / "chart" / "templates").mkdir(parents=True)
    git(r, "init", "-q")
    (r / "chart" / "Chart.yaml").write_text("apiVersion: v2\nname: llm\nversion: 0.1.0\n",
                                            encoding="utf-8")
    (r / "chart" / "templates" / "deploy.yaml").write_text(
        TP8.replace('- "8"', '- "{{ .Values.tp }}"'), encoding="utf-8")
    values = r / "chart" / "values.yaml"
    values.write_text("tp: 8\n", encoding="utf-8")
    git(r, "add", ".")
    git(r, "commit", "-qm", "tp 8")
    values.write_text("tp: 16\n", encoding="utf-8")
    (f,) = as_json(r)["files"]
    (dep,) = f["deployments"]
    assert f["path"] == "chart/templates/deploy.yaml"
    # the same model, GPU and context as the manifests above: the plan's 61 and 65 seats
    assert (dep["before"]["tp"], dep["after"]["tp"]) == (8, 16)
    assert (dep["before"]["seats"], dep["after"]["seats"]) == (61, 65)


def test_the_repository_is_not_written(repo: Path) -> None:
    (repo / "deploy" / "qwen.yaml").write_text(TP16, encoding="utf-8")

    def snapshot() -> dict[str, tuple[int, int]]:
        return {str(p.relative_to(repo)): (p.stat().st_mtime_ns, p.stat().st_size)
                for p in repo.rglob("*") if p.is_file()}

    before = snapshot()
    assert as_json(repo)["files"]
    assert snapshot() == before


def test_usage_errors_are_one_line_and_exit_2(repo: Path, tmp_path: Path) -> None:
    p = tpcheck(repo, "diff", "no-such-rev", "deploy")
    assert p.returncode == 2
    assert p.stderr.startswith("tpcheck: error: 'no-such-rev': no such file or folder"), p.stderr
    assert len(p.stderr.splitlines()) == 1
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    p = tpcheck(outside, "diff")
    assert p.returncode == 2 and "is not in a git work tree" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_an_unreadable_file_is_an_error_and_the_others_are_still_compared(repo: Path) -> None:
    (repo / "deploy" / "qwen.yaml").write_text(TP16, encoding="utf-8")
    (repo / "deploy" / "bad.yaml").write_bytes(b"args: [\xff\n")
    p = tpcheck(repo, "diff")
    assert p.returncode == 2
    assert "deploy/bad.yaml:1:1: not UTF-8 text" in p.stderr, p.stderr
    assert p.stdout.startswith("deploy/qwen.yaml: TP 8 → 16: seats 61 → 65")


def test_markdown_is_a_table_of_what_changed(repo: Path) -> None:
    (repo / "deploy" / "qwen.yaml").write_text(TP16, encoding="utf-8")
    p = tpcheck(repo, "diff", "--format", "markdown")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("### tpcheck diff against HEAD (")
    assert "| deployment | what the change does |" in lines
    row = next(ln for ln in lines if ln.startswith("| deploy/qwen.yaml |"))
    assert "TP 8 → 16: seats 61 → 65 (1.07×) for 2× the GPUs (8 → 16)" in row
    assert sum(ln.startswith("| new |") for ln in lines) == 2  # TP201 and TP402, as above


def test_a_file_named_in_a_message_is_the_repositorys_at_both_sides(tmp_path: Path) -> None:
    """A local model folder whose config.json is malformed: the problem names the file, which
    at REV lies in the folder REV was laid out in. The same problem on both sides is no change."""
    r = tmp_path / "local-model"
    (r / "m").mkdir(parents=True)
    git(r, "init", "-q")
    (r / "m" / "config.json").write_text("{bad\n", encoding="utf-8")
    (r / "run.sh").write_text("vllm serve ./m --tensor-parallel-size 8\n", encoding="utf-8")
    git(r, "add", ".")
    git(r, "commit", "-qm", "a local model")
    assert as_json(r, "--offline")["files"] == []
    (r / "run.sh").write_text("vllm serve ./m --tensor-parallel-size 4\n", encoding="utf-8")
    (f,) = as_json(r, "--offline")["files"]
    (dep,) = f["deployments"]
    assert [c["field"] for c in dep["changes"]] == ["tp", "gpus"]
    assert str(r) in dep["after"]["problem"] and dep["after"]["problem"] == dep["before"]["problem"]


def test_a_kustomize_patch_change_is_read_through_its_overlay(tmp_path: Path) -> None:
    """Only the overlay's patch changes (TP 16 → 8); the overlay's kustomization, which the
    deployment is read through, is the same file at both sides."""
    r = tmp_path / "kustomize-repo"
    shutil.copytree(REPO / "fixtures" / "kustomize", r / "k")
    git(r, "init", "-q")
    git(r, "add", ".")
    git(r, "commit", "-qm", "TP 16")
    patch = r / "k" / "overlays" / "h100" / "patch-tp.yaml"
    patch.write_text(patch.read_text(encoding="utf-8").replace(
        "--tensor-parallel-size=16", "--tensor-parallel-size=8"), encoding="utf-8")
    (f,) = as_json(r, "--offline")["files"]
    assert f["path"] == "k/overlays/h100/kustomization.yaml"
    (dep,) = f["deployments"]
    assert (dep["before"]["tp"], dep["after"]["tp"]) == (16, 8)
    # TP 16 over h_kv = 8 KV heads, and 16 ranks for the 8 GPUs the pod requests: both resolved
    assert sorted(x["code"] for x in f["resolved_findings"]) == ["TP201", "TP401"]
    assert all(x["path"] == "k/overlays/h100/patch-tp.yaml" for x in f["resolved_findings"])


def test_odd_names_links_and_a_file_over_the_cap_at_rev(tmp_path: Path) -> None:
    """A newline in a name stays on one line; a link in REV's tree is not laid out (nor
    followed); a file over the size cap is one error, said once for both sides."""
    r = tmp_path / "odd"
    r.mkdir()
    git(r, "init", "-q")
    odd = r / "a\nb.yaml"
    odd.write_text(TP8, encoding="utf-8")
    (r / "link.yaml").symlink_to("/etc/passwd")
    (r / "big.yaml").write_bytes(b"# x\n" * (6 << 18))  # 6 MiB > the 5 MiB default cap
    git(r, "add", ".")
    git(r, "commit", "-qm", "odd")
    odd.write_text(TP16, encoding="utf-8")
    p = tpcheck(r, "diff")
    assert p.returncode == 2
    assert p.stdout.splitlines()[0].startswith("a\\nb.yaml: TP 8 → 16: seats 61 → 65")
    assert p.stderr.splitlines() == [
        f"tpcheck: big.yaml:1:1: file is {6 << 20} bytes, over the 5242880-byte limit; skipped"]
    assert "passwd" not in p.stdout + p.stderr


def test_an_fp8_kv_cache_is_named_and_doubles_the_tokens(repo: Path) -> None:
    (repo / "deploy" / "qwen.yaml").write_text(TP8.replace(
        '            - "32768"\n', '            - "32768"\n            - --kv-cache-dtype\n'
        '            - fp8\n'), encoding="utf-8")
    (f,) = as_json(repo)["files"]
    (dep,) = f["deployments"]
    before, after = dep["before"], dep["after"]
    assert [c["field"] for c in dep["changes"]][:1] == ["kv_cache_dtype"]
    assert (before["kv_cache_dtype"], after["kv_cache_dtype"]) == (None, "fp8")
    # b_kv 2 → 1: KV bytes per token per GPU 2·64·1·128·1 = 16,384 B in the same pool, so the
    # pool holds twice the tokens (whole 16-token blocks) and seats = floor(tokens / 32,768)
    assert after["pool_bytes"] == before["pool_bytes"]
    assert after["kv_tokens"] == int(after["pool_bytes"] // 16384) // 16 * 16
    # 4,027,504 tokens: the pool carries the allocator's block slack, 0.75 MiB on each rank's
    # 31.25 MiB down_proj (3,200 · 5,120 · 2 B in a 32 MiB block) × 64 layers = 48 MiB and ~1 MiB
    # on the embedding and LM head (physics/alloc.py): 49 MiB / 16,384 B ≈ 3,140 tokens fewer,
    # just under 123 · 32,768 = 4,030,464
    assert after["seats"] == after["kv_tokens"] // 32768 == 122
    assert dep["summary"].startswith("KV cache auto → fp8: seats 61 → 122 (2×)")
