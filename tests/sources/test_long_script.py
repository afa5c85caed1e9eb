"""Issue 18: a launch after ~12,000 lines of shell was dropped silently (MAX_WORDS), "0 findings
in 0 deployments", exit 0. The limit is now said out loud: one line naming where reading
stopped, exit 2, and the launches before it are still checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tpcheck.lint import Linter, exit_code
from tpcheck.settings import Settings
from tpcheck.sources.shell import MAX_WORDS

ROOT = Path(__file__).resolve().parents[2]
FIRST = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 6\n"  # TP101: 64 heads % 6
LAST = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 3\n"


def script(tmp_path: Path) -> tuple[Path, int]:
    # 4 words a line: MAX_WORDS / 4 + 1,000 lines is past the limit; the launch after them
    # starts on line 1 (FIRST) + that many + 1.
    filler = MAX_WORDS // 4 + 1000
    p = tmp_path / "long.sh"
    p.write_text(FIRST + "echo step one two\n" * filler + LAST)
    return p, filler


def test_long_script_says_where_it_stopped(tmp_path: Path) -> None:
    p, filler = script(tmp_path)
    res = Linter(Settings(offline=True)).run([str(p)])
    [err] = res.errors
    # FIRST has 5 words, each filler line 4: the 50,001st word is inside the filler, before LAST
    assert 1 < err.line <= 1 + filler
    assert err.message == (f"the script is longer than tpcheck reads ({MAX_WORDS:,} words); "
                           f"nothing from line {err.line} on is checked")
    assert exit_code(res, "error") == 2
    # the launch before the limit is still checked
    assert [f.span.line for f in res.findings if f.code == "TP101"] == [1]


def test_long_script_cli_one_line_exit_2(tmp_path: Path) -> None:
    p, _ = script(tmp_path)
    r = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", str(p)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln]
    assert len(lines) == 1 and "longer than tpcheck reads" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
