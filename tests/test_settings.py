"""Finding the settings file: pyproject.toml is parsed only when it can hold [tool.tpcheck]."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
