"""Side files are read as inputs are (issue 28 item 6): a chart's values.yaml, a walked folder's
.gitignore, a pyproject.toml beside a file, a kustomize patch, --model-config. A FIFO nobody
writes, a link to /dev/zero and a sparse 1 GB file each end in one line naming the file and exit
2 — no hang, no MemoryError, no minute of reading — and every other file is still checked.
Real FIFOs, real symlinks, real sparse files (truncate), real git.

Each run has a 60 s timeout: before the change the FIFOs hung the run forever, /dev/zero ended
in a MemoryError after reading gigabytes, the sparse files took over a minute.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import said
from tpcheck.sources.files import NotRegular, TooBig, read_capped

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml"  # t = 16 > h_kv = 8: TP201
CHART = ROOT / "fixtures" / "layouts" / "chart"
GIB = 1 << 30

pytestmark = [pytest.mark.slow,  # a tpcheck process per case
              pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                                 reason="needs FIFOs and /dev/zero")]


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TPCHECK_DEBUG"}
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, "-m", "tpcheck", *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd, env=env)


def _hostile(path: Path, kind: str) -> str:
    """Make ``path`` a FIFO, a link to /dev/zero or a sparse 1 GiB file; what tpcheck says."""
    if kind == "fifo":
        os.mkfifo(path)
        return "not a regular file (a FIFO)"
    if kind == "zero":
        path.symlink_to("/dev/zero")
        return "not a regular file (a character device)"
    with open(path, "wb") as fh:
        fh.truncate(GIB)  # sparse: no disk used, st_size 1,073,741,824
    return "over the"


KINDS = ["fifo", "zero", "sparse"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_charts_values_yaml_is_one_line_and_the_other_files_are_checked(
        tmp_path: Path, kind: str) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "values.yaml").unlink()
    said = _hostile(chart / "values.yaml", kind)
    shutil.copy(GOOD, tmp_path / "good.yaml")
    (chart / "templates" / "again.yaml").write_text(
        (chart / "templates" / "deploy.yaml").read_text())  # a second template reads values
    templates = ["chart/templates/deploy.yaml", "chart/templates/again.yaml"]
    proc = _cli(["--gpu", "h100-sxm", "--offline", *templates, "good.yaml"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()  # once, though two templates read the chart's values
    assert line.startswith(f"tpcheck: {chart / 'values.yaml'}:1:1: could not be read (")
    assert said in line and line.endswith("; values not used")
    assert "Traceback" not in proc.stderr and "please report" not in proc.stderr
    assert "good.yaml:" in proc.stdout and "TP201" in proc.stdout  # still checked
    # the chart's templates are still read (without values): the launch is there, unresolved
    assert "chart/templates/deploy.yaml:16:11: TP000" in proc.stdout
    # walked, the values.yaml is an input too: each line names it, none is an internal error
    walked = _cli(["--gpu", "h100-sxm", "--offline", "chart", "good.yaml"], tmp_path)
    assert walked.returncode == 2 and "TP201" in walked.stdout
    assert all("values.yaml:1:1: " in ln for ln in walked.stderr.splitlines())


@pytest.mark.parametrize("in_git", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_a_gitignore_in_a_walked_folder_is_one_line_and_the_walk_goes_on(
        tmp_path: Path, kind: str, in_git: bool) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    shutil.copy(GOOD, tree / "good.yaml")
    shutil.copy(GOOD, tree / "sub" / "also.yaml")
    if in_git:  # git itself waits forever on a FIFO .gitignore and reads a 1 GB one whole
        if shutil.which("git") is None:
            pytest.skip("needs git")
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
    said = _hostile(tree / "sub" / ".gitignore", kind)
    proc = _cli(["--gpu", "h100-sxm", "--offline", "--format", "json", "tree"], tmp_path)
    out = json.loads(proc.stdout)
    if in_git and kind == "zero":
        # git does not follow a .gitignore that is a link (it warns and goes on): its answer
        # stands, tpcheck never reads the file, and nothing is wrong with the run
        assert out["errors"] == [] and proc.returncode == 1
    else:
        assert proc.returncode == 2, proc.stderr
        (error,) = out["errors"]
        assert error["path"] == "tree/sub/.gitignore" and (error["line"], error["column"]) == (
            1, 1)
        assert error["message"].startswith("cannot read .gitignore: ")
        assert said in error["message"]
        assert error["message"].endswith("its patterns were not applied")
    # both manifests checked: the one above the bad .gitignore's folder and the one in it
    assert {Path(f["path"]).name for f in out["findings"] if f["code"] == "TP201"} == {
        "good.yaml", "also.yaml"}


@pytest.mark.parametrize("kind", ["sparse"])
def test_a_huge_pyproject_beside_a_file_is_one_line_not_a_minute(tmp_path: Path, kind: str
                                                                  ) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    shutil.copy(GOOD, sub / "x.yaml")
    shutil.copy(GOOD, tmp_path / "good.yaml")
    _hostile(sub / "pyproject.toml", kind)
    proc = _cli(["--gpu", "h100-sxm", "--offline", "sub/x.yaml", "good.yaml"], tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line == (f"tpcheck: {sub / 'pyproject.toml'}:1:1: cannot read: 1,073,741,824 "
                    "bytes, over the "
                    "1,048,576-byte limit; the 1 file(s) it governs were not checked")
    assert "good.yaml:" in proc.stdout and "TP201" in proc.stdout


@pytest.mark.parametrize("kind", ["zero", "sparse"])
def test_a_kustomize_patch_that_is_no_file_is_one_line(tmp_path: Path, kind: str) -> None:
    base = tmp_path / "k"
    base.mkdir()
    shutil.copy(GOOD, base / "deploy.yaml")
    (base / "kustomization.yaml").write_text(
        "resources: [deploy.yaml]\npatches:\n- path: patch.yaml\n")
    said = _hostile(base / "patch.yaml", kind)
    proc = _cli(["--gpu", "h100-sxm", "--offline", "k/kustomization.yaml"], tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line == "tpcheck: k/kustomization.yaml:3:9: k/patch.yaml" + (
        f": {said}" if kind == "zero" else " is over the 5242880-byte limit")
    assert "Traceback" not in proc.stderr and "please report" not in proc.stderr


def test_model_config_dev_zero_says_what_it_is(tmp_path: Path) -> None:
    run = tmp_path / "run.sh"
    run.write_text("vllm serve acme/x -tp 2\n")
    proc = _cli(["--offline", "--format", "json", "--model-config", "/dev/zero", "run.sh"],
                tmp_path)
    (tp000,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "TP000"]
    assert "/dev/zero: not a regular file (a character device)" in said(tp000)
    assert "does not exist" not in tp000["fix"]
    assert tp000["fix"].endswith("it names a character device")


# ---- the reader itself ----------------------------------------------------------------------

def test_read_capped_refuses_devices_and_counts_the_cap_while_reading(tmp_path: Path) -> None:
    with pytest.raises(NotRegular, match=r"a character device"):
        read_capped("/dev/zero", 1024)
    big = tmp_path / "big"
    _hostile(big, "sparse")
    with pytest.raises(TooBig) as e:
        read_capped(str(big), 1024)
    assert e.value.size == GIB  # refused from the size stat gives, nothing read
    # a file whose size stat does not know: /proc reports 0 and is read to the cap, no further
    status = Path("/proc/self/status")
    if status.exists():
        assert read_capped(str(status), 1 << 20).startswith(b"Name:")
        with pytest.raises(TooBig, match="over the 16-byte limit"):
            read_capped(str(status), 16)
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 1024)
    assert read_capped(str(exact), 1024) == b"x" * 1024  # the cap itself is allowed


def test_a_fifo_nobody_writes_reads_as_empty_where_a_pipe_is_allowed(tmp_path: Path) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    assert read_capped(str(fifo), 1024, pipe_ok=True) == b""  # no writer: EOF, no wait
    with pytest.raises(NotRegular, match="a FIFO"):
        read_capped(str(fifo), 1024)
