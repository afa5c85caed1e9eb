"""The README's own examples tell the truth: every ```text block that opens with
``$ tpcheck …`` is run through the real CLI from the checkout (as tests/test_rule_docs.py runs
rules/*.md), and what it prints must be the block's other lines, exactly. The checkout's folder
is written ``<checkout>`` there, the only part of the output that depends on the machine."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK_RE = re.compile(r"^```text\n(\$ tpcheck [^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[str, str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [(m.group(1), m.group(2)) for m in BLOCK_RE.finditer(text)]


def test_the_readme_has_examples_to_run() -> None:
    # a pattern that matched nothing would make the test below pass without checking anything
    commands = [c for c, _ in examples()]
    assert len(commands) >= 3, commands
    assert any(" plan " in c for c in commands)


@pytest.mark.parametrize(("command", "printed"), examples(), ids=[c for c, _ in examples()])
def test_readme_example_prints_what_it_shows(command: str, printed: str) -> None:
    args = shlex.split(command.removeprefix("$ tpcheck "))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPCHECK")}
    env.update(HF_HUB_OFFLINE="1", NO_COLOR="1")
    p = subprocess.run([sys.executable, "-m", "tpcheck", *args], cwd=REPO, capture_output=True,
                       text=True, timeout=120, env=env, check=False)
    assert p.returncode in (0, 1), p.stderr
    got = p.stdout.replace(f"{REPO}{os.sep}", "<checkout>/")
    assert got == printed, f"README shows:\n{printed}\ntpcheck prints:\n{got}"
