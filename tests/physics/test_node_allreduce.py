"""All-reduces inside one node priced as the engine release runs them (issue 31): the decode
step, TP201's tokens/s and TP302 ask ``physics.collective`` with the release and the
deployment's ``--disable-custom-all-reduce``, not a fixed 10/20 µs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.physics.test_step import shape_of
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics.plan import Options, evaluate

LLAMA70 = "meta-llama/Meta-Llama-3-70B-Instruct"  # L = 80, d = 8192, bf16


def _floor(**kw: object) -> dict[str, object]:
    opts = Options(**{"engine_version": "0.5.4", "gpu": find_gpu("h100-sxm"), "batch": 8,  # type: ignore[arg-type]
                      "context": 512, **kw})
    ev = evaluate(shape_of(LLAMA70), 8, opts)
    assert ev.floor is not None
    return dict(ev.floor.values)


def test_custom_kernel_or_nccl_by_the_flag() -> None:
    # batch 8: S = 8·8192·2 = 131,072 B. vLLM 0.5.4 runs its custom kernel below 8 MiB:
    # α = 9 µs, B = 250 GB/s (vLLM PR 24532/24111 rows, physics.collective.CUSTOM)
    on = _floor()
    assert (on["α"], on["B"]) == (9e-6, 250e9)
    # --disable-custom-all-reduce: NCCL's cheapest at 128 KiB on 8 H100 is NVLS/LL:
    # 17 µs + 1.75·131,072 / (0.5·0.60·450·1.75 GB/s = 236.25) = 17.97 µs, below ring/LL's
    # 17 + 1.75·131,072/180e9 = 18.27 µs
    off = _floor(custom_all_reduce=False)
    assert off["α"] == 17e-6 and off["B"] == pytest.approx(236.25e9)


def test_the_deployments_flag_reaches_the_physics(tmp_path: Path) -> None:
    from tpcheck.checks.context import CheckContext
    from tpcheck.settings import Settings
    from tpcheck.sources import read_path

    src = tmp_path / "serve.sh"
    src.write_text("vllm serve meta-llama/Meta-Llama-3-70B --tensor-parallel-size 8 "
                   "--disable-custom-all-reduce\n")
    [d] = read_path(str(src)).deployments
    assert d.disable_custom_all_reduce is True
    ctx = CheckContext(d, shape=shape_of(LLAMA70), settings=Settings(),
                       gpu=find_gpu("h100-sxm"))
    assert ctx.options.custom_all_reduce is False
