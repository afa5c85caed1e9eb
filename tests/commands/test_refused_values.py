"""Values no GPU, link or rule can have are refused with one line naming the option or key,
exit 2 (issue 28 item 13): before, ``plan --hbm 0`` printed a sweep for a GPU of 0 bytes,
``--alpha inf`` an all-reduce that never ends, ``--tp ''`` the default sweep, and
``waste-factor = inf`` switched TP203's warning off for every pool."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a tpcheck process per case


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpcheck", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120, env={"HF_HUB_OFFLINE": "1",
                                                                "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--hbm", "0", "argument --hbm: '0' is no memory size: a GPU has more than 0 bytes"),
    ("--hbm", "0GiB", "argument --hbm: '0GiB' is no memory size"),
    ("--alpha", "inf", "argument --alpha: 'inf' is not a finite number"),
    ("--alpha", "2", "argument --alpha: 2.0 is not in the range 0<=x<=1.0"),
    ("--tp", "", "argument --tp: no sizes given"),
    ("--swa-full-tokens-ratio", "inf", "argument --swa-full-tokens-ratio: 'inf' is not a "
                                       "finite number"),
])
def test_plan_refuses_a_value_naming_the_option(tmp_path: Path, flag: str, value: str,
                                                said: str) -> None:
    proc = _run(["plan", "Qwen/Qwen3-8B", "--gpu", "h100-sxm", flag, value], tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"tpcheck: error: {said}")


def test_an_infinite_rule_option_is_refused_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / ".tpcheck.toml").write_text("[rules.TP203]\nwaste-factor = inf\n")
    (tmp_path / "run.sh").write_text("vllm serve Qwen/Qwen3-8B -tp 2\n")
    proc = _run(["run.sh"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"tpcheck: error: {tmp_path / '.tpcheck.toml'}: "
                           "rules.TP203.waste-factor must be a finite number, got inf")


@pytest.mark.parametrize("release", ["v0.10.2", "v0.33.0"])
def test_a_huge_swap_space_is_no_internal_error(tmp_path: Path, release: str) -> None:
    """``--swap-space 1e300`` once ended in "cannot convert float infinity to integer" naming
    no option. A float option as vLLM's argparse reads it: 1e300 parses (a finite float), so a
    release that has the flag accepts it and one that dropped it says so, naming the flag."""
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: v\n"
        f"    image: vllm/vllm-openai:{release}\n"
        '    args: ["--model", "Qwen/Qwen3-8B", "-tp", "2", "--swap-space", "1e300"]\n')
    proc = _run(["--format", "json", "pod.yaml"], tmp_path)
    assert proc.returncode in (0, 1) and proc.stderr == ""
    assert "infinity" not in proc.stdout and "please report" not in proc.stdout
    if release == "v0.33.0":  # gone after 0.14.0: TP004 names the flag
        assert '"code": "TP004"' in proc.stdout and "--swap-space" in proc.stdout
