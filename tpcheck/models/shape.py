"""The numbers of a checkpoint that decide what tensor parallelism does to it.

A ModelShape is read once from config.json (see ``tpcheck.models.config``) and never changes;
the physics only reads it. Every width here is the *text* model's, as vLLM's
``hf_text_config`` sees it.
"""

from __future__ import annotations

from tpcheck.record import field, record, value_hash


@record
class MoE:
    """Mixture-of-experts widths. ``moe_layers`` of the ``ModelShape.layers`` route tokens."""

    num_experts: int  # routed experts per MoE layer
    experts_per_token: int
    expert_ffn: int  # moe_intermediate_size (Mixtral: intermediate_size)
    moe_layers: int
    num_shared_experts: int = 0
    shared_expert_ffn: int = 0  # width of one shared expert (0 when none)
    router_bias: bool = False
    # Added for tpcheck.models.params (optional; defaults keep older callers valid):
    expert_bias: bool = False  # gpt-oss: gate_up/down of every expert carry biases
    shared_expert_gate: bool = False  # qwen2_moe / qwen3_next: sigmoid gate d -> 1, shared expert


@record
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): one latent per token per layer."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    # DeepSeek-V3.2 sparse-attention indexer (0 when absent): index_n_heads, index_head_dim.
    indexer_heads: int = 0
    indexer_head_dim: int = 0

    @property
    def latent_dim(self) -> int:
        """Elements cached per token per layer: kv_lora_rank + qk_rope_head_dim."""
        return self.kv_lora_rank + self.qk_rope_head_dim


@record
class Quant:
    """What ``quantization_config`` says about how the linear weights are stored."""

    method: str  # fp8, awq, gptq, compressed-tensors, mxfp4, bitsandbytes, ...
    weight_bits: int  # 16, 8, 4
    group_size: int | None = None  # AWQ/GPTQ/wNa16 group along the input dim
    block: tuple[int, int] | None = None  # fp8 block-wise (block_n, block_k)
    experts_only: bool = False  # mxfp4 on gpt-oss quantizes the experts only
    # Added for tpcheck.models.quant (optional):
    strategy: str | None = None  # compressed-tensors: tensor, channel, group, block
    zero_point: bool = False  # AWQ / asymmetric GPTQ store a zero per group (same bits as weights)
    excluded: tuple[str, ...] = ()  # module names left unquantized (modules_to_not_convert, ignore)
    # Components stored in another format than the rest: (component group, its Quant), where a
    # group is attn, linear_attn, dense_mlp, routed_experts, shared_experts or lm_head.
    # DeepSeek-V4 (fp8 with MXFP4 or NVFP4 experts) and ModelOpt MIXED_PRECISION use it.
    overrides: tuple[tuple[str, Quant], ...] = ()
    # The KV cache dtype the checkpoint asks for (ModelOpt kv_cache_scheme / kv_cache_quant_algo,
    # e.g. fp8_e4m3), which some releases take for --kv-cache-dtype auto; None: not said.
    kv_cache: str | None = None


@record
class LinearAttention:
    """Linear-attention (Gated DeltaNet) layers of a hybrid model such as qwen3_next.

    They keep a fixed-size recurrent state instead of a per-token KV cache; ``layers`` of the
    ``ModelShape.layers`` are of this kind and the rest are full attention.
    """

    layers: int
    num_key_heads: int  # linear_num_key_heads
    num_value_heads: int  # linear_num_value_heads
    key_head_dim: int  # linear_key_head_dim
    value_head_dim: int  # linear_value_head_dim
    conv_kernel: int  # linear_conv_kernel_dim


@record
class CompressedAttention:
    """DeepSeek-V4 attention, which vLLM and SGLang cache as MLA (one latent, every rank): each
    layer keeps the last ``window`` tokens' latents, and a layer of compress ratio r > 1 also keeps
    one latent per r tokens, r = 4 with a sparse indexer's K cache beside it."""

    window: int  # sliding_window (128)
    head_dim: int  # the latent: head_dim (512) = NoPE part + qk_rope_head_dim
    rope_head_dim: int  # qk_rope_head_dim (64), kept in bf16 by the fp8_ds_mla layout
    ratios: tuple[int, ...]  # compress ratio per decoder layer (MTP layers excluded); 0 = window
    indexer_head_dim: int  # index_head_dim (128)
    # Weight widths (tpcheck.models.params; 0 = not in the config, counted as plain GQA then):
    q_lora_rank: int = 0  # wq_a output / wq_b input (Flash 1024, Pro 1536)
    o_lora_rank: int = 0  # wo_a output per group (1024)
    o_groups: int = 0  # output-projection groups; vLLM gives each TP rank o_groups / t of them
    indexer_heads: int = 0  # index_n_heads (64)
    hc_mult: int = 0  # hyper-connection streams (4): fp32 mixing weights per layer
    hash_layers: int = 0  # num_hash_layers: MoE layers routed by a token-id table, not the gate

    @property
    def indexed_layers(self) -> int:
        """Layers with a sparse indexer: ratio 4 (vllm 0.33.0 deepseek_v4/attention.py:302)."""
        return sum(1 for r in self.ratios if r == 4)


@record
class VisionTower:
    """A multimodal checkpoint's vision encoder and projector, in parameters by how vLLM's
    tensor parallelism places them (``tpcheck.models.vision`` reads them)."""

    family: str  # vision_config.model_type: llama4_vision_model, siglip_vision_model
    sharded: int  # parameters split over the TP group (QKV/column/row-parallel weights)
    replicated: int  # parameters every rank holds whole (embeddings, norms, row biases)
    modalities: tuple[str, ...] = ("image",)  # the limits that skip it when all are 0
    source: str = ""


@record
class ModelShape:
    """Shape of one decoder-only language model (the text part of a multimodal wrapper)."""

    model_type: str
    layers: int  # L
    hidden: int  # d
    heads: int  # h
    kv_heads: int  # h_kv
    head_dim: int  # d_h (config head_dim, else d/h)
    ffn: int  # f: dense MLP width (0 when every layer is MoE)
    vocab: int  # V
    tied_embeddings: bool
    dtype: str  # bfloat16, float16, float32 (torch_dtype / dtype)
    max_position_embeddings: int | None
    v_head_dim: int | None = None  # when V heads differ from K heads (non-MLA)
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    gated_mlp: bool = True  # gate+up+down (SwiGLU); False: up+down (falcon, starcoder2)
    sliding_window: int | None = None
    sliding_layers: int = 0  # how many of the L layers use the sliding window
    moe: MoE | None = None
    mla: MLA | None = None
    quant: Quant | None = None
    architectures: tuple[str, ...] = ()
    # hub id or path it was read from: only findings' words, so two names of one config are
    # one shape to every memo (the physics', the legality questions') and price it once
    name: str = field(default="", compare=False)
    extra_params: int = 0  # parameters the component counts miss (documented per family)
    # Added for tpcheck.models.params (optional; defaults describe a Llama-style layer):
    layer_norms: int = 2  # d-wide norm vectors per decoder layer (gemma2/3: 4)
    norm_bias: bool = False  # LayerNorm with bias (falcon, starcoder2) instead of RMSNorm
    qk_norm: bool = False  # per-head q_norm/k_norm weights of d_h each (qwen3, gemma3)
    attn_output_gate: bool = False  # qwen3_next: q_proj also emits a gate, 2·h·d_h outputs
    attention_sinks: bool = False  # gpt-oss: one learned sink logit per head per layer
    linear_attn: LinearAttention | None = None  # hybrid models: the non-KV-cache layers
    # nemotron-nas (block_configs): layers whose attention is a no-op (no weights, no KV cache),
    # and each layer's MLP width when they differ (0: a no-op MLP); ``ffn`` is then the widest.
    no_attention_layers: int = 0
    layer_ffn: tuple[int, ...] = ()
    compressed: CompressedAttention | None = None  # DeepSeek-V4's compressed sparse attention
    vision: VisionTower | None = None  # a multimodal wrapper's vision tower (not in the counts)

    def __hash__(self) -> int:
        """Computed once and kept: the shape keys the memoised legality questions, which a file
        of refused launches asks ~8 times a launch, and its fields hash nested records."""
        h: int | None = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = value_hash(self)
        return h

    @property
    def dense_layers(self) -> int:
        return self.layers - (self.moe.moe_layers if self.moe else 0)

    @property
    def is_mla(self) -> bool:
        return self.mla is not None

    @property
    def latent_cache(self) -> bool:
        """The KV cache has no head axis (MLA, DeepSeek-V4's compressed attention): every TP
        rank holds it whole, so there is no KV-head cliff to pass."""
        return self.mla is not None or self.compressed is not None

    @property
    def head_dim_v(self) -> int:
        return self.v_head_dim if self.v_head_dim is not None else self.head_dim
