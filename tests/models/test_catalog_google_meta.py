"""Catalog entries added for the Google / Meta / NVIDIA ids real repositories deploy (issue 16).

Each test reads the bundled config.json through the catalog, as a lint run does, and checks the
shape against a published figure or an independent derivation written beside the assertion.
"""

from __future__ import annotations

import pytest

from tests.models._catalog import counts
from tpcheck.models import catalog


@pytest.mark.parametrize(
    ("model_id", "non_embedding"),
    [
        # Gemma report (arXiv:2403.08295) Table 2, non-embedding parameters. Its embedding
        # column counts 256,128 rows; config.json's vocab_size is 256,000, so only the
        # non-embedding figure is comparable.
        ("google/gemma-2b-it", 1_981_884_416),
        ("google/gemma-7b-it", 7_751_248_896),
    ],
)
def test_gemma_1_matches_report_non_embedding(model_id: str, non_embedding: int) -> None:
    s, c = counts(model_id)
    assert c.embedding == 256_000 * s.hidden and c.lm_head == 0  # tied (gemma default)
    assert c.total - c.embedding == non_embedding


def test_gemma_7b_is_multi_head_and_2b_multi_query() -> None:
    """The two Gemma 1 sizes differ in attention: 7B has 16 KV heads (MHA), 2B one (MQA)."""
    s7, _ = counts("google/gemma-7b-it")
    assert (s7.layers, s7.hidden, s7.heads, s7.kv_heads, s7.head_dim) == (28, 3072, 16, 16, 256)
    # head_dim 256 is not hidden/heads (3072/16 = 192): q/k/v are 16 × 256 = 4096 wide
    assert s7.heads * s7.head_dim == 4096
    s2, _ = counts("google/gemma-2b-it")
    assert (s2.layers, s2.hidden, s2.heads, s2.kv_heads, s2.head_dim) == (18, 2048, 8, 1, 256)
    base, _ = counts("google/gemma-2b")
    fields = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
              "tied_embeddings", "dtype")
    assert [getattr(s2, f) for f in fields] == [getattr(base, f) for f in fields]


@pytest.mark.parametrize(
    ("model_id", "layers", "d", "ffn"),
    [("meta-llama/Llama-2-7b-chat-hf", 32, 4096, 11008),
     ("meta-llama/Llama-2-13b-chat-hf", 40, 5120, 13824)],
)
def test_llama_2_chat_counts(model_id: str, layers: int, d: int, ffn: int) -> None:
    s, c = counts(model_id)
    assert s.kv_heads == s.heads and s.dtype == "float16"  # MHA, fp16 weights
    # per layer: q,k,v,o (4·d²) + gate/up/down (3·d·ffn) + two RMSNorms (2·d);
    # untied embedding and lm_head (2·32000·d) and the final norm (d)
    expected = layers * (4 * d * d + 3 * d * ffn + 2 * d) + 2 * 32_000 * d + d
    assert c.total == expected
    # 7B: 6,738,415,616 and 13B: 13,015,864,320, the counts the Llama 2 cards round to 7B/13B
    assert c.total in (6_738_415_616, 13_015_864_320)


def test_phi_3_5_mini_longrope_and_card_count() -> None:
    s, c = counts("microsoft/Phi-3.5-mini-instruct")
    # 32 layers, 3072 wide, 32 heads of 3072/32 = 96, MHA (32 KV heads), ffn 8192, vocab 32064
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim) == (32, 3072, 32, 32, 96)
    # per layer 4·d² + 3·d·ffn + 2·d; untied embedding and lm_head 2·V·d; final norm d
    d, f, V = 3072, 8192, 32064
    assert c.total == 32 * (4 * d * d + 3 * d * f + 2 * d) + 2 * V * d + d == 3_821_079_552
    assert round(c.total / 1e8) == 38  # the card's "3.8B parameters"


def test_codellama_7b_vocab_and_theta() -> None:
    s, c = counts("codellama/CodeLlama-7b-hf")
    # Llama 2 7B's shape with 16 infilling tokens more (vocab 32016) and 16k positions
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.ffn, s.vocab) == (32, 4096, 32, 32, 11008,
                                                                         32016)
    assert s.max_position_embeddings == 16384
    d, f, V = 4096, 11008, 32016
    assert c.total == 32 * (4 * d * d + 3 * d * f + 2 * d) + 2 * V * d + d  # 6,738,546,688


def test_gemma_pretrained_and_instruction_tuned_share_a_folder() -> None:
    """Same-size Gemma checkpoints share one shape (each report's Table 1 gives one
    architecture per size); every base/-it pair bundled as two files agrees."""
    for alias, folder in [("google/gemma-7b", "google--gemma-7b-it"),
                          ("google/gemma-2-27b-it", "google--gemma-2-27b")]:
        found = catalog.find(alias)
        assert found is not None and found.folder.name == folder, alias
        assert found.model_id == alias  # the finding names the id the file wrote
    fields = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
              "sliding_layers", "sliding_window")
    for base, tuned in [("google/gemma-2b", "google/gemma-2b-it"),
                        ("google/gemma-2-2b", "google/gemma-2-2b-it"),
                        ("google/gemma-2-9b", "google/gemma-2-9b-it")]:
        b, _ = counts(base)
        t, _ = counts(tuned)
        assert [getattr(b, f) for f in fields] == [getattr(t, f) for f in fields], base
    # an -it id of a size with no file stays unknown: nothing is guessed from the name
    assert catalog.find("google/gemma-2-9b-it-but-not-real") is None
