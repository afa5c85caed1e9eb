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
