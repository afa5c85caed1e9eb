"""The ``ast`` reader of Python launch code finds what the libcst reader finds (issue 14 item 8).

``read_python`` reads with ``ast`` whenever ``ast`` parses the file, because libcst spent ~4 ms
per ``LLM()`` call (40,000 calls: 166 s, 1.1 GB); libcst stays the reader for files ``ast``
refuses. Both must give the same deployments, field by field and span by span, so every case
here is read both ways and compared.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tpcheck.sources.base import Deployment
from tpcheck.sources.python_src import read_python

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"

CASES = {
    "constants": """\
        from vllm import LLM
        import subprocess

        TP = 4
        MODEL = "Qwen/Qwen3-32B"

        llm = LLM(MODEL, tensor_parallel_size=TP, max_num_seqs=64, pipeline_parallel_size=f())
        subprocess.run(["python3", "-m", "sglang.launch_server", "--model-path", MODEL,
                        "--tp-size", "2"])
        """,
    "unicode-before-call": """\
        from vllm import LLM
        x = "ééé"; llm = LLM(model="Qwen/Qwen3-32B", tensor_parallel_size=3)
        """,
    "escapes-and-prefixes": """\
        from vllm import LLM
        LLM(model=r"a\\b", tensor_parallel_size=-2, dtype='bfl\\x6f at16')
        LLM(model=b"bytes", max_model_len=1_000, gpu_memory_utilization=.9)
        LLM(model="con" "cat", enforce_eager=True, kv_cache_dtype=None)
        """,
    "multi-line-and-fstring": """\
        import sglang as sgl
        n = 2
        e = sgl.Engine(
            model_path=f"org/{n}",
            tp_size=(n),
            **extra,
        )
        """,
    "nested-and-starred": """\
        from vllm import LLM, EngineArgs
        LLM(*args, model="m", engine_args=EngineArgs(model="inner", tensor_parallel_size=8))
        subprocess.Popen(("vllm", "serve", "m", *rest, "--tensor-parallel-size", "4"))
        os.execvp("vllm", ["vllm", "serve", "m", "-tp", "2"])
        """,
    "tabs-and-crlf": (
        "from vllm import LLM\r\nif True:\r\n\tLLM(model='m',\ttensor_parallel_size=2)\r\n"
    ),
}


def _as_dicts(deployments: tuple[Deployment, ...]) -> list[dict[str, object]]:
    return [dict(vars(d)) for d in deployments]


def _both(text: str) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    fast = read_python("x.py", text)
    slow = read_python("x.py", text, use_ast=False)
    assert fast.errors == slow.errors
    return _as_dicts(fast.deployments), _as_dicts(slow.deployments)


@pytest.mark.parametrize("name", sorted(CASES))
def test_ast_and_libcst_readers_agree(name: str) -> None:
    fast, slow = _both(textwrap.dedent(CASES[name]) if "\r" not in CASES[name] else CASES[name])
    assert fast, "the case must contain a launch"
    assert fast == slow


@pytest.mark.parametrize("path", sorted(FIX.glob("*.py")), ids=lambda p: p.name)
def test_ast_and_libcst_readers_agree_on_fixtures(path: Path) -> None:
    fast, slow = _both(path.read_text(encoding="utf-8"))
    assert fast == slow


def test_a_literal_ast_refuses_falls_back_to_libcst() -> None:
    # ast rejects the whole file for "\N{NOPE}"; libcst reads it and leaves that value unresolved
    text = 'from vllm import LLM\nLLM(model="\\N{NOPE}", tensor_parallel_size=2)\n'
    res = read_python("x.py", text)
    assert len(res.deployments) == 1
    d = res.deployments[0]
    assert d.tensor_parallel_size == 2 and d.model is None and "model" in d.unresolved


def test_per_character_positions_count_characters_not_bytes() -> None:
    # "ééé" is 6 UTF-8 bytes before the call; ast's col_offset counts bytes, spans count chars
    text = 'from vllm import LLM\nx = "ééé"; LLM(model="m", tensor_parallel_size=3)\n'
    d = read_python("x.py", text).deployments[0]
    line2 = text.splitlines()[1]
    assert d.span.column == line2.index("LLM(") + 1  # 12: x = "ééé"; is 11 characters
    s = d.span_of("tensor_parallel_size")
    assert (s.line, s.column) == (2, line2.index("3") + 1)


_VALUES = st.sampled_from([
    "2", "-4", "0x10", "1_000", "3.5", "True", "None", "'m'", '"a b"', "r'x\\\\y'", "b'z'",
    "'é'", "'\\t'", "f'{a}'", "'a' 'b'", "(2)", "x", "TP", "[1]", "g(1)", "-x",
])
_KEYS = st.sampled_from([
    "model", "tensor_parallel_size", "pipeline_parallel_size", "max_num_seqs", "dtype",
    "max_model_len", "kv_cache_dtype", "tp_size", "model_path", "unknown_kw",
])


@given(
    st.sampled_from(["LLM", "EngineArgs", "sgl.Engine", "Engine", "vllm.LLM"]),
    st.lists(st.tuples(_KEYS, _VALUES), max_size=5, unique_by=lambda kv: kv[0]),
    st.one_of(st.none(), _VALUES),
    st.sampled_from(["", "    ", "x = 1; "]),
)
def test_generated_calls_read_the_same_both_ways(
    call: str, kwargs: list[tuple[str, str]], first: str | None, indent: str
) -> None:
    args = ([first] if first is not None else []) + [f"{k}={v}" for k, v in kwargs]
    prefix = "if c:\n" if indent == "    " else ""
    text = f"TP = 4\n{prefix}{indent}{call}({', '.join(args)})\n"
    fast, slow = _both(text)
    assert fast == slow
