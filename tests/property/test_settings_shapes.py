"""Property tests over settings shapes: whatever TOML holds, a settings file is read or refused
with one SettingsError naming it; nothing else escapes (issue: ``[tool] tpcheck = 5`` raised
TypeError, 5,000 nested arrays RecursionError, both as internal errors).

Values are what tomllib can produce: strings, integers, floats (nan and inf too), booleans,
dates, and arrays and tables of them, nested.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tpcheck.settings import Settings, SettingsError, load_settings, settings_from_table

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KEYS = st.sampled_from(["select", "ignore", "gpu", "context", "fail-on", "fail_on", "models",
                        "per-file-ignores", "offline", "topology", "engine-version",
                        "model-config", "hub-timeout", "max-file-size", "alpha", "rules",
                        "tool", "nope"])
SCALARS = (st.text(max_size=6) | st.integers() | st.floats() | st.booleans()
           | st.dates() | st.sampled_from(["TP201", "TP1", "0.8.5", "h100-sxm", "", " "]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6) | KEYS, inner, max_size=3),
                      max_leaves=12)


@SETTINGS
@given(st.dictionaries(KEYS, VALUES, max_size=4))
@example({"engine-version": ""})
@example({"fail_on": "error", "fail-on": "info"})
@example({"models": {"Qwen/Qwen3-32B": " "}})
@example({"rules": {"TP203": {"waste-factor": dt.date(2020, 1, 1)}}})
def test_any_table_is_settings_or_one_settings_error(table: dict[str, object]) -> None:
    try:
        got = settings_from_table(table, "/repo/.tpcheck.toml")
    except SettingsError as e:
        assert str(e).startswith("/repo/.tpcheck.toml: ")
        assert "\n" not in str(e)
    else:
        assert isinstance(got, Settings)


@SETTINGS
@given(st.binary(max_size=64) | st.text(max_size=64).map(str.encode))
@example(b"[tool]\ntpcheck = 5\n")
@example(b"[tool.tpcheck]\nselect = " + b"[" * 5000 + b"]" * 5000 + b"\n")
@example(b"\xef\xbb\xbf[tool.tpcheck]\ngpu = 'l40s'\n")
def test_any_pyproject_bytes_are_settings_or_one_settings_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pyproject.toml"
        path.write_bytes(data)
        try:
            got = load_settings(path)
        except SettingsError as e:
            assert str(e).startswith(f"{path}: ")
        else:
            assert isinstance(got, Settings)
