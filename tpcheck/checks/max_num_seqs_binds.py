"""TP203 max-num-seqs-binds: the scheduler's cap, not memory, decides how many sequences run."""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import Rule
from tpcheck.formula import Formula, count

SGLANG_PER_WORKER = ("sglang 0.5.23 mem_cache/kv_cache_configurator.py:3119-3172 "
                     "resolve_max_num_reqs: per_worker = max(1, R // attn_dp_size)")
# The option waste-factor (its row in checks.registry, rules/TP203.md): a pool holding more than
# this many times what max-num-seqs can use is a warning, and a written max-num-seqs more than
# this many times the seats says memory binds. Below 1 the two branches would overlap (a cap
# both under and far over the seats), so the row's minimum is 1.

PREFILL_HOLDS = (
    "vllm 0.33.0 v1/core/sched/scheduler.py:3058-3060 (delay_free_blocks), "
    "distributed/kv_transfer/kv_connector/v1/nixl/pull_scheduler.py:246-262; sglang 0.5.23 "
    "disaggregation/prefill.py:1034 (disagg_prefill_inflight_queue), :1151-1228"
)


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    ev = ctx.capacity
    if ev.refusals or ev.seats is None or ev.max_num_seqs is None or ev.fits is False:
        return  # no pool (TP205/TP204 say why): there are no seats to compare with
    waste: float = ctx.option(rule, "waste-factor")
    s = ctx.shape
    assert s is not None
    seats, cap = int(ev.seats.result), int(ev.max_num_seqs.result)
    d = ctx.deployment
    flag = "--max-running-requests" if d.engine == "sglang" else "--max-num-seqs"
    explicit = d.max_num_seqs is not None
    origin = "set in the deployment" if explicit else f"engine default: {ev.max_num_seqs.source}"
    c = ctx.context[0]
    span = d.span_of("max_num_seqs", "tensor_parallel_size", "model")
    per_worker: tuple[Formula, ...] = ()
    written, scale = cap, 1  # the flag as written; workers sharing it
    if d.engine == "sglang" and explicit and ctx.attn_dp > 1:
        # Like with like: seats are one attention-DP rank's pool, and SGLang gives each DP
        # worker R // attn_dp of the written --max-running-requests.
        pw = Formula("max_running_requests_per_worker", "max(1, R // attn_dp)",
                     {"R": cap, "attn_dp": ctx.attn_dp}, max(1, cap // ctx.attn_dp),
                     "sequences", SGLANG_PER_WORKER)
        per_worker = (pw,)
        origin = (f"set in the deployment; {cap} // attn_dp {ctx.attn_dp} = {int(pw.result)} "
                  "per attention-DP worker, each with its own pool")
        cap, scale = int(pw.result), ctx.attn_dp
    cmp = Formula(
        "binding_limit",
        "min(max_num_seqs, seats)",
        {"max_num_seqs": cap, "seats": seats},
        min(cap, seats),
        "sequences",
        "DESIGN.md",
    )
    if cap < seats and d.pd_role == "prefill":
        # A prefill-only server keeps a finished prefill's KV blocks until the decode server
        # has read them, outside the running batch --max-num-seqs caps (PREFILL_HOLDS): the
        # seats past the cap hold those transfers, they are not empty.
        return
    if cap < seats:
        # MLA and DeepSeek-V4 cache one latent whole on every rank: no head axis, no cliff.
        past_cliff = not s.latent_cache and ctx.tp > s.kv_heads > 0
        sev = Severity.WARNING if (past_cliff or seats > waste * cap) else Severity.INFO
        yield ctx.finding(
            rule,
            f"{flag} {written} binds before memory: {seats - cap:,} of {seats:,} KV seats stay "
            "empty",
            notes=(f"{flag} = {written} ({origin})",
                   f"the pool seats {count(seats, 'sequence')} of {c:,} tokens, so at most {cap:,} "
                   "run; "
                   "more memory or a larger TP changes nothing measurable",
                   f"t={ctx.tp} is also past the KV-head cliff h_kv={s.kv_heads}"
                   if past_cliff else ""),
            assumptions=(ctx.context_said(),),
            span=span,
            severity=sev,
            formulas=(cmp, ev.seats, ev.max_num_seqs, *per_worker),
            fix=f"raise {flag} toward {seats * scale}, or serve the same load with fewer GPUs",
        )
    elif explicit and cap > waste * max(seats, 1) and ev.tokens is not None:
        tokens = int(ev.tokens.result)
        avg = Formula("avg_tokens_at_cap", "kv_pool_tokens / max_num_seqs",
                      {"kv_pool_tokens": tokens, "max_num_seqs": cap}, tokens // cap, "tokens",
                      "DESIGN.md (which limit binds)")
        yield ctx.finding(
            rule,
            f"{flag} {written} is {_ratio(cap, max(seats, 1))}× the {count(seats, 'KV seat')}: the "
            "scheduler preempts",
            notes=(f"{flag} = {written} ({origin})" if per_worker else "",
                   f"the KV pool holds {count(seats, 'sequence')} of {c:,} tokens; with {cap:,} "
                   f"sequences running, memory binds as soon as they average more than "
                   f"{tokens:,} / {cap:,} = {tokens // cap:,} tokens, and the scheduler then "
                   "preempts"),
            assumptions=(ctx.context_said(),),
            span=span,
            formulas=(avg, cmp, ev.seats, ev.max_num_seqs, *per_worker),
            fix=f"size {flag} for the expected sequence length (about kv_pool_tokens / typical "
            "tokens per sequence), or shorten the context",
        )


def _ratio(a: int, b: int) -> int:
    """a / b rounded half up, in integers: a 400-digit --max-num-seqs overflowed the float
    division (found by bench/hostile.py --fuzz)."""
    return (2 * a + b) // (2 * b)
