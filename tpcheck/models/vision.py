"""The vision tower of a multimodal checkpoint, counted the way vLLM loads and shards it.

vLLM builds the whole ``*ForConditionalGeneration`` model, so "Model loading took" includes the
vision encoder and its projector unless every modality of the tower is limited to 0 (issue 32
item 3: Llama-4-Scout 0.43 GiB per GPU at t = 4). Two families are read from ``vision_config``:

- ``llama4_vision_model`` (Llama-4 Scout/Maverick; vllm 0.19.0 model_executor/models/
  mllama4.py): the unfold patch linear (l.438, column-parallel), per layer QKV (l.279, with
  biases), o_proj (l.287, row-parallel: its bias whole), fc1/fc2 (l.130/138), the pixel-shuffle
  adapter MLP (l.205-230: intermediate_size → projector_input_dim → projector_output_dim) and the
  projector ``linear_1`` (l.166, vision_output_dim → text hidden, no bias) are split over t;
  the class and positional embeddings (l.483-486), the layer norms (l.361-362, 489-490) and the
  row-parallel biases are whole on every rank. Built with quant_config=None (l.759-768).
- ``siglip_vision_model`` (Gemma 3; vllm 0.19.0 models/siglip.py, gemma3_mm.py): QKV (l.383),
  out_proj (l.392), fc1/fc2 (l.456/463) split, all with biases (row biases whole); the patch
  Conv2dLayer (l.293, with bias), the position embedding of (image/patch)² rows (l.303), the
  layer norms (l.497/503) and the post layernorm (l.717-724, kept when every layer is used)
  whole; no pooling head when vision_use_head is false (l.729-747); gemma3_mm.py l.424-433:
  the projector's mm_input_projection_weight (vision hidden × text hidden, a plain Parameter)
  and its RMSNorm, whole on every rank.

Other towers are not read (``parse_vision`` returns None): their weights are not in the figure.
"""

from __future__ import annotations

from collections.abc import Mapping

from tpcheck.models.shape import VisionTower

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

LLAMA4_SRC = ("vllm 0.19.0 model_executor/models/mllama4.py l.117-177 (MLP, projector), "
              "l.205-331 (adapter, attention), l.334-381, 425-500 (layers, patch linear, "
              "embeddings), l.759-768 (quant_config=None)")
SIGLIP_SRC = ("vllm 0.19.0 model_executor/models/siglip.py l.285-303, 383-398, 456-470, "
              "497-503, 717-747; gemma3_mm.py l.421-433, 515-521")


def _int(cfg: Mapping[str, Any], key: str, default: int = 0) -> int:
    v = cfg.get(key, default)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else default


def parse_vision(cfg: Mapping[str, Any], text_hidden: int) -> VisionTower | None:
    """The tower ``cfg["vision_config"]`` describes, or None when absent or not read."""
    v = cfg.get("vision_config")
    if not isinstance(v, Mapping):
        return None
    family = v.get("model_type")
    if family == "llama4_vision_model":
        return _llama4(v, text_hidden)
    if family == "siglip_vision_model" and cfg.get("model_type") == "gemma3":
        return _siglip_gemma3(v, text_hidden)
    return None


def _llama4(v: Mapping[str, Any], text_hidden: int) -> VisionTower | None:
    d, inter, layers = _int(v, "hidden_size"), _int(v, "intermediate_size"), \
        _int(v, "num_hidden_layers")
    image, patch = _int(v, "image_size"), _int(v, "patch_size")
    if not (d and inter and patch and image):
        return None
    channels = _int(v, "num_channels", 3)
    p_in, p_out = _int(v, "projector_input_dim"), _int(v, "projector_output_dim")
    v_out = _int(v, "vision_output_dim")
    proj_bias = v.get("multi_modal_projector_bias") is True
    positions = (image // patch) ** 2 + 1
    per_layer = 4 * d * d + 3 * d + 2 * inter * d + inter  # QKV (+bias), o, fc1 (+bias), fc2
    adapter = p_in * inter + p_out * p_in + (p_in if proj_bias else 0)
    sharded = channels * patch * patch * d + layers * per_layer + adapter + text_hidden * v_out
    replicated = (d + positions * d + 4 * d  # class, positional embeddings; pre/post norm
                  + layers * 6 * d  # two LayerNorms (weight, bias), o_proj and fc2 biases
                  + (p_out if proj_bias else 0))
    return VisionTower("llama4_vision_model", sharded, replicated, ("image",), LLAMA4_SRC)


def _siglip_gemma3(v: Mapping[str, Any], text_hidden: int) -> VisionTower | None:
    d, inter, layers = _int(v, "hidden_size"), _int(v, "intermediate_size"), \
        _int(v, "num_hidden_layers")
    image, patch = _int(v, "image_size"), _int(v, "patch_size")
    if not (d and inter and patch and image):
        return None
    channels = _int(v, "num_channels", 3)
    positions = (image // patch) ** 2
    sharded = layers * (4 * d * d + 3 * d + 2 * inter * d + inter)
    replicated = (channels * patch * patch * d + d + positions * d  # patch conv, positions
                  + layers * 6 * d  # two LayerNorms, out_proj and fc2 biases
                  + 2 * d  # post layernorm
                  + d * text_hidden + d)  # projector weight and its RMSNorm
    if v.get("vision_use_head") is not False:
        return None  # the attention-pooling head (siglip.py l.644-662) is not counted
    return VisionTower("siglip_vision_model", sharded, replicated, ("image",), SIGLIP_SRC)
