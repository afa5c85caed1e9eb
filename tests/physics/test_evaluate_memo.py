"""``plan.evaluate`` by concern, and the run's bounded memo (issue 30): a layout asked again at
another batch reuses everything but the decode step; the memo keeps only its most recent
layouts; a layout evaluated with or without the memo gives the same figures."""

from __future__ import annotations

from tests.physics.test_step import shape_of
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics.plan import Memo, Options, capacity, evaluate
from tpcheck.record import replace

H100 = find_gpu("h100-sxm")
LLAMA70 = "meta-llama/Meta-Llama-3-70B-Instruct"


def test_another_batch_reuses_the_capacity_and_recomputes_only_the_step() -> None:
    shape = shape_of(LLAMA70)
    opts = Options(gpu=H100, context=8192)
    memo = Memo()
    one = evaluate(shape, 8, opts, memo)
    eight = evaluate(shape, 8, replace(opts, batch=8), memo)
    # the same pool, seats and reserve objects: computed once
    assert eight.pool is one.pool and eight.seats is one.seats and eight.reserve is one.reserve
    assert one.step is not None and eight.step is not None and one.floor is not None
    assert eight.batch == 8 and one.batch == 1
    # 8 sequences read the weights once per step and their own KV 8 times: a longer step
    assert eight.floor is not None and eight.floor.result > one.floor.result
    # entries: the layout, its capacity at batch 1, the whole of it at batch 1 and at batch 8
    assert len(memo) == 4
    assert evaluate(shape, 8, replace(opts, batch=8), memo) is eight


def test_with_or_without_the_memo_the_figures_are_the_same() -> None:
    shape = shape_of(LLAMA70)
    for eng in ("vllm", "sglang"):
        opts = Options(engine=eng, gpu=H100, batch=4, context=4096)
        for t in (1, 2, 4, 8, 16):
            assert evaluate(shape, t, opts) == evaluate(shape, t, opts, Memo())
        # no memory figure without a GPU: the capacity alone, no step
        bare = evaluate(shape, 8, replace(opts, gpu=None))
        assert bare.memory is None and bare.step is None
        assert bare == capacity(shape, 8, replace(opts, gpu=None, batch=1))


def test_the_memo_keeps_only_its_most_recent_layouts() -> None:
    shape = shape_of(LLAMA70)
    memo = Memo(size=4)
    for c in range(1024, 1024 + 10):
        evaluate(shape, 8, Options(gpu=H100, context=c), memo)
    # each context is 3 entries (layout, capacity, whole), in that order; of the 30 the last 4
    # are 1032's whole and all of 1033
    assert len(memo) == 4
    kept = {key[2].context for key in memo}
    assert kept == {1032, 1033}


def test_the_capacity_alone_has_every_figure_but_the_step() -> None:
    """What TP204 asks of up to 14 layouts (does it start, what pool it leaves) without the
    decode step; the same figures as the whole evaluation, and it is reused by it."""
    from tpcheck.physics.plan import evaluate_capacity

    shape = shape_of(LLAMA70)
    memo = Memo()
    for t in (1, 2, 4, 8):
        opts = Options(gpu=H100, context=8192, batch=4)
        cap = evaluate_capacity(shape, t, opts, memo)
        whole = evaluate(shape, t, opts, memo)
        assert cap.step is None and cap.floor is None and cap.prefill is None
        assert whole.step is not None and whole.pool is cap.pool
        assert (cap.fits, cap.weights, cap.tokens, cap.seats) == (
            whole.fits, whole.weights, whole.tokens, whole.seats)
    # Llama-3-70B's 131.4 GiB of bf16 weights exceed one H100's M·u = 79.2·0.92 = 72.9 GiB;
    # at t = 2, 65.7 GiB per GPU leave a pool (72.9 − 65.7 − the reserve ≈ 4.2 GiB)
    fits = [evaluate_capacity(shape, t, Options(gpu=H100, context=8192), memo)
            for t in (1, 2, 4)]
    assert [e.fits for e in fits] == [False, True, True]
    assert round(fits[1].weights.result / 2**30, 1) == 65.7
