"""Every layout a GPU budget allows, evaluated and ranked: what ``tpcheck plan --gpus N`` prints.

A layout is t × p × r (tensor, pipeline, data-parallel replicas) = N GPUs, and for MoE models
with and without expert parallel, for SGLang attention DP inside the TP group. Each is evaluated
by ``plan.evaluate`` (the figures every rule uses) and scored two ways:

- throughput: decode tokens/s per GPU at the batch its seats admit, min(seats, p·max-num-seqs)
  per replica. With p > 1 the engine keeps p batches in flight (vLLM's max_concurrent_batches =
  PP size, vllm 0.33.0 config/vllm.py l.588-598), each of b/p sequences, so a replica delivers
  (b/p) / (T_stage(b/p) + T_send) tokens/s, T_send being one stage boundary's activations.
- latency: the time of one token at batch 1, p·(T_stage(1) + T_send).

Figures within ``TIE`` of the best are not told apart by the step model; among them the layout
whose replica stays inside one node wins (no multi-node launch, no traffic on the network), then
the one without pipeline stages, then (throughput) the one with more seats, (latency) the
fastest: the seeds' advice (throughput: the smallest TP that fits, the rest as DP; latency: TP up
to the NVLink domain, not past h_kv).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tpcheck.formula import Formula
from tpcheck.hardware.links import find_link
from tpcheck.models.shape import ModelShape
from tpcheck.physics import kv
from tpcheck.physics import step as stepmodel
from tpcheck.physics.legality import Refusal
from tpcheck.physics.plan import DEFAULT_ALPHA, Evaluation, Memo, Options, evaluate
from tpcheck.record import record, replace

# The floor overstates a TP doubling's gain by +9.9% to +24.3% on the published series, the
# calibrated step by -5.6% to +3.7% (bench/step_table.py, "TP-doubling gain per series"):
# rates closer than that are not told apart.
TIE_FLOOR = 0.10
TIE_CALIBRATED = 0.06
SEEDS = "seeds/tp-inference-deployer.txt §5, TP degree: latency vs throughput"
PP_BATCHES = "vllm 0.33.0 config/vllm.py l.588-598 (max_concurrent_batches = PP size)"
NETWORK_LINK = "ib-ndr"  # a stage boundary that crosses nodes: one NIC per GPU (assumed)
GOALS = ("throughput", "latency")


@record
class Layout:
    """t × p × r GPUs; ``ep``: MoE experts whole per GPU; ``attn_dp``: SGLang attention DP."""

    tp: int
    pp: int = 1
    dp: int = 1
    ep: bool = False
    attn_dp: int = 1
    # vLLM's DP ranks of a MoE model are one engine: the MoE layers span all t·p·dp GPUs
    coupled: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def per_replica(self) -> int:
        """GPUs that fail, start and scale together: a replica, or every coupled DP rank."""
        return self.gpus if self.coupled else self.tp * self.pp

    @property
    def label(self) -> str:
        core = f"TP {self.tp}" + (f" × PP {self.pp}" if self.pp > 1 else "")
        extra = (" EP" if self.ep else "") + (f" attn-DP {self.attn_dp}" if self.attn_dp > 1
                                              else "")
        if self.coupled:
            return f"{core} × DP {self.dp}{extra}"
        return (f"{self.dp} × {core}" if self.dp > 1 else core) + extra


@record
class Ranked:
    """One layout's figures; ``refused`` says why it cannot serve a sequence of c tokens."""

    layout: Layout
    evaluation: Evaluation  # at batch 1 (the latency figure's)
    refusals: tuple[Refusal, ...] = ()
    refused: str | None = None  # "" kinds: does-not-start, no-seat; None: it serves
    refused_kind: str | None = None  # refusal, does_not_start, no_seat
    seats: int = 0  # per replica (every attention-DP rank's)
    batch: int = 0  # sequences each replica steps at once (per batch in flight: batch / p)
    tokens_per_s_per_gpu: Formula | None = None
    token_latency: Formula | None = None  # seconds per output token at batch 1
    comm_share: Formula | None = None
    at_batch: Evaluation | None = None
    nodes_per_replica: int = 1

    @property
    def seats_total(self) -> int:
        return self.seats * self.layout.dp

    @property
    def serves(self) -> bool:
        return self.refused is None

    @property
    def basis(self) -> str:
        st = (self.at_batch or self.evaluation).step
        return "-" if st is None else ("calibrated" if st.calibrated else "floor")


@record
class Plan:
    """The ranked layouts for one goal and the recommendation for each goal."""

    gpus: int
    goal: str
    layouts: tuple[Ranked, ...]
    recommended: dict[str, Ranked | None]


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@record
class Only:
    """What the command line fixes of a layout (None: every value): --dp, --tp, --pp,
    --enable-expert-parallel, --attn-dp."""

    dp: int | None = None
    tps: tuple[int, ...] | None = None
    pp: int | None = None
    ep: bool | None = None
    attn_dp: int | None = None

    def admits(self, lay: Layout) -> bool:
        return ((self.dp is None or lay.dp == self.dp)
                and (self.tps is None or lay.tp in self.tps)
                and (self.pp is None or lay.pp == self.pp)
                and (self.ep is None or lay.ep == self.ep)
                and (self.attn_dp is None or lay.attn_dp == self.attn_dp))


def layouts(shape: ModelShape, gpus: int, engine: str, *,
            dp: int | None = None, only: Only | None = None) -> Iterator[Layout]:
    """Every t × p × r = ``gpus`` (p ≤ layers); ``dp`` fixes r, ``only`` what else is given.
    MoE: with and without EP; SGLang on MoE/MLA models: attention DP over each divisor of t."""
    moe = shape.moe is not None
    attn = engine == "sglang" and (moe or shape.latent_cache)
    for r in divisors(gpus):
        if dp is not None and r != dp:
            continue
        for p in divisors(gpus // r):
            if p > max(shape.layers, 1):
                continue
            t = gpus // r // p
            group = t * r if engine == "vllm" else t  # the MoE layers' width (EP over it)
            for ep in ((False, True) if moe and group > 1 else (False,)):
                for a in (divisors(t) if attn else [1]):
                    lay = Layout(t, p, r, ep, a, coupled=moe and engine == "vllm" and r > 1)
                    if only is None or only.admits(lay):
                        yield lay


def _nodes(gpus: int, per_node: int | None) -> int:
    return 1 if not per_node else -(-gpus // per_node)


def stage_send(shape: ModelShape, opts: Options, lay: Layout, batch: int) -> Formula | None:
    """One stage boundary's activations, b·d·bytes, sent by each rank to its peer of the next
    stage: over the network when the pipeline spans nodes (a NIC per GPU, assumed), else the
    GPU's link. None at p = 1."""
    if lay.pp <= 1:
        return None
    gpu = opts.gpu
    per_node = opts.gpus_per_node or (gpu.nvlink_domain if gpu is not None else None)
    b = kv.dtype_bytes(kv.activation_dtype(shape.dtype, opts.dtype))
    size = batch * shape.hidden * b
    across = per_node is not None and lay.tp * lay.pp > per_node
    net = find_link(NETWORK_LINK) if across else None
    if net is not None:
        bw, alpha, src = net.bandwidth, net.alpha, f"{net.name} ({net.source}; assumed)"
    elif gpu is not None:
        bw, alpha, src = gpu.link_bandwidth, DEFAULT_ALPHA, gpu.source
    else:
        return None
    return Formula("T_send", "α + b·d·bytes / B", {"α": alpha, "b": batch, "d": shape.hidden,
                   "bytes": b, "B": bw}, alpha + size / bw, "s", src)


def _score(shape: ModelShape, opts: Options, lay: Layout, ev: Evaluation,
           memo: Memo) -> Ranked:
    """A layout that starts: its seats, the batch they admit and the two goals' figures."""
    # With attention DP each rank serves its own requests from its own cache (as TP202 counts)
    ranks = lay.attn_dp
    seats = int(ev.seats.result) * ranks if ev.seats is not None else 0
    per_node = opts.gpus_per_node or (opts.gpu.nvlink_domain if opts.gpu is not None else None)
    nodes = _nodes(lay.per_replica, per_node)
    base = Ranked(lay, ev, seats=seats, nodes_per_replica=nodes)
    if seats <= 0:
        return replace(base, refused=f"starts, but seats 0 sequences of "
                       f"{int(ev.context.result):,} tokens", refused_kind="no_seat")
    limit = int(ev.max_num_seqs.result) if ev.max_num_seqs is not None else seats
    batch = min(seats // ranks, limit * lay.pp) * ranks  # each rank: at most max-num-seqs
    micro = max(1, batch // lay.pp // ranks)
    at = evaluate(shape, lay.tp, replace(opts, batch=micro), memo)
    send_b, send_1 = stage_send(shape, opts, lay, micro), stage_send(shape, opts, lay, 1)
    if at.step is None or ev.step is None:
        return replace(base, batch=batch, at_batch=at)
    interval = Formula("T_interval", "T_stage(b/p) + T_send",
                       {"T_stage": at.step.result, "T_send": send_b.result if send_b else 0.0},
                       at.step.result + (send_b.result if send_b else 0.0), "s",
                       at.step.source, (at.step,) + ((send_b,) if send_b else ()))
    rate = Formula("tokens_per_s_per_gpu", "(b/p) / T_interval / (t·p)",
                   {"b": batch, "p": lay.pp, "T_interval": interval.result, "t": lay.tp},
                   micro * ranks / interval.result / (lay.tp * lay.pp), "tokens/s",
                   PP_BATCHES if lay.pp > 1 else at.step.source, (interval,))
    one = ev.step.result + (send_1.result if send_1 else 0.0)
    lat = Formula("token_latency", "p·(T_stage(1) + T_send)",
                  {"p": lay.pp, "T_stage": ev.step.result,
                   "T_send": send_1.result if send_1 else 0.0},
                  lay.pp * one, "s", ev.step.source, (ev.step,))
    return replace(base, batch=batch, at_batch=at, tokens_per_s_per_gpu=rate,
                   token_latency=lat, comm_share=at.comm_share)


def launch_dp(opts: Options, lay: Layout) -> int:
    """The data-parallel size the engine of one replica is started with: every rank of a coupled
    (MoE) layout; else the replicas that share a node's launch (``--data-parallel-size``), 1 for a
    replica launched alone (a node of its own): a separate instance, whose figures are the
    single-instance ones (vLLM's all-reduce fusion workspace needs dp = 1, memory.py)."""
    if lay.coupled:
        return lay.dp
    per_node = opts.gpus_per_node or (opts.gpu.nvlink_domain if opts.gpu is not None else None)
    per = lay.tp * lay.pp
    if per_node is None or per_node < per:
        return 1
    return max(1, min(lay.dp, per_node // per))


def rank_one(shape: ModelShape, opts: Options, lay: Layout, memo: Memo) -> Ranked:
    """One layout evaluated at batch 1, then (when it serves) at the batch its seats admit."""
    o = replace(opts, pp=lay.pp, dp=launch_dp(opts, lay), expert_parallel=lay.ep,
                attn_dp=lay.attn_dp, batch=1)
    ev = evaluate(shape, lay.tp, o, memo)
    if ev.refusals:
        return Ranked(lay, ev, refusals=ev.refusals, refused="refused",
                      refused_kind="refusal")
    if ev.fits is False:
        return Ranked(lay, ev, refused="does not start: " + ev.fit_reason(),
                      refused_kind="does_not_start")
    if ev.seats is None:  # no GPU and no --hbm: nothing to rank by
        return Ranked(lay, ev)
    return _score(shape, o, lay, ev, memo)


def _metric(r: Ranked, goal: str) -> float | None:
    """Higher is better; throughput without a step time (--hbm, no bandwidth): the seats."""
    if goal == "latency":
        return None if r.token_latency is None else -r.token_latency.result
    if r.tokens_per_s_per_gpu is None:
        return float(r.seats_total) if r.serves and r.seats_total and r.at_batch is not None \
            and r.at_batch.step is None else None
    return r.tokens_per_s_per_gpu.result


def tie(r: Ranked) -> float:
    return TIE_CALIBRATED if r.basis == "calibrated" else TIE_FLOOR


def order(items: Sequence[Ranked], goal: str) -> list[Ranked]:
    """Serving layouts by the goal's figure, those within ``TIE`` of the best first in the
    seeds' order (one node per replica, no pipeline, more seats); then the refused."""
    serving = [r for r in items if r.serves and _metric(r, goal) is not None]
    rest = [r for r in items if r not in serving]
    serving.sort(key=lambda r: -(_metric(r, goal) or 0.0))
    if serving:
        best = serving[0]
        top = _metric(best, goal) or 0.0
        band = abs(top) * tie(best)
        near = [r for r in serving if (_metric(r, goal) or 0.0) >= top - band]
        # latency: among those, the fastest (a user who asks for latency gets the lowest
        # ms/token the step model gives); throughput: more seats, then the faster
        near.sort(key=lambda r: (r.nodes_per_replica, r.layout.pp)
                  + ((-(_metric(r, goal) or 0.0), -r.seats_total) if goal == "latency"
                     else (-r.seats_total, -(_metric(r, goal) or 0.0))))
        serving = near + [r for r in serving if r not in near]
    rest.sort(key=lambda r: (not r.serves, -r.seats_total, r.layout.gpus))
    return serving + rest


def recommend(shape: ModelShape, opts: Options, gpus: int, *, goal: str = "throughput",
              dp: int | None = None, memo: Memo | None = None, only: Only | None = None) -> Plan:
    """Every layout of ``gpus`` GPUs (those ``only`` admits) ranked for ``goal``, and the best
    for each goal."""
    memo = memo if memo is not None else Memo()
    ranked = [rank_one(shape, opts, lay, memo)
              for lay in layouts(shape, gpus, opts.engine, dp=dp, only=only)]
    rec: dict[str, Ranked | None] = {}
    for g in GOALS:
        first = order(ranked, g)
        rec[g] = first[0] if first and first[0].serves and _metric(first[0], g) is not None \
            else None
    return Plan(gpus, goal, tuple(order(ranked, goal)), rec)


def tokens_per_gpu(r: Ranked) -> float | None:
    return None if r.tokens_per_s_per_gpu is None else float(r.tokens_per_s_per_gpu.result)


def basis_label(r: Ranked) -> str:
    st = (r.at_batch or r.evaluation).step
    return "-" if st is None else stepmodel.basis(st)
