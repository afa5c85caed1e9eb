"""The folder walk skips what git ignores: git's own listing in a work tree (a real ``git
init``), the .gitignore files through pathspec outside one. Issue 15: patterns with ``/`` were
dropped, ``!`` ignored, and a git-ignored ``sub/gen/b.yaml`` was read."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tpcheck.cli import main
from tpcheck.sources import iter_files
from tpcheck.sources.ignores import GitignoreFiles, GitListing, for_folder, git_listing

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ROOT_IGNORE = "\n".join([
    "# generated manifests",
    "*.gen.yaml",  # a glob, anywhere below
    "!keep.gen.yaml",  # negation: this one is read after all
    "sub/gen/",  # a pattern with a slash: only the folder sub/gen, not other gen folders
    "/rootonly.yaml",  # anchored: the top's rootonly.yaml, not sub/rootonly.yaml
]) + "\n"

# Every file of the tree, and whether a walk reads it.
TREE = {
    "a.yaml": True,
    "x.gen.yaml": False,
    "keep.gen.yaml": True,
    "rootonly.yaml": False,
    "notes.txt": False,  # not a YAML, shell or Python file
    "sub/b.sh": True,
    "sub/rootonly.yaml": True,
    "sub/gen/b.yaml": False,  # the file issue 15 found read
    "sub/x.gen.yaml": True,  # re-included by sub/.gitignore, deeper than the root's
    "sub/y.gen.yaml": False,
    "other/gen/c.yaml": True,  # sub/gen/ names one folder
}


def make_tree(top: Path) -> None:
    for rel in TREE:
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text("a: 1\n")
    (top / ".gitignore").write_text(ROOT_IGNORE)
    (top / "sub" / ".gitignore").write_text("!x.gen.yaml\n")


def walked(top: Path) -> list[str]:
    return [Path(p).relative_to(top).as_posix() for p in iter_files([str(top)])]


# os.walk's order: a folder's files (sorted) before its sub-folders (sorted), depth first.
EXPECTED = ["a.yaml", "keep.gen.yaml", "other/gen/c.yaml", "sub/b.sh", "sub/rootonly.yaml",
            "sub/x.gen.yaml"]


def git(top: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "-C", str(top), *args], check=True, capture_output=True, env=env)


def test_expected_is_the_tree_s_readable_files() -> None:
    assert sorted(EXPECTED) == sorted(rel for rel, read in TREE.items() if read)


@needs_git
def test_outside_a_work_tree_the_gitignore_files_apply(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert git_listing(str(tmp_path)) is None  # /tmp is in no repository
    assert isinstance(for_folder(str(tmp_path)), GitignoreFiles)
    assert walked(tmp_path) == EXPECTED


def test_without_git_on_the_path_the_gitignore_files_apply(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_tree(tmp_path)
    if shutil.which("git"):
        git(tmp_path, "init", "-q")  # a work tree, but no git to ask: the .gitignore files
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-bin"))  # no git to ask
    assert git_listing(str(tmp_path)) is None
    assert walked(tmp_path) == EXPECTED


@needs_git
def test_inside_a_work_tree_git_answers(tmp_path: Path) -> None:
    make_tree(tmp_path)
    git(tmp_path, "init", "-q")
    assert isinstance(for_folder(str(tmp_path)), GitListing)
    assert walked(tmp_path) == EXPECTED  # untracked files: only what no ignore rule names
    # git's other sources of ignores, which no .gitignore reader sees: info/exclude ...
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("a.yaml\n")
    assert walked(tmp_path) == EXPECTED[1:]
    # ... and a tracked file is read even when an ignore pattern names it (git add -f)
    git(tmp_path, "add", "-f", "x.gen.yaml", "a.yaml")
    assert walked(tmp_path) == ["a.yaml", "keep.gen.yaml", "x.gen.yaml", *EXPECTED[2:]]


@needs_git
def test_a_sub_folder_of_a_work_tree_is_listed_relative_to_itself(tmp_path: Path) -> None:
    make_tree(tmp_path)
    git(tmp_path, "init", "-q")
    assert git_listing(str(tmp_path / "sub")) == {".gitignore", "b.sh", "rootonly.yaml",
                                                  "x.gen.yaml"}
    assert [Path(p).name for p in iter_files([str(tmp_path / "sub")])] == [
        "b.sh", "rootonly.yaml", "x.gen.yaml"]


@needs_git
@pytest.mark.parametrize("in_git", [True, False])
def test_lint_of_a_folder_skips_the_ignored_launch(tmp_path: Path, in_git: bool,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # t = 6 does not divide Llama-3.1-70B's 64 heads (64 mod 6 = 4): TP101 wherever it is read
    launch = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6\n"
    (tmp_path / "sub" / "gen").mkdir(parents=True)
    (tmp_path / "sub" / "gen" / "b.sh").write_text(launch)
    (tmp_path / "run.sh").write_text(launch)
    (tmp_path / ".gitignore").write_text("sub/gen/\n")
    if in_git:
        git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    code = main(["--offline", "--select", "TP101", "-q", "."])
    out = capsys.readouterr().out
    assert code == 1
    [line, fix] = out.splitlines()  # run.sh's finding (-q keeps its fix), none from sub/gen/b.sh
    assert line.startswith("./run.sh:1:69: TP101 [*] [error]"), out
    assert fix.startswith("    fix: "), out
