"""Issue 14 item 8: a ModelShape keeps its hash (it keys the memoised legality questions, asked
~8 times a refused launch); the kept hash is the value hash, so equal shapes still hash alike
and a changed field still changes it."""

from __future__ import annotations

from tpcheck.models import catalog
from tpcheck.models.config import load_shape
from tpcheck.models.shape import ModelShape
from tpcheck.physics.legality import legal_sizes
from tpcheck.record import replace, value_hash


def shape(model_id: str) -> ModelShape:
    entry = catalog.find(model_id)
    assert entry is not None
    return load_shape(entry.config_path, name=model_id)


def test_kept_hash_is_the_value_hash_and_equal_shapes_agree() -> None:
    a, b = shape("Qwen/Qwen3-32B"), shape("Qwen/Qwen3-32B")
    assert a is not b and a == b
    assert hash(a) == hash(b) == value_hash(a)
    assert hash(a) == hash(a)  # asked again: the kept value
    other = replace(a, kv_heads=4)
    assert other != a and hash(other) == value_hash(other) != hash(a)


def test_memoised_legal_sizes_follow_the_fields() -> None:
    a = shape("Qwen/Qwen3-32B")  # 64 heads, 8 KV heads, FFN 25600: 1, 2, 4, 8, 16, 32, 64 under 64
    assert legal_sizes(a, 64) == [1, 2, 4, 8, 16, 32, 64]
    # 48 heads: t must divide 48, suit 8 KV heads (t | 8 or 8 | t) and divide the FFN width
    # 25600 = 2^10 * 25; 3, 6, 12, 24 and 48 divide 48 but not 25600, so 1, 2, 4, 8, 16 remain
    assert legal_sizes(replace(a, heads=48), 64) == [1, 2, 4, 8, 16]
