"""Hostile input, limits and the never-do list (issue 8).

Every hostile file is read in a fresh interpreter so its time and peak memory are its own:
``resource.getrusage`` gives the peak RSS (kilobytes on Linux) before and after the read. The
bounds: one second of reading (these inputs take 0.02-0.3 s here; the bound leaves room for a
loaded CI box), and 64 MiB of peak RSS over the interpreter with tpcheck imported — 32× the
2-MB inputs, and far below what a per-character position list (≈70 bytes × 2 M characters ≈
140 MB) or an expanded alias bomb (9⁹ ≈ 387 M nodes) would need.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.shared import said

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tpcheck"
GOOD = ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml"  # t = 16 > h_kv = 8: TP201
MAX_SECONDS = 1.0
MAX_RSS_GROWTH_KB = 64 * 1024

LAUNCH = '["vllm", "serve", "Qwen/Qwen3-32B", "--tensor-parallel-size", "2"]'


def _bomb(levels: int = 9) -> str:
    """Billion laughs: each anchor lists the previous one nine times (9**9 leaves if expanded)."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _bomb_in_pod() -> str:
    """An alias bomb hung under a real container: the launch must still be found, once."""
    head = textwrap.dedent(f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: x}}
        spec:
          containers:
          - name: vllm
            image: vllm/vllm-openai:v0.10.0
            command: {LAUNCH}
            env: &e0
            - {{name: A, value: vllm}}
        """)
    body = "".join(
        f"    x{i}: &e{i} [" + ", ".join([f"*e{i - 1}"] * 9) + "]\n" for i in range(1, 12)
    )
    return head + body


HOSTILE: dict[str, tuple[bytes, str]] = {
    # name: (content, expected) — "skip": no error, no deployment; "error": exactly one error;
    # "launch": one deployment and no error; "limit": one deployment and the one line saying
    # a limit was reached (issue 28: expansion past the limits is said, not silent)
    "billion-laughs.yaml": (_bomb().encode(), "skip"),
    # issue 14 item 5: 28 doublings of a 10-byte value (10 × 2**28 bytes = 2.7 GB if expanded;
    # it took 6.3 GB and 40 s before expansion was bounded)
    "doubling.sh": (("A=xxxxxxxxxx\n" + 'A="$A$A"\n' * 28
                     + "vllm serve m --tensor-parallel-size 2\n").encode(), "limit"),
    "doubling-used.sh": (("A=xxxxxxxxxx\n" + 'A="$A$A"\n' * 28
                          + "vllm serve m --tensor-parallel-size 2 --served-model-name $A\n")
                         .encode(), "limit"),
    "bomb-in-pod.yaml": (_bomb_in_pod().encode(), "launch"),
    "deep-flow-seq.yaml": (("[" * 50_000 + "]" * 50_000 + "\n").encode(), "error"),
    "deep-flow-map.yaml": (("{a: " * 50_000 + "1" + "}" * 50_000 + "\n").encode(), "error"),
    "deep-block-seq.yaml": (("- " * 50_000 + "vllm\n").encode(), "error"),
    "long-line-sh-c.yaml": (
        ('command: ["sh", "-c", "vllm serve m --tensor-parallel-size 2 '
         + "x " * 1_000_000 + '"]\n').encode(),
        "launch",
    ),
    "long-line-comments.yaml": (("a: " + " #" * 1_000_000 + "'\n").encode(), "skip"),
    "long-line.sh": (
        ("vllm serve m --tensor-parallel-size 2 " + "--x=$A " * 300_000 + "\n").encode(),
        "launch",
    ),
    "unterminated-quote.sh": (("vllm serve m '" + "a " * 1_000_000).encode(), "launch"),
    "binary.yaml": (random.Random(8).randbytes(4096), "error"),
    "control-chars.yaml": (b"a: \x00\x01\x02 vllm serve\n", "error"),
    "invalid-utf8.yaml": (b"a: \xff\xfe vllm serve m\n", "error"),
    "empty.yaml": (b"", "skip"),
    "empty.sh": (b"", "skip"),
    "empty.py": (b"", "skip"),
    "conflict.yaml": (
        textwrap.dedent("""\
            apiVersion: v1
            kind: Pod
            spec:
              containers:
              - name: x
            <<<<<<< HEAD
                command: ["vllm", "serve", "m", "--tensor-parallel-size", "4"]
            =======
                command: ["vllm", "serve", "m", "--tensor-parallel-size", "8"]
            >>>>>>> other
            """).encode(),
        "error",
    ),
    "deep-parens.py": (
        ("from vllm import LLM\nLLM(model='m', tensor_parallel_size="
         + "(" * 50_000 + "1" + ")" * 50_000 + ")\n").encode(),
        "error",
    ),
    "deep-chain.py": (("from vllm import LLM\nx = " + "+".join(["1"] * 3000) + "\n").encode(),
                      "error"),
    # issue 28 item 2: 3,500 `--a` terms then an open bracket (10.5 KB): libcst's parser took
    # 35-80 s to refuse it; the interpreter's own compile() refuses it first, in milliseconds
    "unary-chain.py": (("from vllm import LLM\nx = " + "--a" * 3500 + "\ny = (\n").encode(),
                       "error"),
    "huge-int.py": (
        ("from vllm import LLM\nLLM(model='m', tensor_parallel_size=1" + "0" * 5000 + ")\n")
        .encode(),
        "launch",
    ),
}

_MEASURE = """
import json, resource, sys, time
from tpcheck.sources import read_path
import yaml, tpcheck.sources.yamlfile, tpcheck.sources.shell  # imports are not the input's cost
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
rr = read_path(sys.argv[1])
dt = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": dt, "rss_growth_kb": after - before,
                  "deployments": len(rr.deployments), "errors": [str(e) for e in rr.errors]}))
"""


def _measure(path: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True,
                          text=True, timeout=60, cwd=path.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, object] = json.loads(proc.stdout)
    return out


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    for name, (content, _) in HOSTILE.items():
        (d / name).write_bytes(content)
    return d


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_is_one_error_or_a_clean_skip_fast_and_small(
    hostile_dir: Path, name: str
) -> None:
    expected = HOSTILE[name][1]
    m = _measure(hostile_dir / name)
    errors = m["errors"]
    assert isinstance(errors, list)
    assert float(m["seconds"]) < MAX_SECONDS, m  # type: ignore[arg-type]
    assert int(m["rss_growth_kb"]) < MAX_RSS_GROWTH_KB, m  # type: ignore[call-overload]
    for e in errors:
        assert "\n" not in e and e.startswith(str(hostile_dir / name) + ":"), e
    if expected == "skip":
        assert errors == [] and m["deployments"] == 0, m
    elif expected == "error":
        assert len(errors) == 1, m
    elif expected == "limit":
        assert m["deployments"] == 1 and len(errors) == 1 and "limits" in errors[0], m
    else:
        assert errors == [] and m["deployments"] == 1, m


def _cli(args: list[str], cwd: Path, env: dict[str, str] | None = None,
         pre: str = "") -> subprocess.CompletedProcess[str]:
    code = pre + "\nimport sys\nfrom tpcheck.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    full_env = {**os.environ, **(env or {})}
    full_env.pop("TPCHECK_DEBUG", None)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=full_env)


def test_one_run_over_every_hostile_file_still_checks_the_good_one(
    hostile_dir: Path, tmp_path: Path
) -> None:
    """All hostile files and one good manifest in one run: no traceback, one stderr line per
    bad file at most, exit 2 (there were input errors), and the good file's finding printed."""
    good = tmp_path / "good.yaml"
    good.write_text(GOOD.read_text(encoding="utf-8"), encoding="utf-8")
    files = [str(hostile_dir / n) for n in sorted(HOSTILE)] + [str(good)]
    proc = _cli(["--gpu", "h100-sxm", "--offline", *files], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    n_errors = sum(1 for v in HOSTILE.values() if v[1] in ("error", "limit"))
    assert len(lines) == n_errors, proc.stderr
    for name in HOSTILE:
        assert sum(f"{name}:" in ln for ln in lines) <= 1
    # qwen3-32b-tp16.yaml: Qwen3-32B has 8 KV heads, so t = 16 replicates each KV head (TP201)
    assert f"{good}:" in proc.stdout and "TP201" in proc.stdout, proc.stdout[-3000:]


def test_files_over_the_size_limit_are_skipped_with_a_message(tmp_path: Path) -> None:
    """Default 5 MiB (5 * 1024 * 1024 bytes); [tool.tpcheck] max-file-size lowers it."""
    from tpcheck.sources import MAX_BYTES, read_path

    assert MAX_BYTES == 5 * 1024 * 1024
    big = tmp_path / "big.yaml"
    line = "# " + "x" * 98 + "\n"  # 101 bytes
    big.write_text(line * (MAX_BYTES // len(line) + 1), encoding="utf-8")
    size = big.stat().st_size
    assert size > MAX_BYTES
    rr = read_path(str(big))
    assert [str(e) for e in rr.errors] == [
        f"{big}:1:1: file is {size} bytes, over the {MAX_BYTES}-byte limit; skipped"
    ]
    # configured lower: a 1,000-byte limit skips a 2,000-byte manifest, the small file is read
    (tmp_path / ".tpcheck.toml").write_text("max-file-size = 1000\n", encoding="utf-8")
    big.unlink()
    medium = tmp_path / "medium.yaml"
    medium.write_text(GOOD.read_text(encoding="utf-8") + "#" * 2000 + "\n", encoding="utf-8")
    small = tmp_path / "small.sh"
    small.write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n", encoding="utf-8")
    proc = _cli(["--gpu", "h100-sxm", "--offline", str(medium), str(small)], cwd=tmp_path)
    assert proc.returncode == 2
    assert "over the 1000-byte limit; skipped" in proc.stderr
    assert f"{small}:1:" in proc.stdout and "TP201" in proc.stdout



@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_that_never_ends_is_skipped_unread() -> None:
    # /dev/zero stats as 0 bytes and never ends: only regular files are read (issue 14 item 6).
    from tpcheck.sources import read_path

    rr = read_path("/dev/zero", max_bytes=1000)
    assert [str(e) for e in rr.errors] == [
        "/dev/zero:1:1: not a regular file (a character device); skipped"]


def test_a_file_read_whole_when_it_is_exactly_the_limit(tmp_path: Path) -> None:
    from tpcheck.sources import read_path

    text = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n"  # 52 bytes
    f = tmp_path / "exact.sh"
    f.write_text(text, encoding="utf-8")
    rr = read_path(str(f), max_bytes=len(text))
    assert rr.errors == () and rr.text == text
    assert [d.tensor_parallel_size for d in rr.deployments] == [16]

# ---- never-do list --------------------------------------------------------------------------

def _package_sources() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def test_no_unsafe_yaml_eval_exec_or_dynamic_import_in_the_package() -> None:
    """Scan tpcheck's own AST: no eval/exec/compile/__import__, no yaml.load family without a
    safe loader, no unsafe_load, no trust_remote_code=True; import_module only in the CLI's
    command registry (names from the COMMANDS literal)."""
    problems: list[str] = []
    for path in _package_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            bare = fn.id if isinstance(fn, ast.Name) else ""
            attr = fn.attr if isinstance(fn, ast.Attribute) else ""
            owner = fn.value.id if isinstance(fn, ast.Attribute) and isinstance(
                fn.value, ast.Name) else ""
            name = bare or attr
            if bare in ("eval", "exec", "compile", "__import__") or attr in (
                "unsafe_load", "full_load", "unsafe_load_all", "full_load_all"
            ) or (owner == "os" and attr in ("system", "popen", "execv", "execvp")):
                problems.append(f"{rel}:{node.lineno}: {name}()")
            if owner == "yaml" and attr in ("load", "load_all"):
                loader = next((k.value for k in node.keywords if k.arg == "Loader"), None)
                # a Safe* loader by name, or the module's `loader = getattr(yaml, "CSafeLoader",
                # yaml.SafeLoader)` variable
                text = ast.unparse(loader) if loader is not None else ""
                if "Safe" not in text and text not in ("loader", "LOADER"):
                    problems.append(f"{rel}:{node.lineno}: yaml.{attr} without a safe Loader")
            # the commands and the rule registry load their own modules by constant names
            if name == "import_module" and rel.as_posix() not in (
                    "tpcheck/commands/base.py", "tpcheck/checks/registry.py"):
                problems.append(f"{rel}:{node.lineno}: import_module")
            for k in node.keywords:
                if k.arg == "trust_remote_code" and not (
                    isinstance(k.value, ast.Constant) and k.value.value is False
                ):
                    problems.append(f"{rel}:{node.lineno}: trust_remote_code")
    assert problems == []


def test_yaml_python_tags_are_never_constructed(tmp_path: Path) -> None:
    """A manifest carrying !!python/object/apply tags next to a real launch: read, linted and
    inspected, and the command in the tag never runs (its marker file never appears)."""
    marker = tmp_path / "PWNED"
    (tmp_path / "evil.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Pod
        metadata:
          name: !!python/object/apply:os.system ["touch {marker}"]
          labels: !!python/object/new:subprocess.Popen [["touch", "{marker}"]]
        spec:
          containers:
          - name: vllm
            command: {LAUNCH}
        """), encoding="utf-8")
    for args in (["--gpu", "h100-sxm", "--offline", "evil.yaml"], ["inspect", "evil.yaml"]):
        proc = _cli(args, cwd=tmp_path)
        assert proc.returncode in (0, 1), proc.stderr
        assert "Traceback" not in proc.stderr
    proc = _cli(["inspect", "--format", "json", "evil.yaml"], cwd=tmp_path)
    assert [d["tensor_parallel_size"] for d in json.loads(proc.stdout)["deployments"]] == [2]
    assert not marker.exists()


def test_python_launch_files_are_parsed_never_imported_or_run(tmp_path: Path) -> None:
    """launch.py writes a marker at import time and under __main__; a naive importer (cwd on
    sys.path, as here) would create it. tpcheck reads its LLM(...) call and nothing runs."""
    marker = tmp_path / "RAN"
    src = textwrap.dedent(f"""\
        import pathlib
        pathlib.Path({str(marker)!r}).write_text("imported")
        from vllm import LLM
        llm = LLM(model="Qwen/Qwen3-32B", tensor_parallel_size=16)
        if __name__ == "__main__":
            pathlib.Path({str(marker)!r}).write_text("run")
        """)
    (tmp_path / "launch.py").write_text(src, encoding="utf-8")
    (tmp_path / "vllm.py").write_text(f"open({str(marker)!r}, 'w').write('shadow')\n",
                                      encoding="utf-8")
    proc = _cli(["--gpu", "h100-sxm", "--offline", "launch.py"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "launch.py:4:" in proc.stdout and "TP201" in proc.stdout
    proc = _cli(["inspect", "--format", "json", "."], cwd=tmp_path)
    assert [d["tensor_parallel_size"] for d in json.loads(proc.stdout)["deployments"]] == [16]
    assert not marker.exists()


def test_symlinks_out_of_the_walked_tree_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.yaml").write_text(f"command: {LAUNCH}\n", encoding="utf-8")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "own.sh").write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n",
                                 encoding="utf-8")
    (tree / "linked-dir").symlink_to(outside, target_is_directory=True)
    (tree / "linked.yaml").symlink_to(outside / "evil.yaml")
    from tpcheck.sources import iter_files

    assert list(iter_files([str(tree)])) == [str(tree / "own.sh")]
    proc = _cli(["inspect", "--format", "json", str(tree)], cwd=tmp_path)
    got = json.loads(proc.stdout)["deployments"]
    assert [(Path(d["path"]).name, d["tensor_parallel_size"]) for d in got] == [("own.sh", 16)]


_NO_NET = """
import socket
ATTEMPTS = []
def _refuse(*a, **k):
    ATTEMPTS.append(repr(a)[:80])
    raise OSError("network disabled by the test")
socket.socket.connect = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
import atexit
atexit.register(lambda: ATTEMPTS and print("NETWORK", ATTEMPTS, file=__import__("sys").stderr))
"""


@pytest.mark.parametrize("offline", [True, False])
def test_no_network_unless_allowed(tmp_path: Path, offline: bool) -> None:
    """Sockets are made to fail loudly. With --offline an unknown hub model gives TP000 and no
    connection attempt; a model in the bundled catalog needs no network even when allowed."""
    (tmp_path / "unknown.sh").write_text(
        "vllm serve someone/not-a-real-model-xyz --tensor-parallel-size 2\n", encoding="utf-8")
    (tmp_path / "known.sh").write_text(
        "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n", encoding="utf-8")
    files = ["unknown.sh", "known.sh"] if offline else ["known.sh"]
    args = ["--gpu", "h100-sxm", *(["--offline"] if offline else []), *files]
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_CACHE": str(tmp_path / "hf" / "hub")}
    proc = _cli(args, cwd=tmp_path, env=env, pre=_NO_NET)
    assert "NETWORK" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert "known.sh:1:" in proc.stdout and "TP201" in proc.stdout
    if offline:
        assert "unknown.sh:1:" in proc.stdout and "TP000" in proc.stdout


def test_unknown_dtype_or_quantization_is_a_finding_at_its_flag(tmp_path: Path) -> None:
    """vLLM refuses the name; that is the manifest's problem, so it is one TP003 finding at the
    value (issue 17), not an input error, and the other file of the run is still checked."""
    (tmp_path / "q.sh").write_text(
        "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8 --quantization bogus\n",
        encoding="utf-8")
    (tmp_path / "ok.sh").write_text(
        "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n", encoding="utf-8")
    proc = _cli(["--gpu", "h100-sxm", "--offline", "q.sh", "ok.sh"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    # "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8 --quantization " is 66 characters
    assert ("q.sh:1:67: TP003 [error] --quantization 'bogus' is a value the engine refuses"
            in proc.stdout)
    assert "unknown quantization 'bogus'" in proc.stdout
    assert "ok.sh:1:" in proc.stdout and "TP201" in proc.stdout


@pytest.mark.parametrize("value", ["123456789012345678901234567890", "99999999999999999999"])
def test_absurd_parallel_sizes_are_one_error_not_a_hang(tmp_path: Path, value: str) -> None:
    """Some rules scan every t up to the one written; a 30-digit t must not reach them."""
    (tmp_path / "big.sh").write_text(
        f"vllm serve Qwen/Qwen3-32B --tensor-parallel-size {value}\n", encoding="utf-8")
    proc = _cli(["--gpu", "h100-sxm", "--offline", "big.sh"], cwd=tmp_path)
    assert proc.returncode == 2
    # "vllm serve Qwen/Qwen3-32B --tensor-parallel-size " is 49 characters
    assert proc.stderr.splitlines() == [
        f"tpcheck: big.sh:1:50: tensor parallel size {value} is over 4096; not a layout any "
        "machine runs, so the deployment is not checked"]


def test_lone_surrogate_in_given_text_is_one_line_error() -> None:
    # Hypothesis found it: text handed in (stdin with surrogateescape, an editor buffer) may hold
    # a lone surrogate; it used to reach read_path's "please report" net (UnicodeEncodeError).
    from tpcheck.sources import read_path

    text = "kind: Pod\nspec:\n  containers:\n  - args: [vllm, serve, m, -tp, \ud800]\n"
    rr = read_path("pod.yaml", text)
    assert rr.deployments == ()
    (e,) = rr.errors
    # line 4; column: "  - args: [vllm, serve, m, -tp, " is 32 characters, so the surrogate is 33
    assert (e.line, e.column) == (4, 33)
    assert e.message == "not UTF-8 text (lone surrogate U+D800)"


@pytest.mark.parametrize("end", ["", "\n"])
def test_block_scalar_ending_the_file_without_newline_keeps_positions(end: str) -> None:
    # Issue 14 item 10: a `|` body that ends the file with no line break used to miss its positions
    # (the clip chomping added a break the value does not have) and fall back to the scalar's start.
    from tpcheck.sources import read_path

    text = ("kind: Pod\nspec:\n  containers:\n  - command: [sh, -c]\n    args:\n      - |\n"
            "        vllm serve Qwen/Qwen3-32B --tensor-parallel-size 6" + end)
    (d,) = read_path("pod.yaml", text).deployments
    s = d.spans["tensor_parallel_size"]
    # line 7 = "        vllm serve Qwen/Qwen3-32B --tensor-parallel-size 6": 8 spaces plus the
    # 49 characters before "6", so the value is column 58, one character wide
    assert (s.line, s.column, s.end_line, s.end_column) == (7, 58, 7, 59)
    assert d.tensor_parallel_size == 6


def _unlistable_tree(tmp_path: Path) -> Path:
    """A tree whose deepest folder cannot be listed even by root: its path is longer than
    PATH_MAX (4,096 on Linux), so ``os.scandir`` fails with ENAMETOOLONG. Built with dir_fd, which
    never needs the long path."""
    top = tmp_path / "deploy"
    top.mkdir()
    (top / "ok.yaml").write_text(
        "kind: Pod\nspec:\n  containers:\n  - image: vllm/vllm-openai:v0.33.0\n"
        "    args: [--model, Qwen/Qwen3-32B, --tensor-parallel-size, '6']\n")
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(18):  # 18 × 251 characters > 4,096
            name = "d" * 250
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)
    return top


def test_unlistable_folder_is_an_error_and_the_rest_is_checked(tmp_path: Path) -> None:
    # Issue 14 item 11: a folder that cannot be listed was skipped silently with exit 0.
    top = _unlistable_tree(tmp_path)
    p = subprocess.run(
        [sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm", str(top)],
        capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot list folder: File name too long" in lines[0], p.stderr
    # the readable file was still checked: TP101 (64 heads, t=6) on it
    assert "ok.yaml" in p.stdout and "TP101" in p.stdout
    q = subprocess.run([sys.executable, "-m", "tpcheck", "inspect", "--offline", str(top)],
                       capture_output=True, text=True, timeout=60)
    assert q.returncode == 2 and "cannot list folder" in q.stderr
    assert "ok.yaml" in q.stdout


def test_inputs_that_aborted_the_run_are_findings_of_their_own_deployment(tmp_path: Path) -> None:
    # Issue 14 item 4: each of these ended the whole run with "internal error"; now each is TP000
    # (or a reader's unresolved value) on its own deployment and the good file is still checked.
    files = {
        "a.py": 'from vllm import LLM\nllm = LLM(model="\\N{NOPE}", tensor_parallel_size=2)\n',
        "c.sh": "vllm serve ~nosuchuser/x --tensor-parallel-size 2\n",
        "d.sh": "vllm serve /" + "a" * 300 + " --tensor-parallel-size 2\n",
        "e.sh": "vllm serve " + "a" * 300 + " --tensor-parallel-size 2\n",
        "f.sh": "vllm serve ./deep --tensor-parallel-size 2\n",
        # the control: 64 heads at t=6 is TP101 whatever else happened in the run
        "z.sh": "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 6\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "deep").mkdir()
    # 100,000 levels: past json's recursion limit (RecursionError before the fix)
    (tmp_path / "deep" / "config.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    p = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm",
                        "--format", "json", *sorted(files)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "internal error" not in p.stderr, p.stderr
    out = json.loads(p.stdout)
    by_file = {f["path"]: f for f in out["findings"] if f["code"] == "TP000"}
    assert sorted(by_file) == ["c.sh", "d.sh", "e.sh", "f.sh"]
    # Python itself refuses "\N{NOPE}" when it compiles the file (issue 28: the interpreter's
    # parser reads first): one line where this interpreter points (3.11: column 27 = after
    # the literal; 3.12: 17 = its start), on line 2
    with pytest.raises(SyntaxError) as python:
        ast.parse(files["a.py"])
    (err,) = [e for e in out["errors"] if e["path"] == "a.py"]
    assert (err["line"], err["column"]) == (2, python.value.offset)
    assert err["message"].startswith("Python does not parse: (unicode error)"), err
    assert "nested too deeply" in said(by_file["f.sh"])
    assert any(f["code"] == "TP101" and f["path"] == "z.sh" for f in out["findings"])


def test_oversized_config_json_is_refused_before_parsing(tmp_path: Path) -> None:
    # Issue 14 item 12: config.json had no size cap (100 MB parsed). Published configs are KB.
    from tpcheck.models.resolve import MAX_CONFIG_BYTES, ResolveError, load_json

    big = tmp_path / "config.json"
    big.write_text('{"pad": "' + "x" * MAX_CONFIG_BYTES + '"}')
    with pytest.raises(ResolveError) as ei:
        load_json(big)
    assert ei.value.kind == "bad-json"
    # 8 MiB of padding plus the 11 characters around it
    assert f"{MAX_CONFIG_BYTES + 11:,} bytes" in str(ei.value)

# Issue 14, item 7: a hub timeout of 0, below 0, nan or inf broke the HTTP client (inf raised
# OverflowError, nan sometimes ended in SIGSEGV with a hub thread still starting at shutdown).
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "-inf", "601"])
def test_bad_hub_timeout_is_one_settings_error(tmp_path: Path, value: str) -> None:
    (tmp_path / ".tpcheck.toml").write_text(f"hub-timeout = {value}\n", encoding="utf-8")
    (tmp_path / "good.yaml").write_text(GOOD.read_text(encoding="utf-8"), encoding="utf-8")
    proc = _cli(["--gpu", "h100-sxm", "--offline", "good.yaml"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and ".tpcheck.toml" in lines[0] and "hub-timeout" in lines[0], lines
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["0.5", "5", "600"])
def test_sane_hub_timeouts_are_accepted(tmp_path: Path, value: str) -> None:
    (tmp_path / ".tpcheck.toml").write_text(f"hub-timeout = {value}\n", encoding="utf-8")
    (tmp_path / "good.yaml").write_text(GOOD.read_text(encoding="utf-8"), encoding="utf-8")
    proc = _cli(["--gpu", "h100-sxm", "--offline", "good.yaml"], cwd=tmp_path)
    assert proc.returncode == 1 and "TP201" in proc.stdout, proc.stderr  # the fixture's finding


def _hub_env(tmp_path: Path, endpoint: str) -> dict[str, str]:
    """A clean HF environment pointing at the loopback hub (never the real one)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGING")) and "PROXY" not in k.upper()}
    env.pop("TRANSFORMERS_OFFLINE", None)
    env.update(HF_HOME=str(tmp_path / "hf"), NO_PROXY="127.0.0.1,localhost", HF_ENDPOINT=endpoint)
    return env


# Issue 14, item 1: `plan` ignored `offline = true` from the settings file and asked the hub.
@pytest.mark.parametrize("offline", [True, False])
@pytest.mark.parametrize("settings_file", [".tpcheck.toml", "pyproject.toml"])
def test_plan_honours_offline_from_the_settings_file(
    tmp_path: Path, offline: bool, settings_file: str
) -> None:
    from tests.hubserver import HubServer

    config = (ROOT / "tpcheck" / "models" / "catalog" / "meta-llama--Llama-3.1-8B"
              / "config.json").read_bytes()
    table = "[tool.tpcheck]\n" if settings_file == "pyproject.toml" else ""
    (tmp_path / settings_file).write_text(f"{table}offline = {str(offline).lower()}\n",
                                          encoding="utf-8")
    with HubServer({"acme/fresh": {"config.json": config}}) as hub:
        proc = subprocess.run(
            [sys.executable, "-m", "tpcheck", "plan", "acme/fresh", "--gpu", "h100-sxm"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
            env=_hub_env(tmp_path, hub.endpoint))
        seen = hub.requests
    assert "Traceback" not in proc.stderr, proc.stderr
    if offline:
        assert seen == [], seen
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    else:  # the control: the same run without the setting does reach the loopback hub
        assert seen and proc.returncode == 0, (seen, proc.stderr)


# Issue 14, item 6: a FIFO named *.yaml, passed or met in a walked folder, hung the run forever
# (opening a FIFO for reading waits for a writer that never comes).
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
@pytest.mark.parametrize("walked", [False, True])
def test_a_fifo_is_skipped_with_one_line_not_waited_on(tmp_path: Path, walked: bool) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    os.mkfifo(tree / "x.yaml")
    (tree / "good.yaml").write_text(GOOD.read_text(encoding="utf-8"), encoding="utf-8")
    args = [str(tree)] if walked else [str(tree / "x.yaml"), str(tree / "good.yaml")]
    proc = _cli(["--gpu", "h100-sxm", "--offline", *args], cwd=tmp_path)  # 120 s timeout
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"tpcheck: {tree / 'x.yaml'}:1:1: not a regular file (a FIFO); skipped"]
    assert "TP201" in proc.stdout  # the good file beside it is still checked


# Issue 14, item 9: stdin was read whole before the size check (1 GB piped in took 2 GB of
# memory). Now at most the cap + 1 bytes are read, and the rest is never taken in.
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
@pytest.mark.parametrize("command", [[], ["inspect"]])
def test_stdin_over_the_cap_is_one_error_read_only_to_the_cap(
    tmp_path: Path, command: list[str]
) -> None:
    cap = 1000
    (tmp_path / ".tpcheck.toml").write_text(f"max-file-size = {cap}\n", encoding="utf-8")
    if command:  # inspect has no max-file-size setting: it reads to the 5 MiB default cap
        from tpcheck.sources import MAX_BYTES as cap
    # Peak RSS from VmHWM, which starts afresh at exec (ru_maxrss would carry pytest's own peak
    # over from the fork).
    pre = ("import atexit, re, sys\n"
           "atexit.register(lambda: print('RSS', re.search(r'VmHWM:\\s*(\\d+)', "
           "open('/proc/self/status').read())[1], file=sys.stderr))\n")
    code = pre + "from tpcheck.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    data = b"# x\n" * (16 * 1024 * 1024)  # 64 MiB, far over either cap
    args = [*command, "--stdin-filename", "big.sh", "-"]
    if not command:
        args = ["--gpu", "h100-sxm", "--offline", *args]
    proc = subprocess.run([sys.executable, "-c", code, *args], input=data, capture_output=True,
                          timeout=120, cwd=tmp_path)
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    assert proc.returncode == 2, err
    [line] = [ln for ln in err.splitlines() if not ln.startswith("RSS ")]
    assert line.endswith(f"big.sh:1:1: input is over the {cap}-byte limit; skipped"), line
    [rss_kb] = [int(ln.split()[1]) for ln in err.splitlines() if ln.startswith("RSS ")]
    # The CLI peaks at ~16 MB here (/usr/bin/time -v); reading the 64 MiB whole, as before,
    # peaked at 64 MiB of text on top of that. 48 MiB leaves room for a larger interpreter.
    assert rss_kb < 48 * 1024, rss_kb


def test_stdin_under_the_cap_is_still_checked(tmp_path: Path) -> None:
    launch = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16\n"  # t = 16 > h_kv = 8: TP201
    proc = subprocess.run(
        [sys.executable, "-m", "tpcheck", "--gpu", "h100-sxm", "--offline",
         "--stdin-filename", "x.sh", "-"], input=launch.encode(), capture_output=True,
        timeout=60, cwd=tmp_path)
    assert proc.returncode == 1 and b"TP201" in proc.stdout, proc.stderr


def test_expansion_past_the_word_limit_is_unresolved_not_built() -> None:
    """Issue 14 item 5: a value doubled past MAX_WORD_CHARS is left as written (unresolved)."""
    from tpcheck.sources.shell import MAX_WORD_CHARS, read_shell

    # 10 × 2**12 = 40,960 characters fit under 64 KiB (65,536); one more doubling (81,920) not.
    fits = "A=xxxxxxxxxx\n" + 'A="$A$A"\n' * 12
    [d] = read_shell("ok.sh", fits + "vllm serve $A --tensor-parallel-size 2\n")
    assert d.model == "x" * 10 * 2**12 and MAX_WORD_CHARS >= 10 * 2**12
    [d] = read_shell("big.sh", fits + 'vllm serve "$A$A" --tensor-parallel-size 2\n')
    assert d.tensor_parallel_size == 2 and "model" in d.unresolved, d
    # An assignment past the limit leaves A's value unknown, as A=$(hostname) does: later uses
    # of $A are unresolved (they once saw 40,960 x's then a literal "$A").
    [d] = read_shell("big.sh", fits + 'A="$A$A"\nvllm serve $A --tensor-parallel-size 2\n')
    assert d.tensor_parallel_size == 2 and d.model is None and d.unresolved == {"model": "$A"}


def test_expansion_total_per_text_is_bounded() -> None:
    """A 40,960-character value used on 2,000 lines would be 82 MB of words: past
    MAX_EXPANDED_CHARS (4 MiB, so the first 102 uses) the rest are unresolved."""
    from tpcheck.sources.shell import MAX_EXPANDED_CHARS, read_shell

    text = ("A=xxxxxxxxxx\n" + 'A="$A$A"\n' * 12
            + "vllm serve $A --tensor-parallel-size 2\n" * 2000)
    ds = read_shell("many.sh", text)
    resolved = [d for d in ds if d.model is not None and "model" not in d.unresolved]
    # 4 MiB // 40,960 = 102 full values, less the 12 doublings' own expansions (2 × 2**k × 10
    # characters for k < 12, 81,900 in all = 2 values): 100 resolved launches.
    assert len(ds) == 2000 and len(resolved) == (MAX_EXPANDED_CHARS - 81_900) // 40_960 == 100


@contextlib.contextmanager
def _failing_hub(body_of: Callable[[str], bytes]) -> Iterator[int]:
    """A real loopback server answering 500 to everything with ``body_of(request path)``; its
    port. The HTTP client's error (and so TP000) quotes what it said."""
    import http.server
    import threading

    class Fail(http.server.BaseHTTPRequestHandler):
        def _fail(self) -> None:
            body = body_of(self.path)
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = _fail

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fail)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv.server_port
    finally:
        srv.shutdown()


def test_hub_credentials_never_reach_a_message(tmp_path: Path) -> None:
    # Issue 14 item 2: userinfo in HF_ENDPOINT (and a token) echoed by the HTTP client's error text.
    # A real loopback server answers 500 to everything, so the message carries the client's detail.
    # a proxy page echoing a header
    with _failing_hub(lambda _: b"token hf_abcdefghijklmnopqrstuv rejected") as port:
        (tmp_path / "r.sh").write_text("vllm serve someorg/somemodel -tp 2\n")
        env = {**os.environ, "HF_ENDPOINT": f"http://alice:s3cret@127.0.0.1:{port}",
               "HF_TOKEN": "hf_abcdefghijklmnopqrstuv", "HF_HUB_CACHE": str(tmp_path / "hub"),
               "HF_HUB_OFFLINE": "0"}
        env.pop("TRANSFORMERS_OFFLINE", None)
        outs = [subprocess.run([sys.executable, "-m", "tpcheck", "--gpu", "h100-sxm", "--format",
                                fmt, "r.sh"], capture_output=True, text=True, timeout=60,
                               cwd=tmp_path, env=env) for fmt in ("text", "json", "sarif")]
    for p in outs:
        assert "TP000" in p.stdout, p.stdout + p.stderr
        for secret in ("s3cret", "alice", "abcdefghijklmnopqrstuv"):
            assert secret not in p.stdout + p.stderr


@pytest.mark.parametrize("endpoint", [
    "http://127.0.0.1:{port}/?token=qsecret0042",  # a token in the query string
    "http://127.0.0.1:{port}/t/psecret0042",  # a token as a path segment (a proxy's)
])
def test_a_token_in_hf_endpoints_query_or_path_is_never_printed(tmp_path: Path,
                                                                 endpoint: str) -> None:
    # Issue 28 item 9: userinfo and hf_ tokens were redacted, a query's or a path's were not.
    # A real loopback server answers 500, so TP000 quotes the client's error (and the URL).
    # echoes the URL it was asked for
    with _failing_hub(lambda path: f"no such thing: {path}".encode()) as port:
        (tmp_path / "r.sh").write_text("vllm serve someorg/somemodel -tp 2\n")
        env = {**os.environ, "HF_ENDPOINT": endpoint.format(port=port),
               "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "0"}
        env.pop("TRANSFORMERS_OFFLINE", None)
        env.pop("HF_TOKEN", None)
        outs = [subprocess.run([sys.executable, "-m", "tpcheck", *args, "r.sh"],
                               capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
                for args in (["--gpu", "h100-sxm"], ["--gpu", "h100-sxm", "--format", "json"],
                             ["inspect"])]
    assert "TP000" in outs[0].stdout and "127.0.0.1" in outs[0].stdout, outs[0].stdout
    for p in outs:
        for secret in ("qsecret0042", "psecret0042"):
            assert secret not in p.stdout + p.stderr, p.stdout + p.stderr


def test_redact_takes_query_values_and_the_endpoints_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tpcheck.models.resolve import ResolveError, redact_url

    monkeypatch.setenv("HF_ENDPOINT", "https://proxy.example:8443/t/abc123secret")
    e = ResolveError("network", "GET https://proxy.example:8443/t/abc123secret/api/models/a/b"
                     "?token=xyz&sig=q failed")
    assert e.message == "GET https://proxy.example:8443/***/api/models/a/b?token=***&sig=*** failed"
    assert redact_url("https://u:p@proxy.example:8443/t/abc123secret") == \
        "https://proxy.example:8443/***"


def test_scrub_redacts_userinfo_and_hub_tokens() -> None:
    from tpcheck.models.resolve import ResolveError

    e = ResolveError("network", "GET http://bob:pw@h:1/x failed; header hf_0123456789abcdef")
    assert e.message == "GET http://***@h:1/x failed; header hf_***"


def test_a_hub_answer_that_is_not_json_does_not_stay_in_the_cache(tmp_path: Path) -> None:
    # Issue 14 item 3: an HTML login page served with status 200 was cached as config.json and
    # read by every later run, offline too. Now the bad entry is named and removed.
    from tests.hubserver import HubServer

    page = b"<!doctype html><html><body>Sign in to continue</body></html>"
    (tmp_path / "r.sh").write_text("vllm serve acme/login -tp 2\n")
    with HubServer({"acme/login": {"config.json": page}}) as hub:
        env = _hub_env(tmp_path, hub.endpoint)
        first = subprocess.run([sys.executable, "-m", "tpcheck", "--gpu", "h100-sxm", "r.sh"],
                               capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert "malformed JSON" in first.stdout and "removed this bad entry" in first.stdout, (
        first.stdout + first.stderr)
    cached = list((tmp_path / "hf").rglob("config.json")) + list(
        (tmp_path / "hf").rglob("blobs/*"))
    assert cached == [], cached
    # offline afterwards: the cache no longer answers with the page, so TP000 says offline
    second = subprocess.run(
        [sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm", "r.sh"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert "malformed JSON" not in second.stdout and "offline" in second.stdout, second.stdout


def _cache_leftovers(hf_home: Path) -> list[str]:
    """Config files, blobs and partial downloads of any repo in the HF cache under ``hf_home``."""
    hub = hf_home / "hub"
    found = [*hub.rglob("config.json"), *hub.rglob("blobs/*"), *hub.rglob("*.incomplete")]
    return sorted(str(p.relative_to(hf_home)) for p in found)


# Issue 14 item 12: a 300 MB hub body left a 210 MB partial file in the cache after the timeout.
def test_a_hub_body_past_the_cap_is_not_downloaded(tmp_path: Path) -> None:
    from tests.hubserver import HubServer
    from tpcheck.models.resolve import MAX_CONFIG_BYTES

    big = b'{"x": "' + b"a" * MAX_CONFIG_BYTES + b'"}'  # 8 MiB + 10 bytes: one object past the cap
    (tmp_path / "r.sh").write_text("vllm serve acme/huge -tp 2\n")
    with HubServer({"acme/huge": {"config.json": big}}) as hub:
        proc = subprocess.run([sys.executable, "-m", "tpcheck", "--gpu", "h100-sxm", "r.sh"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env=_hub_env(tmp_path, hub.endpoint))
        gets = [r for r in hub.requests if r.method == "GET"]
    assert "Traceback" not in proc.stderr, proc.stderr
    unwrapped = " ".join(proc.stdout.split())  # the evidence is wrapped to 80 columns
    assert f"{len(big):,} bytes, over the {MAX_CONFIG_BYTES:,}-byte limit" in unwrapped, (
        proc.stdout)
    assert gets == []  # refused on the HEAD's Content-Length: no byte of the body was fetched
    assert _cache_leftovers(tmp_path / "hf") == []


def test_a_download_cut_by_the_timeout_leaves_no_partial_file(tmp_path: Path) -> None:
    from tests.hubserver import HubServer

    body = json.dumps({"architectures": ["LlamaForCausalLM"], "pad": "x" * 4096}).encode()
    (tmp_path / "r.sh").write_text("vllm serve acme/slow -tp 2\n")
    (tmp_path / ".tpcheck.toml").write_text("hub-timeout = 2\n", encoding="utf-8")
    with HubServer({"acme/slow": {"config.json": body}}, stall_body=["acme/slow"]) as hub:
        proc = subprocess.run([sys.executable, "-m", "tpcheck", "--gpu", "h100-sxm", "r.sh"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env=_hub_env(tmp_path, hub.endpoint))
        gets = [r for r in hub.requests if r.method == "GET"]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "did not answer within 2 s" in proc.stdout, proc.stdout
    assert gets, "the download must have started (a partial blob was being written)"
    assert _cache_leftovers(tmp_path / "hf") == []


_THREADS_AFTER_RUN = """
import sys, threading
from tpcheck.cli import main
try:
    main(["--gpu", "h100-sxm", "r.sh"])
except SystemExit:
    pass
print("THREADS", sorted(t.name for t in threading.enumerate()))
"""


# Issue 14 item 7: a hub thread still running at interpreter shutdown ended the process with
# SIGSEGV (hub-timeout = nan); no thread may outlive the run.
def test_no_thread_outlives_a_run_against_a_stalled_hub(tmp_path: Path) -> None:
    from tests.hubserver import HubServer

    (tmp_path / "r.sh").write_text("vllm serve acme/stalled -tp 2\n")
    (tmp_path / ".tpcheck.toml").write_text("hub-timeout = 0.5\n", encoding="utf-8")
    with HubServer(hang=["acme/stalled"]) as hub:
        proc = subprocess.run([sys.executable, "-c", _THREADS_AFTER_RUN], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path,
                              env=_hub_env(tmp_path, hub.endpoint))
        asked = [r.path for r in hub.requests]
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "did not answer within 0.5 s" in proc.stdout, proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "THREADS ['MainThread']", proc.stdout
    assert asked == ["/acme/stalled/resolve/main/config.json"]  # the hub was really asked


# Found by tests/property/test_readers.py::test_mutated_real_files_never_raise on
# fixtures/lint/llama70b-tp6.sh: a quoted word that runs across git conflict markers into
# "$MODEL" took its first character from line 6 and its last from MODEL's value on line 3, and
# the span ran backwards: Span(line=6, end_line=3).
@pytest.mark.parametrize("text", [
    ("#!/bin/sh\nMODEL=meta-llama/Llama-3.1-70B-Instruct\nex\n<<<<<<< HEAD\n"
     'ec vllm serve "\n=======\n>>>>>>> x\n$MODEL" \\\n    --tensor-parallel-size 6\n'),
    "MODEL=org/m\nvllm serve x$MODEL -tp 2\n",  # the same on one line: 2:12 to 1:12
])
def test_a_word_mixing_written_and_expanded_characters_never_spans_backwards(text: str) -> None:
    from tpcheck.sources import read_path

    [d] = read_path("x.sh", text).deployments
    s = d.span_of("model")
    assert (s.line, s.column) <= (s.end_line, s.end_column), s
    # the word as written stands for it: it starts where the quote or the x is
    line = text.splitlines()[s.line - 1]
    assert line[s.column - 1] in ('"', "x"), (s, line)


# A variable assigned from a command substitution (or from another unknown variable) has no
# value tpcheck can know: `vllm serve $X` named the model "$(hostname)" as if written literally.
@pytest.mark.parametrize("assign", ["X=$(hostname)", "X=`hostname`", "X=$UNSET_ELSEWHERE",
                                    "X=org/m\nX=$(f)"])
def test_a_variable_with_an_unknown_value_expands_unresolved(assign: str) -> None:
    from tpcheck.sources import read_path

    [d] = read_path("x.sh", f"{assign}\nvllm serve $X -tp 2\n").deployments
    assert d.model is None and d.unresolved == {"model": "$X"}, (d.model, d.unresolved)
    assert d.tensor_parallel_size == 2  # the rest of the command is still read
    [known] = read_path("x.sh", "X=org/m\nvllm serve $X -tp 2\n").deployments
    assert known.model == "org/m" and known.unresolved == {}


# A FIFO (or a file over the size cap) is skipped unread: the summary counted it "1 file read".
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_skipped_files_are_not_counted_as_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.yaml")
    (tmp_path / "good.yaml").write_text(GOOD.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / ".tpcheck.toml").write_text("max-file-size = 1000\n", encoding="utf-8")
    (tmp_path / "big.sh").write_text("vllm serve m -tp 2\n" + "#" * 2000 + "\n")
    proc = _cli(["--gpu", "h100-sxm", "--offline", "x.yaml", "big.sh", "good.yaml"],
                cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 2, proc.stderr  # one line per skipped file
    # the summary line, then the --fix hint for good.yaml's TP201 (TP 16 → 8 is mechanical)
    *_, summary, hint = proc.stdout.strip().splitlines()
    assert summary.endswith("(1 file read)"), proc.stdout
    assert hint == "[*] 1 fixable with --fix (--diff shows the change)"
