"""Per-rule options (issue 15): declared in the rule's registry row, set in
``[tool.tpcheck.rules.CODE]`` / ``[rules.CODE]``, checked generically, read by the rule."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checks.rulecase import lint_text, only, result
from tpcheck.checks import RULES, Rule, rule_options
from tpcheck.checks.base import Severity
from tpcheck.settings import Settings, SettingsError, load_settings

WHERE = "/p/pyproject.toml"

# Llama-3.1-8B-Instruct on an H100 SXM at c = 8,192 seats 56 sequences (rules/TP203.md:
# kv_B = 2·32·8·128·2 = 131,072 B/token; the pool holds 56.88 sequences of 8,192 tokens).
LAUNCH = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 --max-num-seqs {n}\n"
SEATS = 56


@pytest.mark.parametrize("rule", RULES, ids=[m.code for m in RULES])
def test_every_option_has_a_default_of_its_type(rule: Rule) -> None:
    for option in rule.options:
        name, want, default = option.name, option.kind, option.default
        assert default in want if isinstance(want, tuple) else isinstance(default, want), name
        # the default passes the rule's own check
        assert rule_options({rule.code: {name: default}}, WHERE)[rule.code][name] == default


@pytest.mark.parametrize(("table", "expected"), [
    ({"TP203": {"waste-factor": 8}}, {"TP203": {"waste-factor": 8.0}}),  # an integer is a number
    ({"tp203": {"waste_factor": 2.5}}, {"TP203": {"waste-factor": 2.5}}),  # spellings as ruff's
    ({"TP203": {}}, {"TP203": {}}),
])
def test_options_are_normalised(table: dict[str, dict[str, object]],
                                expected: dict[str, dict[str, object]]) -> None:
    assert rule_options(table, WHERE) == expected


@pytest.mark.parametrize(("table", "message"), [
    ({"TP2O3": {"waste-factor": 2}},
     f"{WHERE}: rules.TP2O3: unknown rule code (known: TP000, "),
    ({"TP203": {"wastefactor": 2}},
     f"{WHERE}: rules.TP203.wastefactor: TP203 has no such option (options: waste-factor)"),
    ({"TP101": {"x": 1}}, f"{WHERE}: rules.TP101.x: TP101 has no such option (options: none)"),
    ({"TP203": {"waste-factor": "4"}},
     f"{WHERE}: rules.TP203.waste-factor must be a number, got str"),
    ({"TP203": {"waste-factor": True}},
     f"{WHERE}: rules.TP203.waste-factor must be a number, got bool"),
    ({"TP203": {"waste-factor": 0.5}},
     f"{WHERE}: rules.TP203: waste-factor must be 1 or more, got 0.5"),
    ({"TP203": {"waste-factor": math.nan}},
     f"{WHERE}: rules.TP203.waste-factor must be a finite number, got nan"),
    # issue 28 item 13: inf was taken as "never warn"; `ignore = ["TP203"]` says that plainly
    ({"TP203": {"waste-factor": math.inf}},
     f"{WHERE}: rules.TP203.waste-factor must be a finite number, got inf"),
])
def test_bad_options_are_one_line_naming_file_and_key(table: dict[str, dict[str, object]],
                                                      message: str) -> None:
    with pytest.raises(SettingsError) as e:
        rule_options(table, WHERE)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_a_rule_that_is_not_a_table_is_a_settings_error(tmp_path: Path) -> None:
    p = tmp_path / "pyproject.toml"
    p.write_text("[tool.tpcheck.rules]\nTP203 = 4\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"pyproject.toml: rules.TP203 must be a table"):
        load_settings(p)


@pytest.mark.parametrize(("name", "text"), [
    ("pyproject.toml", '[tool.tpcheck.rules.TP203]\nwaste-factor = 8\n'),
    (".tpcheck.toml", '[rules.TP203]\nwaste-factor = 8\n'),
])
def test_both_settings_files_set_an_option(tmp_path: Path, name: str, text: str) -> None:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    assert load_settings(p).rules == {"TP203": {"waste-factor": 8}}


@pytest.mark.parametrize(("n", "rules", "severity"), [
    # scheduler binds: 8 < 56 seats. Default factor 4: 56 > 4·8 = 32, a warning.
    (8, {}, Severity.WARNING),
    # factor 8: 56 > 8·8 = 64 is false, so info.
    (8, {"TP203": {"waste-factor": 8}}, Severity.INFO),
    # memory binds: 300 > 4·56 = 224 with the default factor: info (its own severity).
    (300, {}, Severity.INFO),
    # factor 8: 300 > 8·56 = 448 is false: nothing to say.
    (300, {"TP203": {"waste-factor": 8}}, None),
])
def test_tp203_reads_its_waste_factor(n: int, rules: dict[str, dict[str, object]],
                                      severity: Severity | None) -> None:
    settings = Settings(offline=True, rules=rules, source=WHERE)
    found = [f for f in lint_text(LAUNCH.format(n=n), settings=settings) if f.code == "TP203"]
    if severity is None:
        assert found == []
        return
    f = only(found, "TP203")
    assert result(f, "seats") == SEATS
    assert f.severity == severity


def _lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm",
                           *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)


def test_cli_bad_option_is_exit_2_and_one_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tpcheck.rules.TP203]\nwaste-factor = "four"\n', encoding="utf-8")
    (tmp_path / "run.sh").write_text(LAUNCH.format(n=8), encoding="utf-8")
    proc = _lint(tmp_path, "run.sh")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "pyproject.toml: rules.TP203.waste-factor must be a number, got str" in line
    assert proc.stdout == ""


def test_cli_option_changes_the_severity(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(LAUNCH.format(n=8), encoding="utf-8")
    # default factor 4: 56 seats > 4·8 = 32 → warning, which fails the run (fail-on warning)
    assert _lint(tmp_path, "run.sh").returncode == 1
    (tmp_path / ".tpcheck.toml").write_text('[rules.TP203]\nwaste-factor = 8\n',
                                            encoding="utf-8")
    # factor 8: 56 > 64 is false → info, below the fail level
    proc = _lint(tmp_path, "run.sh")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "TP203" in proc.stdout


@pytest.mark.parametrize(("table", "message"), [
    ('[tool.tpcheck.rules.TP203]\nwaste-factor = "four"\n',
     "pyproject.toml: rules.TP203.waste-factor must be a number, got str"),
    # the same linter checks per-file-ignores: once an "internal error: UnknownRule"
    ('[tool.tpcheck.per-file-ignores]\n"x/*" = ["TP9X"]\n',
     "pyproject.toml: per-file-ignores 'x/*': unknown rule code 'TP9X'"),
])
def test_inspect_reports_bad_settings_as_a_usage_error(tmp_path: Path, table: str,
                                                       message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(table, encoding="utf-8")
    (tmp_path / "run.sh").write_text(LAUNCH.format(n=8), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "tpcheck", "inspect", "--offline", "run.sh"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("tpcheck: error: ") and message in line


def test_choices_and_other_types(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generic check for the option kinds no rule uses yet: allowed strings, integers,
    booleans (on a rule given options for the test)."""
    from tpcheck.checks import BY_CODE
    from tpcheck.checks.registry import RuleOption
    from tpcheck.record import replace

    monkeypatch.setitem(BY_CODE, "TP104", replace(BY_CODE["TP104"], options=(
        RuleOption("mode", ("rows", "bytes"), "rows"), RuleOption("limit", int, 64),
        RuleOption("quiet", bool, False))))
    ok = {"TP104": {"mode": "bytes", "limit": 128, "quiet": True}}
    assert rule_options(ok, WHERE) == ok
    for options, message in (
        ({"mode": "pages"}, "rules.TP104.mode must be one of rows, bytes, got 'pages'"),
        ({"limit": 1.5}, "rules.TP104.limit must be an integer, got float"),
        ({"limit": True}, "rules.TP104.limit must be an integer, got bool"),
        ({"quiet": 1}, "rules.TP104.quiet must be true or false, got int"),
    ):
        with pytest.raises(SettingsError) as e:
            rule_options({"TP104": options}, WHERE)
        assert str(e.value) == f"{WHERE}: {message}"
