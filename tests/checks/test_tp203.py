"""TP203 max-num-seqs-binds, every branch: scheduler binds (info; warning past the KV-head cliff
or when the pool holds over waste-factor× the cap), memory binds (an explicit cap over
waste-factor× the seats), and quiet. The per-attention-DP-worker comparison is in test_fits.py;
the waste-factor option in tests/test_rule_options.py."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text, only, result, seats
from tpcheck.checks.base import Severity

L8 = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192"
# Llama-3.1-8B: L = 32, h_kv = 8, d_h = 128, bf16 → kv_B = 2·32·8·128·2 = 131,072 B per token;
# on an H100 SXM the pool seats 56 sequences of 8,192 tokens (rules/TP203.md), whatever the
# cap (the reserve moves with it by less than one sequence: 56.5 to 56.9).
SEATS_8B = 56


def _cap_column(text: str) -> tuple[int, int]:
    """Columns (1-based, end exclusive) of the --max-num-seqs value on line 1."""
    value = text.rsplit(" ", 1)[1]
    start = text.rindex(" " + value) + 2
    return start, start + len(value)


@pytest.mark.parametrize(("cap", "severity", "why"), [
    # 8 < 56 seats; 56 > 4·8 = 32: the pool holds over 4× what the cap can use → warning
    (8, Severity.WARNING, "waste"),
    # 32 < 56; 56 > 4·32 = 128 is false, t = 1 is not past h_kv = 8 → info
    (32, Severity.INFO, "binds"),
])
def test_scheduler_binds(cap: int, severity: Severity, why: str) -> None:
    text = f"{L8} --max-num-seqs {cap}"
    f = only(lint_text(text), "TP203")
    assert f.severity == severity
    assert (f.span.line, f.span.column, f.span.end_column) == (1, *_cap_column(text))
    assert f.formula is not None and f.formula.name == "binding_limit"
    assert f.formula.expression == "min(max_num_seqs, seats)"
    assert dict(f.formula.values) == {"max_num_seqs": cap, "seats": SEATS_8B}
    assert f.formula.result == min(cap, SEATS_8B) == cap
    assert seats(f) == SEATS_8B
    # 56 − cap seats stay empty, and the fix asks for the seats
    assert f.message == (f"--max-num-seqs {cap} binds before memory: {SEATS_8B - cap} of "
                         f"{SEATS_8B} KV seats stay empty")
    assert f.fix == (f"raise --max-num-seqs toward {SEATS_8B}, or serve the same load with "
                     "fewer GPUs")


def test_scheduler_binds_past_the_kv_head_cliff_is_a_warning() -> None:
    # Qwen3-32B: h_kv = 8, t = 16 > 8. On an H100 at c = 8,192 the pool seats a few hundred
    # (260 with the default cap, TP201's figure; more with a smaller cap, whose reserve is
    # smaller): over 128, under 4·128 = 512, so only the cliff makes it a warning.
    text = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16 --max-model-len 8192 " \
           "--max-num-seqs 128"
    f = only(lint_text(text), "TP203")
    assert f.severity == Severity.WARNING
    assert f.formula is not None
    assert f.formula.values["seats"] == seats(f)
    assert 128 < seats(f) <= 4 * 128
    assert "t=16 is also past the KV-head cliff h_kv=8" in f.notes
    assert (f.span.column, f.span.end_column) == _cap_column(text)


def test_deepseek_v4_is_not_past_a_kv_head_cliff() -> None:
    # V4-Flash, t = 8 on an H100 SXM at c = 65,536: 218 seats (tests/checks/test_tp202.py's
    # 211 at the default cap; the reserve shrinks with a cap of 128; issue 32's fusion workspace
    # at t = 8, 512 MiB for main's 0.27 GiB NCCL estimate, took one). 218 < 4·128 = 512, and
    # h_kv = 1 is V4's one latent, whole on every rank (no head axis): info, no cliff.
    f = only(lint_text("vllm serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 8 "
                       "--max-model-len 65536 --max-num-seqs 128"), "TP203")
    assert result(f, "seats") == 218 and result(f, "binding_limit") == 128
    assert f.severity is Severity.INFO
    assert "cliff" not in f.text


def test_engine_default_cap_names_its_source() -> None:
    # TinyLlama-1.1B (L = 22, h_kv = 4, d_h = 64, bf16 cache: 2·22·4·64·2 = 22,528 B per token)
    # at t = 2 (11,264 B per token per GPU; 23,068,672 B per 2,048-token seat) and c = 2,048
    # seats 3,268 sequences: main's 3,287 less 19, as issue 32 charges t = 2 the 512 MiB fusion
    # workspace for the 0.0625 GiB + 24 MiB NCCL/custom all-reduce estimate (+444,596,224 B,
    # 19.3 seats), less one more: the caching allocator counts each rank's 11 MiB down_proj
    # (2,816·2,048·2 B) as a 12 MiB block (physics/alloc.py), 1 MiB × 22 layers = 22 MiB = one
    # 23,068,672 B seat → 3,267. vLLM 0.33.0's default cap on a GPU of 70 GiB
    # or more is 1024 (engine/arg_utils.py get_batch_defaults l.2940). 3267 > 4·1024 = 4096 is
    # false → info; the span is the TP value, as no cap is written.
    text = "vllm serve TinyLlama/TinyLlama-1.1B-Chat-v0.4 --tensor-parallel-size 2"
    f = only(lint_text(text), "TP203")
    assert f.severity == Severity.INFO
    assert dict(f.formula.values) == {"max_num_seqs": 1024, "seats": 3267}  # type: ignore[union-attr]
    assert "(engine default: 1024 (vllm 0.33.0 engine/arg_utils.py get_batch_defaults" in f.text
    assert (f.span.column, f.span.end_column) == (len(text), len(text) + 1)


def test_memory_binds_when_the_cap_is_far_above_the_seats() -> None:
    # 300 > 4·56 = 224, written: memory binds. The pool's tokens over the cap is the length
    # at which sequences start to be preempted: kv_pool_tokens // 300.
    text = f"{L8} --max-num-seqs 300"
    f = only(lint_text(text), "TP203")
    assert f.severity == Severity.INFO
    assert (f.span.column, f.span.end_column) == _cap_column(text)
    assert f.formula is not None and f.formula.name == "avg_tokens_at_cap"
    assert f.formula.expression == "kv_pool_tokens / max_num_seqs"
    tokens = f.formula.values["kv_pool_tokens"]
    assert isinstance(tokens, int) and tokens // 8192 >= SEATS_8B  # the pool holds the 56 seats
    assert f.formula.result == tokens // 300
    # 300 / 56 = 5.36 → "5×"
    assert f.message == f"--max-num-seqs 300 is 5× the {SEATS_8B} KV seats: the scheduler preempts"
    assert f"{tokens:,} / 300 = {tokens // 300:,} tokens" in f.text
    assert result(f, "binding_limit") == SEATS_8B


@pytest.mark.parametrize("text", [
    f"{L8} --max-num-seqs 56",    # cap = seats: neither binds alone
    f"{L8} --max-num-seqs 224",   # 224 > 4·56 = 224 is false: not far enough above
    L8,                           # default 1024 > 224, but not written: the engine's choice
])
def test_quiet(text: str) -> None:
    assert [f for f in lint_text(text) if f.code == "TP203"] == []


def test_quiet_without_a_gpu() -> None:
    # no GPU: no pool, so no seats to compare with
    assert [f for f in lint_text(f"{L8} --max-num-seqs 8", gpu=None) if f.code == "TP203"] == []
