"""The second half of the TP bill: two all-reduces per layer, and when they stop paying.

Ring all-reduce of S bytes over t ranks sends 2(t−1)/t·S per rank (nccl-tests' derivation);
T_AR ≈ α + 2(t−1)/t·S/B. Seeds: tp-engines-chapter.txt (communication, interconnect intensity)
and tp-inference-deployer.txt §3 and §7.
"""

from __future__ import annotations

from tpcheck.formula import Formula

SEED_COMM = "seeds/tp-engines-chapter.txt (ring all-reduce bill, 2 per block)"
SEED_STEP = "seeds/tp-inference-deployer.txt §3.1, §7 (decode step cost model)"
SEED_INTENSITY = "seeds/tp-engines-chapter.txt (where TP stops paying: interconnect intensity)"


def ring_factor(t: int) -> float:
    return 2 * (t - 1) / t if t > 1 else 0.0


def allreduce_bytes_per_token(
    layers: int, hidden: int, b: float, t: int, embedding: bool = True
) -> Formula:
    """Bytes each rank sends per token of a forward pass: (2L [+1]) · 2(t−1)/t · d·b.

    The layer term is the seeds' figure (4.375 MiB for Llama-3-70B at TP8); the vocab
    embedding's one all-reduce per pass is a separate term.
    """
    per = ring_factor(t) * hidden * b
    layer = Formula(
        "allreduce_layers",
        "2L·2(t−1)/t·d·b",
        {"L": layers, "t": t, "d": hidden, "b": b},
        2 * layers * per,
        "B",
        SEED_COMM,
    )
    terms: tuple[Formula, ...] = (layer,)
    total = layer.result
    if embedding:
        emb = Formula(
            "allreduce_embedding",
            "2(t−1)/t·d·b",
            {"t": t, "d": hidden, "b": b},
            per,
            "B",
            "vllm 0.33.0 VocabParallelEmbedding.forward (one all-reduce)",
        )
        terms = (layer, emb)
        total += emb.result
    expr = "(2L + 1)·2(t−1)/t·d·b" if embedding else "2L·2(t−1)/t·d·b"
    return Formula(
        "allreduce_bytes_per_token_per_gpu",
        expr,
        {"L": layers, "t": t, "d": hidden, "b": b},
        total,
        "B",
        SEED_COMM,
        terms,
    )


def allreduce_time(size_bytes: float, t: int, link_bw: float, alpha: float) -> Formula:
    """T_AR = α + 2(t−1)/t·S/B (0 at t = 1: nothing to reduce)."""
    res = 0.0 if t <= 1 else alpha + ring_factor(t) * size_bytes / link_bw
    return Formula(
        "T_AR",
        "α + 2(t−1)/t·S/B",
        {"α": alpha, "t": t, "S": size_bytes, "B": link_bw},
        res,
        "s",
        SEED_STEP,
    )


def decode_step(
    *,
    weights_per_gpu: float,
    hbm_bw: float,
    batch: int,
    context: int,
    kv_bytes_per_token_per_gpu: float,
    layers: int,
    hidden: int,
    b: float,
    t: int,
    link_bw: float,
    alpha: float,
    embedding_allreduce: bool = True,
) -> Formula:
    """Decode step ≈ weight read + KV read + (2L[+1]) all-reduces of batch·d·b bytes."""
    w = weights_per_gpu / hbm_bw
    kv = batch * context * kv_bytes_per_token_per_gpu / hbm_bw
    n_ar = 2 * layers + (1 if embedding_allreduce else 0)
    ar = allreduce_time(batch * hidden * b, t, link_bw, alpha)
    comm = n_ar * ar.result
    floor = Formula(
        "T_weights", "W_gpu / β", {"W_gpu": weights_per_gpu, "β": hbm_bw}, w, "s", SEED_STEP
    )
    kvf = Formula(
        "T_kv",
        "batch·c·kv_B / β",
        {"batch": batch, "c": context, "kv_B": kv_bytes_per_token_per_gpu, "β": hbm_bw},
        kv,
        "s",
        SEED_STEP,
    )
    commf = Formula(
        "T_comm", "n_AR·T_AR", {"n_AR": n_ar, "T_AR": ar.result}, comm, "s", SEED_STEP, (ar,)
    )
    return Formula(
        "decode_step_seconds",
        "W_gpu/β + batch·c·kv_B/β + n_AR·(α + 2(t−1)/t·batch·d·b/B)",
        {
            "W_gpu": weights_per_gpu,
            "β": hbm_bw,
            "batch": batch,
            "c": context,
            "kv_B": kv_bytes_per_token_per_gpu,
            "n_AR": n_ar,
            "α": alpha,
            "t": t,
            "d": hidden,
            "b": b,
            "B": link_bw,
        },
        w + kv + comm,
        "s",
        SEED_STEP,
        (floor, kvf, commf),
    )


def comm_share(step: Formula) -> Formula:
    """All-reduce time over the weight-read floor of the same step (seeds' 'comm fraction')."""
    t_w = next(x.result for x in step.terms if x.name == "T_weights")
    t_c = next(x.result for x in step.terms if x.name == "T_comm")
    return Formula(
        "comm_share",
        "T_comm / T_weights",
        {"T_comm": t_c, "T_weights": t_w},
        t_c / t_w if t_w else 0.0,
        "",
        SEED_COMM,
    )


def interconnect_intensity(params: float, layers: int, hidden: int, b: float, t: int) -> Formula:
    """FLOPs per byte of TP traffic per rank: I = P / (2·L·(t−1)·d·b)."""
    res = params / (2 * layers * (t - 1) * hidden * b) if t > 1 else float("inf")
    return Formula(
        "interconnect_intensity",
        "P / (2·L·(t−1)·d·b)",
        {"P": params, "L": layers, "t": t, "d": hidden, "b": b},
        res,
        "FLOP/B",
        SEED_INTENSITY,
    )


def breakeven_tp(
    params: float, layers: int, hidden: int, b: float, flops: float, link_bw: float
) -> Formula:
    """The t where I(t) equals the machine's FLOP/s ÷ link bandwidth: t* = 1 + P·B/(2·L·d·b·π)."""
    ratio = flops / link_bw
    res = 1 + params / (2 * layers * hidden * b * ratio)
    return Formula(
        "breakeven_tp",
        "1 + P / (2·L·d·b·(π/B))",
        {"P": params, "L": layers, "d": hidden, "b": b, "π": flops, "B": link_bw},
        res,
        "",
        SEED_INTENSITY,
    )


def prefill_chunk(
    *,
    params_active: float,
    tokens: int,
    t: int,
    flops: float,
    layers: int,
    hidden: int,
    b: float,
    link_bw: float,
    alpha: float,
) -> Formula:
    """A prefill chunk of n tokens: compute 2·P·n/(t·π) against (2L+1) all-reduces of n·d·b."""
    compute = 2 * params_active * tokens / (t * flops)
    ar = allreduce_time(tokens * hidden * b, t, link_bw, alpha)
    comm = (2 * layers + 1) * ar.result
    share = comm / (compute + comm) if compute + comm else 0.0
    return Formula(
        "prefill_comm_share",
        "T_comm / (T_compute + T_comm)",
        {
            "n": tokens,
            "T_compute": compute,
            "T_comm": comm,
            "P": params_active,
            "t": t,
            "π": flops,
            "B": link_bw,
            "α": alpha,
        },
        share,
        "",
        "seeds/tp-inference-deployer.txt §3.2 (prefill messages are bandwidth-bound)",
        (
            Formula(
                "T_compute",
                "2·P·n / (t·π)",
                {"P": params_active, "n": tokens, "t": t, "π": flops},
                compute,
                "s",
                SEED_STEP,
            ),
            Formula(
                "T_comm",
                "(2L + 1)·T_AR",
                {"L": layers, "T_AR": ar.result},
                comm,
                "s",
                SEED_STEP,
                (ar,),
            ),
        ),
    )
