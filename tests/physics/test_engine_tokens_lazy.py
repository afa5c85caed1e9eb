"""vLLM's printed KV size (``Evaluation.engine_tokens``) is priced when read, from the figures
the pool kept: the same Formula as pricing it with the pool, once per evaluation, and None for
SGLang."""

from __future__ import annotations

from tests.physics.test_step import shape_of
from tpcheck.engines.defaults import defaults_for
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics import kv
from tpcheck.physics.plan import Options, evaluate_capacity
from tpcheck.physics.plan_records import engine_tokens_for
from tpcheck.record import replace

H100 = find_gpu("h100-sxm")


def test_printed_tokens_priced_when_read() -> None:
    split = kv.engine_layer_split
    calls: list[int] = []

    def counted(*args: object, **kw: object) -> object:
        calls.append(1)
        return split(*args, **kw)  # type: ignore[arg-type]

    for model in ("meta-llama/Meta-Llama-3-70B-Instruct", "google/gemma-3-12b-it",
                  "deepseek-ai/DeepSeek-V2-Lite"):
        shape = shape_of(model)
        for t, dtype in ((2, None), (4, "fp8"), (8, None)):
            opts = Options(gpu=H100, context=8192, kv_cache_dtype=dtype)
            kv.engine_layer_split = counted  # type: ignore[assignment]
            try:
                calls.clear()
                ev = evaluate_capacity(shape, t, opts)
                assert calls == []  # the capacity alone prices no printed figure
                assert ev.tokens is not None and ev.pool is not None
                assert ev.concurrency is not None
                got = ev.engine_tokens
                assert ev.engine_tokens is got and len(calls) == 1  # priced once
                copy = replace(ev, batch=2)
                assert copy == replace(ev, batch=2)
            finally:
                kv.engine_layer_split = split
            # the figure the pool priced it with before it was deferred
            want = engine_tokens_for(
                shape, t, opts.kv_cache_dtype, defaults_for("vllm").version, ev.pool.result,
                ev.block, ev.concurrency.result, int(ev.context.result), 1, 1)
            assert got == want and copy.engine_tokens == want, (model, t, dtype)
    sgl = evaluate_capacity(shape_of("google/gemma-3-12b-it"), 2,
                            Options(engine="sglang", gpu=H100, context=8192))
    assert sgl.tokens is not None and sgl.engine_tokens is None
