"""Parameter counts of a ModelShape, split the way tensor parallelism treats them.

API: ``tensors(shape) -> tuple[Tensor, ...]`` lists every weight tensor family (component, kind,
rows × cols, copies); ``param_counts(shape) -> ParamCounts`` sums them per component and keeps
the tensors so ``tpcheck.models.quant`` can price each one in its storage dtype.

Components (each an int field of ParamCounts):

- ``embedding``, ``lm_head`` (0 when tied).
- ``attn_q``: the head-sharded query projection (MLA: ``q_b_proj``, or ``q_proj`` without
  q_lora_rank; DeepSeek-V4: ``wq_b``); with biases.
- ``attn_kv``: K and V projections and their biases (MLA: ``kv_b_proj``, which is split by head
  like them). Physics replicates these past h_kv.
- ``attn_o``: the output projection (with bias; DeepSeek-V4: grouped ``wo_a`` and ``wo_b``).
- ``mla_other``: MLA's down-projections ``q_a_proj`` and ``kv_a_proj_with_mqa``, their layernorms,
  and the DeepSeek-V3.2 indexer; DeepSeek-V4's ``fused_wqa_wkv``, compressors and indexer. vLLM
  builds these with ``disable_tp`` (ReplicatedLinear): every TP rank holds all of them, which is
  why they are kept apart from ``attn_q``.
- ``linear_attn``: Gated DeltaNet layers of hybrid models (qwen3_next), sharded by head.
- ``dense_mlp``: MLP of the dense layers; ``routed_experts``; ``shared_experts``.
- ``router``: the MoE gate (and its correction bias) plus shared-expert sigmoid gates.
- ``norms``: every layer norm, q/k norms and the final norm (not MLA's, see mla_other).
- ``other``: attention sinks, DeepSeek-V4's hyper-connection mixers and ``shape.extra_params``.

Tensor kinds say how a tensor is stored: ``linear`` (a weight matrix a quantization method
rewrites), ``bias``, ``norm``, ``embedding`` and ``plain`` (router, gates, sinks, convolutions:
left in the activation dtype by every quantization method here) and ``fp32`` (4 bytes a value
whatever the checkpoint: DeepSeek-V4's hyper-connection mixers, attention sinks, compressor
position biases, and its int32 hash-routing table).

``active`` counts the routed experts at ``experts_per_token`` of ``num_experts``; everything else
(shared experts, all attention, embeddings and lm_head) is active for every token.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.models.shape import CompressedAttention, ModelShape
from tpcheck.record import field, record

__all__ = ["COMPONENTS", "KINDS", "ParamCounts", "Tensor", "param_counts", "tensors"]

COMPONENTS = (
    "embedding",
    "lm_head",
    "attn_q",
    "attn_kv",
    "attn_o",
    "mla_other",
    "linear_attn",
    "dense_mlp",
    "routed_experts",
    "shared_experts",
    "router",
    "norms",
    "other",
)
KINDS = ("linear", "bias", "norm", "embedding", "plain", "fp32")


@record
class Tensor:
    """``copies`` tensors of ``rows × cols`` (a linear weight is out_features × in_features)."""

    component: str
    kind: str
    name: str
    rows: int
    cols: int
    copies: int

    @property
    def numel(self) -> int:
        return self.rows * self.cols * self.copies


@record
class ByComponent:
    """One number per component (parameters here, bytes in ``tpcheck.models.quant``)."""

    embedding: int
    lm_head: int
    attn_q: int
    attn_kv: int
    attn_o: int
    mla_other: int
    linear_attn: int
    dense_mlp: int
    routed_experts: int
    shared_experts: int
    router: int
    norms: int
    other: int

    @property
    def total(self) -> int:
        return sum(self.component(c) for c in COMPONENTS)

    def component(self, name: str) -> int:
        if name not in COMPONENTS:
            raise KeyError(name)
        value: int = getattr(self, name)
        return value


@record
class ParamCounts(ByComponent):
    """Parameters per component (see the module docstring for what each one holds)."""

    active_routed_experts: int  # routed-expert parameters one token goes through
    tensors: tuple[Tensor, ...] = field(default=(), repr=False, compare=False)

    @property
    def active(self) -> int:
        """Parameters one token touches: total with routed experts at top-k of E."""
        return self.total - self.routed_experts + self.active_routed_experts

    def by_kind(self, component: str | None = None) -> dict[str, int]:
        """Parameters per storage kind (``linear``, ``bias``, ...), optionally of one component."""
        out = dict.fromkeys(KINDS, 0)
        for t in self.tensors:
            if component is None or t.component == component:
                out[t.kind] += t.numel
        return out


def tensors(shape: ModelShape) -> tuple[Tensor, ...]:
    """Every weight tensor family of the text model (embedding to lm_head)."""
    return tuple(_tensors(shape))


def _tensors(s: ModelShape) -> Iterator[Tensor]:
    d, h, kv, dh, dv = s.hidden, s.heads, s.kv_heads, s.head_dim, s.head_dim_v
    L = s.layers
    lin = s.linear_attn
    attn_layers = L - (lin.layers if lin else 0) - s.no_attention_layers

    yield Tensor("embedding", "embedding", "embed_tokens", s.vocab, d, 1)
    if not s.tied_embeddings:
        yield Tensor("lm_head", "linear", "lm_head", s.vocab, d, 1)

    if s.compressed is not None and s.compressed.o_groups:
        yield from _v4_attention(s, s.compressed)
    elif s.mla is not None:
        m = s.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:
            yield Tensor("mla_other", "linear", "q_a_proj", m.q_lora_rank, d, L)
            yield Tensor("mla_other", "norm", "q_a_layernorm", m.q_lora_rank, 1, L)
            yield Tensor("attn_q", "linear", "q_b_proj", h * qk, m.q_lora_rank, L)
        else:
            yield Tensor("attn_q", "linear", "q_proj", h * qk, d, L)
        yield Tensor("mla_other", "linear", "kv_a_proj_with_mqa", m.latent_dim, d, L)
        yield Tensor("mla_other", "norm", "kv_a_layernorm", m.kv_lora_rank, 1, L)
        kv_b_rows = h * (m.qk_nope_head_dim + m.v_head_dim)
        yield Tensor("attn_kv", "linear", "kv_b_proj", kv_b_rows, m.kv_lora_rank, L)
        yield Tensor("attn_o", "linear", "o_proj", d, h * m.v_head_dim, L)
        if m.indexer_heads and m.indexer_head_dim:
            ih, idim = m.indexer_heads, m.indexer_head_dim
            yield Tensor("mla_other", "linear", "indexer.wq_b", ih * idim, m.q_lora_rank or d, L)
            yield Tensor("mla_other", "linear", "indexer.wk", idim, d, L)
            yield Tensor("mla_other", "norm", "indexer.k_norm", 2 * idim, 1, L)  # LayerNorm
            yield Tensor("mla_other", "plain", "indexer.weights_proj", ih, d, L)
    elif attn_layers:
        q_rows = h * dh * (2 if s.attn_output_gate else 1)
        yield Tensor("attn_q", "linear", "q_proj", q_rows, d, attn_layers)
        yield Tensor("attn_kv", "linear", "k_proj", kv * dh, d, attn_layers)
        yield Tensor("attn_kv", "linear", "v_proj", kv * dv, d, attn_layers)
        if s.qkv_bias:
            yield Tensor("attn_q", "bias", "q_proj.bias", q_rows, 1, attn_layers)
            yield Tensor("attn_kv", "bias", "k_proj.bias", kv * dh, 1, attn_layers)
            yield Tensor("attn_kv", "bias", "v_proj.bias", kv * dv, 1, attn_layers)
        yield Tensor("attn_o", "linear", "o_proj", d, h * dv, attn_layers)
        if s.o_bias:
            yield Tensor("attn_o", "bias", "o_proj.bias", d, 1, attn_layers)
        if s.qk_norm:
            yield Tensor("norms", "norm", "q_norm+k_norm", 2 * dh, 1, attn_layers)
        if s.attention_sinks:
            yield Tensor("other", "plain", "sinks", h, 1, attn_layers)

    if lin is not None and lin.layers:
        n = lin.layers
        qk_dim = lin.num_key_heads * lin.key_head_dim
        v_dim = lin.num_value_heads * lin.value_head_dim
        yield Tensor("linear_attn", "linear", "in_proj_qkvz", 2 * qk_dim + 2 * v_dim, d, n)
        yield Tensor("linear_attn", "linear", "in_proj_ba", 2 * lin.num_value_heads, d, n)
        yield Tensor("linear_attn", "plain", "conv1d", 2 * qk_dim + v_dim, lin.conv_kernel, n)
        yield Tensor("linear_attn", "plain", "dt_bias+A_log", 2 * lin.num_value_heads, 1, n)
        yield Tensor("linear_attn", "norm", "norm", lin.value_head_dim, 1, n)
        yield Tensor("linear_attn", "linear", "out_proj", d, v_dim, n)

    dense = s.dense_layers
    if s.layer_ffn:  # nemotron-nas: one MLP width per layer
        for width in sorted(set(s.layer_ffn) - {0}):
            yield from _mlp("dense_mlp", "mlp", width, d, s.layer_ffn.count(width), s.gated_mlp,
                            s.mlp_bias)
    elif dense and s.ffn:
        yield from _mlp("dense_mlp", "mlp", s.ffn, d, dense, s.gated_mlp, s.mlp_bias)

    yield from _moe_tensors(s)
    if s.compressed is not None and s.compressed.hc_mult:
        yield from _hyper_connections(d, s.compressed.hc_mult, L)

    per_norm = 2 * d if s.norm_bias else d
    if s.layer_ffn:  # nemotron-nas: a no-op attention or MLP has no norm before it
        norms = attn_layers + sum(1 for w in s.layer_ffn if w)
        yield Tensor("norms", "norm", "layer norms", per_norm, 1, norms)
    else:
        yield Tensor("norms", "norm", "layer norms", per_norm, s.layer_norms, L)
    yield Tensor("norms", "norm", "final norm", per_norm, 1, 1)
    if s.extra_params:
        yield Tensor("other", "plain", "extra_params", s.extra_params, 1, 1)


def _moe_tensors(s: ModelShape) -> Iterator[Tensor]:
    """Routed and shared experts, the router and its gates."""
    moe, d = s.moe, s.hidden
    if moe is None or not moe.moe_layers:
        return
    copies = moe.moe_layers * moe.num_experts
    yield from _mlp("routed_experts", "experts", moe.expert_ffn, d, copies, True,
                    moe.expert_bias)
    if moe.num_shared_experts and moe.shared_expert_ffn:
        width = moe.num_shared_experts * moe.shared_expert_ffn
        yield from _mlp("shared_experts", "shared_expert", width, d, moe.moe_layers, True,
                        False)
        if moe.shared_expert_gate:
            yield Tensor("router", "plain", "shared_expert_gate", 1, d, moe.moe_layers)
    yield Tensor("router", "plain", "gate", moe.num_experts, d, moe.moe_layers)
    # DeepSeek-V4's first num_hash_layers route by a token-id table (vocab × top-k) and have
    # no correction bias (vllm 0.33.0 models/deepseek_v4/nvidia/model.py l.288-310).
    hashed = min(s.compressed.hash_layers, moe.moe_layers) if s.compressed else 0
    if hashed:
        yield Tensor("router", "fp32", "gate.tid2eid", s.vocab, moe.experts_per_token,
                     hashed)
    if moe.router_bias and moe.moe_layers > hashed:
        yield Tensor("router", "plain", "gate.bias", moe.num_experts, 1,
                     moe.moe_layers - hashed)


def _v4_attention(s: ModelShape, c: CompressedAttention) -> Iterator[Tensor]:
    """DeepSeek-V4's low-rank attention as vLLM 0.33.0 builds it (models/deepseek_v4/
    attention.py l.252-287, indexer l.990-1046, compressor.py l.262-280).

    Split by TP (attn_q / attn_o): ``wq_b`` (ColumnParallel on h·d_h), ``wo_a`` (ColumnParallel
    on o_groups·o_lora_rank) and ``wo_b`` (RowParallel on the same width). Whole on every rank
    (mla_other): ``fused_wqa_wkv`` (disable_tp), q/kv norms, the compressor of each layer with
    ratio r > 1 and the indexer of each ratio-4 layer (ReplicatedLinear). The compressors and
    the indexer's ``weights_proj`` are built with quant_config=None, so they stay in the
    activation dtype (kind ``plain``) in an fp8 checkpoint; ``wq_b``, ``wo_a``, ``wo_b``,
    ``fused_wqa_wkv`` and the indexer's ``wq_b`` take the checkpoint's format.
    """
    d, h, hd, L = s.hidden, s.heads, c.head_dim, s.layers
    g, q_r = c.o_groups, c.q_lora_rank
    yield Tensor("mla_other", "linear", "fused_wqa_wkv", q_r + hd, d, L)
    yield Tensor("mla_other", "norm", "q_norm+kv_norm", q_r + hd, 1, L)
    yield Tensor("attn_q", "linear", "wq_b", h * hd, q_r, L)
    yield Tensor("attn_o", "linear", "wo_a", g * c.o_lora_rank, h * hd // g, L)
    yield Tensor("attn_o", "linear", "wo_b", d, g * c.o_lora_rank, L)
    yield Tensor("other", "fp32", "attn_sink", h, 1, L)  # make_attention_sink fp32
    for r in sorted(set(c.ratios) - {0, 1}):
        n = c.ratios.count(r)
        yield from _compressor("compressor", r, hd, d, n)
    if c.indexed_layers and c.indexer_heads:
        n, ih, idim = c.indexed_layers, c.indexer_heads, c.indexer_head_dim
        yield Tensor("mla_other", "linear", "indexer.wq_b", ih * idim, q_r, n)
        yield Tensor("mla_other", "plain", "indexer.weights_proj", ih, d, n)
        yield from _compressor("indexer.compressor", 4, idim, d, n)


def _compressor(name: str, ratio: int, hd: int, d: int, copies: int) -> Iterator[Tensor]:
    """One DeepseekCompressor: ratio 4 overlaps two windows (coff = 2), wider ratios do not."""
    width = (2 if ratio == 4 else 1) * hd
    yield Tensor("mla_other", "plain", f"{name}.fused_wkv_wgate", 2 * width, d, copies)
    yield Tensor("mla_other", "fp32", f"{name}.ape", ratio, width, copies)  # l.262-269
    yield Tensor("mla_other", "norm", f"{name}.norm", hd, 1, copies)


def _hyper_connections(d: int, hc: int, layers: int) -> Iterator[Tensor]:
    """DeepSeek-V4's hyper-connection mixers, fp32 and whole on every rank: per layer an
    attention and an FFN mixer of (2 + hc)·hc rows over hc·d, with bases and 3 scales; one
    head mixer of hc rows (vllm 0.33.0 models/deepseek_v4/nvidia/model.py l.621-664, 883-900)."""
    mix = (2 + hc) * hc
    yield Tensor("other", "fp32", "hc_attn_fn+hc_ffn_fn", mix, hc * d, 2 * layers)
    yield Tensor("other", "fp32", "hc bases+scales", mix + 3, 1, 2 * layers)
    yield Tensor("other", "fp32", "hc_head_fn+base", hc, hc * d + 1, 1)
    yield Tensor("other", "fp32", "hc_head_scale", 1, 1, 1)


def _mlp(
    component: str, name: str, f: int, d: int, copies: int, gated: bool, bias: bool
) -> Iterator[Tensor]:
    up_rows = 2 * f if gated else f  # gate and up fused as vLLM loads them
    yield Tensor(component, "linear", f"{name}.gate_up_proj", up_rows, d, copies)
    yield Tensor(component, "linear", f"{name}.down_proj", d, f, copies)
    if bias:
        yield Tensor(component, "bias", f"{name}.gate_up_proj.bias", up_rows, 1, copies)
        yield Tensor(component, "bias", f"{name}.down_proj.bias", d, 1, copies)


def param_counts(shape: ModelShape) -> ParamCounts:
    """Sum ``tensors(shape)`` per component; ``active`` follows top-k of the routed experts."""
    ts = tensors(shape)
    sums = dict.fromkeys(COMPONENTS, 0)
    for t in ts:
        sums[t.component] += t.numel
    active_routed = 0
    if shape.moe is not None and shape.moe.num_experts:
        # Every expert has the same size, so top-k of E is exact.
        active_routed = (
            sums["routed_experts"] * shape.moe.experts_per_token // shape.moe.num_experts
        )
    return ParamCounts(**sums, active_routed_experts=active_routed, tensors=ts)
