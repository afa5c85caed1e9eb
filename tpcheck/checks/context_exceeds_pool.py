"""TP204 context-exceeds-pool: one max-length sequence does not fit the predicted KV pool."""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import AUTO_FIT, CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula, fmt_bytes
from tpcheck.physics.memory import POOL_ERROR_BAND
from tpcheck.sources.base import Deployment


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    ev = ctx.capacity  # the step is not needed: no decode step priced
    if ev.refusals or ev.tokens is None or ev.pool is None or ev.memory is None:
        return
    budget = ev.budget  # vLLM M·u, SGLang T·mfs
    if budget is not None and ev.weights.result > budget.result:
        return  # TP205 says it: the weights alone do not fit
    c = ctx.context[0]
    tokens = int(ev.tokens.result)
    need_tokens = -(-c // ev.block) * ev.block
    if tokens >= need_tokens:
        return
    ctx.verdict_holds()
    d = ctx.deployment
    need = Formula(
        "kv_needed_bytes",
        "ceil(c/block)·block·kv_B",
        {"c": c, "block": ev.block, "kv_B": ev.kv_bytes_per_token.result},
        need_tokens * ev.kv_bytes_per_token.result,
        "B",
        "vllm 0.33.0 v1/core/kv_cache_planning.py _check_enough_kv_cache_memory",
    )
    pool = max(ev.pool.result, 0)
    if d.engine == "sglang":  # managers/tp_worker.py get_worker_info: a warning, not a refusal
        engine_msg = (f"KV pool holds {tokens} tokens, fewer than --context-length {c}. One "
                      "full-length request cannot fit, so long requests will be refused or "
                      "truncated at serving time.")
    elif d.max_model_len == AUTO_FIT:  # the auto-fit found no length (tokens <= 0)
        engine_msg = ("Cannot auto-fit max_model_len: not enough GPU memory available to serve "
                      "even a single token.")  # vllm 0.33.0 v1/core/kv_cache_planning.py:1379-1383
    elif ev.pool.result <= 0:
        engine_msg = "No available memory for the cache blocks."
    else:
        engine_msg = (
            f"To serve at least one request with the model's max seq len ({c}), "
            f"({fmt_bytes(need.result)} KV cache is needed, which is larger than the "
            f"available KV cache memory ({fmt_bytes(pool)})."
        )
    flag = "--context-length" if d.engine == "sglang" else "--max-model-len"
    sev = Severity.WARNING if d.engine == "sglang" else Severity.ERROR
    what = (
        "one request does not fit"
        if d.engine == "sglang"
        else "vLLM refuses to start"
    )
    largest = tokens
    short = need.result - ev.pool.result
    band = ""
    if d.engine != "sglang" and short <= POOL_ERROR_BAND:
        sev = Severity.WARNING
        band = (f"the shortfall, {fmt_bytes(short)}, is inside tpcheck's pool error band "
                f"({fmt_bytes(POOL_ERROR_BAND)}): the refusal is likely, not certain")
        what = "vLLM likely refuses to start"  # the headline says no more than the evidence
    yield ctx.finding(
        rule,
        f"{c:,} tokens need {fmt_bytes(need.result)} of KV per GPU, the pool holds "
        f"{fmt_bytes(pool)}: {what}",
        notes=(f"the predicted pool holds {tokens:,} tokens; the largest {flag} that fits is "
               f"{largest:,}" if largest > 0 else "", f'the engine says: "{engine_msg}"', band),
        assumptions=(ctx.context_said(),),
        span=d.span_of("max_model_len", "tensor_parallel_size", "model"),
        severity=sev,
        formulas=(need, ev.pool, ev.tokens),
        fix=(
            f"set {flag} {largest} or less, use a larger TP (up to h_kv), an fp8 KV cache, or "
            "raise gpu-memory-utilization"
        )
        if largest > 0
        else _empty_pool_fix(d),
    )


def _empty_pool_fix(d: Deployment) -> str:
    """An empty pool: a memory fraction the user wrote is the first thing to raise."""
    u = d.gpu_memory_utilization
    if u is None:
        return "the pool is empty: use a larger TP or a GPU with more memory"
    flag = "--mem-fraction-static" if d.engine == "sglang" else "--gpu-memory-utilization"
    return f"the pool is empty at {flag} {u}: raise it, use a larger TP or a GPU with more memory"
