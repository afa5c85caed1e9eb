"""The weight split kept on a shape (``split.weight_split``) is the one computed afresh for each
(dtype, quantization), and a copy of the shape with other fields does not inherit it."""

from __future__ import annotations

from tests.physics.test_step import shape_of
from tpcheck.physics import split
from tpcheck.record import replace


def test_kept_split_is_each_dtype_and_shapes_own() -> None:
    shape = shape_of("meta-llama/Meta-Llama-3-70B-Instruct")
    asks = ((None, None), ("float16", None), (None, "fp8"), ("bfloat16", "fp8"))
    fresh = {k: split._weight_split.__wrapped__(shape, *k) for k in asks}
    for _ in range(2):  # the second round reads the kept ones
        for dtype, quant in asks:
            assert split.weight_split(shape, dtype=dtype, quantization=quant) == fresh[
                (dtype, quant)]
    assert fresh[(None, None)] != fresh[(None, "fp8")]
    # another shape (fewer layers), built from the first: its own split, not the kept one
    smaller = replace(shape, layers=shape.layers // 2)
    assert "_splits" not in smaller.__dict__
    assert split.weight_split(smaller) == split._weight_split.__wrapped__(smaller, None, None)
    assert split.weight_split(smaller) != split.weight_split(shape)
    # the same shape under another name: the same split
    assert split.weight_split(replace(shape, name="other")) == split.weight_split(shape)
