"""plan.starts (issue 30): TP205's what-fits search asks whether up to 14 layouts start, and
most of them hold more weights than vLLM's budget M·u. Then the pool ceil(M·u) − W − R is ≤ 0
whatever the reserve, so the weights alone answer; the verdict must be the one the whole
capacity gives, for every layout, engine and release."""

from __future__ import annotations

import math

from tests.physics.test_step import shape_of
from tpcheck.engines.defaults import KNOWN_RELEASES
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics import plan
from tpcheck.physics.plan import Memo, Options, evaluate_capacity, starts, vllm_budget
from tpcheck.record import replace

H100 = find_gpu("h100-sxm")
A10G = find_gpu("a10g")
LLAMA70 = "meta-llama/Meta-Llama-3-70B-Instruct"
# dense, MoE, MLA, sliding-window, MXFP4
MODELS = (LLAMA70, "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V2-Lite",
          "google/gemma-3-12b-it", "openai/gpt-oss-120b")


def _full(shape: object, t: int, opts: Options) -> bool:
    ev = evaluate_capacity(shape, t, opts)  # type: ignore[arg-type]
    return not ev.refusals and bool(ev.fits)


def test_starts_is_the_capacity_verdict_for_every_layout() -> None:
    versions = (None, *KNOWN_RELEASES["vllm"][:2])
    for model in MODELS:
        shape = shape_of(model)
        for eng in ("vllm", "sglang"):
            for gpu in (H100, A10G, None):
                for v in versions if eng == "vllm" else (None,):
                    opts = Options(engine=eng, gpu=gpu, context=8192, engine_version=v)
                    memo = Memo()
                    for t in (1, 2, 3, 4, 8, 16):
                        for p in (1, 2, 4):
                            o = replace(opts, pp=p)
                            want = _full(shape, t, o)
                            assert starts(shape, t, o) is want, (model, eng, gpu, v, t, p)
                            assert starts(shape, t, o, memo) is want, (model, eng, gpu, v, t, p)


def test_weights_over_the_budget_answer_without_the_reserve() -> None:
    """Llama-3-70B bf16 on one H100: 141,109,510,144 B of weights per GPU against
    ceil(85,031,714,816 · 0.92) = 78,229,177,631 B: no pool whatever the reserve, so no reserve
    is priced. At t = 2 the weights (70,557,122,560 B) are under M·u: the pool decides, and it
    is 4,069,546,394 B > 0."""
    shape = shape_of(LLAMA70)
    opts = Options(gpu=H100, context=8192)
    m, u = vllm_budget(opts) or (0, 0.0)
    assert (m, u) == (85_031_714_816, 0.92)
    assert math.ceil(m * u) == 78_229_177_631
    assert plan.weights(shape, 1, opts).result == 141_109_510_144
    priced: list[int] = []
    reserve = plan.reserve

    def counted(*args: object, **kw: object) -> object:
        priced.append(1)
        return reserve(*args, **kw)  # type: ignore[arg-type]

    plan.reserve = counted  # type: ignore[assignment]
    try:
        assert starts(shape, 1, opts) is False
        assert priced == []
        assert starts(shape, 2, opts) is True
        assert priced == [1]
    finally:
        plan.reserve = reserve
    two = evaluate_capacity(shape, 2, opts)
    assert two.weights.result == 70_557_122_560
    assert two.pool is not None and two.pool.result == 4_069_546_394


def test_fits_without_the_pool_figures_is_the_capacity_verdict() -> None:
    """Past the weights screen, vLLM's verdict comes from the layout's refusals and weights,
    the budget and the reserve, without the pool's tokens and seats (plan._legal_and_fits):
    the same answer as the whole capacity, whether the layout is already kept or not."""
    variants = ({}, {"utilization": 0.5}, {"max_num_seqs": 1}, {"reserve": 60 << 30},
                {"memory": 200 << 30}, {"quantization": "fp8"}, {"dp": 2},
                {"expert_parallel": True}, {"kv_connector": "nixl"}, {"enforce_eager": True},
                {"cpu_offload": 40 << 30}, {"max_num_batched_tokens": 65536},
                {"kv_cache_dtype": "fp8"}, {"batch": 64, "alpha": 0.5})
    for model in MODELS:
        shape = shape_of(model)
        for gpu in (H100, A10G, None):
            for changes in variants:
                opts = Options(gpu=gpu, context=8192, **changes)  # type: ignore[arg-type]
                for t in (1, 2, 3, 4, 8):
                    for p in (1, 3):
                        o = replace(opts, pp=p)
                        ev = evaluate_capacity(shape, t, o)
                        cold, warm = Memo(), Memo()
                        plan.layout_at(shape, t, plan.at_capacity(o), warm)  # layout kept
                        for memo in (cold, warm):
                            assert plan.fits(shape, t, o, memo) == ev.fits, (model, changes, t, p)
                            assert starts(shape, t, o, memo) is (
                                not ev.refusals and bool(ev.fits)), (model, changes, t, p)
                        assert plan._legal_and_fits(shape, t, o, Memo()) == (
                            not ev.refusals, ev.fits), (model, changes, t, p)


def test_fits_prices_no_pool_tokens() -> None:
    """A layout under vLLM's budget is answered without ``kv_pool`` (its tokens, seats and the
    printed KV size): at t = 2 Llama-3-70B fits one H100's pool."""
    shape = shape_of(LLAMA70)
    opts = Options(gpu=H100, context=8192)
    pools = plan.kv_pool
    priced: list[int] = []

    def counted(*args: object, **kw: object) -> object:
        priced.append(1)
        return pools(*args, **kw)  # type: ignore[arg-type]

    plan.kv_pool = counted  # type: ignore[assignment]
    try:
        assert starts(shape, 2, opts, Memo()) is True
        assert plan.fits(shape, 2, opts, Memo()) is True
        assert priced == []
    finally:
        plan.kv_pool = pools
