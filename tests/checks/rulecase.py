"""Run one launch through the real linter in-process (reader, model catalog, physics, rules),
for the table-style tests of ``tests/checks/test_tpNNN.py``: a subprocess per case would
cost a second each."""

from __future__ import annotations

import math
from pathlib import Path

from tpcheck.checks.base import Finding
from tpcheck.lint import Linter, LintResult
from tpcheck.settings import Settings
from tpcheck.sources import read_path

_LINTERS: dict[tuple[str, str | None], Linter] = {}


def lint_text(text: str, *, name: str = "run.sh", gpu: str | None = "h100-sxm",
              settings: Settings | None = None) -> list[Finding]:
    """The findings for ``text`` read as the file ``name`` (offline: the bundled catalog)."""
    settings = settings if settings is not None else Settings(offline=True)
    key = (repr(settings), gpu)  # Settings holds dicts: not hashable
    linter = _LINTERS.get(key)
    if linter is None:
        linter = _LINTERS[key] = Linter(settings, gpu_flag=gpu)
    out = LintResult()
    rr = read_path(name, text)
    assert not rr.errors, rr.errors
    linter.lint_read(rr, out)
    return out.findings


def only(findings: list[Finding], code: str) -> Finding:
    """The one finding of ``code`` (a rule says a thing once per launch)."""
    mine = [f for f in findings if f.code == code]
    assert len(mine) == 1, [(f.code, f.text) for f in findings]
    return mine[0]


def values(f: Finding, name: str) -> dict[str, object]:
    """The substituted values of the finding's formula called ``name``."""
    for formula in f.formulas:
        if formula.name == name:
            return dict(formula.values)
    raise AssertionError(f"no formula {name!r} in {[x.name for x in f.formulas]}")


def result(f: Finding, name: str) -> object:
    for formula in f.formulas:
        if formula.name == name:
            return formula.result
    raise AssertionError(f"no formula {name!r} in {[x.name for x in f.formulas]}")


def seats(f: Finding) -> int:
    """The finding's ``seats`` formula, checked against its own definition:
    seats = floor(max_concurrency)."""
    got = result(f, "seats")
    concurrency = values(f, "seats")["max_concurrency"]
    assert isinstance(got, int) and isinstance(concurrency, float)
    assert got == math.floor(concurrency)
    return got


# The command-line rules (TP001-TP006) on their own, from a file on disk (the readers of
# tests/checks/test_tp001.py..test_tp006.py and test_command_line.py).
COMMAND_LINE_CODES = ("TP001", "TP002", "TP003", "TP004", "TP005", "TP006")


def lint_command_line(tmp_path: Path, name: str, text: str,
                      engine_version: str | None = None) -> list[Finding]:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    settings = Settings(offline=True, select=COMMAND_LINE_CODES, engine_version=engine_version,
                        engine_version_from="--engine-version" if engine_version else None)
    res = Linter(settings).run([str(p)])
    assert not res.errors, res.errors
    return sorted(res.findings, key=lambda f: (f.span.line, f.span.column))


def col(line: str, token: str) -> int:
    """1-based column of ``token`` in ``line`` (the span a finding must start at)."""
    return line.index(token) + 1


def engine_says(f: Finding) -> str:
    """The engine's own words a finding quotes in its evidence (argparse, pydantic, TypeError)."""
    said = [n.removeprefix("the engine says: ") for n in f.notes
            if n.startswith("the engine says: ")]
    assert said, f.notes
    return said[0]
