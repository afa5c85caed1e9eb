"""What an engine allocates at model load beside the checkpoint's text weights, per GPU.

Each is a Formula the weights figure adds on every rank (``weights_per_gpu``'s ``whole`` and
``extras``), none of it read by a decode step:

- the rotary cos/sin cache (vLLM and SGLang; its dtype by engine, release and launch);
- the vision tower of a multimodal checkpoint (vLLM; ``tpcheck.models.vision``);
- the caching allocator's block slack (vLLM's figure is torch's allocated blocks; ``alloc``);
- 0.19's FlashInfer MLA workspace, made when the attention selector imports its module.
"""

from __future__ import annotations

from tpcheck.engines.eras import mla_fi_workspace
from tpcheck.formula import Formula
from tpcheck.models.shape import ModelShape
from tpcheck.physics.alloc import allocator_slack
from tpcheck.physics.plan_records import Options, act_bytes_of, release_of
from tpcheck.physics.weights import ROPE_SRC, rope_cache, vision_tower_bytes

# Families whose positions are learned or ALiBi, not rotary: no cos/sin cache.
NO_ROTARY = frozenset({"gpt2", "gpt_bigcode", "bloom", "mpt", "opt"})


def _rocm(opts: Options) -> bool:
    return opts.gpu is not None and opts.gpu.link == "infinity-fabric"


def rope_for(shape: ModelShape, opts: Options) -> Formula | None:
    """The rotary cache every rank holds whole, in the dtype the engine keeps it.

    vLLM casts it to the model dtype unless FlashInfer keeps it fp32: gpt-oss asks fp32 itself;
    DeepSeek's scaling rope keeps fp32 only on its FlashInfer path, which needs the
    rotary_embedding custom op on (custom_ops "all": --enforce-eager, compilation mode NONE)
    on CUDA; under torch.compile custom_ops is "none" (ROPE_SRC; row 41's 0.19 log: custom_ops
    ['none'], rotary_embedding disabled). SGLang keeps it fp32 on CUDA (and on ROCm from 0.5).
    """
    if shape.compressed is not None or shape.model_type in NO_ROTARY:
        return None  # DeepSeek-V4's rotary: not read
    rot = shape.mla.qk_rope_head_dim if shape.mla is not None else shape.head_dim
    two = shape.model_type.startswith("gemma3") and 0 < shape.sliding_layers < shape.layers
    if opts.engine == "sglang":
        from tpcheck.engines.sglang_rules import sglang_rope_fp32  # SGLang's table: its launches

        fp32, src = sglang_rope_fp32(release_of(opts), _rocm(opts))
        fp32 = fp32 or shape.model_type == "gpt_oss"
    else:
        fp32 = shape.model_type == "gpt_oss" or (
            shape.mla is not None and opts.enforce_eager and not _rocm(opts))
        src = ROPE_SRC
    return rope_cache(max_position=shape.max_position_embeddings, rotary_dim=rot,
                      b=act_bytes_of(shape, opts), fp32=fp32, copies=2 if two else 1,
                      source=src)


def load_extras(shape: ModelShape, t: int, opts: Options, g: int) -> tuple[Formula, ...]:
    """The vision tower, the allocator's block slack and the FlashInfer MLA workspace (vLLM)."""
    if opts.engine != "vllm":
        return ()
    out: list[Formula] = []
    b = act_bytes_of(shape, opts)
    vis = shape.vision
    if vis is not None and not opts.vision_off:
        out.append(vision_tower_bytes(vis.sharded, vis.replicated, t, b, vis.source))
    # pp = 1 only: a stage's share of the slack is not modelled; nor with CPU offload
    if max(opts.pp, 1) == 1 and opts.cpu_offload <= 0:
        slack = allocator_slack(shape, t, b, g)
        if slack is not None:
            out.append(slack)
    if shape.is_mla and not _rocm(opts):
        n, src = mla_fi_workspace(release_of(opts))
        if n:
            out.append(Formula("W_mla_workspace", "FlashInfer MLA workspace (made at import)",
                               {"bytes": n}, n, "B", src))
    return tuple(out)
