"""N, the memory outside torch a vLLM start-up counts (cuBLAS, NCCL, fusion buffers), by release."""

from __future__ import annotations

# ``X as X``: the release table moved to engines.eras (issue 29), still read as non_torch.X
from tpcheck.engines.eras import ERA_V0, NON_TORCH_COMMS, engine_era, logs_019_breakdown
from tpcheck.engines.eras import NON_TORCH_FUSION as NON_TORCH_FUSION
from tpcheck.engines.eras import NON_TORCH_LAZY as NON_TORCH_LAZY
from tpcheck.engines.eras import NON_TORCH_MNNVL as NON_TORCH_MNNVL
from tpcheck.engines.eras import non_torch_release as non_torch_release
from tpcheck.formula import GIB, MIB, Formula

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from tpcheck.formula import Scalar
    from tpcheck.hardware.gpus import GPU


# Non-torch memory the profile counts at t = 1 (cuBLAS/cuBLASLt workspaces, allocator
# segments outside torch), by era. V0: 21.22 GiB requested − 17.06 GiB torch peak − 3.81 GiB KV
# = 0.352 GiB in observation row 0, and 21.22 − 17.98 − 2.89 = 0.352 GiB in row 1 (RTX 3090).
NON_TORCH_BYTES = round(0.35 * GIB)
# V1: row 23 prints its breakdown ("peak act 7.38 GiB"): 79.18·0.9 − 13.47 − 50.28 − 7.38 =
# 0.13 GiB; published V1-era breakdowns at t = 1 print 0.06–0.16 GiB (vLLM PR 12126: 0.16 on H100).
NON_TORCH_BYTES_V1 = round(0.13 * GIB)
# 0.19 and 0.20: the breakdown line of the seven published 0.19 start-ups at t = 1 (rows 29, 34,
# 38, 39, 40, 41, 42: "... 0.25, 0.24, 0.26, 0.25, 0.25, 0.26, 0.27 GiB for non-torch memory")
# logs 0.25 GiB (their median); the snapshot is taken after the communicators and cuBLAS handles
# are made (NON_TORCH_SRC_019), so this is what the profile run itself adds outside torch.
NON_TORCH_BYTES_V1_019 = round(0.25 * GIB)
# NCCL channel buffers allocated at the first collective of the profile run grow with the
# ranks a GPU talks to. Not measured by any observation row (all calibrated rows are t = 1).
NCCL_BYTES_PER_8_RANKS = GIB // 4
# Custom all-reduce at t > 1: meta + 8 MiB, an 8 MiB IPC buffer and 8 MiB of rank data
# (custom_all_reduce.py l.138/295/305/316, vLLM 0.33.0), allocated outside torch's pool.
CUSTOM_AR_BYTES = 3 * 8 * MIB
# FlashInfer all-reduce + RMSNorm fusion workspace (vLLM ≥ 0.19 at t > 1 on NVSwitch parts of
# CUDA capability 9.0/10.x): three buffers, each rounded up to the driver's recommended multicast
# granularity, made when the compilation pass is built (after the snapshot, so inside N). The
# granularity is the driver's answer, not in any release's source: 512 MiB on H100 (assumed;
# 3 × 512 MiB = 1.5 GiB of the 1.8–1.95 GiB by which published 0.19 H100 start-ups at t = 2 and 4
# log more non-torch memory than at t = 1; the rest, likely NCCL's lazily connected channels, is
# not modelled).
MULTICAST_GRANULARITY = 512 * MIB
FUSION_BARRIER_FLAGS = 256  # flashinfer 0.6.6 comm/trtllm_ar.py BarrierFlagCount l.503
FUSION_SIGNAL_PAD = 2048  # flashinfer 0.6.6 comm/mnnvl.py SIGNAL_PAD_SIZE l.58
# Largest all-reduce (bytes) the fusion takes, by CUDA capability major·10 and t.
FUSION_MAX_BYTES: dict[int, dict[int, int]] = {
    90: {2: 64 * MIB, 4: 2 * MIB, 8: MIB // 2},
    100: {2: 64 * MIB, 4: 32 * MIB, 8: MIB},
}
# MNNVL workspace (vLLM 0.33 on one node): one multicast buffer of 3 lamport buffers, each the
# larger of the one-shot and two-shot sizes (flashinfer-python 0.7.2 comm/trtllm_mnnvl_ar.py).
MNNVL_ONE_SHOT_THRESHOLD = 64 * 1024 * 8 * 2  # trtllm_mnnvl_ar.py l.51
MNNVL_ALIGNMENT = 2 * 16  # TWOSHOT_NUM_STAGES · PACKED_ALIGNMENT_BYTES, l.63-64
# How N grows at t > 1, by release (newest first): (first release, scheme, whether the fusion
# needs pp = dp = 1, where it was read).
# 0.19: the TP group's torch ProcessGroupNCCL is made without device_id, so NCCL builds its
# communicator at the group's first collective; pynccl's own is warmed up before the snapshot,
# but the logits all-gather goes through torch (LAZY_NCCL_SRC), inside the profile run: its
# buffers land in N. Their size is NCCL's, not in vLLM's source: measured as the logged N less
# 0.25 GiB (t = 1) and the 1.5 GiB fusion workspace on H100 SXM: t = 2 rows 30, 35, 37, 43 (2.07,
# 2.06, 2.07, 2.07 GiB) give 0.32, t = 4 rows 31, 36 (2.13, 2.13) 0.38. Other t: the line
# through them (0.26 + 0.03·t GiB), assumed. 0.33 binds the default group eagerly (device_id)
# and splits the TP group from it, so this communicator exists before its snapshot.
LAZY_NCCL_BYTES = {2: round(0.32 * GIB), 4: round(0.38 * GIB)}
LAZY_NCCL_BASE_GIB, LAZY_NCCL_PER_RANK_GIB = 0.26, 0.03
LAZY_NCCL_SRC = ("vllm 0.19.0 distributed/parallel_state.py l.339-341 (device group: new_group "
                 "without device_id), l.1422-1428 (init_process_group without device_id); "
                 "model_executor/layers/logits_processor.py l.77-83 (all-gather of the logits); "
                 "distributed/device_communicators/base_device_communicator.py l.196 "
                 "(dist.all_gather_into_tensor over the device group; cuda_communicator.py has "
                 "no all_gather of its own); pynccl.py l.142 (pynccl's warm-up, before the "
                 "snapshot); vllm 0.33.0 distributed/parallel_state.py l.1749-1772 (eager "
                 "device_id binding) and cuda_communicator.py l.460 (all_gather through pynccl)")



def fusion_capability(gpu: GPU | None) -> int | None:
    """CUDA capability (major·10) of an NVSwitch part the fusion workspace is made on, else None.

    The workspace needs multicast, so NVLink-bridge and PCIe parts fail to make it (vLLM 0.19
    flashinfer_all_reduce.py l.64-70: "expected on GPUs without NVSwitch"); capability 9.0
    (H100/H800/H200/H20 SXM) and 10.x (B200, GB200) are the ones vLLM enables it on.
    """
    if gpu is None or gpu.nvlink_domain <= 1:
        return None
    return {"nvlink4": 90, "nvlink5": 100}.get(gpu.link)


def fusion_workspace_bytes(*, t: int, hidden: int, b: float, max_num_batched_tokens: int,
                           capability: int | None, fp32: bool = False,
                           scheme: str = NON_TORCH_FUSION) -> int:
    """The all-reduce + RMSNorm fusion workspace per GPU, rounded to the multicast granularity.

    trtllm (0.19): three buffers, each rounded up. MNNVL (0.33): one buffer of three lamport
    buffers, rounded up once.
    """
    if capability is None or t not in (2, 4, 8) or hidden <= 0:
        return 0
    max_bytes = FUSION_MAX_BYTES.get(capability, {}).get(t)
    if max_bytes is None:
        return 0
    tokens = min(int(max_bytes // (hidden * b)), max_num_batched_tokens)
    e = 4 if fp32 else 2
    g = MULTICAST_GRANULARITY
    if scheme == NON_TORCH_MNNVL:
        one_tok = min(MNNVL_ONE_SHOT_THRESHOLD // (t * e * hidden), tokens)
        one = one_tok * hidden * t * e
        two = 2 * -(-tokens // t) * t * hidden * e
        buf = -(-max(one, two) // MNNVL_ALIGNMENT) * MNNVL_ALIGNMENT
        return -(-(3 * buf + FUSION_SIGNAL_PAD) // g) * g
    sizes = (t * tokens * hidden * 2, t * FUSION_BARRIER_FLAGS * 4, 3 * t * tokens * hidden * e)
    return sum(-(-(s + FUSION_SIGNAL_PAD) // g) * g for s in sizes)


def non_torch_base(version: str | None) -> int:
    """N at t = 1 by release: V0's; 0.19-0.20's logged breakdown; otherwise the V1 figure of
    row 23 (0.12), fitted with the sampler constant of its era (0.21+ have no breakdown row, so
    their pair of constants is kept as fitted)."""
    if engine_era(version) == ERA_V0:
        return NON_TORCH_BYTES
    return NON_TORCH_BYTES_V1_019 if logs_019_breakdown(version) else NON_TORCH_BYTES_V1


def non_torch_bytes(version: str | None, t: int, *, fusion: int = 0) -> int:
    """N for the release: the era's t = 1 figure plus what the release adds at t > 1.

    0.19 and later: the fusion workspace (``fusion``, 0 where it is not made). 0.11-0.18: the
    TP group's lazily made NCCL communicator only (no fusion workspace). 0.10 and older (the
    snapshot precedes every communicator; not measured on NVLink): NCCL channel and custom
    all-reduce buffers, estimated.
    """
    base = non_torch_base(version)
    if t <= 1:
        return base
    how, _, _ = non_torch_release(version)
    if how == NON_TORCH_LAZY:
        return base + lazy_nccl_bytes(t)
    if how == NON_TORCH_FUSION:
        return base + fusion + lazy_nccl_bytes(t)
    if how == NON_TORCH_MNNVL:
        return base + fusion
    return round(base + NCCL_BYTES_PER_8_RANKS * t / 8 + CUSTOM_AR_BYTES)


def lazy_nccl_bytes(t: int) -> int:
    """NCCL's communicator of the TP device group, made at its first collective (0.19: the
    profile run's logits all-gather), by t: the logged table, else its straight line."""
    if t <= 1:
        return 0
    if t in LAZY_NCCL_BYTES:
        return LAZY_NCCL_BYTES[t]
    return round((LAZY_NCCL_BASE_GIB + LAZY_NCCL_PER_RANK_GIB * t) * GIB)


def non_torch_formula(how: str, src: str, c: int, t: int, result: int, fusion: int,
                       cap: int | None, pp: int, dp: int, enforce_eager: bool) -> Formula:
    """R_non_torch as the release computes it (NON_TORCH_RELEASES); ``c`` is N at t = 1."""
    if how == NON_TORCH_LAZY:
        return Formula("R_non_torch", "C + (C_nccl(t) if t > 1)",
                       {"C": c, "C_nccl": lazy_nccl_bytes(t), "t": t, "scheme": how}, result,
                       "B", f"{src}; {LAZY_NCCL_SRC}")
    if how != NON_TORCH_COMMS:
        cond = "pp = dp = 1, " if how == NON_TORCH_FUSION else ""
        expr = f"C + (W_fusion if t > 1, {cond}compiled, NVSwitch 9.0/10.x)"
        vals: dict[str, Scalar] = {
            "C": c, "W_fusion": fusion, "t": t, "pp": pp, "dp": dp,
            "enforce_eager": enforce_eager, "capability": "none" if cap is None else cap,
            "granularity": MULTICAST_GRANULARITY, "scheme": how}
        if how == NON_TORCH_FUSION:
            expr += " + (C_nccl(t) if t > 1)"
            vals["C_nccl"] = lazy_nccl_bytes(t)
            src = f"{src}; {LAZY_NCCL_SRC}"
        return Formula("R_non_torch", expr, vals, result, "B", src)
    return Formula("R_non_torch", "C + (c_nccl·t/8 + c_ar if t > 1)",
                   {"C": c, "c_nccl": NCCL_BYTES_PER_8_RANKS, "c_ar": CUSTOM_AR_BYTES, "t": t},
                   result, "B", src)
