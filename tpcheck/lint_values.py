"""Values refused before any rule runs: absurd sizes, values below the engine's minimum."""

from __future__ import annotations

import math
from itertools import compress, repeat

from tpcheck.checks.base import Finding
from tpcheck.checks.context import CheckContext
from tpcheck.engines import NEWEST
from tpcheck.sources.base import Deployment, SourceError

# Counts past this are input errors, not layouts: no machine has 4,096 GPUs in one TP/PP/DP
# group (`tpcheck plan --tp` stops at the same bound). Checked before the rules, because some
# of them scan every size up to t and would run for hours on a 30-digit t.
MAX_GROUP = 4096
_SIZE_FIELDS = (
    ("tensor_parallel_size", "tensor parallel size"),
    ("pipeline_parallel_size", "pipeline parallel size"),
    ("data_parallel_size", "data parallel size"),
    ("attn_dp_size", "attention DP size"),
    ("nnodes", "node count"),
    ("gpus_requested", "GPU count"),
    ("gpus_per_node", "GPUs per node"),
    ("group_size", "group size"),
)


def absurd_size(d: Deployment) -> SourceError | None:
    values = vars(d)  # a record's fields live in its __dict__
    # Scanned in C (map, compress): a launch has about 80 fields and every one is looked at;
    # the loop that names the field runs only when a float is not finite.
    floats = compress(values.values(), map(isinstance, values.values(), repeat(float)))
    if all(map(math.isfinite, floats)):
        values = {}
    for name, v in values.items():
        if isinstance(v, float) and not math.isfinite(v):  # float("1e309") is inf
            s = d.span_of(name)
            return SourceError(d.path, s.line, s.column,
                               f"{name.replace('_', '-')} is {v}, not a number tpcheck can "
                               "compute with; the deployment is not checked")
    for name, label in _SIZE_FIELDS:
        v = getattr(d, name, None)
        if isinstance(v, int) and not isinstance(v, bool) and v > MAX_GROUP:
            s = d.span_of(name)
            shown = str(v) if v < 10**30 else f"a {len(str(v))}-digit number"
            return SourceError(d.path, s.line, s.column,
                               f"{label} {shown} is over {MAX_GROUP}; not a layout any machine "
                               "runs, so the deployment is not checked")
    return None


# Values below what the engine accepts (issue 18): each named with the engine's own check.
# (field, vLLM flag, SGLang flag, lowest accepted, vLLM's check, SGLang's behaviour)
_MINIMUMS: tuple[tuple[str, str, str, float, str, str], ...] = (
    ("tensor_parallel_size", "--tensor-parallel-size", "--tp-size", 1,
     "config/parallel.py:142 Field(ge=1)",
     "has no check of its own at argument parsing (only its elastic-EP path, "
     "parallel_hook.py:589, raises \"Invalid attention topology\"); no group of 0 ranks starts"),
    ("pipeline_parallel_size", "--pipeline-parallel-size", "--pp-size", 1,
     "config/parallel.py:140 Field(ge=1)",
     "has no check of its own at argument parsing; no pipeline of 0 stages starts"),
    ("data_parallel_size", "--data-parallel-size", "--dp-size", 1,
     "config/parallel.py:147 Field(ge=1)",
     "has no check of its own at argument parsing; 0 replicas serve nothing"),
    ("attn_dp_size", "", "--attn-dp-size", 1, "",
     "arg_groups/parallel_hook.py:285 refuses it: \"--attn-dp-size must be positive\""),
    ("max_num_seqs", "--max-num-seqs", "--max-running-requests", 1,
     "config/scheduler.py:62 Field(ge=1)",
     "runs it silently as 1 request per DP worker: max(1, R // attn_dp_size) "
     "(mem_cache/kv_cache_configurator.py:3119-3172)"),
)


def below_minimum(d: Deployment) -> list[tuple[str, str, str]]:
    """tp/pp/dp 0, ``--max-num-seqs -1``, ``--gpu-memory-utilization 0``: (field, the engine's
    own check) for a TP003 finding, instead of silence (t = 0 read as unset) or a modulo by
    zero. The option tables catch most of these too; this also covers SGLang, whose table has no
    ranges, and Python keywords. Returns (field, headline, the engine's check), one for each."""
    out: list[tuple[str, str, str]] = []
    for name, vflag, sflag, lowest, vsrc, sbehaviour in _MINIMUMS:
        v = getattr(d, name, None)
        if not isinstance(v, int) or isinstance(v, bool) or v >= lowest:
            continue
        if d.engine == "sglang":
            out.append((name, f"{sflag} {v} is below {lowest:g}: nothing runs with it",
                        f"sglang {NEWEST['sglang']} {sbehaviour}"))
        else:
            out.append((name, f"{vflag} {v} is below {lowest:g}: vllm 0.33 refuses it",
                        f"{vsrc}: \"Input should be greater than or equal to {lowest:g}\""))
    u = d.gpu_memory_utilization
    if d.engine == "vllm" and u is not None and not 0 < u <= 1:
        out.append(("gpu_memory_utilization",
                    f"--gpu-memory-utilization {u:g} is not in (0, 1]: vllm 0.33 refuses it",
                    "config/cache.py:215 Field(gt=0, le=1): a fraction of the GPU's memory"))
    return out


def physics_refusal(d: Deployment, ctx: CheckContext) -> tuple[str, str] | SourceError | None:
    """The physics every rule shares, computed once up front. A value it cannot use (an unknown
    --dtype, --quantization or --kv-cache-dtype, which the engine refuses too) comes back as
    (field, message) for a TP003 finding; anything else is one error instead of one "internal
    error" per rule."""
    try:
        ctx.capacity  # noqa: B018 - cached; the rules reuse it (the step: where one asks)
    except (ValueError, ArithmeticError) as e:
        for name in PHYSICS_NAMES:
            v = getattr(d, name, None)
            if v is not None and repr(v) in str(e):
                return name, str(e)
        return SourceError(d.path, d.span.line, d.span.column,
                           f"{e}; the deployment is not checked")
    return None


PHYSICS_NAMES = ("quantization", "dtype", "kv_cache_dtype")


def one_per_span(found: list[Finding], late: list[Finding]) -> list[Finding]:
    """A value the option table refuses and the physics refuses too (TP003 from either) is
    said once: a late finding whose code a rule already gave on that span is dropped."""
    seen = {(f.code, f.span) for f in found}
    return found + [f for f in late if (f.code, f.span) not in seen]


def is_tpu(d: Deployment) -> bool:
    """The manifest places the pod on a TPU slice (GKE ``gke-tpu-accelerator: tpu-v6e-slice``)."""
    return "tpu" in (d.gpu_product or "").lower()



__all__ = ["MAX_GROUP", "PHYSICS_NAMES", "absurd_size", "below_minimum", "is_tpu",
           "one_per_span", "physics_refusal"]
