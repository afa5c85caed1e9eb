"""What each SGLang release read does when it sizes its pools, as data.

``physics.sglang_memory`` and ``physics.sglang_pools`` ask ``sglang_budget(version)`` and
``sglang_hybrid(version)`` and branch on the behaviour named here, never on a release. A version
uses the nearest release read at or below it (versions before the first use the first).
"""

from __future__ import annotations

from tpcheck.engines import NEWEST, parse_version
from tpcheck.record import record

# How a release picks its default mem_fraction_static.
MFS_TP_TIERS = "tp tiers"  # fixed fractions by TP up to 80 GiB, else (M − 13 GiB)/M
MFS_RESERVED = "reserved"  # round((M − reserved)/M, 3), reserved by memory tier and TP·PP
MFS_HOOK = "memory hook"  # decided at start-up (arg_groups/memory_hook.py): no default here


@record
class SglangBudget:
    """One read release's KV budget: its sources and how it defaults mfs and max requests."""

    release: str
    budget_src: str
    tokens_src: str
    mem_fraction: str  # MFS_TP_TIERS, MFS_RESERVED or MFS_HOOK
    mem_fraction_src: str  # "" with MFS_HOOK
    max_requests_src: str  # "" when resolve_max_num_reqs decides (no clamp to model)
    request_pool_extra: int  # slots the request pool has beyond max_num_reqs


# Oldest first.
SGLANG_BUDGETS: tuple[SglangBudget, ...] = (
    SglangBudget(
        "0.4.6",
        "sglang 0.4.6 model_executor/model_runner.py profile_max_num_token l.689-711 "
        "(T from init_torch_distributed l.375)",
        "sglang 0.4.6 model_runner.py l.710 (int(rest // cell)), init_memory_pool l.782 "
        "(// page_size · page_size)",
        MFS_TP_TIERS, "sglang 0.4.6 server_args.py l.224-238",
        "sglang 0.4.6 model_runner.py l.736-745, l.795; managers/tp_worker.py l.110-118", 1),
    SglangBudget(
        "0.5.2",
        "sglang 0.5.2 model_executor/model_runner.py profile_max_num_token l.1092-1123 "
        "(T from init_torch_distributed l.665)",
        "sglang 0.5.2 model_runner.py l.1123-1170 (// page_size · page_size)",
        MFS_RESERVED, "sglang 0.5.2 server_args.py l.450-496",
        "sglang 0.5.2 model_runner.py l.1252-1261, l.1335; managers/tp_worker.py l.137-145", 0),
    SglangBudget(
        "0.5.23",
        "sglang 0.5.23 mem_cache/kv_cache_configurator.py _profile_available_bytes "
        "l.2990-3060 (T from distributed/bootstrap.py measure_pre_model_load_memory "
        "l.193)",
        "sglang 0.5.23 model_executor/pool_configurator.py calculate_pool_sizes l.637-647 "
        "(available // cell), kv_cache_configurator.py config_from_budget l.3192",
        MFS_HOOK, "", "", 0),
)

# Which models a release gives separate full and SWA pools.
SWA_NONE = "none"  # every layer in the full pool
SWA_GEMMA3 = "gemma-3"  # models with a sliding-window method: gemma-3 (gemma-2 switched off)
SWA_LLAMA4_GPTOSS = "llama4, gpt-oss"  # Llama 4 (every fourth layer full) and gpt-oss
# How a release sizes the linear-attention (mamba) state pool.
MAMBA_FIXED = "fixed"  # K = max_running_requests or 512 slots, K·s
MAMBA_BUDGET = "budget"  # K = floor(rest·ρ/(1 + ρ)/s), K·s; the scheduler admits K // 3
MAMBA_BUDGET_PAD = "budget + 1"  # as MAMBA_BUDGET with K + 1 slots charged

MAMBA_SRC_052 = ("sglang 0.5.2 model_executor/model_runner.py l.312-318, l.1126-1131; "
                 "configs/qwen3_next.py hybrid_gdn_params l.284-313")
# Where the per-request state (conv + temporal) was read.
MAMBA_STATE_SRC = ("sglang 0.5.10.post1 model_executor/model_runner_kv_cache_mixin.py "
                   "handle_max_mamba_cache l.214-238; configs/mamba_utils.py l.115-177")
SWA_SRC_0510 = ("sglang 0.5.10.post1 model_executor/model_runner_kv_cache_mixin.py "
                "_resolve_hybrid_swa_tokens l.287-371 (cell l.110-124)")


@record
class SglangHybrid:
    """One read release's hybrid pools: which models split SWA, how the state pool is sized."""

    release: str
    swa_models: str  # SWA_NONE, SWA_GEMMA3 or SWA_LLAMA4_GPTOSS
    swa_src: str  # the SWA split's source (the newest split read where this one has none)
    mamba: str  # MAMBA_FIXED, MAMBA_BUDGET or MAMBA_BUDGET_PAD
    mamba_src: str

    @property
    def mamba_from_budget(self) -> bool:
        """Whether the state pool takes a share of rest (and the scheduler admits K // 3)."""
        return self.mamba != MAMBA_FIXED


# Oldest first.
SGLANG_HYBRIDS: tuple[SglangHybrid, ...] = (
    SglangHybrid("0.4.6", SWA_NONE, SWA_SRC_0510, MAMBA_FIXED, MAMBA_SRC_052),
    SglangHybrid("0.4.10", SWA_GEMMA3,
                 "sglang 0.4.10.post2 model_executor/model_runner.py set_num_token_hybrid "
                 "l.1040-1072", MAMBA_FIXED, MAMBA_SRC_052),
    SglangHybrid("0.5.2", SWA_NONE, SWA_SRC_0510, MAMBA_FIXED, MAMBA_SRC_052),
    SglangHybrid("0.5.10", SWA_LLAMA4_GPTOSS, SWA_SRC_0510, MAMBA_BUDGET, MAMBA_STATE_SRC),
    SglangHybrid("0.5.23", SWA_LLAMA4_GPTOSS,
                 "sglang 0.5.23 model_executor/pool_configurator.py HybridSWAPoolConfigurator "
                 "l.786-802, l.907-916", MAMBA_BUDGET_PAD,
                 "sglang 0.5.23 mem_cache/kv_cache_configurator.py _handle_max_mamba_cache "
                 "l.3229, l.3346-3409"),
)


def _nearest_index(releases: tuple[str, ...], pv: tuple[int, ...] | None) -> int:
    """The index of the newest release at or below ``pv`` (0 below them all or for None)."""
    chosen = 0
    for i, r in enumerate(releases):
        if pv is not None and pv >= (parse_version(r) or (0,)):
            chosen = i
    return chosen


def sglang_budget(version: str | None) -> SglangBudget:
    """The budget rules that apply: the nearest read at or below ``version`` (newest if None
    or unreadable)."""
    pv = parse_version(version) or parse_version(NEWEST["sglang"])
    return SGLANG_BUDGETS[_nearest_index(tuple(b.release for b in SGLANG_BUDGETS), pv)]


def sglang_hybrid(version: str | None) -> SglangHybrid:
    """The hybrid rules that apply: the nearest read at or below (newest if None)."""
    pv = parse_version(version or NEWEST["sglang"])
    return SGLANG_HYBRIDS[_nearest_index(tuple(h.release for h in SGLANG_HYBRIDS), pv)]


# The rotary cos/sin cache SGLang builds at model load (one per shape, get_rope's _ROPE_DICT),
# before the pool is sized from the free memory left: its dtype by platform, per release read.
# (release, fp32 on CUDA, fp32 on ROCm, source), oldest first.
SGLANG_ROPE_RELEASES: tuple[tuple[str, bool, bool, str], ...] = (
    ("0.4.6", True, False,
     "sglang 0.4.6 layers/rotary_embedding.py l.82-92 (fp32 kept on CUDA, cast to the dtype "
     "elsewhere; register_buffer cos_sin_cache), model_runner.py l.194-214 (load_model, then "
     "init_memory_pool)"),
    ("0.5.23", True, True,
     "sglang 0.5.23 layers/rotary_embedding/base.py l.115-154 (fp32 kept on CUDA, HIP and XPU), "
     "factory.py l.90-125, 439 (one instance per key)"),
)


def sglang_rope_fp32(version: str | None, rocm: bool) -> tuple[bool, str]:
    """(whether the release keeps the rotary cache fp32 on this platform, source)."""
    pv = parse_version(version or NEWEST["sglang"])
    _, cuda, hip, src = SGLANG_ROPE_RELEASES[
        _nearest_index(tuple(r[0] for r in SGLANG_ROPE_RELEASES), pv)]
    return (hip if rocm else cuda), src
