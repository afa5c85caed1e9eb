"""Decode step time calibrated on published sweeps, not just the weight-read floor (issue 22).

The floor (``comm.decode_step``: weights ÷ HBM bandwidth + KV read + all-reduces) is what a
perfect engine would reach. Published vLLM sweeps measure 1.3–3.9× it, and the excess is close to
a fixed cost per layer and step (kernel launches, norms, rotary, sampling, scheduler), so:

    T_step = max(a·T_mem, T_compute) + c·L + n_AR·α + k·T_bw

T_mem = weights + KV read ÷ HBM bandwidth; n_AR·α + T_bw = the floor's all-reduces on the real
link (fixed cost + bytes ÷ link bandwidth); T_compute = 2·P_active·batch / (t·π·η). k ≥ 1 is
link peak ÷ the bandwidth decode-sized all-reduces reach; it is fitted where the rows separate
it from a and c (else 1, the link peak). a, c, k are fitted per engine-release era and GPU class
on the rows of ``fixtures/observations/step-sweeps.jsonl`` (``fit`` below;
``bench/step_table.py`` prints every row and the leave-one-out errors). Where no era matches,
the step is the floor and the Formula says so, with the range the calibrated eras span.
No public sweep covers t > h_kv (replicated K/V heads): the model's claim stops at t ≤ h_kv.
A TP group wider than a node all-reduces on the network (``linkcost.node_network``).

Prefill (``prefill_chunk``, ``prefill_prompt``) is compute-bound: the chunk's FLOPs at an
efficiency η plus its all-reduces. ``prefill_efficiency`` gives η per engine release and GPU class
from ``PREFILL_ERAS`` (fitted by ``fit_efficiency`` on
``fixtures/observations/prefill-sweeps.jsonl``) and falls back to an assumed η, with "assumed" in
its source, where no row calibrates it — today everywhere: the published TTFT rows found so far
run through the API server and do not fit one η (see that file).
"""

from __future__ import annotations

from collections.abc import Sequence

# ``X as X``: the calibrations by release moved to engines.calibration (issue 29), still read
# as step.X
from tpcheck.engines.calibration import ERAS as ERAS
from tpcheck.engines.calibration import LAMBDA_DOUBT as LAMBDA_DOUBT
from tpcheck.engines.calibration import Era, release_span
from tpcheck.engines.defaults import parse_version
from tpcheck.formula import Formula
from tpcheck.physics import comm
from tpcheck.record import record, replace

SWEEPS = "fixtures/observations/step-sweeps.jsonl"
# Dense tensor-core efficiency at large batch: assumed, not fitted (no clean large-batch decode
# row exists: the published large-batch rows mix chunked prefill into decode steps).
COMPUTE_EFFICIENCY = 0.6


def gpu_class(gpu_key: str) -> str:
    """The family a calibration carries over to: same memory system and kernel generation."""
    if gpu_key.startswith(("h100", "h200", "gh200", "h20")):
        return "hopper"
    if gpu_key.startswith("a100"):
        return "a100"
    return gpu_key


def _release(version: str | None) -> tuple[int, int] | None:
    """MAJOR.MINOR of a release as ``engines.defaults.parse_version`` reads it."""
    pv = parse_version(version)
    return (pv[0], pv[1]) if pv is not None else None


def _covers(e: Era | PrefillEra, engine: str, version: str | None, gpu_key: str) -> bool:
    """Whether a calibration (decode or prefill) holds for this engine release and GPU."""
    rel = _release(version)
    return (rel is not None and e.engine == engine and e.gpu_class == gpu_class(gpu_key)
            and e.low <= rel < e.high)


def _label(e: Era | PrefillEra) -> str:
    return f"{e.engine} {release_span(e.low, e.high)} on {e.gpu_class}"


def era_for(engine: str, version: str | None, gpu_key: str) -> Era | None:
    """The calibration for this engine release on this GPU class, or None (no public sweep)."""
    return next((e for e in ERAS if _covers(e, engine, version, gpu_key)), None)


def _term(floor: Formula, name: str) -> float:
    return next((x.result for x in floor.terms if x.name == name), 0.0)


def compute_time(params_active: float, batch: int, t: int, flops: float,
                 efficiency: float = COMPUTE_EFFICIENCY) -> Formula:
    """Dense matmul time of one decode step: 2·P_active·batch / (t·π·η)."""
    res = 2 * params_active * batch / (t * flops * efficiency)
    return Formula(
        "T_compute",
        "2·P·batch / (t·π·η)",
        {"P": params_active, "batch": batch, "t": t, "π": flops, "η": efficiency},
        res,
        "s",
        f"η assumed ({SWEEPS} has no clean large-batch decode row)",
    )


def comm_split(floor: Formula) -> tuple[float, float]:
    """The floor's all-reduce time as (fixed part n_AR·α, bandwidth part)."""
    v = floor.values
    t_comm = _term(floor, "T_comm")
    n_ar, alpha, t = v.get("n_AR"), v.get("α"), v.get("t")
    ok = isinstance(n_ar, int | float) and isinstance(alpha, int | float)
    fixed = float(n_ar) * float(alpha) if ok and isinstance(t, int) and t > 1 else 0.0  # type: ignore[arg-type]
    return fixed, max(t_comm - fixed, 0.0)


NO_SWEEP = "no published sweep for this release and GPU"
NOT_DENSE = "the sweeps are dense GQA models; MoE and MLA layers are not calibrated"


def calibrated_step(floor: Formula, *, layers: int, era: Era | None,
                    compute: Formula | None = None, why: str = NO_SWEEP,
                    network: str | None = None, off_nvlink: str | None = None) -> Formula:
    """T_step = max(a·T_mem, T_compute) + c·L + n_AR·α + k·T_bw; the floor when ``era`` is None.

    ``network`` names the link when the TP group spans nodes (the floor's B is then the
    network's): k was fitted on NVLink rows only, so across nodes it is 1 (the network's peak)
    and the comm part is a lower bound; the source says so.
    ``off_nvlink`` names the link when the ring runs inside a node but not on NVLink (a PCIe
    part, or a bandwidth the user set): k is 1 there too, for the same reason.
    """
    t_mem = _term(floor, "T_weights") + _term(floor, "T_kv")
    t_cmp = compute.result if compute is not None else 0.0
    across = f"; all-reduces across nodes on {network}" if network else ""
    if era is None:
        lo, hi = ratio_range()
        return Formula(
            "decode_step_seconds",
            "floor (no calibration for this engine release and GPU)",
            {"T_floor": floor.result, "range_low": floor.result * lo,
             "range_high": floor.result * hi},
            floor.result,
            "s",
            f"uncalibrated ({why}): the calibrated eras measure {lo:.2f}–{hi:.2f}× the "
            f"floor ({SWEEPS}){across}",
            (floor,) + ((compute,) if compute is not None else ()),
            calibrated=False,
            link=network or "",
        )
    fixed, bw = comm_split(floor)
    if off_nvlink and not network:
        across = f"; all-reduces on {off_nvlink}"
    k = 1.0 if network or off_nvlink else era.k
    if off_nvlink and not network and era.k != 1.0:
        across += (f" (k = 1, the link's peak: the sweeps' k = {era.k:g} is NVLink's, no "
                   "sweep runs on this link, so the all-reduce part is a lower bound)")
    if network and era.k != 1.0:
        across += (f" (k = 1, the network's peak: the sweeps' k = {era.k:g} is NVLink's, no "
                   "sweep crosses nodes, so the all-reduce part is a lower bound)")
    res = max(era.a * t_mem, t_cmp) + era.c * layers + fixed + k * bw
    return Formula(
        "decode_step_seconds",
        "max(a·T_mem, T_compute) + c·L + n_AR·α + k·T_bw",
        {"a": era.a, "T_mem": t_mem, "T_compute": t_cmp, "c": era.c, "L": layers,
         "n_AR·α": fixed, "k": k, "T_bw": bw},
        res,
        "s",
        f"calibrated: {era.label}, {len(era.rows)} rows of {SWEEPS} ({era.source}){across}",
        (floor,) + ((compute,) if compute is not None else ()),
        calibrated=True,
        link=network or "",
        release=era.label,
    )


def ratio_range() -> tuple[float, float]:
    """Measured ÷ floor over the calibration rows (set by the bench; see test_step.py)."""
    return RATIO_RANGE


# min and max of measured/floor over every calibration row (bench/step_table.py prints them).
RATIO_RANGE = (1.296, 3.916)


def comm_share(step: Formula) -> Formula:
    """All-reduce time over the rest of the step: what the all-reduces add to it.

    Uncalibrated, the rest is the weight read alone (the seeds' comm fraction, as before).
    """
    floor = step.terms[0] if step.terms else step
    if step.expression.startswith("floor"):
        return comm.comm_share(floor)
    t_comm = float(step.values["n_AR·α"]) + float(step.values["k"]) * float(step.values["T_bw"])  # type: ignore[arg-type]
    rest = step.result - t_comm
    return Formula(
        "comm_share",
        "T_comm / (T_step − T_comm), T_comm = n_AR·α + k·T_bw",
        {"T_comm": t_comm, "T_step": step.result},
        t_comm / rest if rest > 0 else 0.0,
        "",
        step.source,
    )


def _solve(m: list[list[float]], v: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting for the small normal equations."""
    n = len(v)
    aug = [[*row, v[i]] for i, row in enumerate(m)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(aug[r][i]))
        aug[i], aug[p] = aug[p], aug[i]
        if abs(aug[i][i]) < 1e-30:
            raise ValueError("the rows do not separate the constants")
        for r in range(n):
            if r != i:
                f = aug[r][i] / aug[i][i]
                aug[r] = [x - f * y for x, y in zip(aug[r], aug[i], strict=True)]
    return [aug[i][n] / aug[i][i] for i in range(n)]


def fit(points: Sequence[tuple[float, int, float, float, float]]) -> tuple[float, float, float]:
    """(a, c, k) from (T_mem, L, n_AR·α, T_bw, measured) points, least squares in relative error.

    Minimises Σ((a·T_mem + c·L + n_AR·α + k·T_bw − y) / y)². Where the three-constant fit puts
    k below 1 (no link beats its peak: the rows do not separate k, e.g. one batch size), k is
    the link peak (1) and only a and c are fitted.
    """
    def lsq(cols: int) -> list[float]:
        xs = [[m / y, lay / y, bw / y][:cols] for m, lay, _, bw, y in points]
        ys = [(y - fx - (0.0 if cols == 3 else bw)) / y for _, _, fx, bw, y in points]
        mat = [[sum(x[i] * x[j] for x in xs) for j in range(cols)] for i in range(cols)]
        vec = [sum(x[i] * yy for x, yy in zip(xs, ys, strict=True)) for i in range(cols)]
        return _solve(mat, vec)

    if len(points) > 3:
        try:
            a, c, k = lsq(3)
        except ValueError:
            k = 0.0
        if k >= 1.0:
            return a, c, k
    a, c = lsq(2)
    return a, c, 1.0


# Prefill: no published row isolates one prefill with its lengths, GPU, t and release stated (the
# TTFT rows in PREFILL_SWEEPS run through the API server and imply η from 0.2 to 0.4 for one engine
# and GPU, so one η does not fit them), so η is the decode compute term's assumption and the
# prefill figure is a floor with a stated efficiency, not a calibration.
PREFILL_SWEEPS = "fixtures/observations/prefill-sweeps.jsonl"
PREFILL_EFFICIENCY = COMPUTE_EFFICIENCY
PREFILL_SOURCE = (f"compute-bound prefill at η = {PREFILL_EFFICIENCY} of dense FLOP/s (assumed: "
                  "no published batch-1 TTFT row with lengths, GPU, t and release to calibrate "
                  "it); seeds/tp-inference-deployer.txt §3.2 (prefill is compute-bound)")


@record
class PrefillEra:
    """η for engine releases [low, high) on one GPU class, and the prefill rows it was fitted on."""

    engine: str
    low: tuple[int, int]
    high: tuple[int, int]
    gpu_class: str
    efficiency: float  # η: achieved ÷ dense FLOP/s over a whole prefill chunk
    rows: tuple[str, ...]
    source: str


# η per era from ``fit_efficiency`` over the rows named (tests/physics/test_prefill.py refits
# them). Empty: no row of PREFILL_SWEEPS calibrates η yet (each row's ``uncalibrated`` says why).
PREFILL_ERAS: tuple[PrefillEra, ...] = ()


def prefill_efficiency(engine: str, version: str | None, gpu_key: str,
                       eras: Sequence[PrefillEra] | None = None) -> tuple[float, str]:
    """(η, the source to cite) for this engine release and GPU; the assumed η where no era fits.

    ``engine`` is the Deployment's engine name ("vllm" or "sglang"); ``eras`` defaults to
    ``PREFILL_ERAS``.
    """
    for e in PREFILL_ERAS if eras is None else eras:
        if _covers(e, engine, version, gpu_key):
            return e.efficiency, (f"η = {e.efficiency:g} calibrated: {_label(e)}, "
                                  f"{len(e.rows)} rows of {PREFILL_SWEEPS} ({e.source})")
    return PREFILL_EFFICIENCY, PREFILL_SOURCE


def fit_efficiency(points: Sequence[tuple[float, float, float]]) -> float:
    """η from (T_flops at peak, T_comm, measured) points, least squares in relative error.

    The model is y = T_flops/η + T_comm, linear in 1/η: minimising Σ((x/η + c − y)/y)² gives
    1/η = Σ x(y − c)/y² ÷ Σ x²/y².
    """
    num = sum(x * (y - c) / y**2 for x, c, y in points)
    den = sum(x * x / y**2 for x, _, y in points)
    if den <= 0 or num <= 0:
        raise ValueError("the rows do not determine η")
    return den / num


@record
class Prefill:
    """What a prefill chunk's time depends on: the model, t, the GPU's FLOP/s and the link."""

    params_active: float  # P: parameters each token multiplies (MoE: the active ones)
    layers: int
    heads: int
    head_dim: int
    hidden: int
    b: float  # activation bytes per element
    t: int
    flops: float  # π: dense BF16 FLOP/s per GPU
    link_bw: float  # B
    alpha: float  # α

    def terms(self, n: int, c0: int) -> tuple[float, float, float]:
        """(T_linear, T_attn, T_comm) of n tokens after c0 cached ones, at peak FLOP/s."""
        t, pi = self.t, self.flops
        lin = 2 * self.params_active * n / (t * pi)
        attn = 4 * self.layers * self.heads * self.head_dim * (n * c0 + n * (n + 1) / 2) / (t * pi)
        t_ar = 0.0 if t <= 1 else self.alpha + comm.ring_factor(t) * n * self.hidden * self.b / (
            self.link_bw)
        return lin, attn, (2 * self.layers + 1) * t_ar


def prefill_chunk(m: Prefill, tokens: int, start: int = 0,
                  efficiency: float = PREFILL_EFFICIENCY, source: str = PREFILL_SOURCE) -> Formula:
    """One prefill chunk of n tokens whose prompt already has c0 tokens cached.

    T = (T_linear + T_attn)/η + (2L+1)·T_AR, with T_linear = 2·P·n/(t·π) (every weight once per
    token), T_attn = 4·L·h·d_h·(n·c0 + n(n+1)/2)/(t·π) (QKᵀ and PV over the c0 + i keys token i
    sees, causal) and T_AR = α + 2(t−1)/t·n·d·b/B, assumed not to overlap the matmuls (the
    seeds' additive model).
    """
    lin, attn, t_comm = m.terms(tokens, start)
    return Formula(
        "prefill_chunk_seconds",
        "(2·P·n + 4·L·h·d_h·(n·c0 + n(n+1)/2)) / (t·π·η) + (2L+1)·(α + 2(t−1)/t·n·d·b/B)",
        {"P": m.params_active, "n": tokens, "c0": start, "L": m.layers, "h": m.heads,
         "d_h": m.head_dim, "t": m.t, "π": m.flops, "η": efficiency, "d": m.hidden, "b": m.b,
         "B": m.link_bw, "α": m.alpha},
        (lin + attn) / efficiency + t_comm,
        "s",
        source,
        (Formula("T_linear", "2·P·n / (t·π)", {"P": m.params_active, "n": tokens, "t": m.t,
                                                "π": m.flops}, lin, "s"),
         Formula("T_attn", "4·L·h·d_h·(n·c0 + n(n+1)/2) / (t·π)",
                 {"L": m.layers, "h": m.heads, "d_h": m.head_dim, "n": tokens, "c0": start,
                  "t": m.t, "π": m.flops}, attn, "s"),
         Formula("T_comm", "(2L + 1)·T_AR", {"L": m.layers}, t_comm, "s", comm.SEED_STEP)),
    )


def prefill_prompt(m: Prefill, prompt: int, chunk: int,
                   efficiency: float = PREFILL_EFFICIENCY, source: str = PREFILL_SOURCE) -> Formula:
    """A whole prompt of c tokens prefilled in chunks of n — one request's time to first token
    on an idle engine, before any queueing.

    Summed over the ceil(c/n) chunks, each attending to the chunks before it: the keys add up to
    Σ_j j = c(c+1)/2 however the prompt is cut, and every token multiplies every weight once,
    so only the all-reduces depend on the chunking (one set of 2L+1 per chunk).
    """
    full, rest = divmod(prompt, chunk) if chunk > 0 else (0, prompt)
    lin, attn, _ = m.terms(prompt, 0)  # c tokens from an empty cache: c(c+1)/2 keys
    comm_full = m.terms(chunk, 0)[2] if full else 0.0
    comm_rest = m.terms(rest, 0)[2] if rest else 0.0
    total = (lin + attn) / efficiency + full * comm_full + comm_rest
    count = full + (1 if rest else 0)
    last_start = chunk * (count - 1) if count else 0
    last = prefill_chunk(m, prompt - last_start, last_start, efficiency, source)
    return Formula("prefill_prompt_seconds",
                   "(2·P·c + 4·L·h·d_h·c(c+1)/2) / (t·π·η) + Σ_chunks (2L+1)·T_AR(n_k)",
                   {"c": prompt, "n": chunk, "chunks": count}, total, "s", source,
                   (replace(last, name="last_chunk_seconds"),))


def tokens_per_second(batch: int, step: Formula, replicas: int = 1) -> Formula:
    """Decode tokens/s of ``replicas`` copies, each stepping ``batch`` sequences: r·batch/T_step."""
    res = replicas * batch / step.result if step.result else 0.0
    return Formula(
        "decode_tokens_per_second",
        "replicas·batch / T_step",
        {"replicas": replicas, "batch": batch, "T_step": step.result},
        res,
        "tokens/s",
        step.source,
        (step,),
    )


def basis(step: Formula) -> str:
    """A few words saying what a step figure stands on: its calibration, or the bare floor."""
    if step.calibrated and step.release:
        return step.release
    if step.source.startswith("uncalibrated ("):
        return "weight-read floor, " + step.source.removeprefix("uncalibrated (").split("):")[0]
    return "weight-read floor, " + NO_SWEEP
