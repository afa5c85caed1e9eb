"""The reserve R follows the vLLM release (issue 19): each term pinned to the release and the
source line it was read from in that release's wheel."""

from __future__ import annotations

import pytest

from tpcheck.engines.defaults import defaults_for
from tpcheck.formula import GIB, MIB
from tpcheck.models import catalog
from tpcheck.models.config import load_config, parse_config
from tpcheck.models.shape import ModelShape
from tpcheck.physics import memory


def _shape(model_id: str) -> ModelShape:
    e = catalog.find(model_id)
    assert e is not None
    return parse_config(load_config(e.config_path), name=model_id)


@pytest.mark.parametrize(("version", "impl", "cited"), [
    # V0's sampler sorts the logits.
    ("0.6.4", memory.SAMPLER_SORT, "V0 sampler"),
    # 0.10.1 l.41 and 0.11.0 l.46: FlashInfer unless VLLM_USE_FLASHINFER_SAMPLER=0.
    ("0.10.1", memory.SAMPLER_FLASHINFER_010, "0.10.1 topk_topp_sampler.py l.41"),
    ("0.11.0", memory.SAMPLER_FLASHINFER_010, "0.11.0 l.46"),
    # 0.12.0 l.35/46: FlashInfer opt-in; forward_native sorts (l.258); same in 0.16.0 (l.262).
    ("0.12.0", memory.SAMPLER_SORT, "0.12.0 topk_topp_sampler.py l.35/46"),
    ("0.16.0", memory.SAMPLER_SORT, "0.16.0 l.262"),
    # 0.17.0 l.252: apply_top_k_top_p_triton; FlashInfer still opt-in until 0.20.
    ("0.17.0", memory.SAMPLER_TRITON, "0.17.0 topk_topp_sampler.py l.50"),
    ("0.20.0", memory.SAMPLER_TRITON, "l.252"),
    # 0.21.0 envs.py l.729: VLLM_USE_FLASHINFER_SAMPLER defaults to True (0.33.0: l.890).
    ("0.21.0", memory.SAMPLER_FLASHINFER, "0.21.0 envs.py l.729"),
    ("0.33.0", memory.SAMPLER_FLASHINFER, "0.33.0 envs.py l.890"),
    (None, memory.SAMPLER_FLASHINFER, "0.21.0"),  # newest known
])
def test_sampler_implementation_by_release(version: str | None, impl: str, cited: str) -> None:
    got, extra, src = memory.sampler_impl(version)
    assert got == impl
    assert cited in src
    assert extra == {memory.SAMPLER_SORT: memory.SAMPLER_BYTES_SORT,
                     memory.SAMPLER_TRITON: memory.SAMPLER_BYTES_TRITON,
                     memory.SAMPLER_FLASHINFER_010: memory.SAMPLER_BYTES_FLASHINFER_010}.get(
                         impl, memory.SAMPLER_BYTES_FAST)


def test_sampler_term_by_release_on_h100() -> None:
    # Llama-3.1-8B, serve on H100: 1024 rows of V = 128,256 logits, N = 8192 hidden states held.
    s = _shape("meta-llama/Llama-3.1-8B-Instruct")

    def sampler(v: str) -> float:
        r = memory.reserve_for(s, 1, b=2, max_num_batched_tokens=8192, max_num_seqs=1024,
                               version=v)
        return r.terms[0].terms[1].result

    held = 8192 * 4096 * 2
    assert sampler("0.12.0") == 1024 * 128_256 * (2 + 36) + held  # sort: 38 B per logit
    assert sampler("0.19.0") == 1024 * 128_256 * (2 + 13) + held  # Triton: 15 B per logit
    assert sampler("0.33.0") == 1024 * 128_256 * 18 + held  # FlashInfer (estimated)
    # FlashInfer as 0.8-0.11 run it: 13 B per logit, measured (rows 48-53 of the start-ups)
    assert sampler("0.11.0") == 1024 * 128_256 * (2 + 11) + held


def test_transient_peak_is_the_larger_not_the_sum() -> None:
    # profile_run (0.33.0 gpu_model_runner.py l.6072-6143) frees the forward's buffers before
    # _dummy_sampler_run; only the N·d·b hidden states stay, counted in R_sampler.
    s = _shape("meta-llama/Llama-3.1-8B-Instruct")
    r = memory.reserve_for(s, 1, b=2, max_num_batched_tokens=8192, max_num_seqs=1024,
                           version="0.33.0")
    fwd, samp = r.terms[0].terms
    assert fwd.result == 8192 * 2 * (3 * 14336 + 3 * 4096) == 905_969_664
    assert r.terms[0].result == max(fwd.result, samp.result) == samp.result
    # A long prefill with few sequences: the forward is the peak.
    r = memory.reserve_for(s, 1, b=2, max_num_batched_tokens=65536, max_num_seqs=8,
                           version="0.33.0")
    fwd, samp = r.terms[0].terms
    assert r.terms[0].result == fwd.result == 65536 * 2 * (3 * 14336 + 3 * 4096)


def test_expert_parallel_workspace_uses_the_full_expert_width() -> None:
    # Qwen3-30B-A3B: 8 of 128 experts per token, moe_intermediate_size 768, hidden 2048.
    # Without EP the fused-MoE width is split over t·dp = 4; with --enable-expert-parallel the
    # MoE layer runs at MoE-TP 1 (fused_moe/config.py FusedMoEParallelConfig.make, 0.33.0).
    s = _shape("Qwen/Qwen3-30B-A3B")
    assert s.moe is not None and s.moe.experts_per_token == 8 and s.moe.expert_ffn == 768

    def forward(ep: bool, version: str = "0.33.0") -> float:
        r = memory.reserve_for(s, 4, b=2, max_num_batched_tokens=8192, max_num_seqs=8,
                               version=version, moe_group=4, expert_parallel=ep)
        return sum(x.result for x in r.terms[0].terms if x.name != "R_sampler")

    # 0.19+ (unquantized experts): the forward's 3·d per token plus the fused-MoE workspace
    # N·k·(max(f_e/g, d) + max(2·f_e/g, d))·b (modular_kernel.py l.1036-1070, 0.19.0).
    assert forward(False) == 8192 * 2 * 3 * 2048 + 8192 * 8 * (2048 + 2048) * 2
    # EP's whole experts (f_e = 768, 2·f_e = 1536) are still narrower than d = 2048: same size.
    assert forward(True) == forward(False)
    # Before 0.19: per token k·(3·f_e/g + d) + 3·d, dense FFN 0 (every layer is MoE)
    assert forward(False, "0.12.0") == 8192 * 2 * (8 * (3 * 192 + 2048) + 3 * 2048)
    assert forward(True, "0.12.0") == 8192 * 2 * (8 * (3 * 768 + 2048) + 3 * 2048)


def test_non_torch_by_era_and_tp() -> None:
    # V0: 0.35 GiB (observation rows 0-1); V1: 0.13 GiB (row 23's printed breakdown).
    assert memory.non_torch_bytes("0.6.4", 1) == round(0.35 * GIB)
    assert memory.non_torch_bytes("0.12.0", 1) == round(0.13 * GIB)
    # 0.10 and older (the snapshot precedes the communicators; no breakdown row on NVLink):
    # t = 2 adds NCCL 0.25 GiB·2/8 + custom all-reduce 3 × 8 MiB, estimated.
    grow = memory.non_torch_bytes("0.10.1", 2) - memory.non_torch_bytes("0.10.1", 1)
    assert grow == round(GIB / 4 * 2 / 8 + 24 * MIB)
    # 0.11-0.18: the snapshot follows the communicators (0.11.0 gpu_worker.py l.169/182), so t = 2
    # adds the TP group's lazily made communicator only; no fusion workspace in these releases.
    assert memory.non_torch_bytes("0.12.0", 2, fusion=3 * 512 * MIB) == memory.non_torch_bytes(
        "0.12.0", 1) + round(0.32 * GIB)
    # 0.19+: the communicators' buffers exist before the snapshot (gpu_worker.py l.259-283),
    # so t > 1 adds the fusion workspace passed in (0 where it is not made) and, in 0.19, the
    # TP group's NCCL communicator made lazily at the profile's logits all-gather (0.32 GiB at
    # t = 2); 0.33 binds the group eagerly, so only the workspace.
    assert memory.non_torch_bytes("0.19.0", 2) == memory.non_torch_bytes(
        "0.19.0", 1) + round(0.32 * GIB)
    assert memory.non_torch_bytes("0.33.0", 2) == memory.non_torch_bytes("0.33.0", 1)
    # 0.19-0.20: 0.25 GiB at t = 1, the median of the seven 0.19 breakdown lines (rows 29, 34,
    # 38-42 log 0.24-0.27); 0.21+ keep row 23's 0.13 (no breakdown row of theirs).
    assert memory.non_torch_bytes("0.19.0", 1) == round(0.25 * GIB)
    assert memory.non_torch_bytes("0.21.0", 1) == round(0.13 * GIB)
    assert memory.non_torch_bytes("0.33.0", 4, fusion=3 * 512 * MIB) == round(
        0.13 * GIB) + 3 * 512 * MIB


def _non_torch(model: str, t: int, gpu: str | None, *, version: str = "0.19.0", pp: int = 1,
               dp: int = 1, eager: bool = False, ntok: int = 8192) -> float:
    from tpcheck.hardware.gpus import find_gpu

    s = _shape(model)
    r = memory.reserve_for(s, t, b=2, max_num_batched_tokens=ntok, max_num_seqs=256,
                           version=version, gpu=None if gpu is None else find_gpu(gpu),
                           pp=pp, dp=dp, enforce_eager=eager)
    assert r.terms[2].name == "R_non_torch"
    return r.terms[2].result


def test_fusion_workspace_on_nvswitch_hopper_at_tp2_and_tp4() -> None:
    # Llama-3.1-8B (d = 4096), bf16, N = 8192, H100 SXM (capability 9.0):
    # t = 2: max 64 MiB → T = min(64 MiB // (4096·2), 8192) = 8192 tokens; buffers
    #   2·8192·4096·2 = 128 MiB, 2·256·4 = 2 KiB, 3·128 MiB = 384 MiB, each + 2048 B rounded
    #   up to 512 MiB → 1.5 GiB; N = 0.25 GiB (0.19's t = 1 figure) + 1.5 GiB + the lazily
    #   made NCCL communicator (0.32 GiB at t = 2, 0.38 at t = 4).
    # t = 4: max 2 MiB → T = 256; 8 MiB, 4 KiB, 24 MiB → 3 × 512 MiB again.
    # Published 0.19 H100 start-ups log N = 2.06–2.21 GiB at t = 2 and 4, 0.24–0.27 at t = 1
    # (issue 32): the 1.5 GiB is most of the 1.8–1.95 GiB step.
    base = round(0.25 * GIB)
    c2, c4 = round(0.32 * GIB), round(0.38 * GIB)
    m = "meta-llama/Llama-3.1-8B-Instruct"
    assert _non_torch(m, 2, "h100-sxm") == base + 3 * 512 * MIB + c2
    assert _non_torch(m, 4, "h100-sxm") == base + 3 * 512 * MIB + c4
    assert _non_torch(m, 2, "b200") == base + 3 * 512 * MIB + c2  # capability 10.0
    assert _non_torch(m, 1, "h100-sxm") == base


def test_fusion_workspace_only_where_the_release_makes_it() -> None:
    # 0.19.0 at t = 2 without the workspace: 0.25 GiB + the lazy NCCL communicator's 0.32
    base = round(0.25 * GIB) + round(0.32 * GIB)
    m = "meta-llama/Llama-3.1-8B-Instruct"
    # No NVSwitch multicast (PCIe, NVLink bridge pairs, Ampere): no workspace.
    assert _non_torch(m, 2, "h100-pcie") == base
    assert _non_torch(m, 2, "h100-nvl") == base
    assert _non_torch(m, 2, "a100-sxm-80gb") == base
    assert _non_torch(m, 2, None) == base  # GPU unknown: not assumed
    # enable_allreduce_rms_fusion is off with pp > 1 or dp > 1 (config/vllm.py l.129-134),
    # and enforce_eager turns compilation off (l.847-853).
    assert _non_torch(m, 2, "h100-sxm", pp=2) == base
    assert _non_torch(m, 2, "h100-sxm", dp=2) == base
    assert _non_torch(m, 2, "h100-sxm", eager=True) == base
    # t = 3 is not a FlashInfer world size (allreduce_rms_fusion FI_SUPPORTED_WORLD_SIZES).
    assert memory.fusion_workspace_bytes(t=3, hidden=4096, b=2, max_num_batched_tokens=8192,
                                         capability=90) == 0
    # Before 0.19 no workspace: 0.12 (snapshot after the communicators) adds the lazily made
    # TP communicator, 0.13 + 0.32 GiB; 0.10 keeps the estimate 0.13 + 0.25·2/8 GiB + 24 MiB.
    assert _non_torch(m, 2, "h100-sxm", version="0.12.0") == round(0.13 * GIB) + round(
        0.32 * GIB)
    assert _non_torch(m, 2, "h100-sxm", version="0.10.1") == round(
        round(0.13 * GIB) + GIB / 4 * 2 / 8 + 24 * MIB)


def test_0_33_makes_one_mnnvl_buffer_and_keeps_it_under_pp_and_dp() -> None:
    # 0.33 on one node: MNNVL, one multicast buffer of 3 lamport buffers (flashinfer 0.7.2).
    # Llama-3.1-8B, t = 2, N = 8192: T = 8192; one-shot min(1 MiB // (2·2·4096), T) = 64
    # tokens = 1 MiB; two-shot 2·ceil(8192/2)·2·4096·2 = 128 MiB; 3·128 MiB + 2048 B rounded
    # up to one 512 MiB granule.
    base = round(0.13 * GIB)
    m = "meta-llama/Llama-3.1-8B-Instruct"
    assert memory.fusion_workspace_bytes(t=2, hidden=4096, b=2, max_num_batched_tokens=8192,
                                         capability=90, scheme=memory.NON_TORCH_MNNVL) == 512 * MIB
    assert _non_torch(m, 2, "h100-sxm", version="0.33.0") == base + 512 * MIB
    # enable_allreduce_rms_fusion has no pp/dp condition in 0.33 (config/vllm.py l.179-203)
    assert _non_torch(m, 2, "h100-sxm", version="0.33.0", pp=2) == base + 512 * MIB
    assert _non_torch(m, 2, "h100-sxm", version="0.33.0", eager=True) == base
    assert memory.non_torch_release("0.33.0")[:2] == (memory.NON_TORCH_MNNVL, False)


def test_fusion_workspace_rounds_each_buffer_up() -> None:
    # A buffer past one granule takes two: t = 2, d = 16384, fp32 lamport (4 B):
    # T = 64 MiB // (16384·2) = 2048; lamport 3·2·2048·16384·4 = 768 MiB → 1024 MiB;
    # buffer 2·2048·16384·2 = 128 MiB → 512; flags → 512: 2 GiB.
    assert memory.fusion_workspace_bytes(t=2, hidden=16384, b=2, max_num_batched_tokens=8192,
                                         capability=90, fp32=True) == 4 * 512 * MIB
    # Sources name the release's files and lines.
    how, single, src = memory.non_torch_release("0.19.0")
    assert how == memory.NON_TORCH_FUSION and single
    assert "allreduce_rms_fusion.py l.54-72" in src and "trtllm_ar.py l.574-611" in src


def test_cuda_graph_term_only_where_the_release_profiles_it() -> None:
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default since v0.21.0 (0.33.0 envs.py).
    s = _shape("meta-llama/Llama-3.1-8B-Instruct")

    def graphs(v: str, eager: bool = False) -> float:
        return memory.reserve_for(s, 1, b=2, max_num_batched_tokens=8192, max_num_seqs=1024,
                                  version=v, enforce_eager=eager).terms[1].result

    assert graphs("0.20.0") == 0
    assert graphs("0.21.0") == 51 * 2 * 4 * MIB  # 51 capture sizes × 2 modes × 4 MiB
    assert graphs("0.33.0", eager=True) == 0


@pytest.mark.parametrize(("version", "gib", "name", "expected"), [
    # >= 160 GiB tier (16384 tokens for serve): from 0.28.0 arg_utils.py l.2582; absent in 0.27.0
    # (get_batch_defaults l.2515) and 0.26.0 (l.2431), which put a B200 on the >= 70 GiB tier.
    ("0.26.0", 178, "NVIDIA B200", (1024, 8192)),
    ("0.27.0", 178, "NVIDIA B200", (1024, 8192)),
    ("0.28.0", 178, "NVIDIA B200", (1024, 16384)),
    ("0.33.0", 178, "NVIDIA B200", (1024, 16384)),
    # GB10 (cc 12.1) kept on the small tier from 0.33.0 (l.2963); 0.32.0 has no such check.
    ("0.32.0", 119, "NVIDIA GB10", (1024, 8192)),
    ("0.33.0", 119, "NVIDIA GB10", (256, 2048)),
    # A100 80GB stays on the small tier in every release read (0.10.1 l.1638 ... 0.33.0 l.2985).
    ("0.10.1", 79, "NVIDIA A100-SXM4-80GB", (256, 2048)),
    ("0.33.0", 79, "NVIDIA H100 80GB HBM3", (1024, 8192)),
])
def test_batch_defaults_by_release(version: str, gib: int, name: str,
                                   expected: tuple[int, int]) -> None:
    seqs, toks = defaults_for("vllm", version).batch_defaults(gib * GIB, name, "serve")
    assert (seqs.value, toks.value) == expected
    assert f"vllm {version} engine/arg_utils.py" in toks.source


@pytest.mark.parametrize(("version", "u"), [
    ("0.10.1", 0.9),  # config/cache.py l.43
    ("0.17.0", 0.9),  # l.49
    ("0.19.0", 0.9),  # l.41
    ("0.20.0", 0.92),  # l.66: the change
    ("0.21.0", 0.92),  # l.66
    ("0.33.0", 0.92),  # l.215
])
def test_gpu_memory_utilization_by_release(version: str, u: float) -> None:
    d = defaults_for("vllm", version).gpu_memory_utilization()
    assert d.value == u and not d.assumed


@pytest.mark.parametrize(("max_model_len", "tokens"), [
    (4096, 4096),  # max(max_model_len, 2048), config.py l.1118 (0.6.4)
    (1024, 2048),
    (32768, 32768),
    (131072, 512),  # > 32K: chunked prefill on (arg_utils.py l.996-1012), 512 tokens (l.1114)
])
def test_v0_batch_defaults_follow_max_model_len(max_model_len: int, tokens: int) -> None:
    # V0 has no memory tiers: 256 sequences (engine/arg_utils.py l.123) on any GPU.
    seqs, toks = defaults_for("vllm", "0.6.4").batch_defaults(80 * GIB, "NVIDIA H100", "serve",
                                                             max_model_len)
    assert (seqs.value, toks.value) == (256, tokens)
    assert toks.value == memory.v0_batched_tokens(max_model_len)
    assert "V0" in toks.source and not toks.assumed
