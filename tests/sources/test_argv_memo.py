"""The per-option memo of ``argv.parse_args``: (engine, option) → (resolution, option word)."""

from __future__ import annotations

from tpcheck.engines.flags import resolve
from tpcheck.sources import argv
from tpcheck.sources.argv import _option_word, _resolve, parse_args
from tpcheck.sources.shell import read_shell

OPTIONS = ("--tp", "--tensor-parallel-size", "-tp", "--max-model-len", "--no-such-option",
           "-x", "--9", "--a.b", "--model", "--dp", "--pp")


def test_the_memo_answers_as_computing_afresh() -> None:
    for engine in ("vllm", "sglang"):
        for opt in OPTIONS:
            fresh = (resolve(engine, opt), _option_word(opt))
            assert _resolve(engine, opt) == fresh  # computed, then kept
            assert _resolve(engine, opt) == fresh  # kept
            assert argv._RESOLVED[(engine, opt)] == fresh


def test_the_memo_is_keyed_by_engine() -> None:
    # --tp is SGLang's --tp-size and no vLLM option: a memo keyed by the option alone would
    # hand one engine the other's answer
    assert _resolve("sglang", "--tp")[0].option == "--tp-size"
    assert _resolve("vllm", "--tp")[0].option is None
    assert _resolve("sglang", "--tp")[0].option == "--tp-size"


def test_a_stale_entry_would_show() -> None:
    """parse_args reads the memo: a wrong kept answer changes what it reads (so the memo is
    the one consulted), and the right one reads as a fresh resolution does."""
    assert read_shell("x.sh", "sglang serve --tp 4\n")[0].tensor_parallel_size == 4
    key = ("sglang", "--tp")
    kept = argv._RESOLVED.get(key)
    try:
        argv._RESOLVED[key] = (resolve("sglang", "--no-such-option"), True)
        cmd = read_shell("x.sh", "sglang serve --tp 4\n")[0]
        assert cmd.tensor_parallel_size is None
    finally:
        if kept is None:
            argv._RESOLVED.pop(key, None)
        else:
            argv._RESOLVED[key] = kept
    assert read_shell("x.sh", "sglang serve --tp 4\n")[0].tensor_parallel_size == 4
    assert parse_args("sglang", [], False).values == {}
