"""A layout kept in the run's memo reads the release wherever its weights do: vLLM 0.19-0.32
make FlashInfer's MLA workspace at import (128 MiB per GPU, ``engines.eras``
MLA_FI_WORKSPACE_RELEASES), 0.33 at first use, so an MLA model's kept layout under a pinned
0.20 must not be the newest release's."""

from __future__ import annotations

from tests.physics.test_step import shape_of
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics import plan
from tpcheck.physics.plan_records import Options


def test_mla_layout_kept_per_release() -> None:
    shape = shape_of("deepseek-ai/DeepSeek-V2-Lite")
    assert shape.is_mla
    gpu = find_gpu("h100-sxm")
    old, new = Options(gpu=gpu, engine_version="0.20.0"), Options(gpu=gpu, engine_version="0.33.0")
    alone_old, alone_new = plan.weights(shape, 1, old).result, plan.weights(shape, 1, new).result
    assert alone_old - alone_new == 128 << 20  # the workspace: 134,217,728 B, 0.20 only
    memo = plan.Memo()
    for opts, alone in ((new, alone_new), (old, alone_old), (new, alone_new)):
        assert plan.layout_at(shape, 1, opts, memo).weights.result == alone
        assert plan.capacity(shape, 1, opts, memo).weights.result == alone
        assert plan._weights_at(shape, 1, opts, memo) == alone


def test_non_mla_layout_shared_across_releases() -> None:
    # Llama 3 reads no release in its layout: one kept layout serves both pins
    shape = shape_of("meta-llama/Meta-Llama-3-70B-Instruct")
    gpu = find_gpu("h100-sxm")
    memo = plan.Memo()
    a = plan.layout_at(shape, 4, Options(gpu=gpu, engine_version="0.20.0"), memo)
    b = plan.layout_at(shape, 4, Options(gpu=gpu, engine_version="0.33.0"), memo)
    assert a is b
