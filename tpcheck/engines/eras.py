"""What each vLLM release does, as data: the release → behaviour facts the physics asks for.

Physics never names a release: it asks a question of the version (``sampler_era``,
``non_torch_release``, ``mxfp4_era``, ``engine_era``, ``vllm_paths``...) and gets the
behaviour and the source it was read from. Tables are newest first and end with the oldest era
((0, 0)) unless said otherwise; a version between two read releases takes the older's rules.
"""

from __future__ import annotations

from tpcheck.engines import parse_version
from tpcheck.record import record

# A version that parses to nothing (None, junk) takes the newest rules.
NEWEST_KEY = (99,)

# Engine eras whose profiling differs (see engine_era).
ERA_V0 = "v0"  # V0 engine (default before 0.8): N defaults to max(max_model_len, 2048)
ERA_V1_NO_GRAPHS = "v1<0.21"  # V1 before CUDA-graph memory profiling became the default
ERA_V1 = "v1"  # 0.21 and later: the CUDA graph estimate is subtracted
V1_FIRST = (0, 8)
GRAPH_PROFILING_FIRST = (0, 21)
# The releases whose t = 1 non-torch figure is their own logged breakdown (0.19 and 0.20).
BREAKDOWN_019 = ((0, 19), (0, 21))

VLLM_TOKENS = "vllm 0.33.0 v1/core/kv_cache_utils.py get_kv_cache_capacity l.1119-1126"

# First release whose --kv-cache-dtype auto takes a ModelOpt checkpoint's fp8 KV cache
# (kv_cache_scheme / kv_cache_quant_algo): read in 0.14.0 (utils/torch_utils.py
# get_kv_cache_quant_algo_string l.239, resolve_kv_cache_dtype_string l.301, engine/arg_utils.py
# l.1398) and 0.19.0 (l.262-313, l.323-340, arg_utils.py l.1568); absent from 0.11.0's utils
# and arg_utils. 0.12-0.13 are not read and are taken as the older behaviour.
CHECKPOINT_KV_FIRST = (0, 14)
CHECKPOINT_KV_SRC = ("vllm 0.19.0 utils/torch_utils.py get_kv_cache_quant_algo_string "
                     "l.262-313, resolve_kv_cache_dtype_string l.323-340, engine/arg_utils.py "
                     "l.1568")
# SGLang 0.5.23 does it too: mem_cache/kv_cache_dtype.py configure_kv_cache_dtype l.34-58 (auto
# and quant_config.kv_cache_quant_algo FP8 -> fp8_e4m3), layers/quantization/modelopt_quant.py
# l.477-490 (kv_cache_scheme float 8-bit -> FP8). 0.5.2 model_runner.py l.1231-1232 and
# 0.4.10.post2 l.1080-1081 take the model dtype; 0.5.3-0.5.22 not read: the older assumed.
CHECKPOINT_KV_SGLANG_FIRST = (0, 5, 23)
CHECKPOINT_KV_SGLANG_SRC = ("sglang 0.5.23 mem_cache/kv_cache_dtype.py configure_kv_cache_dtype "
                            "l.34-58, layers/quantization/modelopt_quant.py l.477-490")

# First release whose unquantized fused-MoE scratch is the persistent workspace (read in 0.19).
MOE_WS_FIRST = (0, 19)

# Which implementation a release's V1 sampler runs on CUDA (v1/sample/ops/topk_topp_sampler.py):
SAMPLER_SORT = "sort"  # PyTorch-native: logits.sort over the full vocabulary
SAMPLER_FLASHINFER = "flashinfer"
SAMPLER_FLASHINFER_010 = "flashinfer (0.8-0.11)"  # as measured on 0.10.1.1 start-ups
SAMPLER_TRITON = "triton"
SAMPLER_RELEASES: tuple[tuple[tuple[int, ...], str, str], ...] = (
    # (first release, implementation, where it was read), newest first.
    ((0, 21), SAMPLER_FLASHINFER,
     "vllm 0.21.0 envs.py l.729 (VLLM_USE_FLASHINFER_SAMPLER defaults to True); 0.33.0 "
     "envs.py l.890, topk_topp_sampler.py l.120"),
    ((0, 17), SAMPLER_TRITON,
     "vllm 0.17.0 topk_topp_sampler.py l.50 (FlashInfer opt-in), l.252 "
     "(apply_top_k_top_p_triton); same in 0.20.0"),
    ((0, 12), SAMPLER_SORT,
     "vllm 0.12.0 topk_topp_sampler.py l.35/46 (FlashInfer opt-in), l.258 (logits.sort); "
     "same in 0.16.0 l.262"),
    ((0, 8), SAMPLER_FLASHINFER_010,
     "vllm 0.10.1 topk_topp_sampler.py l.41, 0.11.0 l.46 (FlashInfer used when installed "
     "unless VLLM_USE_FLASHINFER_SAMPLER=0)"),
    ((0, 0), SAMPLER_SORT, "V0 sampler (sort-based top-k/top-p)"),
)

# What vLLM's "GPU KV cache size: N tokens" line prints, by release (newest first).
PRINTED_CAPACITY = "capacity"  # int(max_concurrency · max_model_len), group-aware
PRINTED_BLOCKS = "blocks"  # num_blocks // groups · block: every group's layers charged in full
PRINTED_TOKENS_SRC_019 = (
    "vllm 0.19.0 v1/core/kv_cache_utils.py _report_kv_cache_config l.1297-1306 (num_blocks // "
    "groups · block), get_kv_cache_config_from_groups l.1134-1142 (num_blocks = pool // page "
    "// group_size), unify_hybrid_kv_cache_specs l.1043-1060 (group_size = the fewer layers "
    "of one type, the more when below 1.5×; each type padded to whole groups)")
PRINTED_TOKENS_RELEASES: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((0, 21), PRINTED_CAPACITY,
     "vllm 0.21.0 v1/core/kv_cache_utils.py _report_kv_cache_config l.1697-1710 (num_tokens = "
     "int(max_concurrency · max_model_len)); same in 0.26.0 l.1819-1829 and "
     f"{VLLM_TOKENS}"),
    ((0, 0), PRINTED_BLOCKS,
     f"{PRINTED_TOKENS_SRC_019}; same in 0.20.0 kv_cache_utils.py l.1694-1698; releases "
     "before 0.19 assumed alike"),
)

NON_TORCH_SRC = ("vllm 0.33.0 gpu_worker.py init_device l.449-545 (snapshot after NCCL init "
                 "and cuBLAS handles); distributed/device_communicators/custom_all_reduce.py "
                 "l.138 (max_size 8 MiB), l.295 (meta + max_size), l.305 (buffer), l.316 "
                 "(rank_data) at t > 1")
# vLLM 0.19.0: the budget is ceil(total·u) − W − A − N − G, N the non-torch growth since the
# snapshot that init_device takes after the communicators exist, so buffers made at start-up
# (NCCL, custom all-reduce, symmetric memory) are outside N.
NON_TORCH_SRC_019 = ("vllm 0.19.0 v1/worker/gpu_worker.py l.259-283 (init_worker_distributed_"
                     "environment, then the snapshot and request_memory = ceil(total·u)), "
                     "l.401 (N = non_torch_increase); utils/mem_utils.py memory_profiling l.274 "
                     "(N = non-torch memory now − at the snapshot); distributed/"
                     "device_communicators/cuda_communicator.py l.88/101 (symmetric-memory and "
                     "custom all-reduce buffers made in the communicator, before the snapshot)")
FUSION_SRC_019 = ("vllm 0.19.0 config/vllm.py l.116-135 enable_allreduce_rms_fusion (t > 1, "
                  "CUDA capability 9.0 or 10.x, FlashInfer, dp = 1, pp = 1), l.208/227 (on at "
                  "O2/O3), l.320 (O2 by default), l.847-853 (enforce_eager: no compilation); "
                  "compilation/passes/fusion/allreduce_rms_fusion.py l.54-72 (max bytes per "
                  "t: 9.0 {2: 64, 4: 2, 8: 0.5} MB, 10.0 {2: 64, 4: 32, 8: 1} MB), l.759-763 "
                  "(tokens = min(max bytes // (d·b), N)); distributed/device_communicators/"
                  "flashinfer_all_reduce.py l.92-107 (trtllm backend on one node), l.188-191 "
                  "(the quant patterns reuse it); flashinfer-python 0.6.6 (vllm 0.19.0's pin) "
                  "comm/trtllm_ar.py l.574-611 (buffers t·T·d·2, t·256·4, 3·t·T·d·2, each a "
                  "SymmDeviceMemory), comm/mnnvl.py l.1131-1148 (size + 2048 rounded up to the "
                  "multicast granularity)")

NON_TORCH_MNNVL = "fusion workspace (MNNVL)"  # 0.33: one multicast buffer
NON_TORCH_FUSION = "fusion workspace (trtllm)"  # 0.19: three buffers
NON_TORCH_COMMS = "communicator buffers"  # not read: NCCL + custom all-reduce estimate
NON_TORCH_LAZY = "lazy TP communicator"  # 0.11-0.18: snapshot after the communicators
NON_TORCH_SRC_011 = (
    "vllm 0.11.0 v1/worker/gpu_worker.py l.169 (init_worker_distributed_environment) before "
    "l.182 (the snapshot); 0.12.0 l.216 before l.232 ('Initialize the distributed environment "
    "BEFORE taking memory snapshot'), distributed/parallel_state.py l.327 (device group: "
    "new_group without device_id), model_executor/layers/logits_processor.py l.79 and "
    "base_device_communicator.py l.134-146 (the logits all-gather over the device group, so its "
    "NCCL communicator is made in the profile run); vllm 0.10.1.1 gpu_worker.py l.174/192 and "
    "0.10.2 l.175/193: the snapshot still precedes the communicators")
FUSION_SRC_033 = (
    "vllm 0.33.0 config/vllm.py l.179-203 enable_allreduce_rms_fusion (t > 1, CUDA capability "
    "9.0 or 10.x, FlashInfer; no pp/dp condition), l.302/323 (O2/O3), l.435 (O2 by default); "
    "compilation/passes/fusion/allreduce_rms_fusion.py l.104-125 (max bytes), l.1023-1028 "
    "(tokens); distributed/device_communicators/flashinfer_all_reduce.py l.156-163 (MNNVL on "
    "one node, trtllm where multicast fails); flashinfer-python 0.7.2 (its pin) comm/"
    "trtllm_mnnvl_ar.py l.93-160 (3 × max(one-shot, two-shot) bytes in one McastGPUBuffer), "
    "comm/mnnvl.py l.1024-1044 (+ 2048, rounded up to the multicast granularity)")
NON_TORCH_RELEASES: tuple[tuple[tuple[int, ...], str, bool, str], ...] = (
    ((0, 33), NON_TORCH_MNNVL, False, f"{NON_TORCH_SRC_019} (same flow in 0.33.0); "
     f"{FUSION_SRC_033}"),
    ((0, 19), NON_TORCH_FUSION, True,
     f"{NON_TORCH_SRC_019}; {FUSION_SRC_019}; releases 0.20-0.32 not read: 0.19's assumed"),
    ((0, 11), NON_TORCH_LAZY, True,
     f"{NON_TORCH_SRC_011}; releases 0.13-0.18 not read: 0.12's assumed"),
    ((0, 0), NON_TORCH_COMMS, True, NON_TORCH_SRC),
)

MXFP4_HOPPER_SRC_019 = (
    "vllm 0.19.0 model_executor/layers/fused_moe/oracle/mxfp4.py l.174-184 (FlashInfer TRTLLM "
    "first, then Triton on capability 9.0-10.x, l.204-207), l.398-399 (Triton: per-partition "
    "width rounded up to 64, hidden kept), l.721-735 (weights and scales swizzled, biases fp32); "
    "quantization/mxfp4.py l.297-307 (Triton: the swizzled tensors set beside the loaded "
    "scales, which stay on the layer); third_party/triton_kernels/tensor_details/"
    "layout_details/hopper_value.py l.128-134 (both byte dims padded to 64), hopper_scale.py "
    "l.30-34 (rows padded to 2·8·2·8 = 256); releases 0.20-0.32 not read: 0.19's assumed")

# MXFP4 expert layouts by release (newest first): (first release, layout, where it was read).
MXFP4_PADDED = "padded"  # hidden (and on Marlin the width) rounded up, stored as loaded
MXFP4_TRITON_HOPPER = "triton-hopper"  # 0.19 on Hopper: swizzled, loaded scales kept
MXFP4_RELEASES: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((0, 33), MXFP4_PADDED, "vllm 0.33.0 fused_moe/oracle/mxfp4.py l.837-873"),
    ((0, 19), MXFP4_TRITON_HOPPER, MXFP4_HOPPER_SRC_019),
    ((0, 0), MXFP4_PADDED, "observation row 23 (0.12 on H100: 13.45 predicted, 13.47 logged)"),
)

# FlashInfer MLA's decode workspace (128 MiB): 0.19 makes it when flashinfer_mla.py is
# imported, and on CUDA the attention selector imports every MLA backend of its priority list
# (FLASHINFER_MLA among them) while checking which is valid, inside "Model loading took"; 0.33
# makes it lazily at the first FlashInfer MLA decode. (first release, bytes at load, source)
MLA_FI_WORKSPACE_RELEASES: tuple[tuple[tuple[int, ...], int, str], ...] = (
    ((0, 33), 0, "vllm 0.33.0 v1/attention/backends/mla/flashinfer_mla.py l.71-89 "
                 "(_get_workspace_buffer: made at the first use)"),
    ((0, 19), 128 << 20, "vllm 0.19.0 v1/attention/backends/mla/flashinfer_mla.py l.30, "
                         "l.99-103 (module-level torch.zeros of 128 MiB on cuda); platforms/"
                         "cuda.py l.51-98 (every CUDA MLA priority list holds FLASHINFER_MLA), "
                         "l.214-246 (get_valid_backends imports each one's class); row 41's log: "
                         "'FLASHINFER_MLA: [compute capability not supported]' on H100"),
    ((0, 0), 0, "not read before 0.19: not counted"),
)


def mla_fi_workspace(version: str | None) -> tuple[int, str]:
    """(bytes the release's FlashInfer MLA workspace adds at load on CUDA, source)."""
    pv = version_key(version)
    for first, n, src in MLA_FI_WORKSPACE_RELEASES:
        if pv >= first:
            return n, src
    return 0, MLA_FI_WORKSPACE_RELEASES[-1][2]


@record
class Paths:
    """The one-node all-reduce paths a vLLM release turns on by default."""

    release: tuple[int, int, int]
    flashinfer: bool  # standalone FlashInfer all-reduce (VLLM_ALLREDUCE_USE_FLASHINFER)
    symm_mem: bool  # torch symmetric-memory all-reduce (VLLM_ALLREDUCE_USE_SYMM_MEM)
    source: str


VLLM_PATHS: tuple[Paths, ...] = (
    Paths((0, 5, 4), False, False, "vllm 0.5.4 custom_all_reduce.py l.37 world sizes 2, 4, "
          "6, 8, l.43 max 8 MiB, l.117 off for > 2 GPUs without full NVLink; no symm mem"),
    Paths((0, 7, 2), False, False, "vllm 0.7.2 custom_all_reduce.py l.52, l.58 max 8 MiB, "
          "l.255–256 (< max, 2 GPUs or full NVLink); no symm mem"),
    Paths((0, 19, 0), False, True, "vllm 0.19.0 envs.py l.1479 VLLM_ALLREDUCE_USE_SYMM_MEM "
          "default 1, l.1483 VLLM_ALLREDUCE_USE_FLASHINFER default 0; cuda_communicator.py "
          "l.200–222 (FlashInfer, custom, symm mem, pynccl)"),
    Paths((0, 33, 0), True, True, "vllm 0.33.0 envs.py l.1957 VLLM_ALLREDUCE_USE_SYMM_MEM "
          "default 1, l.1961 VLLM_ALLREDUCE_USE_FLASHINFER default 1 (flashinfer-python is a "
          "requirement); cuda_communicator.py l.362–446 (FlashInfer, custom, symm mem, pynccl)"),
)



def version_key(version: str | None) -> tuple[int, ...]:
    """The version as the tables compare it: unparsable or None is the newest."""
    return parse_version(version) or NEWEST_KEY


def engine_era(version: str | None) -> str:
    """Which profiling a vLLM version runs: V0 (< 0.8), V1 before 0.21, or V1 with graphs."""
    pv = parse_version(version)
    if pv is None:
        return ERA_V1
    if pv < V1_FIRST:
        return ERA_V0
    if pv < GRAPH_PROFILING_FIRST:
        return ERA_V1_NO_GRAPHS
    return ERA_V1


def sampler_era(version: str | None) -> tuple[str, str]:
    """(implementation, source) of the release's V1 sampler on CUDA."""
    pv = version_key(version)
    for first, impl, src in SAMPLER_RELEASES:
        if pv >= first:
            return impl, src
    raise AssertionError("SAMPLER_RELEASES ends with (0, 0)")


def moe_workspace_persistent(version: str | None) -> bool:
    """Whether the release's unquantized fused-MoE scratch is the persistent workspace."""
    return version_key(version) >= MOE_WS_FIRST


def checkpoint_kv_cache(engine: str, version: str | None) -> str | None:
    """Where the release resolves ``--kv-cache-dtype auto`` from a ModelOpt checkpoint's KV
    cache scheme rather than the model dtype (vLLM 0.14+, SGLang 0.5.23+); None: it does not."""
    pv = version_key(version)
    if engine == "vllm" and pv >= CHECKPOINT_KV_FIRST:
        return CHECKPOINT_KV_SRC
    if engine == "sglang" and pv >= CHECKPOINT_KV_SGLANG_FIRST:
        return CHECKPOINT_KV_SGLANG_SRC
    return None


def printed_tokens_release(version: str | None) -> tuple[str, str]:
    """(how the release prints its KV cache size, source)."""
    pv = version_key(version)
    for first, how, src in PRINTED_TOKENS_RELEASES:
        if pv >= first:
            return how, src
    raise AssertionError("PRINTED_TOKENS_RELEASES ends with (0, 0)")


def non_torch_release(version: str | None) -> tuple[str, bool, str]:
    """(how N grows with t, whether the fusion needs pp = dp = 1, source) for the release."""
    pv = version_key(version)
    for first, how, single, src in NON_TORCH_RELEASES:
        if pv >= first:
            return how, single, src
    raise AssertionError("NON_TORCH_RELEASES ends with (0, 0)")


def logs_019_breakdown(version: str | None) -> bool:
    """Whether the release is one whose t = 1 non-torch figure was logged (0.19-0.20)."""
    low, high = BREAKDOWN_019
    return low <= version_key(version) < high


def mxfp4_era(version: str | None) -> str:
    """Which MXFP4 expert layout the release loads (before the GPU is considered)."""
    pv = version_key(version)
    for first, how, _src in MXFP4_RELEASES:
        if pv >= first:
            return how
    return MXFP4_PADDED


def vllm_paths(version: str | None) -> Paths:
    """The newest release read at or below ``version`` (the newest for None, the oldest below
    them all): which defaults a release has between two read ones is assumed from the older."""
    pv = parse_version(version)
    if pv is None:
        return VLLM_PATHS[-1]
    rel = tuple((*pv, 0, 0)[:3])
    older = [p for p in VLLM_PATHS if p.release <= rel]
    return older[-1] if older else VLLM_PATHS[0]
