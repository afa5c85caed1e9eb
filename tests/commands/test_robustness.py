"""A demanding user's sweep of every command: what it found, kept from coming back.

The bar (ruff, yamllint, kube-linter): bad input is one line naming the file and position or
the option, exit 2, no traceback, and the other files of the run are still checked. Runs that
could hang (a FIFO, /dev/zero) go through a subprocess with a timeout; the rest call ``main``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tpcheck.cli import main
from tpcheck.settings import SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml"  # TP201 at 19:16 on h100-sxm
LINT = ["--offline", "--gpu", "h100-sxm"]
# Llama-3.1-8B's shape, enough for the plan: L=32, d=4096, h=32, h_kv=8, f=14336, V=128256.
LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336,
         "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}


def tpcheck(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The real program; 20 s is far past any of these runs (each takes ~0.2 s when it works)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TPCHECK_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "tpcheck", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=20, check=False,
                          stdin=subprocess.DEVNULL)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_error(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "topo.txt"
    os.mkfifo(path)
    return path


# ---- side files named by an option: /dev/zero never ended, a FIFO blocked the run ------------

def test_topology_from_dev_zero_is_one_line_and_the_file_is_still_checked() -> None:
    p = tpcheck(*LINT, "--topology", "/dev/zero", str(GOOD))
    assert p.returncode == 2
    assert one_error(p.stderr) == ("tpcheck: /dev/zero:1:1: cannot read topology: not a regular "
                                   "file (a character device)")
    assert "qwen3-32b-tp16.yaml:19:16: TP201" in p.stdout


def test_topology_from_a_fifo_nobody_writes_reads_empty_instead_of_hanging(fifo: Path) -> None:
    p = tpcheck(*LINT, "--topology", str(fifo), str(GOOD))
    assert p.returncode == 2
    assert one_error(p.stderr).startswith(f"tpcheck: {fifo}:1:1: no GPU matrix found")
    assert "qwen3-32b-tp16.yaml:19:16: TP201" in p.stdout


def test_topology_and_config_from_process_substitution_are_read() -> None:
    # `--topology <(ssh node nvidia-smi topo -m)`: bash hands over /dev/fd/N, a pipe.
    topo = ROOT / "fixtures" / "topology" / "dgx-h100.txt"
    cmd = (f"{sys.executable} -m tpcheck {' '.join(LINT)} --topology <(cat '{topo}') '{GOOD}'; "
           f"echo rc=$?; {sys.executable} -m tpcheck {' '.join(LINT)} "
           f"--config <(printf 'fail-on = \"error\"\\nignore = [\"TP402\"]\\n') '{GOOD}'; "
           "echo rc=$?")
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=40,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    assert p.stderr == ""
    # the topology read, TP201 (a warning) is reported: exit 1; with fail-on = "error" read
    # from the pipe (and the fixture's TP402 error ignored) the same warning no longer fails
    # the run: exit 0
    assert p.stdout.count("TP201") == 2
    assert [ln for ln in p.stdout.splitlines() if ln.startswith("rc=")] == ["rc=1", "rc=0"]


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null/x"])
def test_config_that_cannot_be_read_is_a_usage_error(device: str) -> None:
    p = tpcheck(*LINT, "--config", device, str(GOOD))
    assert p.returncode == 2
    line = one_error(p.stderr)
    assert line.startswith(f"tpcheck: error: {device}: cannot read: ")
    if device == "/dev/zero":
        assert "not a regular file (a character device)" in line


def test_sarif_does_not_reopen_the_fifo_the_lint_skipped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    (tmp_path / "good.yaml").write_text(GOOD.read_text(encoding="utf-8"), encoding="utf-8")
    p = tpcheck(*LINT, "--format", "sarif", ".", cwd=tmp_path)
    assert p.returncode == 2  # TP201 is a warning (1), the skipped FIFO an input error (2)
    results = json.loads(p.stdout)["runs"][0]["results"]
    got = sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                  r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results)
    assert got == [("TP201", "good.yaml", 19), ("TP402", "good.yaml", 24),
                   ("TP900", "pipe.yaml", 1)]


def test_a_settings_file_past_the_cap_is_refused_unread(tmp_path: Path) -> None:
    from tpcheck.settings import MAX_SETTINGS_BYTES

    big = tmp_path / ".tpcheck.toml"
    big.write_text("# " + "x" * MAX_SETTINGS_BYTES + "\n", encoding="utf-8")  # 1 MiB + 3 bytes
    with pytest.raises(SettingsError, match=r"over the 1,048,576-byte limit"):
        load_settings(big)


# ---- settings files: shapes that raised instead of naming the file ---------------------------

@pytest.mark.parametrize(("name", "text", "message"), [
    # tomllib recurses once per '[': 5,000 of them is past Python's recursion limit of 1,000
    ("pyproject.toml", "[tool.tpcheck]\nselect = " + "[" * 5000 + "]" * 5000 + "\n",
     "invalid TOML: arrays or tables nested too deeply"),
    (".tpcheck.toml", "select = " + "[" * 5000 + "]" * 5000 + "\n",
     "invalid TOML: arrays or tables nested too deeply"),
    ("pyproject.toml", "[tool]\ntpcheck = 5\n", "[tool.tpcheck] must be a table"),
    ("pyproject.toml", "[tool]\ntpcheck = [1]\n", "[tool.tpcheck] must be a table"),
    (".tpcheck.toml", "tool = 5\n", "unknown key 'tool' in [tool.tpcheck]"),
    (".tpcheck.toml", "fail_on = 'error'\nfail-on = 'info'\n",
     "fail_on and fail-on are the same key; give it once"),
    (".tpcheck.toml", "engine-version = 'latest'\n",
     "engine-version must be a release number such as 0.8.5 or v0.8.5, got 'latest'"),
    (".tpcheck.toml", "engine-version = ''\n",
     "engine-version must be a release number such as 0.8.5 or v0.8.5, got ''"),
    (".tpcheck.toml", "select = ['TP2', ' ']\n", "select holds an empty rule code"),
    (".tpcheck.toml", "[models]\n'Qwen/Qwen3-32B' = ''\n",
     "[tool.tpcheck.models] maps 'Qwen/Qwen3-32B' to an empty path"),
    (".tpcheck.toml", "[per-file-ignores]\n'*.sh' = ['']\n",
     "per-file-ignores.*.sh holds an empty rule code"),
])
def test_hostile_settings_are_one_line_naming_the_file(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str,
        message: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError) as e:
        load_settings(tmp_path / name)
    assert str(e.value).startswith(f"{tmp_path / name}: {message}")  # unknown key: + (known: …)
    # The same through the command line: the quotes at the end of the message survive.
    code, out, err = run(capsys, *LINT, "--config", str(tmp_path / name), str(GOOD))
    assert code == 2 and out == ""
    assert one_error(err) == f"tpcheck: error: {e.value} (see 'tpcheck check --help')"


def test_plan_reads_the_same_settings_checks(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool]\ntpcheck = 5\n", encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(LLAMA), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "plan", "--offline", "config.json", "--gpu", "h100-sxm")
    assert code == 2
    assert one_error(err).endswith("pyproject.toml: [tool.tpcheck] must be a table "
                                   "(see 'tpcheck plan --help')")


# ---- options ---------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["check", "plan"])
@pytest.mark.parametrize("value", ["", "latest", "☃", "v"])
def test_engine_version_without_a_release_number_is_refused(
        capsys: pytest.CaptureFixture[str], command: str, value: str) -> None:
    """Before, ``plan --engine-version latest`` printed ``engine=vllm latest`` and used the
    newest defaults under that name."""
    target = [str(GOOD)] if command == "check" else ["Qwen/Qwen3-32B", "--gpu", "h100-sxm"]
    code, out, err = run(capsys, command, "--offline", "--engine-version", value, *target)
    assert code == 2 and out == ""
    assert one_error(err) == (f"tpcheck: error: argument --engine-version: {value!r} is not a "
                              f"release number such as 0.8.5 or v0.8.5 (see 'tpcheck {command} "
                              "--help')")


@pytest.mark.parametrize("value", ["0.8.5", "v0.10.1.1", "0.9.1.dev705+g01"])
def test_engine_versions_as_images_tag_them_are_accepted(capsys: pytest.CaptureFixture[str],
                                                         value: str) -> None:
    code, out, _ = run(capsys, "plan", "--offline", "Qwen/Qwen3-32B", "--gpu", "h100-sxm",
                       "--tp", "8", "--engine-version", value)
    assert code == 0 and f"engine=vllm {value} (from --engine-version" in out


def test_lsp_log_file_in_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    p = tpcheck("lsp", "--log-file", str(tmp_path / "no" / "lsp.log"))
    assert p.returncode == 2
    assert one_error(p.stderr) == (f"tpcheck: error: argument --log-file: "
                                   f"'{tmp_path / 'no' / 'lsp.log'}' cannot be created: no folder "
                                   f"'{tmp_path / 'no'}' (see 'tpcheck lsp --help')")


@pytest.fixture
def llama(tmp_path: Path) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("item", "message"), [
    ("=5", "no key before '=' in '=5'"),
    (" =5", "no key before '=' in ' =5'"),
    ("num_attention_head=64",
     "'num_attention_head' is not a field of this config.json (did you mean "
     "'num_attention_heads'?)"),
    ("hidden_sizes=8192",
     "'hidden_sizes' is not a field of this config.json (did you mean 'hidden_size'?)"),
])
def test_set_without_a_key_or_with_a_misspelt_one_is_refused(
        capsys: pytest.CaptureFixture[str], llama: str, item: str, message: str) -> None:
    """Both were silently ignored: the table printed as if nothing had been asked."""
    code, out, err = run(capsys, "plan", "--offline", llama, "--gpu", "h100-sxm", "--set", item)
    assert code == 2 and out == ""
    assert one_error(err) == (f"tpcheck: error: argument --set: {message} "
                              "(see 'tpcheck plan --help')")


def test_set_may_still_add_a_field_the_config_lacks(capsys: pytest.CaptureFixture[str],
                                                    llama: str) -> None:
    # head_dim is absent (d_h = d / h = 4096 / 32 = 128); set to 64 it is read as given, and
    # bos_token_id (one letter from nothing the config holds) is accepted as an addition.
    code, out, _ = run(capsys, "plan", "--offline", llama, "--gpu", "h100-sxm", "--tp", "8",
                       "--set", "head_dim=64", "--set", "bos_token_id=1")
    assert code == 0
    assert "h=32 h_kv=8, d_h=64 " in out


# ---- input files ---------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "text", "where"), [
    # NUL at offset 20 = line 2 column 1 (the first line is 19 characters and its newline)
    ("kustomization.yaml", "resources: [a.yaml]\n\x00", "2:1"),
    # NUL after "  a: b" on line 3: column 7
    ("deploy.yaml", "kind: Pod\nspec:\n  a: b\x00\n", "3:7"),
])
def test_a_control_character_is_one_error_at_its_position(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str,
        where: str) -> None:
    """PyYAML's ReaderError has no mark: the kustomization reader let it escape (internal
    error), the YAML reader put it at 1:1."""
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, err = run(capsys, *LINT, str(tmp_path / name), str(GOOD))
    assert code == 2
    assert one_error(err) == (f"tpcheck: {tmp_path / name}:{where}: YAML does not parse: "
                              "control characters are not allowed (character #x0000)")
    assert "qwen3-32b-tp16.yaml:19:16: TP201" in out


# ---- one bad file costs itself, not the run -------------------------------------------------

def test_a_broken_settings_file_in_a_subfolder_costs_only_its_files(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, one team's broken .tpcheck.toml was a usage error that checked nothing at all."""
    (tmp_path / "team-a").mkdir()
    (tmp_path / "team-b").mkdir()
    (tmp_path / "team-b" / ".tpcheck.toml").write_text("alpha = -1\n", encoding="utf-8")
    for team in ("team-a", "team-b"):
        (tmp_path / team / "deploy.yaml").write_text(GOOD.read_text(encoding="utf-8"),
                                                     encoding="utf-8")
    (tmp_path / "team-b" / "run.sh").write_text("vllm serve m -tp 2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *LINT, ".")
    assert code == 2
    assert "./team-a/deploy.yaml:19:16: TP201" in out and "team-b" not in out
    settings = tmp_path / "team-b" / ".tpcheck.toml"
    assert one_error(err) == (f"tpcheck: {settings}:1:1: alpha must be a number of seconds "
                              "from 0 to under 1 (a collective's fixed cost is µs), got -1; the "
                              "2 file(s) it governs were not checked")


def test_a_settings_file_with_a_bom_is_read(tmp_path: Path) -> None:
    (tmp_path / ".tpcheck.toml").write_text("\ufeffgpu = 'l40s'\n", encoding="utf-8")
    assert load_settings(tmp_path / ".tpcheck.toml").gpu == "l40s"


def test_python_in_its_declared_encoding_is_read_as_python_reads_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """PEP 263: Python runs a latin-1 file that says so; it was "not UTF-8 text (byte 31)"
    (the é after 26 bytes of coding line and 5 of "# caf")."""
    path = tmp_path / "launch.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\nfrom vllm import LLM\n"
                     b'LLM(model="Qwen/Qwen3-32B", tensor_parallel_size=3)\n')
    code, out, err = run(capsys, *LINT, "--select", "TP101", str(path))
    # Qwen3-32B: h = 64 query heads, 64 mod 3 = 1 → TP101 at the 3 (line 4, column 50)
    assert code == 1 and err == ""
    assert f"{path}:4:50: TP101" in out
    path.write_bytes(b"from vllm import LLM\n# caf\xe9\n")  # no declaration: still refused
    code, _, err = run(capsys, *LINT, str(path))
    # the é is byte 21 ("from vllm import LLM\n") + 5 ("# caf") = 26
    assert code == 2 and one_error(err) == f"tpcheck: {path}:1:1: not UTF-8 text (byte 26)"


def test_a_name_past_the_file_system_limit_is_one_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Finding the nearest settings file probed a 5,000-character folder name, and Path.is_dir
    raised ENAMETOOLONG (Linux's NAME_MAX is 255) as an internal error for the whole run."""
    long = tmp_path / ("a" * 5000) / "x.yaml"
    code, out, err = run(capsys, *LINT, str(long), str(GOOD))
    assert code == 2
    assert one_error(err) == f"tpcheck: {long}:1:1: cannot read: File name too long"
    assert "qwen3-32b-tp16.yaml:19:16: TP201" in out


# ---- where the report goes -----------------------------------------------------------------

def _to(stdout: object, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TPCHECK_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "tpcheck", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, timeout=60,
                          check=False, stdin=subprocess.DEVNULL)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="Linux's always-full device")
@pytest.mark.parametrize("args", [
    [*LINT, str(GOOD)],
    ["plan", "--offline", "Qwen/Qwen3-32B", "--gpu", "h100-sxm"],
    ["rules"],
    ["inspect", str(GOOD)],
])
def test_a_report_that_cannot_be_written_is_one_line_exit_2(args: list[str]) -> None:
    """> /dev/full was an internal OSError; a CI step must not pass with its report lost."""
    with open("/dev/full", "w") as full:
        p = _to(full, *args)
    assert p.returncode == 2
    assert one_error(p.stderr) == "tpcheck: error: cannot write the report: No space left on device"


@pytest.mark.parametrize("args", [[*LINT, str(GOOD)], ["explain", "TP101"]])
def test_a_closed_stdout_is_one_line_exit_2(args: list[str]) -> None:
    """>&- gave check an AttributeError (sys.stdout is None), and explain exit 0 having
    printed nothing."""
    code = ("import sys, os; os.close(1); sys.stdout = None; "
            "from tpcheck.cli import main; sys.exit(main(sys.argv[1:]))")
    p = subprocess.run([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=60, check=False,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert p.returncode == 2
    assert one_error(p.stderr) == ("tpcheck: error: standard output is closed; nothing could "
                                   "be reported")


def test_the_output_errnos_are_linux_s() -> None:
    import errno

    from tpcheck.cli import _OUTPUT_ERRNOS

    assert {errno.ENOSPC, errno.EIO, errno.EBADF, errno.EFBIG, errno.EDQUOT} == _OUTPUT_ERRNOS


def test_a_topology_that_does_not_parse_is_placed_at_its_line_once(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """It read "topo.txt:1:1: topo.txt:3: unknown link class ...": the path twice, line 1."""
    topo = tmp_path / "topo.txt"
    topo.write_text("\tGPU0\tGPU1\nGPU0\tX\tNV18\nGPU1\tNV-1\tX\n", encoding="utf-8")
    code, out, err = run(capsys, *LINT, "--topology", str(topo), str(GOOD))
    assert code == 2
    # line 3 is GPU1's row, whose first cell NV-1 is no link class
    assert one_error(err) == (f"tpcheck: {topo}:3:1: unknown link class 'NV-1' (expected X, "
                              "NV#, PIX, PXB, PHB, NODE or SYS)")
    assert "qwen3-32b-tp16.yaml:19:16: TP201" in out
