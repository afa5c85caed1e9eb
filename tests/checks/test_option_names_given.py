"""The option names a written option sets, kept per (engine, table, spelling) for the
two-option checks (``_options._names_given``): a kept answer is the one computed afresh, and
one table's answer is never another's."""

from __future__ import annotations

from tpcheck.checks import _options
from tpcheck.engines.flags import load_table

SPELLINGS = ("--enable-expert-parallel", "--no-enable-prefix-caching", "--enable-prefix-caching",
             "--max_num_seqs", "--tensor-parallel", "--enable-chunked", "--config", "-tp",
             "--not-an-option", "--speculative-config", "--disable-log-requests")


def _fresh(engine: str, version: str, written: str) -> tuple[str, ...]:
    kept = dict(_options._GIVEN)
    _options._GIVEN.clear()
    try:
        return _options._names_given(engine, load_table(engine, version), written)
    finally:
        _options._GIVEN.clear()
        _options._GIVEN.update(kept)


def test_kept_names_are_each_tables_own() -> None:
    tables = [("vllm", "0.21.0"), ("vllm", "0.33.0"), ("sglang", "0.5.23")]
    answers: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for engine, version in tables:
        table = load_table(engine, version)
        for written in SPELLINGS:
            got = _options._names_given(engine, table, written)
            assert got == _options._names_given(engine, table, written)  # kept
            assert got == _fresh(engine, version, written), (engine, version, written)
            answers[(engine, version, written)] = got
    # the tables differ for some spelling: an answer kept for one is not served for another
    assert answers[("vllm", "0.33.0", "--enable-expert-parallel")] != answers[
        ("sglang", "0.5.23", "--enable-expert-parallel")]
    assert answers[("vllm", "0.33.0", "--no-enable-prefix-caching")] != answers[
        ("vllm", "0.33.0", "--enable-prefix-caching")]
