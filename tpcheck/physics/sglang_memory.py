"""SGLang's KV pool per GPU by release: rest = T·mfs − W − X, then whole pages of cells.

SGLang does not profile a forward pass. It measures free memory T once, after the CUDA context
and the distributed set-up (NCCL, custom all-reduce) and before the weights, then after loading
sizes the pool as ``free_after_load − T·(1 − mem_fraction_static)`` (so rest = T·mfs − W − X,
X being whatever else the load left resident). T is not the card: the context and the
communicators are already gone from it, and they grow with TP on NVLink parts. Read in the
released wheels (facts only, file:line per release):

- 0.4.6: model_runner.py init_torch_distributed l.327-375 (T = min free memory over ranks after
  init_distributed_environment/initialize_model_parallel), initialize l.186-220 (sampler and
  weights, then init_memory_pool; cuBLAS and CUDA graphs after the pool), profile_max_num_token
  l.689-711 (rest = available − T·(1 − mfs); int(rest·2³⁰ // cell)), init_memory_pool l.782
  (tokens floored to page_size); server_args.py l.224-238 (default mfs: fixed tiers by TP up
  to 80 GiB, else (M − 13 GiB)/M); memory_pool.py l.45 (GB = 1024³), l.243 ("K size"/"V size"),
  l.521 (MLA: one "KV size").
- 0.5.2: model_runner.py profile_max_num_token l.1092-1123 (same rest; hybrid GDN subtracts the
  mamba cache, hybrid SWA splits full/SWA tokens l.1150-1170, each floored to page_size);
  server_args.py l.450-496 (default mfs = round((M − reserved)/M, 3), reserved by memory tier
  and TP·PP); memory_pool.py l.48 (GB = 1024³), l.352/358.
- 0.5.23: distributed/bootstrap.py measure_pre_model_load_memory l.193-220 (T after parallel
  init, min over ranks); mem_cache/kv_cache_configurator.py _profile_available_bytes
  l.2990-3060 (rest = available − T·(1 − mfs) − multimodal reservation), config_from_budget
  l.3192-3226 (page alignment in the configurator); arg_groups/memory_hook.py l.281-345 (mfs).

What rest is divided by (MLA's latent, the hybrid SWA split, the linear-attention state pool
taken out first) is ``sglang_pools``.
"""

from __future__ import annotations

from tpcheck.engines.defaults import Default
from tpcheck.engines.sglang_rules import MFS_RESERVED, MFS_TP_TIERS, sglang_budget
from tpcheck.formula import GIB, MIB, Formula

# What the process cannot see free when T is taken, beyond the card's torch-visible total M:
# the CUDA context and torch's own start-up, M − "Load weight begin. avail mem" − "Init torch
# distributed ends. mem usage" in fixtures/observations/sglang-startup.jsonl: 0.29 GiB (row 1,
# L4), 0.38 and 0.60 (rows 2 and 3, H100), 0.42 (row 11, H200 at TP 8); the median of the four
# (row 4, a desktop card under WSL2, shows 0.82; row 5's card is not named):
CONTEXT_BYTES = round(0.40 * GIB)
# NCCL communicators at t > 1 without custom all-reduce (PCIe, more than two GPUs): the
# "Init torch distributed ends. mem usage=0.13 GB" of row 1 (4 × L4).
NCCL_BYTES = round(0.13 * GIB)
# On NVLink parts SGLang also sets up custom all-reduce IPC buffers, and NCCL its NVLS/P2P
# buffers: "Init torch distributed ends. mem usage=2.01 GB" at TP 8 on H200 (row 11), 2.01 −
# 0.13 = 1.88 GiB beyond the PCIe figure. Measured, not read from a wheel; one row, so its
# growth with t is not known (row 0 at TP 4 is consistent with the same figure).
NVLINK_COMM_BYTES = round(1.88 * GIB)


def release_read(version: str | None) -> str:
    """The release whose rules apply: the nearest read at or below ``version`` (newest if None)."""
    return sglang_budget(version).release


def baseline_overhead(t: int, nvlink: bool, context_bytes: float | None = None) -> Formula:
    """M − T: the context, plus NCCL (and custom all-reduce on NVLink) buffers when t > 1.

    ``context_bytes`` replaces the measured context (calibration refits).
    """
    ctx = CONTEXT_BYTES if context_bytes is None else context_bytes
    nccl = NCCL_BYTES if t > 1 else 0
    custom = NVLINK_COMM_BYTES if t > 1 and nvlink else 0
    total = ctx + nccl + custom
    return Formula(
        "sglang_baseline_overhead", "C + (c_nccl + c_nvlink·[NVLink] if t > 1)",
        {"C": ctx, "c_nccl": NCCL_BYTES, "c_nvlink": NVLINK_COMM_BYTES, "t": t,
         "nvlink": nvlink},
        total, "B",
        "measured: sglang start-up logs ('Load weight begin. avail mem', 'Init torch "
        "distributed ends. mem usage'), fixtures/observations/sglang-startup.jsonl",
    )


def pool_per_gpu(*, memory: float, mfs: float, weights: float, t: int, nvlink: bool,
                 version: str | None = None, context_bytes: float | None = None) -> Formula:
    """rest = T·mfs − W with T = M − overhead: what profile_max_num_token leaves for the cells."""
    rules = sglang_budget(version)
    rel = rules.release
    over = baseline_overhead(t, nvlink, context_bytes)
    base = memory - over.result
    t_f = Formula("T", "M − overhead", {"M": memory, "overhead": over.result}, base, "B",
                  rules.budget_src, (over,))
    res = base * mfs - weights
    return Formula("pool_bytes_per_gpu", "T·mfs − W_gpu",
                   {"T": base, "mfs": mfs, "W_gpu": weights, "release": rel}, res, "B",
                   rules.budget_src, (t_f,))


def pool_tokens(pool: float, cell_bytes: float, page_size: int = 1,
                version: str | None = None) -> Formula:
    """floor(rest / cell) floored to whole pages (page_size 1 on CUDA by default)."""
    page = max(page_size, 1)
    n = 0 if pool <= 0 or cell_bytes <= 0 else int(pool // cell_bytes) // page * page
    return Formula("kv_pool_tokens", "floor(floor(rest / cell) / page)·page",
                   {"rest": pool, "cell": cell_bytes, "page": page}, n, "tokens",
                   sglang_budget(version).tokens_src)


def _tiers_046(mem_mib: float, tp: int) -> float:
    if mem_mib <= 81920:
        for min_tp, frac in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87)):
            if tp >= min_tp:
                return frac
        return 0.88
    return (mem_mib - 13 * 1024) / mem_mib


def _reserved_052(mem_mib: float, tp: int, pp: int, dp_attention: bool) -> float:
    par = tp * pp
    if mem_mib < 35 * 1024:
        reserved = (2.8 + par / 10) * 1024
    elif mem_mib < 90 * 1024:
        reserved = (9.5 + par / 2) * 1024
    elif mem_mib < 160 * 1024:
        reserved = (12 + par / 2) * 1024
    else:
        reserved = 32 * 1024
    if dp_attention:
        reserved += 4 * 1024
    return round((mem_mib - reserved) / mem_mib, 3)


def default_mem_fraction(version: str | None, gpu_mem_bytes: int, tp: int,
                         pp: int = 1, attn_dp: int = 1) -> Default | None:
    """The release's default mem_fraction_static; None for 0.5.23+ (the memory hook decides).

    0.4.6 server_args.py l.224-238: 0.88/0.87/0.85/0.81/0.79 by TP (≥1, 2, 4, 8, 16) up to
    80 GiB, else (M − 13 GiB)/M. 0.5.2 server_args.py l.450-496: reserved = 2.8 + tp·pp/10 GiB
    below 35 GiB, 9.5 + tp·pp/2 below 90, 12 + tp·pp/2 below 160, else 32 (+4 with DP
    attention); mfs = round((M − reserved)/M, 3).
    """
    rules = sglang_budget(version)
    mem = gpu_mem_bytes / MIB
    if rules.mem_fraction == MFS_TP_TIERS:
        return Default(_tiers_046(mem, tp), rules.mem_fraction_src, rules.release)
    if rules.mem_fraction == MFS_RESERVED:
        return Default(_reserved_052(mem, tp, pp, attn_dp > 1), rules.mem_fraction_src,
                       rules.release)
    return None


def default_max_running_requests(version: str | None, pool_tokens: int,
                                 context_len: int) -> Default | None:
    """The release's default max_running_requests; None for 0.5.23+ (resolve_max_num_reqs).

    Both read releases clamp int(tokens / context · 512) to [2048, 4096] (0.4.6
    model_runner.py l.736-745, 0.5.2 l.1252-1261) and the worker takes min(tokens // 2, the
    request pool): 0.4.6 sizes that pool max_num_reqs + 1 (l.795; tp_worker.py l.110-118), so
    its logs print 2049; 0.5.2 sizes it max_num_reqs (l.1335; tp_worker.py l.137-145).
    """
    rules = sglang_budget(version)
    if not rules.max_requests_src:
        return None
    est = min(max(int(pool_tokens / max(context_len, 1) * 512), 2048), 4096)
    slots = est + rules.request_pool_extra
    return Default(min(pool_tokens // 2, slots), rules.max_requests_src, rules.release)
