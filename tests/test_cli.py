"""The command line itself: parsing, one-line usage errors, exit codes, lazy command imports.

Real runs go through ``python -m tpcheck`` (the installed entry point's code) in a subprocess;
the rest call ``tpcheck.cli.main`` in-process with capsys.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import tpcheck
from tpcheck import cli
from tpcheck.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]
QWEN_TP16 = "fixtures/lint/qwen3-32b-tp16.yaml"  # TP201 at 19:16 on h100-sxm
LINT = ["--offline", "--gpu", "h100-sxm"]


def tpcheck_run(*args: str, stdin: str | None = None, cwd: Path = ROOT,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("TPCHECK_DEBUG", "NO_COLOR")}
    base.update({"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"})
    return subprocess.run([sys.executable, "-m", "tpcheck", *args], capture_output=True,
                          text=True, cwd=cwd, input=stdin, env={**base, **(env or {})},
                          timeout=60, check=False)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_usage_error(err: str, command: str | None) -> str:
    """The single stderr line of a usage error, checked for the prefix and the --help hint."""
    assert err.endswith("\n") and err.count("\n") == 1, err
    see = f" (see 'tpcheck {command} --help')\n" if command else " (see 'tpcheck --help')\n"
    assert err.startswith("tpcheck: error: ") and err.endswith(see), err
    return err[len("tpcheck: error: "):-len(see)]


# ---- --version and help -----------------------------------------------------------------------

def test_version_subprocess() -> None:
    p = tpcheck_run("--version")
    assert (p.returncode, p.stdout, p.stderr) == (0, f"tpcheck, version {tpcheck.__version__}\n",
                                                  "")


def test_version_builds_no_parser_and_imports_no_command() -> None:
    code = ("import sys\nbefore = set(sys.modules)\n"
            "from tpcheck.cli import main\nrc = main(['--version'])\n"
            "print(rc, sorted(set(sys.modules) - before))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60, check=True)
    rc, _, listed = p.stdout.splitlines()[-1].partition(" ")
    new = set(ast.literal_eval(listed))
    assert rc == "0"
    # the package (with its errors) and its CLI module, and only small stdlib pieces: no
    # click (answered before the group is built), no command
    assert {m for m in new if m.split(".")[0] not in sys.stdlib_module_names} == {
        "tpcheck", "tpcheck.cli"}
    assert not new & {"click", "argparse", "typing", "re", "enum"}, new


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str],
                                            flag: str) -> None:
    code, out, err = run(capsys, flag)
    assert (code, err) == (0, "")
    assert out.startswith("Usage: tpcheck [OPTIONS] PATH...\n       tpcheck COMMAND")
    lines = out.splitlines()
    listed = [ln.split()[0] for ln in lines[lines.index("Commands:") + 1:]
              if ln.startswith("  ") and not ln.startswith("   ")]
    assert listed[:9] == ["check", "inspect", "plan", "rules", "explain", "lsp", "models",
                          "allreduce", "diff"] == list(
        COMMANDS)
    flat = " ".join(out.split())  # click wraps help to the terminal width
    for name, (_, summary) in COMMANDS.items():
        assert f"  {name}" in out and summary in flat
    assert "tpcheck PATH...            lint manifests" in out  # the shortcut is documented
    assert "Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 usage or input error" in flat
    assert "--version" in out and "--debug" in out


def test_top_level_help_imports_no_command_module() -> None:
    code = ("import sys, io, contextlib\nfrom tpcheck.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    rc = main(['--help'])\n"
            "print(rc, sorted(m for m in sys.modules if m.startswith('tpcheck.commands.')"
            " and m != 'tpcheck.commands.base'))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60, check=True)
    assert p.stdout.splitlines()[-1] == "0 []"


def test_check_help_shows_options_defaults_ranges(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "--help")
    assert (code, err) == (0, "")
    assert out.startswith("Usage: tpcheck check [OPTIONS] PATHS...\n")
    assert "Lint vLLM / SGLang deployments in PATHS" in out
    assert "Exit 0: nothing at or above --fail-on; 1: findings; 2: usage or input error." in out
    for opt in ("--format [text|json|sarif|github|markdown]", "--select CODES", "--ignore CODES",
                "--fail-on [error|warning|info]", "--gpu NAME", "--context TOKENS",
                "--topology FILE", "--model-config PATH", "--offline", "--engine-version",
                "--config FILE", "--stdin-filename NAME", "--report-unused-ignores",
                "--statistics", "-q, --quiet", "--color / --no-color", "-h, --help"):
        assert opt in out, opt
    assert "Output format (default: text)." in out
    assert "Tokens per sequence for capacity. [x>=1]" in out
    # `tpcheck --offline --help`: options first still mean the default command
    code, out2, _ = run(capsys, "--offline", "--help")
    assert (code, out2) == (0, out)


def test_plan_help_shows_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "-h")
    assert (code, err) == (0, "")
    assert out.startswith("Usage: tpcheck plan [OPTIONS] MODEL\n")
    flat = " ".join(out.split())  # click wraps help to the terminal width
    assert "--gpu-memory-utilization, --mem-fraction-static FRACTION" in flat
    assert "Fraction of GPU memory the engine may use (default: the engine version's). " \
           "[0<x<=1]" in flat
    for opt in ("--engine [vllm|sglang]", "--tp SIZES", "--pp N", "--dp N", "--attn-dp N",
                "--max-num-seqs N", "--max-num-batched-tokens N", "--reserve SIZE",
                "--context TOKENS", "--kv-cache-dtype DTYPE", "--quantization METHOD",
                "--dtype DTYPE", "--set KEY=VALUE", "--batch N", "--alpha SECONDS",
                "--link CLASS", "--nodes N", "--gpus-per-node G", "--network SPEC", "--offline",
                "--format [text|json|markdown]",
                "--enable-expert-parallel", "--gpus N", "--goal [throughput|latency]"):
        assert opt in flat, opt
    assert "Pipeline-parallel size (default: 1). [1<=x<=1024]" in flat
    assert "Decode batch for the step model (default: 1). [x>=1]" in flat
    assert "Fixed all-reduce cost in seconds (default: the collective model's). [0<=x<=1.0]" in flat


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_registered_command_has_help(capsys: pytest.CaptureFixture[str],
                                           name: str) -> None:
    code, out, err = run(capsys, name, "--help")
    assert (code, err) == (0, "")
    assert out.startswith(f"Usage: tpcheck {name} [OPTIONS]")
    assert "-h, --help" in out


# ---- shell completion (click's, through _TPCHECK_COMPLETE) ------------------------------------

def test_completion_script_for_bash() -> None:
    p = tpcheck_run(env={"_TPCHECK_COMPLETE": "bash_source"})
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.startswith("_tpcheck_completion() {")
    assert "_TPCHECK_COMPLETE=bash_complete" in p.stdout
    assert "-F _tpcheck_completion tpcheck" in p.stdout


@pytest.mark.parametrize(("words", "expected"), [
    ("tpcheck pl", ["plan"]),  # command names, from the registry
    ("tpcheck --gpu h100-s", ["h100-sxm"]),  # the default command's --gpu: the GPU catalog
    ("tpcheck plan M --gpu h100-s", ["h100-sxm"]),
    ("tpcheck explain tp10", ["TP101", "TP102", "TP103", "TP104"]),  # rule codes, any case
])
def test_completion_of_words(words: str, expected: list[str]) -> None:
    env = {"_TPCHECK_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - 1)}
    p = tpcheck_run(env=env)
    assert (p.returncode, p.stderr) == (0, "")
    assert [line.split(",", 1)[1] for line in p.stdout.splitlines()] == expected


# ---- usage errors: one line, exit 2 -----------------------------------------------------------

def test_unknown_option_is_one_line_exit_2() -> None:
    p = tpcheck_run("--no-such-flag", QWEN_TP16)
    assert (p.returncode, p.stdout) == (2, "")
    assert one_usage_error(p.stderr, "check") == "no such option: --no-such-flag"


@pytest.mark.parametrize("fmt", [["--format", "github"], ["--format=github"]])
def test_usage_errors_under_format_github_are_also_annotations(
        capsys: pytest.CaptureFixture[str], fmt: list[str]) -> None:
    # the checks view of a pull request shows annotations, not the step's stderr
    code, out, err = run(capsys, *fmt, "--gpu", "nope", QWEN_TP16)
    assert code == 2
    (line,) = out.splitlines()
    assert line.startswith("::error title=tpcheck usage error::tpcheck: error: --gpu: unknown "
                           "GPU 'nope'")
    assert "%3A" not in line.split("::", 2)[2]  # data escapes only %, CR, LF
    assert one_usage_error(err, "check").startswith("--gpu: unknown GPU 'nope'")
    # the last --format wins, as click reads it: no annotation for json
    code, out, _ = run(capsys, *fmt, "--format", "json", "--gpu", "nope", QWEN_TP16)
    assert (code, out) == (2, "")


def test_unknown_option_suggests_and_long_options_are_never_abbreviated(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *LINT, "--cont", "4096", QWEN_TP16)
    assert (code, out) == (2, "")
    msg = one_usage_error(err, "check")
    assert msg.startswith("no such option: --cont (did you mean --context")
    # `--form` is a prefix of only --format, and still not taken for it
    code, _, err = run(capsys, *LINT, "--form", "json", QWEN_TP16)
    assert code == 2 and one_usage_error(err, "check").startswith("no such option: --form")
    code, _, err = run(capsys, "plan", "Qwen/Qwen3-32B", "--gpu-mem", "0.9")
    assert code == 2 and one_usage_error(err, "plan").startswith("no such option: --gpu-mem")


@pytest.mark.parametrize(("value", "message"), [
    ("0", "argument --context: 0 is not in the range x>=1"),
    ("-1", "argument --context: -1 is not in the range x>=1"),
    ("abc", "argument --context: 'abc' is not a whole number"),
    ("", "argument --context: '' is not a whole number"),
])
def test_context_must_be_a_positive_whole_number(capsys: pytest.CaptureFixture[str],
                                                 value: str, message: str) -> None:
    code, out, err = run(capsys, *LINT, "--context", value, QWEN_TP16)
    assert (code, out) == (2, "")
    assert one_usage_error(err, "check") == message


def test_context_zero_subprocess() -> None:
    p = tpcheck_run("--context", "0", QWEN_TP16)
    assert (p.returncode, p.stdout) == (2, "")
    assert one_usage_error(p.stderr, "check") == "argument --context: 0 is not in the range x>=1"


@pytest.mark.parametrize(("flag", "value"), [
    ("--gpu-memory-utilization", "0"), ("--gpu-memory-utilization", "1.5"),
    ("--mem-fraction-static", "0"), ("--gpu-memory-utilization", "-0.1"),
    ("--gpu-memory-utilization", "nan"), ("--gpu-memory-utilization", "x"),
])
def test_plan_utilization_is_in_0_exclusive_to_1(capsys: pytest.CaptureFixture[str], flag: str,
                                                 value: str) -> None:
    code, out, err = run(capsys, "plan", "Qwen/Qwen3-32B", "--offline", flag, value)
    assert (code, out) == (2, "")
    msg = one_usage_error(err, "plan")
    assert msg.startswith("argument --gpu-memory-utilization/--mem-fraction-static: ")
    assert msg.endswith(("is not in the range 0<x<=1", "'x' is not a number"))


def test_plan_utilization_bounds_subprocess() -> None:
    for value, shown in (("0", "0.0"), ("1.5", "1.5")):
        p = tpcheck_run("plan", "Qwen/Qwen3-32B", "--offline", "--gpu-memory-utilization", value)
        assert (p.returncode, p.stdout) == (2, "")
        assert one_usage_error(p.stderr, "plan") == (
            f"argument --gpu-memory-utilization/--mem-fraction-static: {shown} is not in the "
            "range 0<x<=1")


def test_plan_utilization_upper_bound_is_allowed_and_used(
        capsys: pytest.CaptureFixture[str]) -> None:
    # u = 1 is inside (0, 1]; the pool grows with u, so 1.0 holds more than 0.5.
    pools = {}
    for flag, u in (("--gpu-memory-utilization", "1"), ("--mem-fraction-static", "0.5")):
        code, out, err = run(capsys, "plan", "Qwen/Qwen3-32B", "--offline", "--gpu",
                             "h100-sxm", "--tp", "8", "--format", "json", flag, u)
        assert code == 0, err
        pools[u] = json.loads(out)["rows"][0]["pool_bytes_per_gpu"]
    assert pools["1"] > pools["0.5"] > 0


@pytest.mark.parametrize(("args", "command", "message"), [
    (["plan", "M", "--pp", "0"], "plan", "argument --pp: 0 is not in the range 1<=x<=1024"),
    (["plan", "M", "--dp", "1025"], "plan",
     "argument --dp: 1025 is not in the range 1<=x<=1024"),
    (["plan", "M", "--batch", "0"], "plan", "argument --batch: 0 is not in the range x>=1"),
    (["plan", "M", "--alpha", "-1"], "plan",
     "argument --alpha: -1.0 is not in the range 0<=x<=1.0"),
    (["plan", "M", "--max-num-seqs", "0"], "plan",
     "argument --max-num-seqs: 0 is not in the range x>=1"),
    (["lsp", "--debounce-ms", "5001"], "lsp",
     "argument --debounce-ms: 5001 is not in the range 0<=x<=5000"),
    (["plan"], "plan", "the following arguments are required: MODEL"),
    (["plan", "a", "b"], "plan", "unexpected extra argument: b"),
    (["explain"], "explain", "the following arguments are required: CODE"),
    (["rules", "extra"], "rules", "unexpected extra argument: extra"),
    (["plan", "--", "a", "b"], "plan", "unexpected extra argument: b"),
    (["rules", "--", "-x"], "rules", "unexpected extra argument: -x"),
    (["--offline", "-odd.yaml"], "check", "no such option: -odd.yaml"),
    (["check"], "check", "the following arguments are required: PATHS"),
    (["-q"], "check", "the following arguments are required: PATHS"),
    (["--gpu"], "check", "argument --gpu: expected one argument"),
    (["--offline=yes", QWEN_TP16], "check",
     "argument --offline: ignored explicit argument 'yes'"),
    (["--topology", "fixtures", QWEN_TP16], "check",
     "argument --topology: 'fixtures' is a directory, not a file"),
    (["--config", "fixtures", QWEN_TP16], "check",
     "argument --config: 'fixtures' is a directory, not a file"),
])
def test_usage_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                      args: list[str], command: str, message: str) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = run(capsys, *args)
    assert (code, out) == (2, "")
    assert one_usage_error(err, command) == message


@pytest.mark.parametrize(("args", "choices"), [
    (["--format", "xml", QWEN_TP16], "'text', 'json', 'sarif', 'github'"),
    (["--fail-on", "bogus", QWEN_TP16], "'error', 'warning', 'info'"),
    (["inspect", "--format", "yaml", QWEN_TP16], "'text', 'json'"),
    (["plan", "M", "--engine", "tgi"], "'vllm', 'sglang'"),
    (["plan", "M", "--format", "csv"], "'text', 'json'"),
])
def test_bad_choice_names_the_choices(capsys: pytest.CaptureFixture[str], args: list[str],
                                      choices: str) -> None:
    code, out, err = run(capsys, *args)
    assert (code, out) == (2, "")
    command = args[0] if args[0] in COMMANDS else "check"
    msg = one_usage_error(err, command).replace("'", "")  # newer Pythons drop the quotes
    assert "invalid choice" in msg and choices.replace("'", "") in msg


def test_bad_format_subprocess() -> None:
    p = tpcheck_run("--format", "xml", QWEN_TP16)
    assert (p.returncode, p.stdout) == (2, "")
    assert one_usage_error(p.stderr, "check").replace("'", "") == (
        "argument --format: invalid choice: xml (choose from text, json, sarif, github, "
        "markdown)")


def test_command_raised_usage_errors_keep_the_hint(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "Qwen/Qwen3-32B", "--offline", "--gpu", "h900")
    assert code == 2
    assert one_usage_error(err, "plan").startswith("argument --gpu: unknown GPU 'h900'; known: ")
    code, _, err = run(capsys, "plan", "Qwen/Qwen3-32B", "--offline", "--set", "foo")
    assert one_usage_error(err, "plan") == "argument --set: expected key=value, got 'foo'"
    code, _, err = run(capsys, "plan", "Qwen/Qwen3-32B", "--offline", "--tp", "0")
    assert one_usage_error(err, "plan") == "argument --tp: 0 is out of range 1..4096"
    code, _, err = run(capsys, "--offline", "--select", "TP999", QWEN_TP16)
    assert code == 2 and one_usage_error(err, "check").startswith("unknown rule code 'TP999'")
    code, _, err = run(capsys, "explain", "TP999")
    assert code == 2 and one_usage_error(err, "explain").startswith("unknown rule code 'TP999'")


def test_command_error_has_no_help_hint(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "no-such/model", "--offline")
    assert (code, out) == (2, "")
    assert err.startswith("tpcheck: error: ") and err.count("\n") == 1
    assert "--help" not in err and "no-such/model" in err


def test_no_arguments_at_all(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert (code, out) == (2, "")
    assert one_usage_error(err, None) == "no PATH or COMMAND given"


# ---- the default command, argument order, stdin, -- ---------------------------------------

def test_options_after_the_path() -> None:
    after = tpcheck_run(QWEN_TP16, "--gpu", "h100-sxm", "--offline")
    before = tpcheck_run("--offline", "--gpu", "h100-sxm", QWEN_TP16)
    assert after.returncode == 1, after.stderr
    assert f"{QWEN_TP16}:19:16: TP201 [*] [warning]" in after.stdout
    assert (after.stdout, after.stderr) == (before.stdout, before.stderr)
    checked = tpcheck_run("check", QWEN_TP16, "--offline", "--gpu", "h100-sxm")
    assert (checked.returncode, checked.stdout) == (1, after.stdout)


def test_options_between_paths(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, QWEN_TP16, "--offline", "--format", "json",
                       "fixtures/lint/llama70b-tp6.sh", "--gpu", "h100-sxm")
    assert code == 1
    paths = {f["path"] for f in json.loads(out)["findings"]}
    assert paths == {QWEN_TP16, "fixtures/lint/llama70b-tp6.sh"}


def test_stdin_with_stdin_filename() -> None:
    launch = "args: [vllm, serve, Qwen/Qwen3-32B, --tensor-parallel-size, '16']\n"
    p = tpcheck_run(*LINT, "--stdin-filename", "x.yaml", "-", stdin=launch)
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith("x.yaml:1:")
    assert " TP201 [*] [warning] TP 16 > 8 KV heads: " in p.stdout.splitlines()[0]
    # the same with the options after -
    q = tpcheck_run("-", *LINT, "--stdin-filename", "x.yaml", stdin=launch)
    assert (q.returncode, q.stdout) == (1, p.stdout)


def test_unknown_command_word_is_a_path() -> None:
    p = tpcheck_run("nosuchcmd")
    assert (p.returncode, p.stdout) == (2, "0 findings in 0 deployments (1 file read)\n")
    assert p.stderr == "tpcheck: nosuchcmd:1:1: cannot read: No such file or directory\n"


def test_double_dash_makes_every_later_word_a_path(tmp_path: Path) -> None:
    # llama70b-tp6: t = 6 does not divide 64 heads → TP101 at the `6`
    (tmp_path / "-odd.sh").write_text(
        "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6\n")
    p = tpcheck_run("--offline", "--", "-odd.sh", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith("-odd.sh:1:69: TP101 [*] [error]")
    # after --, `--gpu` is a file name too, not the option
    q = tpcheck_run("--offline", "--", "-odd.sh", "--gpu", cwd=tmp_path)
    assert q.returncode == 2
    assert q.stderr == "tpcheck: --gpu:1:1: cannot read: No such file or directory\n"
    assert q.stdout.startswith("-odd.sh:1:69: TP101 [*] [error]")
    # without --, a word starting with - other than - itself is an option
    r = tpcheck_run("--offline", "-odd.sh", cwd=tmp_path)
    assert r.returncode == 2 and one_usage_error(r.stderr, "check").startswith("no such option")


def test_repeatable_set(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "Qwen/Qwen3-32B", "--offline", "--tp", "16",
                         "--format", "json", "--set", "num_key_value_heads=16",
                         "--set", "head_dim=64")
    assert code == 0, err
    [row] = json.loads(out)["rows"]
    # both overrides applied: 2·L·max(1, 16/16)·d_h·b = 2·64·1·64·2 B (one alone gives 32768)
    assert row["kv_heads_per_gpu"] == 1
    assert row["kv_bytes_per_token_per_gpu"] == 2 * 64 * 1 * 64 * 2


def test_color_flags_are_tri_state() -> None:
    plain = tpcheck_run(*LINT, QWEN_TP16)  # piped and no flag: no colour
    forced = tpcheck_run(*LINT, "--color", QWEN_TP16, env={"NO_COLOR": "1"})
    off = tpcheck_run(*LINT, "--no-color", QWEN_TP16)
    assert plain.returncode == forced.returncode == off.returncode == 1
    assert "\x1b[" not in plain.stdout and off.stdout == plain.stdout
    assert "\x1b[" in forced.stdout
    assert re.sub(r"\x1b\[[0-9;]*m", "", forced.stdout) == plain.stdout


# ---- what a run imports -------------------------------------------------------------------------

def test_lint_imports_no_other_command_and_no_third_party_cli() -> None:
    """A one-file YAML lint loads the lint command and PyYAML; no other command, no hub client,
    no libcst or pygls, and nothing third-party besides PyYAML and click (issue 15: the CLI is
    on click, measured +18 ms)."""
    code = (
        "import sys, io, contextlib\nbefore = set(sys.modules)\nfrom tpcheck.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['--offline', '--gpu', 'h100-sxm', '-q', {QWEN_TP16!r}])\n"
        "new = set(sys.modules) - before\n"
        "print(rc, sorted(m for m in new if m.startswith('tpcheck.commands.')))\n"
        "tops = {m.split('.')[0] for m in new} - set(sys.stdlib_module_names)\n"
        "print(sorted(m for m in tops if 'cython' not in m))\n")  # PyYAML's C extension's own
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60, check=False)
    lines = p.stdout.splitlines()
    assert lines[0] == "1 ['tpcheck.commands.base', 'tpcheck.commands.lint']", p.stderr
    assert set(ast.literal_eval(lines[1])) <= {"tpcheck", "yaml", "_yaml", "click"}, lines[1]


def test_a_shell_lint_loads_no_yaml_reader(tmp_path: Path) -> None:
    """A shell file needs neither PyYAML nor the kustomize reader: TP000 reads the lone-patch
    note from sources.base, which is where the note lives for that reason."""
    script = tmp_path / "run.sh"
    script.write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n", encoding="utf-8")
    code = (
        "import sys, io, contextlib\nfrom tpcheck.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['--offline', '--gpu', 'h100-sxm', '-q', {str(script)!r}])\n"
        "print(rc, sorted(m for m in ('yaml', 'tpcheck.sources.kustomize') if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60, check=False)
    assert p.stdout == "1 []\n", p.stderr  # TP201 (a warning) at t = 16 > h_kv = 8: exit 1


def test_plan_imports_only_plan() -> None:
    code = (
        "import sys, io, contextlib\nfrom tpcheck.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['plan', 'Qwen/Qwen3-32B', '--offline', '--tp', '8'])\n"
        "print(rc, sorted(m for m in sys.modules if m.startswith('tpcheck.commands.')))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60, check=False)
    # plan_rows: the plan command's own rows (issue 29's split of plan.py), no other command
    assert p.stdout == ("0 ['tpcheck.commands._model', 'tpcheck.commands.base', "
                        "'tpcheck.commands.plan', 'tpcheck.commands.plan_rows']\n"), p.stderr


# ---- internal errors, --debug, interrupts, closed pipes -----------------------------------------

def _crash(exc: BaseException) -> Callable[[object], int]:
    def run(args: object) -> int:
        raise exc
    return run


def test_internal_error_is_one_line(capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import tpcheck.commands.rules as rules

    monkeypatch.delenv("TPCHECK_DEBUG", raising=False)
    monkeypatch.setattr(rules, "run", _crash(RuntimeError("boom")))
    code, out, err = run(capsys, "rules")
    assert (code, out) == (2, "")
    assert err == ("tpcheck: internal error: RuntimeError: boom "
                   "(rerun with --debug for a traceback)\n")
    with pytest.raises(RuntimeError, match="boom"):
        main(["rules", "--debug"])
    monkeypatch.setenv("TPCHECK_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main(["rules"])


@pytest.mark.parametrize(("exc", "status"), [(KeyboardInterrupt(), 130),
                                             (BrokenPipeError(), 0)])
def test_interrupt_and_broken_pipe_codes(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch,
                                         exc: BaseException, status: int) -> None:
    import tpcheck.commands.rules as rules

    monkeypatch.setattr(rules, "run", _crash(exc))
    code, out, err = run(capsys, "rules")
    assert (code, out, err) == (status, "", "")


def test_closed_stdout_ends_quietly() -> None:
    """A reader that went away (`tpcheck explain TP201 | head -0`): exit 0, nothing on stderr."""
    p = subprocess.Popen([sys.executable, "-m", "tpcheck", "explain", "TP201"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # closed before the child has started writing
    assert p.wait(timeout=60) == 0
    assert p.stderr.read() == b""
    p.stderr.close()


def test_usage_error_class_formats_the_option() -> None:
    assert str(cli.UsageError("bad", "--gpu")) == "argument --gpu: bad"
    assert str(cli.UsageError("bad")) == "bad"


def test_debug_after_double_dash_is_a_file_name(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--offline", "--", "--debug")
    assert (code, out) == (2, "0 findings in 0 deployments (1 file read)\n")
    assert err == "tpcheck: --debug:1:1: cannot read: No such file or directory\n"


def test_double_dash_before_a_single_positional(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "--", "tp201")
    assert code == 0, err
    assert out.startswith("# TP201 kv-head-cliff\n")


def test_gc_is_tuned_only_when_the_process_is_ours(capsys: pytest.CaptureFixture[str]) -> None:
    import gc

    fixture = str(ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml")
    before = gc.get_threshold()
    assert main([*LINT, "-q", fixture]) == 1  # embedded (argv given): the caller's GC is kept
    assert gc.get_threshold() == before
    capsys.readouterr()
    # The console script's way in, main() reading sys.argv: young generation every 10,000.
    probe = ("import gc, sys, contextlib, io; from tpcheck.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    code = main()\n"
             "print(code, gc.get_threshold(), gc.get_freeze_count() > 0)")
    out = subprocess.run([sys.executable, "-c", probe, *LINT, "-q", fixture],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "1 (10000, 10, 10) True"


def test_a_model_config_that_does_not_exist_is_a_usage_error(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    # a TP000 warning and exit 0 before: --fail-on error then passed a file with three errors
    missing = tmp_path / "nothere.json"
    code, out, err = run(capsys, *LINT, "--fail-on", "error", "--model-config", str(missing),
                         "fixtures/lint/llama70b-tp6.sh")
    assert (code, out) == (2, "")
    assert one_usage_error(err, "check") == (
        f"argument --model-config: Path '{missing}' does not exist.")


def test_a_file_named_twice_or_inside_a_folder_named_too_is_checked_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    # llama70b-tp6.sh has three findings (TP101-TP103 at TP 6); named three ways and inside
    # its folder, still three
    tp6 = "fixtures/lint/llama70b-tp6.sh"
    code, out, _ = run(capsys, *LINT, "--output-format", "concise", tp6, tp6, "./" + tp6,
                       "fixtures/lint")
    assert code == 1
    assert [ln.split()[1] for ln in out.splitlines() if ln.startswith(tp6)] == [
        "TP101", "TP102", "TP103"]


CONSOLE_PROBE = """
import sys
from tpcheck.cli import console
sys.argv = ['tpcheck', *sys.argv[1:]]
{before}
sys.exit(console())
"""


def test_the_console_script_ends_with_mains_code_and_its_whole_report() -> None:
    # console() skips the interpreter's tear-down: stdout (a pipe, block-buffered) is flushed
    # first, and the exit status is main()'s
    fixture = str(ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml")
    probe = CONSOLE_PROBE.format(before="")
    fast = subprocess.run([sys.executable, "-c", probe, *LINT, fixture],
                          capture_output=True, text=True, check=False)
    code, out, err = _main_output(fixture)
    assert (fast.returncode, fast.stdout, fast.stderr) == (code, out, err) == (1, out, "")
    assert out.count("TP201") == 1


def _main_output(fixture: str) -> tuple[int, str, str]:
    probe = "import sys\nfrom tpcheck.cli import main\nsys.exit(main())"
    p = subprocess.run([sys.executable, "-c", probe, *LINT, fixture],
                       capture_output=True, text=True, check=False)
    return p.returncode, p.stdout, p.stderr


def test_the_console_script_runs_exit_handlers_and_reports_a_failed_flush() -> None:
    # an exit handler (atexit imported) keeps Python's own exit, so the handler runs; so does
    # a report that cannot be flushed (> /dev/full), which says so as it always did
    fixture = str(ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml")
    probe = CONSOLE_PROBE.format(before="import atexit\natexit.register(print, 'handler ran')")
    p = subprocess.run([sys.executable, "-c", probe, *LINT, "-q", fixture],
                       capture_output=True, text=True, check=False)
    assert (p.returncode, p.stdout.splitlines()[-1]) == (1, "handler ran")
    if not Path("/dev/full").exists():
        return
    probe = CONSOLE_PROBE.format(before="")
    with open("/dev/full", "w") as full:
        fast = subprocess.run([sys.executable, "-c", probe, *LINT, "-q", fixture], stdout=full,
                              stderr=subprocess.PIPE, text=True, check=False)
    with open("/dev/full", "w") as full:
        plain = subprocess.run([sys.executable, "-c", "import sys\nfrom tpcheck.cli import main"
                                "\nsys.exit(main())", *LINT, "-q", fixture], stdout=full,
                               stderr=subprocess.PIPE, text=True, check=False)
    assert (fast.returncode, fast.stderr) == (plain.returncode, plain.stderr)
    assert fast.returncode != 0
