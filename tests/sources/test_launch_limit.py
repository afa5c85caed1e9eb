"""Issue 14 item 8: every reader checks at most MAX_LAUNCHES launches a file (5 MB of Pods was
26,083 launches and 29 s); past it, one line names where reading stopped (exit 2) and the
launches before it are still checked."""

from __future__ import annotations

from pathlib import Path

from tpcheck.lint import Linter, exit_code
from tpcheck.settings import Settings
from tpcheck.sources import read_path
from tpcheck.sources.base import MAX_LAUNCHES
from tpcheck.sources.shell import MAX_WORDS

MODEL = "Qwen/Qwen3-32B"
SH = f"vllm serve {MODEL} --tensor-parallel-size 3\n"  # one line a launch
POD = (  # 9 lines a launch; the command is on the 8th line of each document, at column 15
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
    f"  - name: vllm\n    command: [vllm, serve, {MODEL}, --tensor-parallel-size, '2']\n"
    "    resources: {limits: {nvidia.com/gpu: 2}}\n"
)


def message(line: int) -> str:
    return (f"the file has more launches than tpcheck reads ({MAX_LAUNCHES:,}); "
            f"nothing from line {line} on is checked")


def test_shell_launches_up_to_the_limit_are_all_read(tmp_path: Path) -> None:
    p = tmp_path / "many.sh"
    p.write_text(SH * MAX_LAUNCHES)
    res = read_path(str(p))
    assert res.errors == ()
    assert len(res.deployments) == MAX_LAUNCHES


def test_shell_one_launch_past_the_limit(tmp_path: Path) -> None:
    p = tmp_path / "many.sh"
    p.write_text(SH * (MAX_LAUNCHES + 1))
    res = read_path(str(p))
    assert [d.span.line for d in res.deployments] == list(range(1, MAX_LAUNCHES + 1))
    [err] = res.errors
    assert (err.line, err.column, err.message) == (MAX_LAUNCHES + 1, 1,
                                                   message(MAX_LAUNCHES + 1))


def test_the_first_limit_reached_is_the_one_said(tmp_path: Path) -> None:
    # 5 words a launch: MAX_WORDS (50,000) is reached at launch 10,001, long after launch 1,001;
    # the word limit's line (past the launch limit) is not said
    p = tmp_path / "long.sh"
    p.write_text(SH * (MAX_WORDS // 5 + 100))
    res = read_path(str(p))
    assert len(res.deployments) == MAX_LAUNCHES
    assert [e.message for e in res.errors] == [message(MAX_LAUNCHES + 1)]


def test_yaml_pods_up_to_the_limit_are_all_read(tmp_path: Path) -> None:
    p = tmp_path / "pods.yaml"
    p.write_text(POD * MAX_LAUNCHES)
    res = read_path(str(p))
    assert res.errors == ()
    assert len(res.deployments) == MAX_LAUNCHES


def test_yaml_one_pod_past_the_limit_stops_composing(tmp_path: Path) -> None:
    p = tmp_path / "pods.yaml"
    p.write_text(POD * (MAX_LAUNCHES + 1))
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    assert res.deployments == MAX_LAUNCHES
    [err] = res.errors
    line = 9 * MAX_LAUNCHES + 8  # the command of the document after the first MAX_LAUNCHES
    assert (err.line, err.column, err.message) == (line, 15, message(line))
    assert exit_code(res, "error") == 2
