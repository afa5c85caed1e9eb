"""Finding the settings file: pyproject.toml is parsed only when it can hold [tool.tpcheck]."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tpcheck.settings import SettingsError, find_settings_file, load_settings


@pytest.mark.parametrize(("text", "found"), [
    ('[project]\nname = "tpcheck-deploy"\n[tool.ruff]\nline-length = 100\n', False),
    ('[tool.tpcheck]\ngpu = "h100-sxm"\n', True),
    ('[tool . "tpcheck"]\ngpu = "h100-sxm"\n', True),
    ('tool.tpcheck.gpu = "h100-sxm"\n', True),
    ('[tool]\ntpcheck = { gpu = "h100-sxm" }\n', True),
    ('[tool]\nother = 1\n', False),  # parsed (a bare [tool] might hold us), then not ours
])
def test_pyproject_is_ours_only_with_a_tool_tpcheck_table(tmp_path: Path, text: str,
                                                          found: bool) -> None:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    sub = tmp_path / "deploy"
    sub.mkdir()
    got = find_settings_file(sub)
    assert got == (tmp_path / "pyproject.toml" if found else None)
    if found:
        assert load_settings(got).gpu == "h100-sxm"


def test_dot_tpcheck_toml_wins_and_bad_toml_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.tpcheck]\ngpu = "l40s"\n', encoding="utf-8")
    (tmp_path / ".tpcheck.toml").write_text('gpu = "h100-sxm"\nfail-on = \n', encoding="utf-8")
    got = find_settings_file(tmp_path)
    assert got == tmp_path / ".tpcheck.toml"
    with pytest.raises(SettingsError, match=r"\.tpcheck\.toml: invalid TOML"):
        load_settings(got)


def test_a_pyproject_that_is_not_ours_never_loads_the_toml_parser(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "tpcheck-x"\n', encoding="utf-8")
    probe = ("import sys; from pathlib import Path; from tpcheck.settings import "
             "find_settings_file as f; assert f(Path(sys.argv[1])) is None; "
             "print('tomllib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "False"


# Llama-3.1-70B at TP 6: TP101, TP102 and TP103 (h = 64, h_kv = 8, f = 28,672; none divisible).
TP6 = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6\n"


def _lint(cwd: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--format", "json",
                           *paths], cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)


def test_per_file_ignores_accept_prefixes_like_ignore(tmp_path: Path) -> None:
    import json

    (tmp_path / "pyproject.toml").write_text(
        '[tool.tpcheck.per-file-ignores]\n"legacy/*" = ["TP1"]\n', encoding="utf-8")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "run.sh").write_text(TP6, encoding="utf-8")
    (tmp_path / "run.sh").write_text(TP6, encoding="utf-8")
    proc = _lint(tmp_path, "legacy/run.sh", "run.sh")
    data = json.loads(proc.stdout)
    # The prefix TP1 covers all three refusals in legacy/, none elsewhere.
    assert sorted((f["path"], f["code"]) for f in data["findings"]) == [
        ("run.sh", "TP101"), ("run.sh", "TP102"), ("run.sh", "TP103")]
    assert data["summary"]["suppressed"] == 3


def test_per_file_ignores_with_an_unknown_code_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tpcheck.per-file-ignores]\n"legacy/*" = ["TP9X"]\n', encoding="utf-8")
    (tmp_path / "run.sh").write_text(TP6, encoding="utf-8")
    proc = _lint(tmp_path, "run.sh")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "pyproject.toml: per-file-ignores 'legacy/*': unknown rule code 'TP9X'" in line


def test_each_file_gets_its_nearest_settings_as_in_the_editor(tmp_path: Path) -> None:
    import json

    # The CLI runs from the repository root; only team-b's folder ignores TP1.
    (tmp_path / "team-a").mkdir()
    (tmp_path / "team-b").mkdir()
    (tmp_path / "team-b" / ".tpcheck.toml").write_text('ignore = ["TP1"]\n', encoding="utf-8")
    for team in ("team-a", "team-b"):
        (tmp_path / team / "run.sh").write_text(TP6, encoding="utf-8")
    proc = _lint(tmp_path, ".")
    data = json.loads(proc.stdout)
    assert sorted({f["path"] for f in data["findings"]}) == ["./team-a/run.sh"]
    assert data["summary"]["files"] == 2
    # --config names one settings file for every file instead.
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    data = json.loads(_lint(tmp_path, "--config", "none.toml", ".").stdout)
    assert sorted({f["path"] for f in data["findings"]}) == ["./team-a/run.sh", "./team-b/run.sh"]


@pytest.mark.parametrize(("value", "ok"), [(2e-5, True), (0, True), (0.999, True), (1.0, False),
                                           (1.39e306, False)])
def test_alpha_is_seconds_under_one(tmp_path: Path, value: float, ok: bool) -> None:
    # α is a collective's fixed cost (tens of µs on NVLink); 1.39e306 s (found by hypothesis)
    # made the decode step infinite and tokens/s 0, so a second or more is refused.
    (tmp_path / ".tpcheck.toml").write_text(f"alpha = {value!r}\n", encoding="utf-8")
    if ok:
        assert load_settings(tmp_path / ".tpcheck.toml").alpha == float(value)
    else:
        with pytest.raises(SettingsError, match=r"alpha must be a number of seconds from 0 to "
                                                r"under 1"):
            load_settings(tmp_path / ".tpcheck.toml")


_PIECES = ("tool", "tpcheck", ".", "[", "]", "'", '"', " ", "\t", "\n", "\r", "\u00a0", "\u2003",
           "x", "=", "#", "[tool.ruff]", "[tool]", "tool.tpcheck")


@given(st.lists(st.sampled_from(_PIECES), max_size=14))
def test_the_pyproject_test_is_its_pattern(pieces: list[str]) -> None:
    # mentions_tool_tpcheck is MENTIONS_TOOL_TPCHECK (re.M) asked with str.find
    import re

    from tpcheck.settings import MENTIONS_TOOL_TPCHECK, mentions_tool_tpcheck

    text = "".join(pieces)
    expected = re.search(MENTIONS_TOOL_TPCHECK, text, re.M) is not None
    assert mentions_tool_tpcheck(text) is expected, text


@pytest.mark.parametrize("text", [
    "[tool.tpcheck]", "[ tool . 'tpcheck' ]", 'tool."tpcheck".gpu = 1', "a\n  [ tool ]\n",
    "[tool]", "x = 1 \n\n [tool]", "x [tool]", "[tool.ruff]\nname = 'tpcheck'", "tool tpcheck",
    "tool.\u2003tpcheck", "[\ttool\n]", "tool..tpcheck", "", "tpcheck", " " * 5000 + "[tool]",
])
def test_the_pyproject_test_on_the_usual_spellings(text: str) -> None:
    import re

    from tpcheck.settings import MENTIONS_TOOL_TPCHECK, mentions_tool_tpcheck

    assert mentions_tool_tpcheck(text) is (re.search(MENTIONS_TOOL_TPCHECK, text, re.M)
                                           is not None), text
