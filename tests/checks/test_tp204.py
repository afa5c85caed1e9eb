"""TP204 context-exceeds-pool, every branch: vLLM refuses (error), a shortfall inside the pool
error band (warning), an empty pool (vLLM's other message, no length fits), SGLang starts and
warns (warning); quiet when one sequence fits, and when the weights alone do not (TP205's)."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Finding, Severity

Q32 = "vllm serve Qwen/Qwen3-32B"
# Qwen3-32B: L = 64, h_kv = 8, d_h = 128, bf16 at t = 1: kv_B = 2·64·8·128·2 = 262,144 B per
# token. On an H100 SXM (M = 85,031,714,816 B) at u = 0.92 the pool is M·u − W − R with
# W = 65,524,246,528 B; vLLM's blocks are 16 tokens.
KV_B = 2 * 64 * 8 * 128 * 2
GIB = 1 << 30


def _len_span(f: Finding, text: str) -> None:
    value = text.split("--max-model-len ", 1)[1].split()[0]
    at = text.index(f"--max-model-len {value}") + len("--max-model-len ") + 1
    assert (f.span.line, f.span.column, f.span.end_column) == (1, at, at + len(value))


def _needs(f: Finding, c: int, block: int) -> int:
    need = f.formulas[0]
    assert (need.name, need.expression) == ("kv_needed_bytes", "ceil(c/block)·block·kv_B")
    assert dict(need.values) == {"c": c, "block": block, "kv_B": KV_B}
    assert need.result == -(-c // block) * block * KV_B
    pool, tokens = f.formulas[1], f.formulas[2]
    assert pool.name == "pool_bytes_per_gpu" and tokens.name == "kv_pool_tokens"
    # the shortfall: what one sequence needs is more than the pool holds
    assert need.result > pool.result and tokens.result < c
    return int(tokens.result)


def test_vllm_refuses() -> None:
    # c = 40,960: 40,960·262,144 B = 10.00 GiB needed, far over the 8.62 GiB pool (more than
    # the 1 GiB error band short)
    text = f"{Q32} --max-model-len 40960"
    f = only(lint_text(text), "TP204")
    assert f.severity == Severity.ERROR
    _len_span(f, text)
    tokens = _needs(f, 40960, 16)
    assert f.formulas[0].result - f.formulas[1].result > GIB
    assert "need 10.00 GiB of KV per GPU" in f.message
    assert "vLLM refuses to start" in f.text
    assert f"the largest --max-model-len that fits is {tokens:,}" in f.text
    assert f.fix == (f"set --max-model-len {tokens} or less, use a larger TP (up to h_kv), an "
                     "fp8 KV cache, or raise gpu-memory-utilization")


def test_shortfall_inside_the_error_band_is_a_warning() -> None:
    # c = 36,000: 36,000·262,144 B = 8.79 GiB, 175.50 MiB over the pool: inside the 1 GiB band
    text = f"{Q32} --max-model-len 36000"
    f = only(lint_text(text), "TP204")
    assert f.severity == Severity.WARNING
    _needs(f, 36000, 16)
    assert 0 < f.formulas[0].result - f.formulas[1].result <= GIB
    assert "is inside tpcheck's pool error band (1.00 GiB): the refusal is likely" in f.text
    # the headline says no more than that evidence
    assert f.message.endswith(": vLLM likely refuses to start")


def test_the_block_size_as_written() -> None:
    # c = 36,001 with --block-size 128: ceil(36,001/128)·128 = 36,096 tokens of cache (with
    # vLLM's default 16: 36,016); the pool's tokens are whole 128-token blocks
    text = f"{Q32} --max-model-len 36001 --block-size 128"
    f = only(lint_text(text), "TP204")
    tokens = _needs(f, 36001, 128)
    assert f.formulas[0].result == 36_096 * KV_B
    assert tokens % 128 == 0 and dict(f.formulas[2].values)["block"] == 128


def test_empty_pool() -> None:
    # u = 0.79: M·u = 67.18 GB holds the 65.52 GB of weights (no TP205) but not the reserve:
    # M·u − W − R < 0, so no block at all
    text = f"{Q32} --max-model-len 8192 --gpu-memory-utilization 0.79"
    f = only(lint_text(text), "TP204")
    assert f.severity == Severity.ERROR
    assert f.formulas[1].values["u"] == 0.79 and f.formulas[1].result < 0
    assert _needs(f, 8192, 16) == 0
    assert '"No available memory for the cache blocks."' in f.text
    # the fraction as written is the first thing to raise; no "largest length that fits is 0"
    assert f.fix == ("the pool is empty at --gpu-memory-utilization 0.79: raise it, use a "
                     "larger TP or a GPU with more memory")
    assert "the largest --max-model-len that fits" not in f.text


def test_sglang_starts_and_warns() -> None:
    # SGLang's pool is T·mfs − W (one-token pages); it does not refuse, it warns at start-up
    text = "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --context-length 40960"
    f = only(lint_text(text), "TP204")
    assert f.severity == Severity.WARNING
    at = text.index("40960") + 1
    assert (f.span.column, f.span.end_column) == (at, at + 5)
    tokens = _needs(f, 40960, 1)
    assert f.formulas[1].expression == "T·mfs − W_gpu"
    assert f.message.endswith(": one request does not fit")
    assert f"KV pool holds {tokens} tokens, fewer than --context-length 40960" in f.text
    assert (f.fix or "").startswith(f"set --context-length {tokens} or less")


@pytest.mark.parametrize("text", [
    f"{Q32} --max-model-len 32768",  # 8.00 GiB needed, 8.62 GiB pool
    # weights over M·u: TP205 speaks, not TP204
    "vllm serve meta-llama/Llama-3.1-70B-Instruct --max-model-len 8192",
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text) if f.code == "TP204"] == []
