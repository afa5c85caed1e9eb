"""``tpcheck rules`` and ``tpcheck explain CODE`` through the real entry point, exit codes too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tpcheck.checks import RULES

REPO = Path(__file__).resolve().parents[2]


def tpcheck(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TPCHECK_DEBUG"}
    env["NO_COLOR"] = "1"
    return subprocess.run([sys.executable, "-m", "tpcheck.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_rules_lists_every_code_with_name_and_severity() -> None:
    r = tpcheck("rules")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # DESIGN.md's table, TP000 to TP402, and TP006; then TP900, the unreadable-input notice
    # the README lists and `explain` knows
    assert len(lines) == len(RULES) + 1 == 22
    assert lines[-1].split()[:3] == ["TP900", "input-unreadable", "error"]
    for m, line in zip(RULES, lines[:-1], strict=True):
        fields = line.split()
        assert fields[:3] == [m.code, m.name, m.severity.value], line
    # Spot-check against DESIGN.md's table, not just the modules' own constants.
    table = {ln.split()[0]: (ln.split()[1], ln.split()[2]) for ln in lines}
    assert table["TP000"] == ("model-unresolved", "warning")
    assert table["TP201"] == ("kv-head-cliff", "warning")
    assert table["TP204"] == ("context-exceeds-pool", "error")
    assert table["TP401"] == ("gpu-count-mismatch", "error")
    assert table["TP303"] == ("experts-cross-nodes", "info")
    assert table["TP001"] == ("unknown-option", "error")
    assert table["TP005"] == ("deprecated-option", "warning")
    assert table["TP006"] == ("option-combination", "error")
    assert [ln.split()[0] for ln in lines] == [
        "TP000", "TP001", "TP002", "TP003", "TP004", "TP005", "TP006", "TP101", "TP102", "TP103",
        "TP104", "TP201", "TP202", "TP203", "TP204", "TP205", "TP301", "TP302", "TP303", "TP401",
        "TP402", "TP900",
    ]


def test_explain_prints_the_doc() -> None:
    r = tpcheck("explain", "TP201")
    assert r.returncode == 0, r.stderr
    text = (REPO / "rules" / "TP201.md").read_text(encoding="utf-8")
    # the doc as written, less the `<!-- tpcheck-args -->` lines its own tests read
    shown = [ln for ln in text.rstrip("\n").splitlines() if not ln.startswith("<!--")]
    assert "<!--" in text and r.stdout == "\n".join(shown) + "\n"
    assert r.stdout.startswith("# TP201 kv-head-cliff\n")
    assert "## Why it matters" in r.stdout


@pytest.mark.parametrize("spelling", ["tp201", "Tp201", " TP201 "])
def test_explain_ignores_case_and_spaces(spelling: str) -> None:
    r = tpcheck("explain", spelling)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# TP201 kv-head-cliff\n")


def test_explain_unknown_code_exits_2_without_traceback() -> None:
    r = tpcheck("explain", "TP999")
    assert r.returncode == 2
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    assert re.search(r"unknown rule code 'TP999'", r.stderr), r.stderr


def test_explain_unknown_code_is_one_line_on_stderr() -> None:
    r = tpcheck("explain", "TP999")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr


# Words a user of the installed tool cannot follow: the repository's own files and modules, its
# design notes and issue numbers, and the docs' directives for their own tests.
INTERNAL = re.compile(r"(?<!\.)tpcheck/|DESIGN\.md|seeds/|physics\.[a-z]|\bissue \d+|<!--")


@pytest.mark.parametrize("code", [m.code for m in RULES] + ["TP900"])
def test_explain_prints_no_internal_words(code: str) -> None:
    r = tpcheck("explain", code)
    assert r.returncode == 0, r.stderr
    assert [ln for ln in r.stdout.splitlines() if INTERNAL.search(ln)] == []
