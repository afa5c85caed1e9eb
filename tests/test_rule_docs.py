"""rules/CODE.md: one doc per rule, the same seven sections, and examples that tell the truth.

Each doc's ``fires`` block is run through the real CLI (a subprocess, cwd = repository root, so
``tpcheck-args`` may name fixtures by their repository path) and must produce the doc's code; its
``fixed`` block must not. Other codes may appear in either: a doc speaks only for its own rule.

What the prose of "The formula" and "Example" quotes from the example's finding is written as an
inline code span that starts with a digit (`` `1.07× the sequences for 2× the GPUs` ``); each must
appear word for word in that finding's headline, evidence or fix, so a doc cannot drift from the
figures the tool prints (issue 15: TP201.md once said 1.07× where the finding said 1.05×).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.shared import said
from tpcheck.checks import RULES, Rule
from tpcheck.ruledocs import NOTICES

REPO = Path(__file__).resolve().parents[1]
RULES_DIR = REPO / "rules"
SECTIONS = (
    "What it checks",
    "Why it matters",
    "The formula",
    "Example",
    "Fix",
    "Engine code it mirrors",
)
# A rule with options (in its registry row) lists them between "Fix" and "Engine code it
# mirrors".
OPTIONS_SECTION = "Options"
OPTION_ROW_RE = re.compile(r"^\| `([a-z0-9-]+)` \| [^|]+ \| ([^|]+) \|", re.MULTILINE)
EXTENSIONS = {"sh": ".sh", "yaml": ".yaml", "python": ".py"}
CODES = [m.code for m in RULES]
NAMES = {**{m.code: m.name for m in RULES}, **{c: name for c, (name, _) in NOTICES.items()}}
FENCE_RE = re.compile(r"^```([^\n]*)$", re.MULTILINE)
ARGS_RE = re.compile(r"^<!--\s*tpcheck-args:(.*?)-->\s*$")
QUOTE_RE = re.compile(r"`(\d[^`]*)`")  # a figure quoted from the example's finding
QUOTING_SECTIONS = ("The formula", "Example")


@dataclass(frozen=True)
class Block:
    language: str
    marker: str
    text: str
    args: tuple[str, ...]


def read_doc(code: str) -> str:
    return (RULES_DIR / f"{code}.md").read_text(encoding="utf-8")


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(the ``# `` title line, [(``## `` heading, body)]) in document order, outside fences."""
    title = ""
    sections: list[tuple[str, list[str]]] = []
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif not in_fence and line.startswith("# ") and not title and not sections:
            title = line[2:].strip()
        elif sections:
            sections[-1][1].append(line)
    return title, [(h, "\n".join(body)) for h, body in sections]


def only_block(body: str, where: str) -> Block:
    """The one fenced block of an Example or Fix section, with its tpcheck-args comment."""
    lines = body.splitlines()
    opens = [i for i, ln in enumerate(lines) if ln.startswith("```") and ln.strip() != "```"]
    assert len(opens) == 1, f"{where}: expected exactly one fenced block, found {len(opens)}"
    start = opens[0]
    info = lines[start][3:].split()
    assert len(info) == 2, f"{where}: info string must be 'LANGUAGE MARKER', got {info}"
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "```")
    assert not any(ln.startswith("```") for ln in lines[end + 1:]), f"{where}: stray fence"
    args: tuple[str, ...] = ()
    if start > 0:
        m = ARGS_RE.match(lines[start - 1].strip())
        if m:
            args = tuple(shlex.split(m.group(1)))
    return Block(info[0], info[1], "\n".join(lines[start + 1:end]) + "\n", args)


def blocks(code: str) -> dict[str, Block]:
    _, secs = split_sections(read_doc(code))
    bodies = dict(secs)
    return {
        "fires": only_block(bodies["Example"], f"{code} Example"),
        "fixed": only_block(bodies["Fix"], f"{code} Fix"),
    }


def run_cli(block: Block, tmp_path: Path, name: str, *, exit_codes: tuple[int, ...] = (0, 1),
            ) -> dict[str, object]:
    """Lint ``block`` with the installed tpcheck, offline, against an empty Hugging Face cache."""
    path = tmp_path / f"{name}{EXTENSIONS[block.language]}"
    path.write_text(block.text, encoding="utf-8")
    env = dict(os.environ)
    env.update({
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
        "HF_HUB_OFFLINE": "1",
        "NO_COLOR": "1",
    })
    env.pop("TPCHECK_DEBUG", None)
    cmd = [sys.executable, "-m", "tpcheck.cli", "--offline", "--format", "json", *block.args,
           str(path)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode in exit_codes, (
        f"{' '.join(cmd)} exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert isinstance(data, dict) and set(data) >= {"findings", "errors"}, data
    if exit_codes == (0, 1):
        assert data["errors"] == [], data["errors"]
    return data


def codes_in(data: dict[str, object]) -> list[str]:
    findings = data["findings"]
    assert isinstance(findings, list)
    return [str(f["code"]) for f in findings]


# ---- one doc per rule, one rule per doc -------------------------------------------------------


def test_every_rule_has_a_doc_and_every_doc_a_rule() -> None:
    docs = sorted(p.stem for p in RULES_DIR.glob("*.md"))
    assert sorted([*CODES, *NOTICES]) == docs
    # DESIGN.md's table: TP000, TP001-005 (command line), TP101-104, TP201-205, TP301-302,
    # TP401; plus TP303 (issue 18), TP402 (pod exceeds node) and TP006 (option combination,
    # issue 35): 1 + 6 + 4 + 5 + 3 + 2 = 21
    assert len(CODES) == 21


@pytest.mark.parametrize("code", [*CODES, *NOTICES])
def test_doc_has_the_seven_sections_in_order(code: str) -> None:
    title, secs = split_sections(read_doc(code))
    assert title == f"{code} {NAMES[code]}"
    rule = next((m for m in RULES if code == m.code), None)
    expected = SECTIONS
    if rule is not None and rule.options:
        expected = (*SECTIONS[:-1], OPTIONS_SECTION, SECTIONS[-1])
    assert tuple(h for h, _ in secs) == expected
    for heading, body in secs:
        assert body.strip(), f"{code}: section {heading!r} is empty"


def _toml(value: object) -> str:
    """A default as a settings file spells it (4.0 is written 4)."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


OPTIONED = [m for m in RULES if m.options]


@pytest.mark.parametrize("rule", OPTIONED, ids=[m.code for m in OPTIONED])
def test_doc_and_readme_list_each_option_with_its_default(rule: Rule) -> None:
    body = dict(split_sections(read_doc(rule.code))[1])[OPTIONS_SECTION]
    rows = {name: default.strip() for name, default in OPTION_ROW_RE.findall(body)}
    assert rows == {name: _toml(default) for name, default in rule.defaults.items()}
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in rule.defaults:
        assert f"| {rule.code} | `{name}` | {_toml(rule.defaults[name])} |" in readme


@pytest.mark.parametrize("code", [*CODES, *NOTICES])
def test_doc_blocks_are_marked(code: str) -> None:
    b = blocks(code)
    assert (b["fires"].marker, b["fixed"].marker) == ("fires", "fixed")
    for block in b.values():
        assert block.language in EXTENSIONS, block.language
        assert block.text.strip()
    assert b["fires"].text != b["fixed"].text or b["fires"].args != b["fixed"].args


def test_sarif_sections_are_found() -> None:
    """SARIF pulls "What it checks" and "Why" through ruledocs.section; both must be non-empty."""
    from tpcheck.ruledocs import doc, section

    for code in CODES:
        text = doc(code)
        assert text is not None, code
        assert section(text, "What it checks"), code
        why = section(text, "Why")
        assert why and "## " not in why, code


# ---- the examples run -------------------------------------------------------------------------


@pytest.mark.parametrize("code", CODES)
def test_example_fires(code: str, tmp_path: Path) -> None:
    data = run_cli(blocks(code)["fires"], tmp_path, f"{code.lower()}-fires")
    assert code in codes_in(data), json.dumps(data, indent=1)[:3000]


def quotes(code: str) -> list[str]:
    """The figures a doc quotes from its example's finding (see the module docstring)."""
    _, secs = split_sections(read_doc(code))
    found: list[str] = []
    for heading, body in secs:
        if heading not in QUOTING_SECTIONS:
            continue
        prose = re.sub(r"^```.*?^```$", "", body, flags=re.MULTILINE | re.DOTALL)
        found.extend(" ".join(q.split()) for q in QUOTE_RE.findall(prose))  # may wrap lines
    return found


def test_quotes_are_found_in_the_docs() -> None:
    # the convention is in use where the docs quote printed figures (a regex that finds
    # nothing would make the test below pass without checking anything)
    assert any("×" in q for q in quotes("TP201"))  # the capacity ratio it once misquoted
    assert sum(len(quotes(c)) for c in CODES) >= 10


@pytest.mark.parametrize("code", [c for c in CODES if quotes(c)])
def test_doc_quotes_what_the_example_prints(code: str, tmp_path: Path) -> None:
    data = run_cli(blocks(code)["fires"], tmp_path, f"{code.lower()}-quotes")
    findings = data["findings"]
    assert isinstance(findings, list)
    printed = " ".join(f"{said(f)} {f.get('fix') or ''}" for f in findings
                       if f["code"] == code)
    missing = [q for q in quotes(code) if q not in printed]
    assert missing == [], f"{code}.md quotes {missing}; the finding says: {printed}"


@pytest.mark.parametrize("code", CODES)
def test_fix_does_not_fire(code: str, tmp_path: Path) -> None:
    data = run_cli(blocks(code)["fixed"], tmp_path, f"{code.lower()}-fixed")
    assert code not in codes_in(data), json.dumps(data, indent=1)[:3000]


@pytest.mark.parametrize("code", sorted(NOTICES))
def test_notice_example_is_unreadable_and_its_fix_reads(code: str, tmp_path: Path) -> None:
    """A notice's example is an input error (exit 2, one entry in ``errors``); its fix reads."""
    data = run_cli(blocks(code)["fires"], tmp_path, f"{code.lower()}-fires", exit_codes=(2,))
    errors = data["errors"]
    assert isinstance(errors, list) and len(errors) == 1, errors
    data = run_cli(blocks(code)["fixed"], tmp_path, f"{code.lower()}-fixed")
    assert data["errors"] == []


# Words of tpcheck's own making, not of the product: what `explain` prints and the wheel ships
# speaks of the engines, the formulas and the options, never of the project's notes or tracker.
INTERNAL_RE = re.compile(r"\bseeds?\b|§|\bissue \d+", re.IGNORECASE)


@pytest.mark.parametrize("code", [*CODES, *NOTICES])
def test_explain_speaks_of_the_product_only(code: str) -> None:
    from tpcheck.ruledocs import doc

    text = doc(code)
    assert text is not None
    assert INTERNAL_RE.findall(text) == [], code


def test_readme_rule_table_lists_the_registry() -> None:
    # the README's rule table names every rule by the code and name the registry gives it
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Rules\n", 1)[1].split("\n## ", 1)[0]  # not the examples' tables
    rows = re.findall(r"^\| (TP\d{3}) \| ([a-z0-9-]+) \|", section, re.MULTILINE)
    assert rows == [(m.code, m.name) for m in RULES] + [(c, n) for c, (n, _) in NOTICES.items()]
