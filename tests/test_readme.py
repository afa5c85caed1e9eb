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


# A session: shell commands that set a scene (a git repository and a change), then one
# `$ tpcheck …` whose output is the rest of the block. Run as one bash script in a scratch
# folder where `fixtures` is the checkout's; the commands before the last print nothing. A commit
# hash is written `<commit>` (it depends on the clock).
SESSION_RE = re.compile(r"^```text\n((?:\$ (?!tpcheck )[^\n]*\n)+)(\$ tpcheck [^\n]*)\n(.*?)^```$",
                        re.MULTILINE | re.DOTALL)
COMMIT_RE = re.compile(r"\([0-9a-f]{12}\)")


def sessions() -> list[tuple[str, str, str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [(m.group(1), m.group(2), m.group(3)) for m in SESSION_RE.finditer(text)]


def test_the_readme_has_a_diff_session() -> None:
    assert any(c.startswith("$ tpcheck diff") for _, c, _ in sessions())


@pytest.mark.parametrize(("scene", "command", "printed"), sessions(),
                         ids=[c for _, c, _ in sessions()])
def test_readme_session_prints_what_it_shows(scene: str, command: str, printed: str,
                                             tmp_path: Path) -> None:
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")
    lines = [ln.removeprefix("$ ") for ln in scene.splitlines()]
    script = "\n".join(["set -eu", 'tpcheck() { "$TPCHECK_PYTHON" -m tpcheck "$@"; }', *lines,
                        command.removeprefix("$ ")]) + "\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TPCHECK", "GIT_"))}
    env.update(HF_HUB_OFFLINE="1", NO_COLOR="1", TPCHECK_PYTHON=sys.executable,
               PYTHONPATH=str(REPO), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
               GIT_CONFIG_NOSYSTEM="1")
    p = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, env=env, check=False)
    assert p.returncode in (0, 1), p.stderr
    got = COMMIT_RE.sub("(<commit>)", p.stdout)
    assert got == printed, f"README shows:\n{printed}\ntpcheck prints:\n{got}"
