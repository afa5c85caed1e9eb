"""Property tests over the readers: mutated real files and generated commands never raise.

Samples come from fixtures/corpus-sample (real manifests, provenance in its SOURCES.tsv),
fixtures/manifests and fixtures/lint, so the tests run on a clean clone. Invariants: read_path
returns a ReadResult; every error is one line naming the file, at a 1-based position, and none
is read_path's "please report" safety net; every span lies inside the text it was read from.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpcheck.sources import read_path
from tpcheck.sources.base import ReadResult

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = {
    p.name: p.read_text(encoding="utf-8")
    for folder in ("corpus-sample", "manifests", "lint")
    for p in sorted((ROOT / "fixtures" / folder).iterdir())
    if p.suffix in (".yaml", ".yml", ".sh", ".py")
}
assert len(SAMPLES) >= 20, sorted(SAMPLES)

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Characters that matter to YAML, shell or Python, plus non-ASCII digits and odd whitespace.
SPECIAL = ":-[]{}&*!|>'\"#%@`$\\;()<=\n\t ٨８\u00a0\u2028\x00\ufeff"
snippets = st.text(alphabet=st.sampled_from(SPECIAL) | st.characters(), max_size=40)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(SAMPLES)))
    text = SAMPLES[name]
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 200)))
        op = draw(st.sampled_from(
            ["delete", "duplicate", "insert", "truncate", "swap-lines", "conflict", "indent"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(snippets) + text[i:]
        elif op == "truncate":
            text = text[:i]
        elif op == "swap-lines":
            lines = text.split("\n")
            a = draw(st.integers(0, len(lines) - 1))
            b = draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
        elif op == "conflict":
            text = text[:i] + "\n<<<<<<< HEAD\n" + text[i:j] + "\n=======\n>>>>>>> x\n" + text[j:]
        else:
            lines = text.split("\n")
            a = draw(st.integers(0, len(lines) - 1))
            lines[a] = " " * draw(st.integers(0, 9)) + lines[a].lstrip()
            text = "\n".join(lines)
    return name, text


def check_result(rr: ReadResult, name: str, text: str) -> None:
    assert isinstance(rr, ReadResult)
    n_lines = text.count("\n") + 1
    for e in rr.errors:
        assert "\n" not in e.message and e.path == name
        assert e.line >= 1 and e.column >= 1
        # read_path's safety net turns a reader bug into one line; it must not be needed
        assert "please report" not in e.message, e.message
    for d in rr.deployments:
        assert d.engine in ("vllm", "sglang")
        for s in (d.span, *d.spans.values()):
            assert s.path == name
            assert 1 <= s.line <= s.end_line <= n_lines + 1, (s, n_lines)
            assert s.column >= 1


@SETTINGS
@given(mutated())
def test_mutated_real_files_never_raise(case: tuple[str, str]) -> None:
    name, text = case
    check_result(read_path(name, text), name, text)


@SETTINGS
@given(st.sampled_from(["x.yaml", "x.sh", "x.py", "noext"]), st.text(max_size=300))
def test_random_text_through_every_reader(name: str, text: str) -> None:
    check_result(read_path(name, text), name, text)


@SETTINGS
@given(mutated(), st.sampled_from(["as.sh", "as.py", "as.yaml"]))
def test_files_read_by_the_wrong_reader_never_raise(case: tuple[str, str], name: str) -> None:
    _, text = case
    check_result(read_path(name, text), name, text)


HOSTILE_VALUES = ["-1", "0", "abc", "1e309", "1" * 30, "٨", "８", "2.5", "", "0x10", "1_000",
                  "$TP", "${TP:-8}", "$(nproc)", "`nproc`", "'8'", '"8"', "8\\\n", '""', "''"]
LAUNCHERS = ["vllm serve m", "python3 -m sglang.launch_server --model-path m",
             "python -m vllm.entrypoints.openai.api_server --model m", "exec vllm serve m",
             "sh -c 'vllm serve m", "TP=4 vllm serve m"]
FLAGS = ["--tensor-parallel-size", "-tp", "--tp", "--tp-size", "--pipeline-parallel-size",
         "--dp", "--max-num-seqs", "--max-model-len", "--gpu-memory-utilization",
         "--max-num-batched-token", "--enable-dp-attention", "--kv-cache-dtype", "--unknown"]


@st.composite
def command(draw: st.DrawFn) -> str:
    parts = [draw(st.sampled_from(LAUNCHERS))]
    for _ in range(draw(st.integers(0, 8))):
        flag = draw(st.sampled_from(FLAGS))
        value = draw(st.sampled_from(HOSTILE_VALUES) | snippets)
        parts.append(f"{flag}={value}" if draw(st.booleans()) else f"{flag} {value}")
    sep = draw(st.sampled_from([" ", " \\\n  ", "\t"]))
    tail = draw(st.sampled_from(["", "'", " && echo done", "; sleep 1", " <<EOF\nx\nEOF",
                                 " | tee log", " &"]))
    return sep.join(parts) + tail + "\n"


@SETTINGS
@given(st.lists(command(), min_size=1, max_size=4))
def test_generated_launch_scripts_never_raise(cmds: list[str]) -> None:
    text = "#!/bin/sh\nTP=2\n" + "".join(cmds)
    check_result(read_path("run.sh", text), "run.sh", text)
    # the same commands inside a manifest's `sh -c`, as a literal block scalar
    body = "".join("          " + ln + "\n" for ln in text.splitlines())
    manifest = ("kind: Pod\nspec:\n  containers:\n  - name: x\n    command: [sh, -c]\n"
                "    args:\n      - |\n" + body)
    check_result(read_path("pod.yaml", manifest), "pod.yaml", manifest)


@SETTINGS
@given(st.sampled_from(["-1", "0", "1", "2", "8", "64", "1" * 30, "٨", "８"]))
def test_a_plain_integer_tp_is_read_as_the_engine_reads_it(value: str) -> None:
    """argparse's int() accepts any Unicode decimal digits, so vLLM reads '٨' (Arabic-Indic
    eight) as 8: the reader must agree, and keep the 30-digit number exactly."""
    text = f"vllm serve m --tensor-parallel-size {value}\n"
    rr = read_path("run.sh", text)
    (d,) = rr.deployments
    assert d.tensor_parallel_size == int(value)
    s = d.spans["tensor_parallel_size"]
    assert (s.line, s.column, s.end_column) == (1, 37, 37 + len(value))
