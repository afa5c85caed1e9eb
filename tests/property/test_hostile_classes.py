"""Property tests per class of hostile input (issue 14): generated cases through the whole CLI.

Classes: shell variable doubling (``A="$A$A"``), odd Python string literals, special files
(FIFO, a folder named ``*.yaml``, symlink loops, dangling links) and settings values (0,
negative, nan, inf, huge, strings, wrong types). Invariants for every case: the exit code is
0, 1 or 2; no traceback and no "internal error"; every error line names the file it is about;
a good file checked in the same run still gets its finding (one bad input never costs the run).

Special files run the CLI in a child process with a timeout, since a FIFO that is opened waits
forever; the others run ``main()`` in-process. The hypothesis profile comes from conftest.py.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.shared import chdir
from tpcheck.cli import main
from tpcheck.oneline import one_line

ROOT = Path(__file__).resolve().parents[2]
GOOD_TEXT = (ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml").read_text(encoding="utf-8")
GOOD_CODE = "TP201"  # t = 16 > h_kv = 8 for Qwen3-32B (the fixture's own finding)
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_in(folder: Path, args: list[str]) -> tuple[int, str, str]:
    """``main(args)`` with ``folder`` as the working directory; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with chdir(folder), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def check_invariants(code: int, stdout: str, stderr: str, names: list[str]) -> None:
    """Exit code, no traceback, one line per error, each naming one of ``names``."""
    text = stdout + stderr
    assert code in (0, 1, 2), (code, text[-1000:])
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert "please report" not in text, text[-2000:]
    for line in stderr.splitlines():
        if line.strip():
            assert any(n in line for n in names), (line, names)


# -- shell variable doubling ----------------------------------------------------------------

@SETTINGS
@given(
    st.integers(0, 40),
    st.text(alphabet="ab$ {}x", min_size=1, max_size=12),
    st.sampled_from(["$A", '"$A$A"', "${A}${A}x", "$A$A$A"]),
    st.sampled_from(["--served-model-name $A", "$A", "--tensor-parallel-size $A", ""]),
)
def test_variable_doubling(doublings: int, seed: str, step: str, use: str) -> None:
    script = f"A='{seed}'\n" + f"A={step}\n" * doublings + f"vllm serve m -tp 2 {use}\n"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "double.sh").write_text(script, encoding="utf-8")
        (Path(tmp) / "good.yaml").write_text(GOOD_TEXT, encoding="utf-8")
        code, out, err = run_in(Path(tmp), ["--offline", "--gpu", "h100-sxm", "double.sh",
                                            "good.yaml"])
    check_invariants(code, out, err, ["double.sh"])
    assert GOOD_CODE in out


# -- odd Python string literals -------------------------------------------------------------

_PIECES = st.sampled_from([
    "a", "é", "\\N{NOPE}", "\\N{LATIN SMALL LETTER A}", "\\x4", "\\x41", "\\u12", "\\U0001F600",
    "\\ud800", "\\0", "\\", "{", "}", "{x}", "\x00", "\ufeff", "\u2028", "\r", "'", '"', "\\n",
])
_PREFIXES = st.sampled_from(["", "r", "b", "rb", "f", "u", "F", "Rb"])
_QUOTES = st.sampled_from(["'", '"', "'''", '"""'])


@SETTINGS
@given(_PREFIXES, _QUOTES, st.lists(_PIECES, max_size=6),
       st.sampled_from(["model", "dtype", "tensor_parallel_size", "served_model_name"]))
@example("b", '"""', ['"', '"'], "model")  # b"""""""": bytes then str, libcst's internal error
def test_odd_python_string_literals(prefix: str, quote: str, pieces: list[str], key: str) -> None:
    literal = f"{prefix}{quote}{''.join(pieces)}{quote}"
    text = f"from vllm import LLM\nLLM({key}={literal}, tensor_parallel_size=2)\n"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "odd.py").write_text(text, encoding="utf-8", errors="surrogatepass")
        (Path(tmp) / "good.yaml").write_text(GOOD_TEXT, encoding="utf-8")
        code, out, err = run_in(Path(tmp), ["--offline", "--gpu", "h100-sxm", "odd.py",
                                            "good.yaml"])
    check_invariants(code, out, err, ["odd.py"])
    assert GOOD_CODE in out


# -- special files ----------------------------------------------------------------------------

def _make_special(tree: Path, kind: str, name: str) -> None:
    p = tree / name
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "dir":
        p.mkdir()
        (p / "inner.yaml").write_text("a: 1\n", encoding="utf-8")
    elif kind == "loop":
        os.symlink(tree / f"{name}.other.yaml", p)
        os.symlink(p, tree / f"{name}.other.yaml")
    elif kind == "self-loop":
        os.symlink(p, p)
    elif kind == "dangling":
        os.symlink(tree / "nowhere" / "x.yaml", p)
    elif kind == "devnull":
        os.symlink(os.devnull, p)
    elif kind == "empty":
        p.write_bytes(b"")


_KINDS = ["fifo", "dir", "loop", "self-loop", "dangling", "devnull", "empty"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo and symlinks")
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_KINDS), min_size=1, max_size=3, unique=True),
       st.sampled_from(["x.yaml", "run.sh", "launch.py", "values.yml"]),
       st.booleans())
def test_special_files(kinds: list[str], name: str, walked: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        names = [f"{k}-{name}" for k in kinds]
        for kind, n in zip(kinds, names, strict=True):
            _make_special(tree, kind, n)
        (tree / "good.yaml").write_text(GOOD_TEXT, encoding="utf-8")
        args = [str(tree)] if walked else [*(str(tree / n) for n in names), str(tree / "good.yaml")]
        proc = subprocess.run(  # a child with a timeout: an opened FIFO would wait forever
            [sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm", *args],
            capture_output=True, text=True, timeout=120, cwd=tmp)
    check_invariants(proc.returncode, proc.stdout, proc.stderr, names)
    assert GOOD_CODE in proc.stdout, proc.stdout + proc.stderr


# -- settings values ------------------------------------------------------------------------

def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise AssertionError(value)


_SETTING_KEYS = ["hub-timeout", "max-file-size", "context", "alpha", "gpu", "fail-on", "offline",
                 "select", "ignore", "engine-version", "topology", "model-config"]
_SETTING_VALUES = st.one_of(
    st.sampled_from([0, -1, 1, 10**30, -(10**30), 0.0, -0.5, 1e-300, 1e308, math.nan, math.inf,
                     -math.inf, "", "abc", "nan", "inf", "0", "h100-sxm", True, False, [],
                     ["TP201"], ["x", 1]]),
    st.integers(), st.floats(), st.text(max_size=8),
)


@SETTINGS
@given(st.sampled_from(_SETTING_KEYS), _SETTING_VALUES)
# found by this test: max-file-size 0 or negative skipped every file ("over the 0-byte limit"),
# alpha nan/inf/negative reached the physics
@example("max-file-size", 0)
@example("max-file-size", -1)
@example("alpha", math.nan)
@example("alpha", math.inf)
@example("alpha", -1.0)
@example("hub-timeout", math.nan)
# found by hypothesis in this sweep: α = 1.39e306 s made a TP201 formula's result inf, and
# format_scalar's int(inf) raised OverflowError (internal error, exit 2, no file named)
@example("alpha", 1.39356056966071e306)
@example("topology", "\x85")  # a raw NEL in the error line broke it in two for splitlines()
@example("model-config", "a\u2028b")
def test_settings_values(key: str, value: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / ".tpcheck.toml").write_text(f"offline = true\n{key} = {_toml(value)}\n"
                                                 if key != "offline" else
                                                 f"{key} = {_toml(value)}\n", encoding="utf-8")
        (Path(tmp) / "good.yaml").write_text(GOOD_TEXT, encoding="utf-8")
        code, out, err = run_in(Path(tmp), ["--gpu", "h100-sxm", "good.yaml"])
    check_invariants(code, out, err, [".tpcheck.toml", "good.yaml", key])
    refused = (key, value) in (("max-file-size", 0), ("max-file-size", -1), ("alpha", -1.0))
    if refused or (key in ("alpha", "hub-timeout") and isinstance(value, float)
                   and not math.isfinite(value)):
        assert code == 2 and key in err and ".tpcheck.toml" in err, (code, err)
    if code == 2:  # one line naming the settings file, the file a path names, or the checked
        lines = [x for x in err.splitlines() if x.strip()]  # file (max-file-size = 1 skips it)
        assert len(lines) == 1, err
        assert ".tpcheck.toml" in lines[0] or "good.yaml:1:1: file is" in lines[0] or (
            key in ("topology", "model-config") and f"{one_line(str(value))}:" in lines[0]), err
