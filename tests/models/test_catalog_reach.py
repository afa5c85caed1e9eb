"""Catalog entries added for hub ids the real corpus deploys but tpcheck could not resolve (TP000).

Each test reads the bundled config.json through the catalog, as a lint run does, and checks the
parsed shape against a published figure with the arithmetic written beside the assertion.
"""

from __future__ import annotations

from tests.models._catalog import counts
from tpcheck.models import catalog


def test_opt_125m_matches_the_paper_row_and_its_name() -> None:
    """OPT paper (arXiv:2205.01068) table 1, 125M: 12 layers, 12 heads, d_model 768."""
    s, c = counts("facebook/opt-125m")
    shape = (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.ffn)
    assert shape == (12, 768, 12, 12, 64, 3072)
    assert s.tied_embeddings and c.lm_head == 0  # OPTConfig's default: the LM head is the embedding
    assert s.dtype == "float16" and s.max_position_embeddings == 2048
    d, f, L, V = 768, 3072, 12, 50272
    # q,k,v,o with biases + fc1 + fc2 with biases + two LayerNorms (weight and bias)
    per_layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d
    # embedding V·d, learned positions (2048 + OPT's offset of 2)·d, final LayerNorm 2·d
    expected = L * per_layer + V * d + (2048 + 2) * d + 2 * d
    assert c.total == expected == 125_239_296  # the "125m" of the hub id
    # fp16: 2 bytes a parameter, 250,478,592 bytes of weights
    assert 2 * c.total == 250_478_592


def test_opt_125m_is_the_smallest_of_the_opt_family_already_bundled() -> None:
    """Same key set and layout as the SqueezeLLM-kept OPT files; only the size keys differ."""
    small = catalog.find("facebook/opt-125m")
    big = catalog.find("facebook/opt-1.3b")
    assert small is not None and big is not None
    a = small.config_path.read_text(encoding="utf-8").splitlines()
    b = big.config_path.read_text(encoding="utf-8").splitlines()
    assert len(a) == len(b) == 28
    differ = [x.split(":")[0].strip() for x, y in zip(a, b, strict=True) if x != y]
    assert differ == ['"_name_or_path"', '"ffn_dim"', '"hidden_size"', '"num_attention_heads"',
                      '"num_hidden_layers"', '"word_embed_proj_dim"']


def test_mistral_7b_instruct_v02_shape_and_count() -> None:
    """Mistral 7B paper (arXiv:2310.06825) table 1 with v0.2's 32k context, theta 1e6, no SWA."""
    s, c = counts("mistralai/Mistral-7B-Instruct-v0.2")
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.ffn, s.vocab) == (
        32, 4096, 32, 8, 128, 14336, 32000)
    assert s.sliding_window is None and s.sliding_layers == 0  # v0.1's 4096 window is gone
    assert s.max_position_embeddings == 32_768  # restored from the vendor's 512, see SOURCE
    assert not s.tied_embeddings and s.dtype == "bfloat16" and s.quant is None
    d, f, L, V, kv = 4096, 14336, 32, 32000, 8 * 128
    expected = L * (2 * d * d + 2 * d * kv + 3 * d * f + 2 * d) + 2 * V * d + d
    assert c.total == expected == 7_241_732_096  # the hub's "7.24B params"


def test_mistral_v02_differs_from_the_bundled_v03_only_in_vocab() -> None:
    """v0.3's only shape change is the 32768-token vocabulary (its model card)."""
    v2, _ = counts("mistralai/Mistral-7B-Instruct-v0.2")
    v3, _ = counts("mistralai/Mistral-7B-Instruct-v0.3")
    fields = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "tied_embeddings",
              "dtype", "max_position_embeddings", "sliding_window")
    assert [getattr(v2, f) for f in fields] == [getattr(v3, f) for f in fields]
    assert (v2.vocab, v3.vocab) == (32000, 32768)
